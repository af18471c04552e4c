// Kernel launches with the options the wq_gemm plans need, through cuLaunchKernelEx.
#pragma once
#include <cuda.h>

namespace lowbit::jit {

struct LaunchShape {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block = 1;  // threads (x only)
  unsigned smem = 0;   // dynamic shared memory, bytes
};

struct LaunchOptions {
  // All blocks resident at once, or the launch fails (cuLaunchCooperativeKernel's guarantee): for
  // kernels whose blocks wait for each other.
  bool cooperative = false;
  // Programmatic dependent launch (sm_90): the kernel may start while the previous kernel in the
  // stream is still running, once that kernel's blocks have all executed griddepcontrol.
  // launch_dependents (or exited). The kernel must execute griddepcontrol.wait before it reads
  // anything the previous kernel writes; kernels launched earlier than that one are complete unless
  // it was itself launched so (then wait covers them only if that kernel waited before it finished).
  bool overlap_previous = false;
  // Thread-block clusters of (1, cluster_y, 1) blocks (sm_90; grid_y a multiple of it): the blocks of
  // a cluster run at the same time and share their shared memory.
  unsigned cluster_y = 1;
};

// Throws lowbit::Error naming the driver's error code.
void launch(CUfunction f, const LaunchShape& shape, CUstream stream, void** args, LaunchOptions options = {});

}  // namespace lowbit::jit

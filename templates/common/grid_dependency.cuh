// Programmatic dependent launch (sm_90): a kernel launched with programmatic stream serialization
// (jit::LaunchOptions::overlap_previous) may start before the previous kernel in the stream ends.
// Without that launch attribute both instructions return at once, so a kernel may use them either way;
// before sm_90 (no such launch, and no such instruction: ptxas rejects it) they are empty.
#pragma once

namespace lowbit::kern {

// In the earlier kernel: the next kernel may start once every block has executed this (or exited).
// It says nothing about memory: the next kernel's wait (below) still waits for this whole grid.
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// In the later kernel: blocks until the previous grid has completed and its writes are visible.
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace lowbit::kern

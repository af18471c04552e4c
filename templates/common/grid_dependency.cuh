// Programmatic dependent launch (sm_90): a kernel launched with programmatic stream serialization
// (jit::LaunchOptions::overlap_previous) may start before the previous kernel in the stream ends.
// Without that launch attribute both instructions return at once, so a kernel may use them either way.
#pragma once

namespace lowbit::kern {

// In the earlier kernel: the next kernel may start once every block has executed this (or exited).
// It says nothing about memory: the next kernel's wait (below) still waits for this whole grid.
__device__ __forceinline__ void allow_dependent_launch() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
// In the later kernel: blocks until the previous grid has completed and its writes are visible.
__device__ __forceinline__ void wait_for_previous_grid() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

}  // namespace lowbit::kern

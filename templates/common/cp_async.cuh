// cp.async (sm_80+): 16-byte copies global → shared that complete in the background, so a warp
// keeps several chunks of weights in flight without holding them in registers.
#pragma once
#include "common/types.cuh"

namespace lowbit::kern {

// .cg: cache in L2 only — the weights are read once, L1 would only be polluted.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
  const u32 s = static_cast<u32>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem));
}
// 8-byte copies exist only with .ca (L1 + L2).
__device__ __forceinline__ void cp_async_8(void* smem, const void* gmem) {
  const u32 s = static_cast<u32>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending));
}

}  // namespace lowbit::kern

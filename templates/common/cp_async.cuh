// cp.async (sm_80+): 16-byte copies global → shared that complete in the background, so a warp
// keeps several chunks of weights in flight without holding them in registers.
#pragma once
#include "common/types.cuh"

namespace lowbit::kern {

// Shared-memory address of a generic pointer, for the copies below (compute it once, outside loops).
__device__ __forceinline__ u32 smem_addr(const void* p) { return static_cast<u32>(__cvta_generic_to_shared(p)); }

// .cg: cache in L2 only — the weights are read once, L1 would only be polluted.
__device__ __forceinline__ void cp_async_16(u32 smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem), "l"(gmem) : "memory");
}
// The same, but copies nothing and writes 16 zero bytes when !valid (src-size 0: gmem is not read).
__device__ __forceinline__ void cp_async_16_or_zero(u32 smem, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem), "l"(gmem), "r"(valid ? 16 : 0)
               : "memory");
}
// 8-byte copies exist only with .ca (L1 + L2).
__device__ __forceinline__ void cp_async_8(u32 smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(smem), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_4(u32 smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem), "l"(gmem) : "memory");
}
// A copy of kWords 32-bit words (1, 2 or 4), the widest cp.async that size allows.
template <int kWords>
__device__ __forceinline__ void cp_async_words(u32 smem, const void* gmem) {
  if constexpr (kWords == 4) cp_async_16(smem, gmem);
  else if constexpr (kWords == 2) cp_async_8(smem, gmem);
  else cp_async_4(smem, gmem);
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");  // no shared load moves above it
}

}  // namespace lowbit::kern

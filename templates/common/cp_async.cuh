// cp.async (sm_80+): 16-byte copies global → shared that complete in the background, so a warp
// keeps several chunks of weights in flight without holding them in registers.
#pragma once
#include "common/types.cuh"

namespace lowbit::kern {

// Shared-memory address of a generic pointer, for the copies below (compute it once, outside loops).
__device__ __forceinline__ u32 smem_addr(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

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
  if constexpr (kWords == 4)
    cp_async_16(smem, gmem);
  else if constexpr (kWords == 2)
    cp_async_8(smem, gmem);
  else
    cp_async_4(smem, gmem);
}
// The same copies at constant byte offsets from the two addresses, folded into the instruction: the
// weight tiles of a chunk and the activation rows of a stage lie at constant strides from one running
// pointer each, and an address computed per copy costs a 64-bit add (two instructions) per copy
// (ptxas left them unfolded in the M = 1 loop: 16 per chunk of 8 tiles).
template <int kWords, int kSmemOff, long long kGmemOff>
__device__ __forceinline__ void cp_async_words_at(u32 smem, const void* gmem) {
  if constexpr (kWords == 4)
    asm volatile("cp.async.cg.shared.global [%0+%2], [%1+%3], 16;" ::"r"(smem), "l"(gmem), "n"(kSmemOff),
                 "n"(kGmemOff)
                 : "memory");
  else if constexpr (kWords == 2)
    asm volatile("cp.async.ca.shared.global [%0+%2], [%1+%3], 8;" ::"r"(smem), "l"(gmem), "n"(kSmemOff),
                 "n"(kGmemOff)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0+%2], [%1+%3], 4;" ::"r"(smem), "l"(gmem), "n"(kSmemOff),
                 "n"(kGmemOff)
                 : "memory");
}
template <int kSmemOff, long long kGmemOff>
__device__ __forceinline__ void cp_async_16_or_zero_at(u32 smem, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0+%3], [%1+%4], 16, %2;" ::"r"(smem), "l"(gmem),
               "r"(valid ? 16 : 0), "n"(kSmemOff), "n"(kGmemOff)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");  // no shared load moves above it
}

}  // namespace lowbit::kern

// mbarrier (sm_80+; cp.async arrivals sm_80+, try_wait sm_90): a shared-memory barrier object that
// counts arrivals per phase, so one group of threads can wait for another's data without stopping
// the whole block (wq_gemm_wgmma.cuh: a producer warpgroup filling stages, MMA warpgroups emptying
// them, each at its own pace).
//
// A phase completes when the expected number of arrivals (set at init) has arrived; waiters name the
// phase by its parity (0 for the first, 1 for the second, 0 again ...).
#pragma once
#include "common/types.cuh"

namespace lowbit::kern {

// One thread initializes; the block must pass a barrier before anyone else uses the object.
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// After the inits, before the barrier that publishes them: makes them visible to the async proxy
// (bulk copies complete their bytes on the barriers through it).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// Release: this thread's earlier shared-memory writes are visible to threads that see the phase end.
__device__ __forceinline__ void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Arrives once all of this thread's earlier cp.async copies have landed (.noinc: the arrival is one
// of the count given at init, not an extra one).
__device__ __forceinline__ void mbar_arrive_cp_async(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
// Arrives and adds `bytes` to the transactions the current phase waits for (bulk copies complete them;
// they may land before this call).
__device__ __forceinline__ void mbar_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// A bulk copy (sm_90, the copy engine, no registers or load/store instructions per 16 bytes):
// `bytes` (a multiple of 16; both addresses 16-byte aligned) from global to shared memory, completing
// `bytes` transactions on the mbarrier `bar`.
__device__ __forceinline__ void bulk_copy(u32 dst, const void* src, u32 bytes, u32 bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}
// Waits until the phase of the given parity has completed (acquire).
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
  u32 done;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

}  // namespace lowbit::kern

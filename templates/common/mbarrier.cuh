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
// Release: this thread's earlier shared-memory writes are visible to threads that see the phase end.
__device__ __forceinline__ void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Arrives once all of this thread's earlier cp.async copies have landed (.noinc: the arrival is one
// of the count given at init, not an extra one).
__device__ __forceinline__ void mbar_arrive_cp_async(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
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

// Thin PTX wrappers. Each says why it exists.
#pragma once
#include "common/types.cuh"

namespace lowbit::kern {

// Weights are streamed once per call: read-only path, and no L1 allocation so they do not evict
// the activations every warp re-reads.
__device__ __forceinline__ uint4 ld_stream_v4(const void* p) {
  uint4 r;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(p));
  return r;
}

// Activations, scales and zeros are shared by many warps: ordinary read-only cached loads.
__device__ __forceinline__ uint4 ld_cached_v4(const void* p) {
  return __ldg(static_cast<const uint4*>(p));
}
__device__ __forceinline__ u16 ld_cached_u16(const u16* p) {
  return __ldg(p);
}
__device__ __forceinline__ u8 ld_cached_u8(const u8* p) {
  return __ldg(p);
}

// Loads from a 32-bit shared-memory address (cp_async.cuh: smem_addr) plus a constant kOff: a
// generic pointer into the ring costs 64-bit arithmetic per load, and an address register the
// compiler cannot see into costs an add per load unless the constant rides in the instruction.
// volatile keeps them below the barriers and cp.async waits.
template <int kOff = 0>
__device__ __forceinline__ uint4 ld_shared_v4(u32 addr) {
  uint4 r;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4+%5];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "r"(addr), "n"(kOff));
  return r;
}
template <int kOff = 0>
__device__ __forceinline__ uint2 ld_shared_v2(u32 addr) {
  uint2 r;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2+%3];" : "=r"(r.x), "=r"(r.y) : "r"(addr), "n"(kOff));
  return r;
}
template <int kOff = 0>
__device__ __forceinline__ u32 ld_shared_u32(u32 addr) {
  u32 r;
  asm volatile("ld.shared.u32 %0, [%1+%2];" : "=r"(r) : "r"(addr), "n"(kOff));
  return r;
}
template <int kOff = 0>
__device__ __forceinline__ u16 ld_shared_u16(u32 addr) {
  u16 r;
  asm volatile("ld.shared.u16 %0, [%1+%2];" : "=h"(r) : "r"(addr), "n"(kOff));
  return r;
}
template <int kOff = 0>
__device__ __forceinline__ u32 ld_shared_u8(u32 addr) {
  u32 r;
  asm volatile("ld.shared.u8 %0, [%1+%2];" : "=r"(r) : "r"(addr), "n"(kOff));
  return r;
}

// The store counterpart, for shared-memory stages written from registers (volatile + "memory":
// it stays between the barrier that frees the stage and the one that publishes it).
template <int kOff = 0>
__device__ __forceinline__ void st_shared_v4(u32 addr, u32 a, u32 b, u32 c, u32 d) {
  asm volatile("st.shared.v4.u32 [%0+%1], {%2, %3, %4, %5};" ::"r"(addr), "n"(kOff), "r"(a), "r"(b), "r"(c),
               "r"(d)
               : "memory");
}

// __syncthreads for warp-specialized loops: warps of different roles reach it from different
// places in the code (each role the same number of times), which __syncthreads does not promise.
__device__ __forceinline__ void block_barrier() {
  asm volatile("bar.sync 0;" ::: "memory");
}

// A load with acquire semantics at device scope (for a flag another block sets with release), from L2.
__device__ __forceinline__ u32 ld_acquire_u32(const u32* p) {
  u32 v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Adds v to a global counter and returns its old value, as a release (what this thread, and through
// a barrier before it its block, wrote is visible to whoever acquires the counter later) and an
// acquire (what the earlier adders released is visible now): the arrival count of a split tile.
__device__ __forceinline__ u32 atom_add_acq_rel_u32(u32* p, u32 v) {
  u32 old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

// Four fp32 adds into 16 bytes of global memory in one instruction (sm_90): a stream-K piece's
// partial sums, 16-byte vectors side by side, where scalar atomics per output touched 4 rows' lines
// per warp instruction.
__device__ __forceinline__ void red_add_v4(float4* p, float a, float b, float c, float d) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d)
               : "memory");
}

// A barrier that kThreads threads of the block (whole warps) meet at, numbered kId (0 is
// __syncthreads'): for one role of a warp-specialized block while the other role goes on.
template <int kId, int kThreads>
__device__ __forceinline__ void named_barrier() {
  static_assert(kId > 0 && kId < 16 && kThreads % 32 == 0, "barriers 1..15, whole warps");
  asm volatile("bar.sync %0, %1;" ::"n"(kId), "n"(kThreads) : "memory");
}

// f(Const<0>{}), ..., f(Const<N − 1>{}): a loop whose index is a constant expression in the body
// (for the kOff of the loads above).
template <int V>
struct Const {
  static constexpr int value = V;
};
template <int N, int I = 0, class F>
__device__ __forceinline__ void static_for(F&& f) {
  if constexpr (I < N) {
    f(Const<I>{});
    static_for<N, I + 1>(f);
  }
}

// fp32 <-> 16-bit float bit patterns without cuda_fp16.h (NVRTC has no host headers here).
__device__ __forceinline__ u16 f32_to_f16(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float f16_to_f32(u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
// Element h (0: low half, 1: high half) of a half2 as fp32.
__device__ __forceinline__ float half2_elem_to_f32(u32 v, int h) {
  return f16_to_f32(static_cast<u16>(h ? v >> 16 : v & 0xffffu));
}
__device__ __forceinline__ u16 f32_to_bf16(float f) {
  u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));  // sm_80+
  return h;
}
__device__ __forceinline__ float bf16_to_f32(u16 h) {
  return __uint_as_float(static_cast<u32>(h) << 16);
}

template <bool kBf16>
__device__ __forceinline__ float to_f32(u16 h) {
  if constexpr (kBf16)
    return bf16_to_f32(h);
  else
    return f16_to_f32(h);
}
template <bool kBf16>
__device__ __forceinline__ u16 from_f32(float f) {
  if constexpr (kBf16)
    return f32_to_bf16(f);
  else
    return f32_to_f16(f);
}

}  // namespace lowbit::kern

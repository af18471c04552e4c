// Hopper warpgroup MMA (sm_90a only; instantiated only by wq_gemm_wgmma.cuh, which can_implement
// allows on sm_90a alone): wgmma.mma_async m64nNk16 with A from registers and B from shared memory.
//
// A (64 × 16, registers): warp w of the warpgroup holds rows 16w..16w+15 in the m16n8k16 A layout
// (mma.cuh): a0 rows g, k 2t..2t+1; a1 rows g+8; a2 k + 8; a3 both. B (16 × N, shared memory,
// K-major): one row of k values per column of B, described by wgmma_desc_sw128. D (64 × N, fp32): warp w
// holds rows 16w + g (+8) and columns 8j + 2t
// (+1), j = 0..N/8 − 1, as d[4j + r] with r as in mma.cuh.
//
// wgmma runs asynchronously: its A registers and accumulators must not be touched between the
// issue and wgmma_wait, and the warpgroup must run wgmma_fence after writing them and before the
// next wgmma. reg_fence pins a register's value to a point among the volatile statements, so the
// compiler neither sinks the writes below the fence nor hoists the reads above the wait.
#pragma once
#include "common/types.cuh"

namespace lowbit::kern {

// K-major B with the 128-byte swizzle: rows of 64 16-bit k values (128 B), 16-byte chunk c of row
// r stored at chunk c ^ (r % 8), 8-row groups sbo bytes apart, atoms 1024-byte aligned (the
// hardware swizzles on address bits 4-6 ^ 7-9). A k16 step starts 32 B further along the row; the
// leading byte offset is unused (the step's 16 k lie within one row).
__device__ __forceinline__ u64 wgmma_desc_sw128(u32 smem_addr, u32 sbo) {
  return static_cast<u64>((smem_addr & 0x3ffffu) >> 4) | u64{1} << 16 | static_cast<u64>(sbo >> 4) << 32 |
         u64{1} << 62;
}
// The descriptor of the address kOff bytes after the one `d` describes. The start-address field
// (address / 16, 14 bits) does not overflow for any shared address (< 256 KB), so adding to the low
// word is exact; one integer add instead of rebuilding the descriptor (mask, shift, or).
__device__ __forceinline__ u64 wgmma_desc_advance(u64 d, u32 off) {
  u32 lo, hi;
  asm("mov.b64 {%0, %1}, %2;" : "=r"(lo), "=r"(hi) : "l"(d));
  u64 r;
  asm("mov.b64 %0, {%1, %2};" : "=l"(r) : "r"(lo + (off >> 4)), "r"(hi));  // a register pair: no instruction
  return r;
}
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}
// Shared memory written by ordinary stores becomes visible to wgmma (the async proxy) only through
// this fence, run by the writing thread before the barrier that publishes the data.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void reg_fence(float& r) {
  asm volatile("" : "+f"(r)::"memory");
}
__device__ __forceinline__ void reg_fence(u32& r) {
  asm volatile("" : "+r"(r)::"memory");
}

// d += A · B for one k16 step; scale-d 1 (accumulate), no negation, B not transposed (K-major).
// One asm statement per N (its accumulator list), with the element type T spliced into the opcode.
#define LOWBIT_WGMMA_RS_N16(T)                                                                       \
  asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32." T "." T                                 \
               " {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, 1, 1, 1, 0;"             \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), \
                 "+f"(d[7])                                                                          \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc)                                       \
               : "memory")
#define LOWBIT_WGMMA_RS_N32(T)                                                                             \
  asm volatile("wgmma.mma_async.sync.aligned.m64n32k16.f32." T "." T                                       \
               " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, " \
               "%19}, %20, 1, 1, 1, 0;"                                                                    \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),       \
                 "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),   \
                 "+f"(d[14]), "+f"(d[15])                                                                  \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc)                                             \
               : "memory")
#define LOWBIT_WGMMA_RS_N64(T)                                                                            \
  asm volatile(                                                                                           \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." T "." T                                               \
      " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
      "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, 1, 1, 1, 0;"    \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),   \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),          \
        "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),        \
        "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),        \
        "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                                                             \
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc)                                                     \
      : "memory")
#define LOWBIT_WGMMA_RS_N128(T)                                                                             \
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32." T "." T                                       \
               " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "    \
               "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, " \
               "%37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, " \
               "%55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, 1, 1, 1, 0;"       \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),        \
                 "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),    \
                 "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
                 "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
                 "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), \
                 "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), \
                 "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), \
                 "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
                 "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), \
                 "+f"(d[63])                                                                                \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc)                                              \
               : "memory")
template <int kN, bool kBf16>
__device__ __forceinline__ void wgmma_rs(float (&d)[kN / 2], u32 a0, u32 a1, u32 a2, u32 a3, u64 desc) {
  static_assert(kN == 16 || kN == 32 || kN == 64 || kN == 128, "N = 16, 32, 64 or 128");
  if constexpr (kN == 16) {
    if constexpr (kBf16)
      LOWBIT_WGMMA_RS_N16("bf16");
    else
      LOWBIT_WGMMA_RS_N16("f16");
  } else if constexpr (kN == 32) {
    if constexpr (kBf16)
      LOWBIT_WGMMA_RS_N32("bf16");
    else
      LOWBIT_WGMMA_RS_N32("f16");
  } else if constexpr (kN == 64) {
    if constexpr (kBf16)
      LOWBIT_WGMMA_RS_N64("bf16");
    else
      LOWBIT_WGMMA_RS_N64("f16");
  } else if constexpr (kN == 128) {
    if constexpr (kBf16)
      LOWBIT_WGMMA_RS_N128("bf16");
    else
      LOWBIT_WGMMA_RS_N128("f16");
  }
}
#undef LOWBIT_WGMMA_RS_N16
#undef LOWBIT_WGMMA_RS_N32
#undef LOWBIT_WGMMA_RS_N64
#undef LOWBIT_WGMMA_RS_N128

}  // namespace lowbit::kern

// Tensor-core MMA, m16n8k16, fp32 accumulators (sm_80+).
//   a: 4 regs of the 16x16 A tile (rows g, g+8; k pairs 2t, 2t+8), b: 2 regs of the 16x8 B tile
//   (k pairs 2t, 2t+8; column g), d: rows g, g+8 × columns 2t, 2t+1 — with g = lane/4, t = lane%4.
#pragma once
#include "common/types.cuh"

namespace lowbit::kern {

template <bool kBf16>
__device__ __forceinline__ void mma_16816(float (&d)[4], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
  if constexpr (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

// The same product with fp16 inputs accumulated in fp16: d[0] = half2 of (row g; columns 2t, 2t+1),
// d[1] = the same of row g + 8 (accumulator elements 0, 1 and 2, 3 of the fp32 form).
__device__ __forceinline__ void mma_16816_f16acc(u32 (&d)[2], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0,
                                                 u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};"
      : "+r"(d[0]), "+r"(d[1])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

}  // namespace lowbit::kern

// Integer → 16-bit float dequantization, two values per 32-bit register.
//
// The magic-number trick: OR-ing a small integer q into the mantissa of 1024.0 (fp16 0x6400, whose
// ulp is 1) gives exactly 1024 + q; for bf16 the base is 128.0 (0x4300). Subtracting (base + z)
// then gives q − z exactly, and one multiply by the scale rounds once: the same value as the
// reference (q − z)·s rounded to 16 bits.
#pragma once
#include "common/types.cuh"

namespace lowbit::kern {

template <bool kBf16>
struct Magic {
  static constexpr u32 kBase2 = kBf16 ? 0x43004300u : 0x64006400u;  // half2/bfloat162 of the base
  static constexpr u32 kBase = kBf16 ? 0x4300u : 0x6400u;
};

// half2 (or bfloat162) holding base + z in both halves; z < 128.
template <bool kBf16>
__device__ __forceinline__ u32 biased_zero2(u32 z) {
  const u32 h = Magic<kBf16>::kBase + z;
  return h | (h << 16);
}

// Both halves = the 16-bit scale s.
__device__ __forceinline__ u32 splat2(u16 s) { return static_cast<u32>(s) | (static_cast<u32>(s) << 16); }

// (q2 − zb2)·s2 on packed pairs. q2 and zb2 carry the magic base.
template <bool kBf16>
__device__ __forceinline__ u32 sub_mul2(u32 q2, u32 zb2, u32 s2) {
  u32 r;
  if constexpr (kBf16) {
    // sm_80 has fma.bf16x2 but no sub/mul.bf16x2: (q·1 − zb) is exact, then ·s + (−0) rounds once.
    const u32 one2 = 0x3f803f80u, neg_zero2 = 0x80008000u;
    u32 diff;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(diff) : "r"(q2), "r"(one2), "r"(zb2 ^ 0x80008000u));
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(diff), "r"(s2), "r"(neg_zero2));
  } else {
    u32 diff;
    asm("sub.f16x2 %0, %1, %2;" : "=r"(diff) : "r"(q2), "r"(zb2));
    asm("mul.f16x2 %0, %1, %2;" : "=r"(r) : "r"(diff), "r"(s2));
  }
  return r;
}

// 4-bit: a 32-bit word holds 8 values; pair j (0..3) is the nibbles at positions j and j+4
// (low half, high half), so one shift + mask-or per pair.
template <bool kBf16>
__device__ __forceinline__ u32 int4_pair(u32 w, int j) {
  return ((w >> (4 * j)) & 0x000f000fu) | Magic<kBf16>::kBase2;
}

}  // namespace lowbit::kern

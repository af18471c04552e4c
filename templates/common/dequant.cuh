// Integer → 16-bit float dequantization, two values per 32-bit register.
//
// The magic-number trick: OR-ing a small integer q into the mantissa of 1024.0 (fp16 0x6400, whose
// ulp is 1) gives exactly 1024 + q; for bf16 the base is 128.0 (0x4300). Subtracting (base + z)
// then gives q − z exactly, and one multiply by the scale rounds once: the same value as the
// reference (q − z)·s rounded to 16 bits. bf16 4- and 8-bit weights read their bits as subnormal
// patterns instead (LinearBf16 below): (q − z)/64 exactly, the 64 folded into the scale.
#pragma once
#include "common/types.cuh"

namespace lowbit::kern {

template <bool kBf16>
struct Magic {
  static constexpr u32 kBase2 = kBf16 ? 0x43004300u : 0x64006400u;  // half2/bfloat162 of the base
  static constexpr u32 kBase = kBf16 ? 0x4300u : 0x6400u;
};

// Both halves = v, a 16-bit value: one multiply-add instead of shift + or (and base + z below
// never carries out of its half, so z·0x10001 + base2 is the same pair in one instruction).
__device__ __forceinline__ u32 splat2(u32 v) {
  return v * 0x10001u;
}

// half2 (or bfloat162) holding base + z in both halves; z < 128 for bf16, < 1024 for fp16.
template <bool kBf16>
__device__ __forceinline__ u32 biased_zero2(u32 z) {
  return z * 0x10001u + Magic<kBf16>::kBase2;
}

// a − b on pairs (bf16: through fma, which sm_80 has; a·1 − b rounds once, exactly like a sub).
template <bool kBf16>
__device__ __forceinline__ u32 sub2(u32 a, u32 b) {
  u32 r;
  if constexpr (kBf16)
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(0x3f803f80u), "r"(b ^ 0x80008000u));
  else
    asm("sub.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
template <bool kBf16>
__device__ __forceinline__ u32 fma2(u32 a, u32 b, u32 c) {
  u32 r;
  if constexpr (kBf16)
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  else
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}

// fp16 only: the four pairs of a word as q − z with no scale, in 1 shift + 4 mask-ors + 4 f16x2 ops.
// Pairs 0 and 2 sit in the low nibble of each 16-bit half: 1024 + q, minus (1024 + z). Pairs 1 and
// 3 sit one nibble up: 1024 + 16q, and fma(·, 1/16, −(64 + z)) gives q − z. Every step is exact.
struct Int4Zero {
  u32 zb;   // half2 of 1024 + z
  u32 zhi;  // half2 of −(64 + z)
};
__device__ __forceinline__ Int4Zero int4_zero_f16(u32 z) {
  // Per half: 0x6400 + z is 1024 + z (ulp 1 in [1024, 2048)); 0xd400 + 16z is −(64 + z) (ulp 1/16
  // in [64, 128)). z < 16 never carries out of a half, so each pair is one multiply-add.
  return {z * 0x10001u + 0x64006400u, z * 0x100010u + 0xd400d400u};
}
// (a & b) | c in one LOP3. Written as PTX because the compiler, given two immediates, emits two
// instructions (a LOP3 takes one immediate); b and c live in registers here.
__device__ __forceinline__ u32 and_or(u32 a, u32 b, u32 c) {
  u32 r;
  asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}

__device__ __forceinline__ void int4_word_minus_zero_f16(u32 w, const Int4Zero& z, u32 (&out)[4]) {
  const u32 one_16th = 0x2c002c00u;  // half2(1/16)
  const u32 lo = 0x000f000fu, hi = 0x00f000f0u, magic = 0x64006400u;
  const u32 w8 = w >> 8;
  const u32 p0 = and_or(w, lo, magic), p1 = and_or(w, hi, magic);
  const u32 p2 = and_or(w8, lo, magic), p3 = and_or(w8, hi, magic);
  out[0] = sub2<false>(p0, z.zb);
  out[1] = fma2<false>(p1, one_16th, z.zhi);
  out[2] = sub2<false>(p2, z.zb);
  out[3] = fma2<false>(p3, one_16th, z.zhi);
}

// ---- any bit width (layout: include/lowbit/pack.hpp) ------------------------------------------

// Pair j (0..15) of a lane's 32 values (e = 2j low half, 2j + 1 high half) as base + q, from the
// lane's kBits words. j is a compile-time constant in unrolled loops, so the indexing folds.
template <int kBits, bool kBf16>
__device__ __forceinline__ u32 raw_pair(const u32 (&w)[kBits], int j) {
  constexpr u32 magic = Magic<kBf16>::kBase2;
  if constexpr (kBits == 3) {
    if (j < 15) return and_or(w[j / 5] >> (3 * (j % 5)), 0x00070007u, magic);
    // Pair 15 keeps bit i of both values in bits 15 and 31 of word i.
    return ((w[0] >> 15) & 0x00010001u) | ((w[1] >> 14) & 0x00020002u) | ((w[2] >> 13) & 0x00040004u) | magic;
  } else if constexpr (kBits == 8 && !kBf16) {
    // Bytes j % 2 and j % 2 + 2 of word j / 2 under 0x64: one byte permute instead of shift + mask.
    u32 r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(w[j / 2]), "r"(0x64u), "r"(0x4240u + 0x0101u * (j % 2)));
    return r;
  } else {
    constexpr int kPairsPerWord = 16 / kBits;
    constexpr u32 mask = ((1u << kBits) - 1) * 0x00010001u;
    return and_or(w[j / kPairsPerWord] >> (kBits * (j % kPairsPerWord)), mask, magic);
  }
}

// Pair j as base_j + q with a base per position, for the zero after the MMA with swapped operands
// (wq_gemm.cuh: the Σ base_j·x the MMA picks up comes from one MMA per step, shared by all tiles).
// A value at bit offset o of a 16-bit half, masked in place under a base whose ulp is 2^o, reads
// base + q exactly: the base is the magic base divided by 2^o, one exponent step per bit. That holds
// while the value's bits lie in the mantissa (o + kBits ≤ 10 for fp16, ≤ 7 for bf16), so a word
// needs one shift per kPositions positions instead of one per pair (fp16 2-bit: 1 shift per word
// instead of 7, 3-bit 1 instead of 4, 1-bit 1 instead of 15; bf16 2-bit 2 instead of 7; bf16 4-bit
// gains nothing; 4-bit takes this path only with x_sums, see kZeroAfter in wq_gemm.cuh).
template <int kBits, bool kBf16>
struct InPlace {
  // Positions read without a shift. fp16 2-bit takes 4 of the 5 that fit (a shift by 8 then repeats
  // the same positions for the half's upper 4 values): each Σ MMA step pairs positions (0, 1) or
  // (2, 3), so the loop keeps 2 constant A quads and 4 bases instead of 4 quads and 5 (SASS: 9-19
  // fewer instructions per chunk; H100, W2 at M 1 and 16 on the six standard layers 0-2.4 %
  // faster, 64/128 rows ±2 %, twentieth session).
  static constexpr int kPositions = (kBf16 ? 7 : kBits == 2 ? 8 : 10) / kBits;
  static constexpr int kShift = kBits * kPositions;           // bits per shift
  static constexpr u32 kExpStep = kBf16 ? 0x0080u : 0x0400u;  // one exponent step of the pattern
  // Where pair j's values sit: word, shift and in-place position (3-bit: 5 values per word, pair
  // 15 spread over three words; 8-bit fp16 keeps the byte permute: one base, 1024).
  static constexpr bool kOneBase = (kBits == 8 && !kBf16) || kPositions == 0;
  static constexpr bool kUniform = kOneBase || kPositions == 1;  // every pair under the magic base
  static constexpr int kPerWord = kBits == 3 ? 5 : 16 / kBits;
  static constexpr int kDiv = kPositions > 0 ? kPositions : 1;
  __device__ static constexpr int position(int j) { return (j % kPerWord) % kDiv; }
  __device__ static constexpr int shifts(int j) { return (j % kPerWord) / kDiv; }
  __device__ static constexpr bool special(int j) { return kOneBase || (kBits == 3 && j == 15); }
  // half2 (bfloat162) of pair j's base.
  __device__ static constexpr u32 base2(int j) {
    return (Magic<kBf16>::kBase - (special(j) ? 0u : kExpStep * kBits * position(j))) * 0x10001u;
  }
};
template <int kBits, bool kBf16>
__device__ __forceinline__ u32 raw_pair_in_place(const u32 (&w)[kBits], int j) {
  using P = InPlace<kBits, kBf16>;
  if (P::special(j)) return raw_pair<kBits, kBf16>(w, j);
  constexpr u32 mask = ((1u << kBits) - 1) * 0x00010001u;
  const u32 word = w[j / P::kPerWord] >> (P::kShift * P::shifts(j));
  return and_or(word, mask << (kBits * P::position(j)), P::base2(j));
}

// 2-bit pairs as q − z without a shift per pair. The value at position i of a 16-bit half (bits 2i,
// 2i + 1) masked in place under the base is base + 4^i·q, exact while 2i + 2 ≤ the mantissa's bits
// (fp16: i ≤ 4 under 1024; bf16: i ≤ 2 under 128), and fma(·, 4^−i, −(base·4^−i + z)) = q − z
// exactly (a power-of-2 scale, one rounding of an exact small integer). The positions are those
// InPlace lays out: fp16 one shift per word (by 8: positions 4-7 to 0-3), bf16 two (by 6 and 12).
// The constants depend on z only, so the compiler computes them once per zero point.
template <bool kBf16>
__device__ __forceinline__ u32 int2_pair_minus_zero(const u32 (&w)[2], int j, u32 z) {
  using P = InPlace<2, kBf16>;
  const int i = P::position(j);  // position after the shift
  const u32 word = w[j / P::kPerWord] >> (P::kShift * P::shifts(j));
  const u32 p = and_or(word, 0x00030003u << (2 * i), Magic<kBf16>::kBase2);
  // −(base·4^−i + z): the base's pattern 4^i·2^mantissa-bits lower is the pattern of base·4^−i (an
  // exponent step of 2 per i); z in its ulps (4^−i) is z·4^i.
  const u32 exp_step = kBf16 ? 0x0100u : 0x0800u;  // pattern of a factor 4: two exponent steps
  if (i == 0) return sub2<kBf16>(p, biased_zero2<kBf16>(z));
  const u32 neg_base = (0x8000u | (Magic<kBf16>::kBase - exp_step * i)) * 0x10001u;
  const u32 c = (z << (2 * i)) * 0x10001u + neg_base;
  const u32 one = kBf16 ? 0x3f80u : 0x3c00u;      // 1.0
  const u32 m = (one - exp_step * i) * 0x10001u;  // 4^−i
  return fma2<kBf16>(p, m, c);
}

// 4- and 8-bit values in bf16. The magic base leaves bf16 7 mantissa bits: 128 + q, one value per
// half and a shift per pair for 4-bit (fp16 reads two nibbles per half in place), and no room for
// 8-bit at all. But bf16 patterns under 256 (exponent field 0 or 1: the subnormals and the first
// normal binade, one ulp) read linearly: pattern v is v·2^−133. So a byte, or a nibble masked in
// place at bit 0 or 4 (16q), reads as q times a power of 2, and fma(·, 2^127 or 2^123, −z/64) gives
// (q − z)/64 exactly (a product by a power of 2; |q − z| ≤ 255 fits bf16's 8 significant bits, so
// the one rounding is exact). 8-bit: a byte permute and the fma a pair; 4-bit: a shift per word,
// then a mask and the fma a pair (9 instructions a word, fp16's count; docs/perf-notes.md § 75).
// The 1/64 goes into what multiplies next (dequant_pairs; × 64 is exact too, for scales under 2^122
// in magnitude: include/lowbit/wq_gemm.hpp). Needs subnormal inputs, which fma.rn.bf16x2 keeps (it
// has no .ftz).
__host__ __device__ constexpr bool takes_linear_bf16(int bits, bool bf16) {
  return bf16 && (bits == 4 || bits == 8);
}
// bfloat162 of 2^e: the biased exponent above bf16's 7 mantissa bits, in both halves.
__host__ __device__ constexpr u32 bf16x2_pow2(int e) {
  return static_cast<u32>((127 + e) << 7) * 0x10001u;
}
struct LinearBf16 {
  static constexpr u32 kTwo127 = bf16x2_pow2(127);  // patterns at bit 0: v·2^−133 → v/64
  static constexpr u32 kTwo123 = bf16x2_pow2(123);  // nibbles at bit 4: 16q·2^−133 → q/64
  static constexpr u32 k64 = bf16x2_pow2(6);
  static constexpr u32 kNegZero = 0x80008000u;  // −0 (a + −0 = a, exactly)
};
static_assert(LinearBf16::kTwo127 == 0x7f007f00u && LinearBf16::k64 == 0x42804280u &&
                  bf16x2_pow2(0) == 0x3f803f80u,
              "bf16 of 2^e");
// Pair of −z/64 for an integer zero z < 256: the pattern z with the sign bit is −z·2^−133.
__device__ __forceinline__ u32 neg_zero_64_bf16(u32 z) {
  return fma2<true>(z * 0x10001u + LinearBf16::kNegZero, LinearBf16::kTwo127, LinearBf16::kNegZero);
}
// Pairs 4p .. 4p + 3 as (q − z)/64, exactly; c is neg_zero_64_bf16(z).
template <int kBits>
__device__ __forceinline__ void pairs_minus_zero_64_bf16(const u32 (&w)[kBits], int p, u32 c, u32 (&out)[4]) {
  static_assert(kBits == 4 || kBits == 8, "4 or 8 bits");
  if constexpr (kBits == 8) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      // Values 2j, 2j + 1 (j = 4p + i) sit in bytes j % 2 and j % 2 + 2 of word j / 2; selector 4
      // reads the zero operand's byte.
      const int j = 4 * p + i;
      u32 b;
      asm("prmt.b32 %0, %1, %2, %3;" : "=r"(b) : "r"(w[j / 2]), "r"(0u), "r"(0x4240u + 0x0101u * (j % 2)));
      out[i] = fma2<true>(b, LinearBf16::kTwo127, c);
    }
  } else {
    // Pair j of a word: nibbles j and j + 4. Pairs 0 and 2 sit at bit 0 of their bytes (2 after a
    // shift by 8), pairs 1 and 3 at bit 4.
    const u32 lo = 0x000f000fu, hi = 0x00f000f0u, w0 = w[p], w8 = w[p] >> 8;
    out[0] = fma2<true>(w0 & lo, LinearBf16::kTwo127, c);
    out[1] = fma2<true>(w0 & hi, LinearBf16::kTwo123, c);
    out[2] = fma2<true>(w8 & lo, LinearBf16::kTwo127, c);
    out[3] = fma2<true>(w8 & hi, LinearBf16::kTwo123, c);
  }
}

// Pairs 4p .. 4p + 3 of a lane's values as q − z, exactly (z an integer; 0 gives q). Not bf16 4-
// and 8-bit: dequant_pairs takes those (LinearBf16).
template <int kBits, bool kBf16>
__device__ __forceinline__ void pairs_minus_zero(const u32 (&w)[kBits], int p, u32 z, u32 (&out)[4]) {
  static_assert(!takes_linear_bf16(kBits, kBf16), "bf16 4- and 8-bit pairs: dequant_pairs");
  if constexpr (kBits == 4) {
    int4_word_minus_zero_f16(w[p], int4_zero_f16(z), out);
  } else if constexpr (kBits == 2) {
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = int2_pair_minus_zero<kBf16>(w, 4 * p + i, z);
  } else {
    const u32 zb = biased_zero2<kBf16>(z);
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = sub2<kBf16>(raw_pair<kBits, kBf16>(w, 4 * p + i), zb);
  }
}

// Multiplies a pair by the scale pair (one rounding).
template <bool kBf16>
__device__ __forceinline__ u32 mul2(u32 a, u32 s2) {
  u32 r;
  if constexpr (kBf16)
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(s2), "r"(0x80008000u));
  else
    asm("mul.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(s2));
  return r;
}

// The factor dequant_pairs leaves out of the pairs where the scale comes after the MMA (integer
// modes without kPreScale): bf16 4- and 8-bit pairs come out as (q − z)/64 (LinearBf16), so the
// scale that multiplies their sums takes × 64. A power of 2 on both sides: barring fp32 underflow or
// overflow the sums round exactly as the unscaled ones would, and the results are the same bits.
template <int kBits, bool kBf16>
struct PostScale {
  static constexpr float kFactor = takes_linear_bf16(kBits, kBf16) ? 64.f : 1.f;
};

// Pairs 4p .. 4p + 3 of a lane's values as weights of a DequantMode (0: (q − z)·s, 1: symmetric,
// 2: (q − z)·s with a float z, 3: q·s + z). Integer modes leave the scale out unless kPreScale
// (it then multiplies the MMA's partial sums, times PostScale's factor); z is the integer zero, or
// the float zero pair.
template <int kBits, bool kBf16, int kMode, bool kPreScale>
__device__ __forceinline__ void dequant_pairs(const u32 (&w)[kBits], int p, u32 z, u32 s2, u32 (&out)[4]) {
  if constexpr (takes_linear_bf16(kBits, kBf16)) {
    // The pairs as (q − z)/64 (LinearBf16), the 64 folded into the scale, the float zero's step or
    // PostScale; every product by 64 is exact (scales under 2^122), so each form rounds once where the
    // others below do.
    u32 t[4];
    pairs_minus_zero_64_bf16<kBits>(w, p, kMode <= 1 ? neg_zero_64_bf16(z) : LinearBf16::kNegZero, t);
    const u32 s64 = mul2<true>(s2, LinearBf16::k64);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (kMode <= 1)
        out[i] = kPreScale ? mul2<true>(t[i], s64) : t[i];  // (q − z)·s, or (q − z)/64
      else if constexpr (kMode == 2)
        out[i] = mul2<true>(fma2<true>(t[i], LinearBf16::k64, z ^ 0x80008000u), s2);  // (q − z)·s, z float
      else
        out[i] = fma2<true>(t[i], s64, z);  // q·s + z
    }
  } else if constexpr (kMode <= 1) {
    pairs_minus_zero<kBits, kBf16>(w, p, z, out);
    if constexpr (kPreScale) {
#pragma unroll
      for (int i = 0; i < 4; ++i) out[i] = mul2<kBf16>(out[i], s2);
    }
  } else {
    pairs_minus_zero<kBits, kBf16>(w, p, 0u, out);  // q, exactly
#pragma unroll
    for (int i = 0; i < 4; ++i)
      out[i] = kMode == 2 ? mul2<kBf16>(sub2<kBf16>(out[i], z), s2) : fma2<kBf16>(out[i], s2, z);
  }
}

}  // namespace lowbit::kern

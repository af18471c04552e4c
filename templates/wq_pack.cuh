// wq_pack: checkpoint weights already on the device → lowbit's packed layout (include/lowbit/pack.hpp).
// The host packer (src/kernels/wq_pack.cpp) is the reference: the output must match it byte for byte.
//
// | arg        | dtype          | shape                              | layout                               |
// |------------|----------------|------------------------------------|--------------------------------------|
// | src_q      | u8 / u32       | [N][K] / [K·bits/32][N] / [K][N/8] | unpacked bytes and HQQ W_q / GPTQ    |
// |            |                |                                    | qweight / AWQ qweight                |
// | src_zeros  | u8 / u32 / u16 | [G][N] / [G][N·bits/32] / [G][N/8] | unpacked int / GPTQ / AWQ qzeros /   |
// |            |                | / [G][N] or [N][G]                 | float (HQQ: [N][G])                  |
// | src_scales | u16            | [G][N] (HQQ: [N][G])               | G = source groups (1 per channel)    |
// | perm       | i32            | [K] or null                        | act-order: position j ← source k     |
// |            |                |                                    | perm[j]                              |
// | qweight    | u32            | [K_pad/128][N_pad/8][bits·32]      | lowbit's tiles (pack.hpp)            |
// | scales     | u16            | [G_pad][N_pad]                     | zero padding                         |
// | zeros      | u8 / u16       | [G_pad][N_pad]                     | integer or float zeros; zero padding |
//
// One launch, two parts: blocks [0, qweight_blocks) write one qweight word per thread, the others
// one (scale, zero) entry of [G_pad][N_pad] per thread. Every output byte is written, padding as
// zero, so the buffers need no clearing first. Act-order checkpoints first get their permutation from
// wq_pack_perm_kernel (g_idx → perm, the stable sort by group of pack()), in the same stream.
//
// Values are masked to kBits so that a bad one cannot spill into its neighbours; out-of-range
// values, zeros and g_idx are not reported here (that needs a host round trip: pack() checks them).
#pragma once
#include "common/types.cuh"

namespace lowbit::kern {

constexpr int kPackThreads = 256;  // block size; the host launches with the same
// Which zero points a launch writes; the host passes the same numbers.
constexpr int kPackNoZeros = 0, kPackIntZeros = 1, kPackFloatZeros = 2;

struct PackLaneBit {
  int word, shift;
};

// Where bit `bit` of value e (0..31) of a lane lives among its kBits words: lane_bit() of
// src/kernels/wq_pack.cpp, kept in step with it (the GPU test compares the two packers).
template <int kBits>
__device__ __forceinline__ PackLaneBit pack_lane_bit(int e, int bit) {
  if constexpr (kBits == 3) {
    if (e >= 30) return {bit, 15 + 16 * (e - 30)};  // the 16th pair: bit i of both values in word i
    const int j = e / 2;
    return {j / 5, 3 * (j % 5) + 16 * (e % 2) + bit};
  } else {
    constexpr int kPairsPerWord = 16 / kBits;
    const int j = e / 2;
    return {j / kPairsPerWord, kBits * (j % kPairsPerWord) + 16 * (e % 2) + bit};
  }
}

// Whether value e puts any bit into word w: only then is it read.
template <int kBits>
__device__ __forceinline__ bool value_touches_word(int e, int w) {
  if (kBits == 3 && e >= 30) return true;
  return pack_lane_bit<kBits>(e, 0).word == w;
}

// Where a source keeps (group g, column n) of its scales and float zeros: [G][N] (HQQ differs).
struct GroupsByRow {
  static __device__ __forceinline__ i64 group_entry(int N, int /*groups*/, int g, int n) {
    return static_cast<i64>(g) * N + n;
  }
};

// Plain unpacked integers, one per byte: q [N][K], integer zeros [G][N].
struct UnpackedSource : GroupsByRow {
  template <int kBits>
  static __device__ __forceinline__ u32 value(const void* q, int /*N*/, int K, int n, int k) {
    return static_cast<const u8*>(q)[static_cast<i64>(n) * K + k];
  }
  template <int kBits>
  static __device__ __forceinline__ u32 int_zero(const void* zeros, int N, int g, int n) {
    return static_cast<const u8*>(zeros)[static_cast<i64>(g) * N + n];
  }
};

// Value `index` of a GPTQ bitstream: value i at bits [bits·i, bits·i + bits), low bits first, the w-th
// int32 of the stream at words[w · stride]. 3-bit values 10 and 21 of each 32 straddle two words
// (gptq_value() of src/kernels/wq_pack.cpp). Not masked: the caller masks.
template <int kBits>
__device__ __forceinline__ u32 gptq_stream_value(const u32* words, i64 stride, i64 index) {
  const i64 bit = index * kBits;
  const int shift = static_cast<int>(bit % 32);
  u32 v = words[bit / 32 * stride] >> shift;
  if (kBits == 3 && shift > 32 - kBits) v |= words[(bit / 32 + 1) * stride] << (32 - shift);
  return v;
}

// GPTQ: qweight [K·bits/32][N] holds the values of consecutive k down each column, low bits first;
// qzeros [G][N·bits/32] the zeros of consecutive n along each row (as stored: v1 adds 1 later).
struct GptqSource : GroupsByRow {
  template <int kBits>
  static __device__ __forceinline__ u32 value(const void* q, int N, int /*K*/, int n, int k) {
    static_assert(kBits == 2 || kBits == 3 || kBits == 4 || kBits == 8, "GPTQ packing is 2, 3, 4 or 8 bits");
    return gptq_stream_value<kBits>(static_cast<const u32*>(q) + n, N, k);
  }
  template <int kBits>
  static __device__ __forceinline__ u32 int_zero(const void* zeros, int N, int g, int n) {
    const i64 row_words = static_cast<i64>(N) * kBits / 32;
    return gptq_stream_value<kBits>(static_cast<const u32*>(zeros) + g * row_words, 1, n) &
           ((1u << kBits) - 1);
  }
};

// AutoAWQ's "GEMM" layout (4-bit): qweight [K][N/8] and qzeros [G][N/8], column 8c + j of a row at
// nibble {0, 4, 1, 5, 2, 6, 3, 7}[j] of word c.
struct AwqSource : GroupsByRow {
  static __device__ __forceinline__ u32 nibble(const void* rows, int N, int row, int n) {
    const u32 w = static_cast<const u32*>(rows)[static_cast<i64>(row) * (N / 8) + n / 8];
    const int j = n % 8;
    return w >> (4 * ((j % 2) * 4 + j / 2));  // {0, 4, 1, 5, 2, 6, 3, 7}[j]
  }
  template <int kBits>
  static __device__ __forceinline__ u32 value(const void* q, int N, int /*K*/, int n, int k) {
    static_assert(kBits == 4, "the AWQ GEMM layout is 4-bit");
    return nibble(q, N, k, n);
  }
  template <int kBits>
  static __device__ __forceinline__ u32 int_zero(const void* zeros, int N, int g, int n) {
    return nibble(zeros, N, g, n) & 0xfu;
  }
};

// HQQ / GemLite: W_q [N][K] one value per byte (as UnpackedSource); scales and float zeros [N][G], one
// row of groups per output channel.
struct HqqSource : UnpackedSource {
  static __device__ __forceinline__ i64 group_entry(int /*N*/, int groups, int g, int n) {
    return static_cast<i64>(n) * groups + g;
  }
};

__device__ __forceinline__ int pack_round_up(int a, int b) { return (a + b - 1) / b * b; }

// Word `index` of qweight: its tile, lane and word number, then the bits of the lane's values
// that land in that word.
template <class Source, int kBits>
__device__ __forceinline__ void write_qweight_word(const void* src_q, const int* perm, u32* qweight, int N,
                                                   int K, i64 index) {
  constexpr int kV = kBits % 4 == 0 ? 4 : kBits == 2 ? 2 : 1;  // a tile is [kBits/kV][32 lanes][kV]
  constexpr int kTileWords = 32 * kBits;
  constexpr u32 kMask = (1u << kBits) - 1;
  const int chunks = pack_round_up(K, 128) / 128;
  if (index >= static_cast<i64>(pack_round_up(N, 8) / 8) * chunks * kTileWords) return;
  const i64 tile_chunk = index / kTileWords;  // chunk-major: chunk · tiles + tile
  const int tiles = pack_round_up(N, 8) / 8;
  const int in_tile = static_cast<int>(index % kTileWords);
  const int lane = (in_tile / kV) % 32;
  const int w = in_tile / (32 * kV) * kV + in_tile % kV;
  const int n = static_cast<int>(tile_chunk % tiles) * 8 + lane / 4;
  const int k0 = static_cast<int>(tile_chunk / tiles) * 128 + 32 * (lane % 4);
  u32 word = 0;
  if (n < N) {
#pragma unroll
    for (int e = 0; e < 32; ++e) {
      if (!value_touches_word<kBits>(e, w) || k0 + e >= K) continue;
      // Act-order: packed position k0 + e holds source feature perm[k0 + e] (outside [0, K): a g_idx
      // that pack() would refuse left that slot unfilled; it packs as 0).
      const int k = perm ? __ldg(perm + k0 + e) : k0 + e;
      if (static_cast<unsigned>(k) >= static_cast<unsigned>(K)) continue;
      const u32 v = Source::template value<kBits>(src_q, N, K, n, k) & kMask;
#pragma unroll
      for (int b = 0; b < kBits; ++b) {
        const PackLaneBit lb = pack_lane_bit<kBits>(e, b);
        if (lb.word == w) word |= ((v >> b) & 1u) << lb.shift;
      }
    }
  }
  qweight[index] = word;
}

// Entry `index` of [G_pad][N_pad]: the scale and zero point of (group, column), zero in the padding.
template <class Source, int kBits>
__device__ __forceinline__ void write_group_entry(const u16* src_scales, const void* src_zeros, u16* scales,
                                                  void* zeros, int N, int groups, int groups_pad, int zero_kind,
                                                  int zero_offset, i64 index) {
  const int n_pad = pack_round_up(N, 8);
  if (index >= static_cast<i64>(groups_pad) * n_pad) return;
  const int g = static_cast<int>(index / n_pad);
  const int n = static_cast<int>(index % n_pad);
  const bool inside = g < groups && n < N;
  const i64 src = Source::group_entry(N, groups, g, n);
  scales[index] = inside ? src_scales[src] : u16(0);
  if (zero_kind == kPackIntZeros) {
    const u32 z = inside ? Source::template int_zero<kBits>(src_zeros, N, g, n) + zero_offset : 0u;
    static_cast<u8*>(zeros)[index] = static_cast<u8>(z);
  } else if (zero_kind == kPackFloatZeros) {
    static_cast<u16*>(zeros)[index] = inside ? static_cast<const u16*>(src_zeros)[src] : u16(0);
  }
}

template <class Source, int kBits>
__global__ void __launch_bounds__(kPackThreads)
    wq_pack_kernel(const void* __restrict__ src_q, const void* __restrict__ src_zeros,
                   const u16* __restrict__ src_scales, const int* __restrict__ perm,
                   u32* __restrict__ qweight, u16* __restrict__ scales, void* __restrict__ zeros, int N,
                   int K, int groups, int groups_pad, int zero_kind, int zero_offset,
                   unsigned qweight_blocks) {
  static_assert(kBits == 1 || kBits == 2 || kBits == 3 || kBits == 4 || kBits == 8, "1, 2, 3, 4 or 8 bits");
  if (blockIdx.x < qweight_blocks) {
    const i64 index = static_cast<i64>(blockIdx.x) * kPackThreads + threadIdx.x;
    write_qweight_word<Source, kBits>(src_q, perm, qweight, N, K, index);
  } else {
    const i64 index = static_cast<i64>(blockIdx.x - qweight_blocks) * kPackThreads + threadIdx.x;
    write_group_entry<Source, kBits>(src_scales, src_zeros, scales, zeros, N, groups, groups_pad, zero_kind,
                                     zero_offset, index);
  }
}

// Act-order: perm [K] from g_idx [K], the stable sort of the input features by group that pack()
// computes: group g's features, in increasing k, fill perm[g·G .. g·G + G). One warp per group scans
// g_idx 32 features at a time (a ballot ranks its hits); slots a bad g_idx leaves unfilled get −1,
// which the packer and the GEMM's permutation read as zero.
__global__ void __launch_bounds__(kPackThreads)
    wq_pack_perm_kernel(const int* __restrict__ g_idx, int* __restrict__ perm, int K, int group_size) {
  const int g = static_cast<int>((static_cast<i64>(blockIdx.x) * kPackThreads + threadIdx.x) / 32);
  const int lane = threadIdx.x % 32;
  if (g >= K / group_size) return;  // the whole warp
  int filled = 0;
  for (int k0 = 0; k0 < K; k0 += 32) {
    const int k = k0 + lane;
    const bool hit = k < K && __ldg(g_idx + k) == g;
    const unsigned hits = __ballot_sync(0xffffffffu, hit);
    const int rank = filled + __popc(hits & ((1u << lane) - 1u));
    if (hit && rank < group_size) perm[static_cast<i64>(g) * group_size + rank] = k;
    filled += __popc(hits);
  }
  for (int r = filled + lane; r < group_size; r += 32) perm[static_cast<i64>(g) * group_size + r] = -1;
}

}  // namespace lowbit::kern

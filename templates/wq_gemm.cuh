// wq_gemm: y[M,N] = x[M,K] · dequant(Wq)[N,K]ᵀ (+ bias), fused dequantization + tensor-core MMA.
//
// | arg      | dtype        | shape                          | layout / packing                           |
// |----------|--------------|--------------------------------|--------------------------------------------|
// | qweight  | uint4 (16 B) | [N_pad/8][K_pad/128][32]       | one 16 B fragment per lane per (8 n, 128 k) |
// |          |              |                                | tile; see include/lowbit/pack.hpp           |
// | scales   | f16/bf16     | [K_pad/G][N_pad]               | row-major; one row for per-channel          |
// | zeros    | uint8        | [K_pad/G][N_pad]               | integer zero points (kHasZeros)             |
// | x        | f16/bf16     | [M][K]                         | row-major, 16 B aligned                     |
// | bias     | f16/bf16     | [N]                            | or null                                     |
// | y        | f16/bf16/f32 | [M][N]                         | row-major                                   |
// | ws       | f32          | [M][N]                         | split-K partial sums; zero on entry & exit  |
// | counters | u32          | [grid.x · grid.z]              | split-K arrival counters; zero on entry/exit|
//
// Decomposition: grid = (N tiles / (kNTiles·kWarpsN), kSplitK, ceil(M / (16·kMTiles))). Each warp
// owns kNTiles 8-column tiles and kMTiles 16-row tiles; the kWarpsK warps that share columns take
// interleaved 128-wide K chunks and are summed through shared memory. With kSplitK > 1 the blocks
// along K add their partial tiles into ws with fp32 atomics; the last block to arrive (counted per
// output tile) reads the sums back, clearing them, and writes y. No state survives a call.
//
// K order: inside a 128-wide chunk, lane t's A and B fragments both cover k = 32t + 8p + e; the MMA
// sums over k, so this permutation of k (the same on both sides) changes nothing but lets every
// lane load its activations with 16-byte loads.
#pragma once
#include "common/dequant.cuh"
#include "common/mma.cuh"
#include "common/ptx.cuh"
#include "common/types.cuh"

namespace lowbit::kern {

template <int kBits, int kGroup, int kN, int kK, int kMTiles, int kNTiles, int kWarpsN, int kWarpsK, int kSplitK,
          bool kBf16, bool kOutF32, bool kHasZeros>
__global__ void __launch_bounds__(kWarpsN* kWarpsK * 32)
    wq_gemm_kernel(const uint4* __restrict__ qweight, const u16* __restrict__ scales, const u8* __restrict__ zeros,
                   const u16* __restrict__ x, const u16* __restrict__ bias, void* __restrict__ y,
                   float* __restrict__ ws, u32* __restrict__ counters, int M) {
  static_assert(kBits == 4, "this version packs 4-bit weights only");
  static_assert(kGroup == 0 || (kGroup % 32 == 0 && (kGroup <= 128 ? 128 % kGroup == 0 : kGroup % 128 == 0)),
                "group size must be 32, 64, 128, a multiple of 128, or 0 (per channel)");
  constexpr int kNPad = (kN + 7) / 8 * 8;
  constexpr int kTilesTotal = kNPad / 8;
  constexpr int kKPad = (kK + 127) / 128 * 128;
  constexpr int kChunks = kKPad / 128;
  constexpr int kChunksPerSplit = (kChunks + kSplitK - 1) / kSplitK;
  constexpr int kBlockTiles = kNTiles * kWarpsN;

  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int wn = warp % kWarpsN;
  const int wk = warp / kWarpsN;
  const int g = lane >> 2;  // MMA group: B column / A row within the tile
  const int t = lane & 3;   // MMA thread-in-group: selects the k slice
  const int tile0 = (blockIdx.x * kWarpsN + wn) * kNTiles;
  const int m0 = blockIdx.z * (kMTiles * 16);
  const int c_begin = blockIdx.y * kChunksPerSplit;
  const int c_end = min(kChunks, c_begin + kChunksPerSplit);

  float acc[kMTiles][kNTiles][4];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[mt][nt][r] = 0.f;

  // Rows this lane feeds into the A fragments: m0 + 16·mt + g (+8).
  const u16* xrow[kMTiles][2];
  bool row_ok[kMTiles][2];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + mt * 16 + g + 8 * h;
      row_ok[mt][h] = row < M;
      xrow[mt][h] = x + static_cast<i64>(row_ok[mt][h] ? row : 0) * kK;
    }

  auto load_weights = [&](int c, uint4 (&dst)[kNTiles]) {
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
      const int tile = tile0 + nt;
      dst[nt] = tile < kTilesTotal ? ld_stream_v4(qweight + (static_cast<i64>(tile) * kChunks + c) * 32 + lane)
                                   : make_uint4(0, 0, 0, 0);
    }
  };

  uint4 next[kNTiles];
  int c = c_begin + wk;
  if (c < c_end) load_weights(c, next);
  for (; c < c_end; c += kWarpsK) {
    uint4 cur[kNTiles];
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) cur[nt] = next[nt];
    if (c + kWarpsK < c_end) load_weights(c + kWarpsK, next);  // keep the next chunk in flight

    // One scale (and zero) per lane per tile: lane t's 32 k values never straddle a group.
    const int group = kGroup == 0 ? 0 : (c * 128 + 32 * t) / kGroup;
    u32 s2[kNTiles], zb2[kNTiles];
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
      const int n = min(tile0 + nt, kTilesTotal - 1) * 8 + g;
      const i64 idx = static_cast<i64>(group) * kNPad + n;
      s2[nt] = splat2(ld_cached_u16(scales + idx));
      zb2[nt] = biased_zero2<kBf16>(kHasZeros ? ld_cached_u8(zeros + idx) : (1u << (kBits - 1)));
    }

#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const int kk = c * 128 + 32 * t + 8 * p;
      uint4 xa[kMTiles][2];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          xa[mt][h] = (row_ok[mt][h] && kk < kK) ? ld_cached_v4(xrow[mt][h] + kk) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int hs = 0; hs < 2; ++hs) {  // MMA steps 2p and 2p+1
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt) {
          const u32 w = word(cur[nt], p);
          const u32 b0 = sub_mul2<kBf16>(int4_pair<kBf16>(w, 2 * hs), zb2[nt], s2[nt]);
          const u32 b1 = sub_mul2<kBf16>(int4_pair<kBf16>(w, 2 * hs + 1), zb2[nt], s2[nt]);
#pragma unroll
          for (int mt = 0; mt < kMTiles; ++mt) {
            mma_16816<kBf16>(acc[mt][nt], word(xa[mt][0], 2 * hs), word(xa[mt][1], 2 * hs),
                             word(xa[mt][0], 2 * hs + 1), word(xa[mt][1], 2 * hs + 1), b0, b1);
          }
        }
      }
    }
  }

  // Sum the kWarpsK partial tiles of each column group through shared memory.
  if constexpr (kWarpsK > 1) {
    constexpr int kRegs = kMTiles * kNTiles * 4;
    __shared__ float red[kWarpsK - 1][kWarpsN][kRegs][32];
    if (wk > 0) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
          for (int r = 0; r < 4; ++r) red[wk - 1][wn][(mt * kNTiles + nt) * 4 + r][lane] = acc[mt][nt][r];
    }
    __syncthreads();
    if (wk == 0) {
#pragma unroll
      for (int j = 0; j < kWarpsK - 1; ++j)
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
          for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[mt][nt][r] += red[j][wn][(mt * kNTiles + nt) * 4 + r][lane];
    }
  }

  // Epilogue: element (mt, nt, r) is row m0 + 16·mt + g + 8·(r/2), column 8·tile + 2t + r%2.
  auto store = [&](int row, int col, float v) {
    if (bias != nullptr) v += to_f32<kBf16>(bias[col]);
    if constexpr (kOutF32) static_cast<float*>(y)[static_cast<i64>(row) * kN + col] = v;
    else static_cast<u16*>(y)[static_cast<i64>(row) * kN + col] = from_f32<kBf16>(v);
  };
  auto for_each_output = [&](auto&& fn) {
    if (wk != 0) return;
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int row = m0 + mt * 16 + g + 8 * (r >> 1);
          const int col = (tile0 + nt) * 8 + 2 * t + (r & 1);
          if (row < M && col < kN) fn(row, col, acc[mt][nt][r]);
        }
  };

  if constexpr (kSplitK == 1) {
    for_each_output(store);
  } else {
    for_each_output([&](int row, int col, float v) { atomicAdd(ws + static_cast<i64>(row) * kN + col, v); });
    __threadfence();  // our partial sums are visible device-wide before we count ourselves in
    __syncthreads();
    __shared__ u32 is_last;
    const int tile_id = blockIdx.z * gridDim.x + blockIdx.x;
    if (threadIdx.x == 0) is_last = atomicAdd(counters + tile_id, 1u) == kSplitK - 1;
    __syncthreads();
    if (is_last) {
      __threadfence();
      // atomicExch reads the complete sum from L2 and leaves the workspace zeroed for the next call.
      for_each_output([&](int row, int col, float) {
        store(row, col, atomicExch(ws + static_cast<i64>(row) * kN + col, 0.f));
      });
      if (threadIdx.x == 0) counters[tile_id] = 0;
    }
  }
}

}  // namespace lowbit::kern

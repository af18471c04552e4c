// wq_gemm: y[M,N] = x[M,K] · dequant(Wq)[N,K]ᵀ (+ bias), fused dequantization + tensor-core MMA.
//
// | arg      | dtype        | shape                          | layout / packing                           |
// |----------|--------------|--------------------------------|--------------------------------------------|
// | qweight  | u32          | [K_pad/128][N_pad/8][bits·32]  | bits words per lane per (8 n, 128 k) tile;  |
// |          |              |                                | see include/lowbit/pack.hpp                 |
// | scales   | f16/bf16     | [K_pad/G][N_pad]               | row-major; one row for per-channel          |
// | zeros    | u8 / f16/bf16| [K_pad/G][N_pad]               | integer (mode 0) or float (2, 3) zeros      |
// | x        | f16/bf16     | [M][K]                         | row-major, 16 B aligned; act-order layers:  |
// |          |              |                                | permuted first (wq_permute_x.cuh)           |
// | bias     | f16/bf16     | [N]                            | or null                                     |
// | y        | f16/bf16/f32 | [M][N]                         | row-major                                   |
// | ws       | f32          | [M][N] or [kSplitK][M][N]      | split-K sums: atomic, zero on entry & exit; |
// |          |              |                                | deterministic: one slice per split, zero on |
// |          |              |                                | entry & exit too                            |
// | counters | u32          | [grid.x · grid.z]              | split-K arrival counters; zero on entry/exit|
//
// Decomposition: grid = (N tiles / (kNTiles·kWarpsN), kSplitK, ceil(M / (16·kMTiles))). Each warp
// owns kNTiles 8-column tiles and kMTiles 16-row tiles; the kWarpsK warps that share columns take
// interleaved 128-wide K chunks and are summed through shared memory. With kSplitK > 1 the blocks
// along K add their partial tiles into ws with fp32 atomics; the last block to arrive (counted per
// output tile) reads the sums back, clearing them, and writes y. With kDeterministic each block
// stores its partial tile in its own slice and the last block adds the slices in split order.
// On sm_90 a split of 2..8 pieces (kClusterK) is one thread-block cluster instead, which adds the
// pieces in rank 0's shared memory, in split order: no workspace, no atomics (below, at the end).
// No state survives a call.
//
// Streaming: each warp keeps kStages − 1 chunks of its weights in flight with cp.async into its own
// slice of shared memory. Its activations come into registers (with one full 16-row tile a chunk
// ahead, otherwise at the top of each chunk, before the wait for its weights) or, with kXShared,
// through shared memory (below). A lane reads back only its own weight fragment, but the scale and
// zero rows are copied by a few lanes and read by all: a __syncwarp after each wait (their copies are
// visible) and before each refill (every lane is done with the slot) orders them; no block barrier
// is needed.
//
// Block-shared activations (kXShared): each step's activations (the block's rows × the kWarpsK
// chunks of the step) are copied into a shared-memory stage with cp.async, in the same ring depth as
// the weights, and the warps read their A (or, swapped, B) fragments there, so activations cross
// L2 → SM once per group of warps that use them, not once per warp. The kWarpsN warps side by side
// that take the same chunks (one wk) copy their chunk's activations with their weights and
// synchronize only among themselves (one warp: __syncwarp; more: a named barrier per group): the
// activations arrive kStages − 1 chunks ahead, as the weights do, without registers held for them or
// a block barrier. With one warp along K (the group is the block) the block copies the step and
// steps under one __syncthreads per step.
//
// Scales: in the integer modes with groups of ≥ 128 (one group per chunk) or per-channel scales,
// the MMA runs on q − z ((q − z)/64 for bf16 4/8-bit, dequant.cuh's LinearBf16, the scale then × 64)
// and the scale multiplies the fp32 partial sum of the chunk (per channel: once, at the end); with
// smaller groups, in the float-zero modes and with fp16 accumulation
// (kAccF16: each chunk's MMAs sum in fp16, then into the fp32 accumulators), every weight pair is
// dequantized completely before the MMA.
//
// Deterministic mode fixes everything that orders the fp32 sums of one output (two MMA chains, no
// operand swap, split-K in split order), so the result of a row does not depend on M.
//
// Chained calls (kChain, WqGemmPlanOptions::overlap_previous; sm_90, launched with programmatic stream
// serialization): the kernel lets the next kernel in the stream launch at once, issues its first
// chunk's weight, scale and zero copies, and only then waits for the previous kernel (which may still
// be running) before its activation copies and so before anything it writes. The host gives each
// block the shared memory of 1 / ceil(blocks / SMs) of an SM, so the next call's early blocks can only
// take the slots this call's blocks leave (H200 back to back: 4-18 % faster per call; without that
// cap up to 45 % slower, the next grid piling onto the SMs that finish first; docs/perf-notes.md,
// thirty-fourth session). With a pre-kernel (x_sums; act-order's permutation) the pre-kernel is the
// chained one: it waits for the previous call in every block before it reads x or writes its buffer,
// and this kernel, launched as its dependent, waits for it (so for both) at the same point. Act-order
// layers run this kernel in unchained calls too, as the permutation's dependent (wq::overlaps_permutation):
// its first weights stream while the permutation runs.
//
// K order: inside a 128-wide chunk, lane t's A and B fragments both cover k = 32t + 8p + e; the MMA
// sums over k, so this permutation of k (the same on both sides) changes nothing but lets every
// lane load its activations with 16-byte loads.
#pragma once
#include "common/cluster.cuh"
#include "common/cp_async.cuh"
#include "common/dequant.cuh"
#include "common/grid_dependency.cuh"
#include "common/mma.cuh"
#include "common/ptx.cuh"
#include "common/types.cuh"

namespace lowbit::kern {

// fn(mt, q, r) for every accumulator element. Inlined and unrolled, so the indices stay
// compile-time constants and the accumulators stay in registers.
template <int kM, int kN, class Fn>
__device__ __forceinline__ void for_each_acc(Fn&& fn) {
#pragma unroll
  for (int mt = 0; mt < kM; ++mt)
#pragma unroll
    for (int q = 0; q < kN; ++q)
#pragma unroll
      for (int r = 0; r < 4; ++r) fn(mt, q, r);
}

// The lane's kBits words of one tile from shared memory: [kBits / V][32 lanes][V words]; the tile
// starts kTileOff bytes after `lane_addr`, the address of the lane's first vector in tile 0.
template <int kBits, int kTileOff>
__device__ __forceinline__ void load_fragment(u32 lane_addr, u32 (&w)[kBits]) {
  constexpr int kV = kBits % 4 == 0 ? 4 : kBits == 2 ? 2 : 1;
  static_for<kBits / kV>([&](auto v_c) {
    constexpr int v = decltype(v_c)::value;
    constexpr int kOff = kTileOff + v * 32 * kV * 4;
    if constexpr (kV == 4) {
      const uint4 q = ld_shared_v4<kOff>(lane_addr);
      w[4 * v] = q.x, w[4 * v + 1] = q.y, w[4 * v + 2] = q.z, w[4 * v + 3] = q.w;
    } else if constexpr (kV == 2) {
      const uint2 q = ld_shared_v2<kOff>(lane_addr);
      w[2 * v] = q.x, w[2 * v + 1] = q.y;
    } else {
      w[v] = ld_shared_u32<kOff>(lane_addr);
    }
  });
}

// Stores one output (+ bias) in y's dtype.
template <int kN, bool kOutF32, bool kBf16>
__device__ __forceinline__ void store_output(int row, int col, float v, const u16* __restrict__ bias,
                                             void* __restrict__ y) {
  if (bias != nullptr) v += to_f32<kBf16>(bias[col]);
  if constexpr (kOutF32)
    static_cast<float*>(y)[static_cast<i64>(row) * kN + col] = v;
  else
    static_cast<u16*>(y)[static_cast<i64>(row) * kN + col] = from_f32<kBf16>(v);
}

// One piece of an output tile whose sums over K come in `arrivals` pieces (split K, stream K): the
// piece is added atomically into one fp32 slice of the workspace or, with kSlices > 1
// (deterministic), stored into slice `slice`. The last piece to arrive (counted in counters[tile_id])
// reads the complete sums, writes y and zeroes what it read, so the workspace is all zeros between
// calls whatever M each call has (the counters of a later, larger M overlap where these sums were).
// Called by every thread of a group that `sync()` synchronizes; `leader` is one thread of it.
template <int kN, int kSlices, bool kOutF32, bool kBf16, class ForEachOutput, class Sync>
__device__ __forceinline__ void add_tile_piece(ForEachOutput&& for_each_output, const u16* __restrict__ bias,
                                               void* __restrict__ y, float* __restrict__ ws,
                                               u32* __restrict__ counters, int M, int tile_id, u32 arrivals,
                                               int slice_index, bool leader, Sync&& sync) {
  auto slice = [&](i64 sp, int row, int col) { return ws + (sp * M + row) * kN + col; };
  for_each_output([&](int row, int col, float v) {
    if constexpr (kSlices > 1)
      __stcg(slice(slice_index, row, col), v);
    else
      atomicAdd(slice(0, row, col), v);
  });
  // The group's partial sums are ordered before the leader's count by the barrier, and the count
  // releases them (and, for the last piece, acquires the others', which the second barrier passes on
  // to the whole group). Only the leader fences, as acq_rel: with a __threadfence (fence.sc) in every
  // thread, before the count and again in the last piece, these splits ran 0.2-0.5 µs slower on the
  // H200. The rest of their cost (~3 µs over no reduction at all: the adds' round trip to L2, the
  // count's, the last piece's reads) is why sm_90 meets in a cluster instead (kClusterK).
  sync();
  __shared__ u32 is_last;
  if (leader) is_last = atom_add_acq_rel_u32(counters + tile_id, 1u) == arrivals - 1;
  sync();
  if (is_last) {
    // Read every complete sum from L2 first (.cg skips L1; the loads are independent, so they are
    // all in flight at once — an atomicExch per element would wait a round trip each); the
    // deterministic slices are added in split order, whichever piece arrived last.
    for_each_output([&](int row, int col, float& v) {
      v = __ldcg(slice(0, row, col));
#pragma unroll
      for (int sp = 1; sp < kSlices; ++sp) v += __ldcg(slice(sp, row, col));
    });
    for_each_output([&](int row, int col, float v) {
      store_output<kN, kOutF32, kBf16>(row, col, v, bias, y);
#pragma unroll
      for (int sp = 0; sp < kSlices; ++sp) __stcg(slice(sp, row, col), 0.f);
    });
    if (leader) counters[tile_id] = 0;
  }
}

// Writes a thread's outputs: for_each_output(fn) calls fn(row, col, v) for every output the thread
// holds with row < M and col < kN (v by reference: fn may replace it). Called by every thread of the
// block (the split-K arrival count has barriers). Split K: every block leaves its partial tile in the
// workspace (add_tile_piece; the kSplitK blocks of a tile count their arrivals). No state survives a
// call.
template <int kN, int kSplitK, bool kDeterministic, bool kOutF32, bool kBf16, class ForEachOutput>
__device__ __forceinline__ void write_outputs(ForEachOutput&& for_each_output, const u16* __restrict__ bias,
                                              void* __restrict__ y, float* __restrict__ ws,
                                              u32* __restrict__ counters, int M) {
  if constexpr (kSplitK == 1) {
    for_each_output(
        [&](int row, int col, float v) { store_output<kN, kOutF32, kBf16>(row, col, v, bias, y); });
  } else {
    add_tile_piece<kN, kDeterministic ? kSplitK : 1, kOutF32, kBf16>(
        for_each_output, bias, y, ws, counters, M, blockIdx.z * gridDim.x + blockIdx.x, kSplitK, blockIdx.y,
        threadIdx.x == 0, [] { __syncthreads(); });
  }
}

// Per-channel zero point and scale of column `at` (kGroup == 0; with groups the dequant takes them
// from shared memory and these give the unused defaults): the zero as an integer (or, for the
// float-zero modes, an act-dtype pair; symmetric: the fixed midpoint), the scale as a pair when it
// is applied before the MMA (kPreScale), else 0. Read once: they do not change along K.
template <int kBits, int kGroup, int kMode>
__device__ __forceinline__ u32 channel_zero(const void* zeros, int at) {
  constexpr bool kFloatZeros = kMode >= 2;
  if constexpr (kGroup != 0 || kMode == 1)
    return kFloatZeros ? 0u : (1u << (kBits - 1));
  else if constexpr (kFloatZeros)
    return splat2(ld_cached_u16(static_cast<const u16*>(zeros) + at));
  else
    return static_cast<u32>(ld_cached_u8(static_cast<const u8*>(zeros) + at));
}
template <int kGroup, bool kPreScale>
__device__ __forceinline__ u32 channel_scale(const u16* scales, int at) {
  return kGroup == 0 && kPreScale ? splat2(ld_cached_u16(scales + at)) : 0u;
}

template <int kBits, int kGroup, int kN, int kK, int kMTiles, int kNTiles, int kWarpsN, int kWarpsK,
          int kSplitK, int kStages, bool kUpperRows, bool kOneRow, bool kBf16, bool kOutF32, int kMode,
          bool kDeterministic, bool kXShared, bool kAccF16, bool kXSums, bool kChain = false>
__global__ void __launch_bounds__(kWarpsN* kWarpsK * 32)
    wq_gemm_kernel(const u32* __restrict__ qweight, const u16* __restrict__ scales,
                   const void* __restrict__ zeros, const u16* __restrict__ x, const u16* __restrict__ bias,
                   void* __restrict__ y, float* __restrict__ ws, u32* __restrict__ counters, int M,
                   const float* __restrict__ xsums) {
  static_assert(kBits == 1 || kBits == 2 || kBits == 3 || kBits == 4 || kBits == 8, "1, 2, 3, 4 or 8 bits");
  static_assert(kMode >= 0 && kMode <= 3, "DequantMode 0..3");
  static_assert(kGroup == 0 || (kGroup % 32 == 0 && (kGroup <= 128 ? 128 % kGroup == 0 : kGroup % 128 == 0)),
                "group size must be 32, 64, 128, a multiple of 128, or 0 (per channel)");
  static_assert(kStages >= 2, "at least one chunk in flight");
  static_assert(kUpperRows || kMTiles == 1, "rows 8..15 may be skipped only with one 16-row tile");
  static_assert(!kOneRow || !kUpperRows, "a one-row kernel skips rows 8..15");
  static_assert(!(kAccF16 && kBf16), "bf16 MMAs accumulate in fp32 only");
  constexpr int kNPad = (kN + 7) / 8 * 8;
  constexpr int kTilesTotal = kNPad / 8;
  constexpr int kKPad = (kK + 127) / 128 * 128;
  constexpr int kChunks = kKPad / 128;
  constexpr int kChunksPerSplit = (kChunks + kSplitK - 1) / kSplitK;
  // The K split's pieces meet in a thread-block cluster (1, kSplitK, 1) on sm_90 and later, up to the
  // portable cluster size: the host's wq::mma_cluster_split, which launches the clusters. Through the
  // workspace (write_outputs) the H200 paid 2-11 µs per call for it (docs/perf-notes.md, fortieth
  // session), so no shipped config split K.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr bool kClusterK = kSplitK >= 2 && kSplitK <= 8;
#else
  constexpr bool kClusterK = false;
#endif
  constexpr int kHalves = kUpperRows ? 2 : 1;  // 8-row halves of each 16-row tile that can hold rows
  constexpr bool kIntMode = kMode <= 1;        // (q − z)·s with an integer (or fixed) z
  constexpr bool kFloatZeros = kMode >= 2;     // zeros are act dtype
  constexpr bool kHasZeros = kMode != 1;
  // A and B swap roles (outside deterministic mode, with an even number of tiles): two 8-column
  // weight tiles form the 16-row A operand and each 8-row slice of the activations is a B operand
  // (one up to 8 rows, two per 16-row tile above), so every dequantized weight pair feeds all the
  // slices straight from the registers the dequantization wrote, and the B pairs are the halves of
  // the activations' 16-byte loads; unswapped, the A quads of the activations had to be assembled
  // from two rows' loads with a register move per word and MMA (ptxas copied them per tile: ~120 of
  // 748 SASS instructions per chunk at 16 rows). Up to 8 rows the swap also halves the MMAs (no
  // wasted rows). Accumulator (b, q, r) is then column 8·(tile0 + 2q + r/2) + g and row
  // 8·b + 2t + r%2 (b = 2·mt + h: 8-row slice h of 16-row tile mt); otherwise (mt, q, r) is row
  // 16·mt + g + 8·(r/2) and column 8·(tile0 + q) + 2t + r%2. From 16 rows only with block-shared
  // activations: with the activations in registers (kPrefetchX and its kin) the swap measured 16-29 %
  // slower on the H200 (W2 8192² M = 16: 14.95 → 19.25 µs), so those configs keep the A/B roles.
  constexpr bool kSwap = kNTiles % 2 == 0 && !kDeterministic && (!kUpperRows || kXShared);
  // Accumulator tiles per warp (16 × 8 each; swapped, 8 × 16): kAccM · kAccN below.
  constexpr int kAccTiles = kSwap ? kMTiles * kHalves * kNTiles / 2 : kMTiles * kNTiles;
  // One scale per lane per chunk (per channel: once, at the end). Not for groups with more than 8
  // accumulator tiles of block-shared activations: the chunk's partial sums would double the
  // accumulator registers (the weights are then scaled in 16 bits before the MMA, so outside
  // deterministic mode a row's rounding may differ between configs).
  // fp16 accumulation (kAccF16) always scales first: the chunk's fp16 sums then stay in the range of
  // the outputs, where sums of unscaled q − z could overflow.
  constexpr bool kScaleAfter =
      !kAccF16 && kIntMode &&
      (kGroup == 0 || (kGroup >= 128 && !(kXShared && !kDeterministic && kAccTiles > 8)));
  constexpr bool kScaleAtEnd = kScaleAfter && kGroup == 0;  // one per column for all of K
  // The MMAs of a chunk sum into `part` (then scaled, or just added, into the fp32 accumulators):
  // for a scale per chunk, and for fp16 accumulation, whose error this bounds to one chunk.
  constexpr bool kChunkSums = (kScaleAfter && !kScaleAtEnd) || kAccF16;
  // With the scale after the MMA the zero can come after it too: the MMA runs on base + q (mask-ors,
  // no subtraction) and the chunk's sum sheds (base + z)·Σx, Σx coming from one more MMA per step
  // against ones. Swapped, each pair keeps the base its position reads in place (InPlace in
  // dequant.cuh: a shift per word, not per pair), and the upper 8 A rows of that MMA hold the bases,
  // so its accumulator elements 2, 3 are Σ base·x and 0, 1 Σx. Not for 8-bit bf16 (base + q does
  // not fit bf16). 4-bit only with the sums precomputed (kXSums, swapped): its dequantization folds
  // the zero in with one op per pair (bf16 since the seventy-fifth session, dequant.cuh's
  // LinearBf16), and trading those for the Σ MMAs and the per-output fix-up measured 0 to 5 % slower
  // in fp16 on the H100 (M = 1 flat; 16 rows with 4 tiles, and 64 rows, slower) and in bf16 on the
  // H200 4-10 % at 16 rows, 0.5-4 % at one row (docs/perf-notes.md, § 75.3); without the Σ MMAs fp16
  // reads both nibbles of each byte in place (bases 1024 and 64) and drops the four f16x2 ops per
  // word (thirtieth session section 9).
  //
  // fp16 8-bit folds the zero in too where a warp holds 32 rows or more (outside deterministic mode,
  // whose M buckets must round alike, and swapped x_sums configs, whose sums cost no MMAs): the Σ MMAs are 2
  // per 8-row slice and step, so a 32-row warp of 4 tiles ran 24 MMAs a step where 16 do the work, in
  // a loop its MMAs bound, and the fold costs one HSUB2 a pair. H200, (2,4,1,4,1,2) staged, 0.82-0.94×
  // at 64 rows on 12 layers, 0.87-1.00× at 32 rows; with 16-row warps the fold ran 0.95-1.03× (probe
  // WQ_FOLD, docs/perf-notes.md § 76.4).
  constexpr int kWarpRows = kMTiles * kHalves * 8;
  constexpr bool kFoldEightBit = kBits == 8 && kWarpRows >= 32 && !kDeterministic && !(kXSums && kSwap);
  constexpr bool kZeroAfter = kScaleAfter && !kScaleAtEnd && !(kBits == 8 && (kBf16 || kFoldEightBit)) &&
                              !(kBits == 4 && !(kXSums && kSwap));
  // (Where every position needs its own shift anyway, bf16 4-bit and fp16 8-bit, the bases are all
  // the magic one and the plain Σx path stays.)
  constexpr bool kInPlaceBases = kZeroAfter && kSwap && !InPlace<kBits, kBf16>::kUniform;
  // kXSums (WqGemmConfig::x_sums): the chunk's Σx and Σ base·x come from wq_x_sums_kernel, launched
  // just before (xsums: [chunks][rows of the grid][Σx, Σ base·x]), instead of the Σ MMAs: every
  // column block used to compute the same sums. Only where the zero comes after the MMA with swapped
  // operands; elsewhere the flag changes nothing.
  constexpr bool kSumsIn = kXSums && kZeroAfter && kSwap;
  constexpr float kBase = kBf16 ? 128.f : 1024.f;  // the magic base of dequant.cuh
  // The pairs' missing factor (dequant_pairs; the zero-after path's raw pairs miss none).
  constexpr float kPostScale = kZeroAfter ? 1.f : PostScale<kBits, kBf16>::kFactor;
  constexpr u32 kOne2 = kBf16 ? 0x3f803f80u : 0x3c003c00u;
  constexpr int kV = kBits % 4 == 0 ? 4 : kBits == 2 ? 2 : 1;  // words per fragment load
  constexpr int kTileWords = 32 * kBits;                       // one (8 n, 128 k) tile
  const u8* zeros8 = static_cast<const u8*>(zeros);
  const u16* zeros16 = static_cast<const u16*>(zeros);
  constexpr int kBTiles = kMTiles * kHalves;        // swapped: 8-row B slices
  constexpr int kAccM = kSwap ? kBTiles : kMTiles;  // accumulator row blocks
  constexpr int kAccN = kSwap ? kNTiles / 2 : kNTiles;

  extern __shared__ uint4 smem[];
  // kClusterK: this block has started (the first phase of the cluster barrier, waited for at the end,
  // before another block writes into this one's shared memory).
  if constexpr (kClusterK) cluster_arrive_relaxed();
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int wn = warp % kWarpsN;
  const int wk = warp / kWarpsN;
  const int g = lane >> 2;  // MMA group: B column / A row within the tile
  const int t = lane & 3;   // MMA thread-in-group: selects the k slice
  const int tile0 = (blockIdx.x * kWarpsN + wn) * kNTiles;
  const int m0 = blockIdx.z * (kMTiles * 16);
  const int c_begin = blockIdx.y * kChunksPerSplit + wk;
  const int c_end = min(kChunks, (static_cast<int>(blockIdx.y) + 1) * kChunksPerSplit);
  const int n_chunks = c_begin < c_end ? (c_end - c_begin + kWarpsK - 1) / kWarpsK : 0;  // this warp's
  // kXShared: the block steps through its K range kWarpsK chunks at a time (warp wk takes chunk wk).
  const int cb0 = c_begin - wk;
  const int n_steps = cb0 < c_end ? (c_end - cb0 + kWarpsK - 1) / kWarpsK : 0;

  float acc[kAccM][kAccN][4], acc_odd[kAccM][kAccN][4];  // odd MMA steps: a second chain
  // ... except with many tiles of block-shared activations, where the registers matter more (there
  // is enough independent work); deterministic mode keeps two chains in every config.
  constexpr int kAccChains = kXShared && kAccM * kAccN >= 8 && !kDeterministic ? 1 : 2;
  for_each_acc<kAccM, kAccN>([&](int mt, int q, int r) { acc[mt][q][r] = acc_odd[mt][q][r] = 0.f; });

  // Rows this lane feeds into the A (swapped: B) fragments: m0 + 16·mt + g (+8).
  const u16* xrow[kMTiles][kHalves];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int h = 0; h < kHalves; ++h) {
      const int row = m0 + mt * 16 + g + 8 * h;
      xrow[mt][h] = x + static_cast<i64>(row < M ? row : 0) * kK;
    }
  // Activations of chunk c, step pair p (k = 128c + 32t + 8p .. +7) for every row this lane feeds.
  // Rows past M read row 0 instead (xrow is clamped): an output row depends only on its own
  // activation row and those rows are never stored, so no predicate is needed. Past K the values
  // must be zeros (the padded weights dequantize to −z·s, not 0); with K a multiple of 128 there is
  // no such tail.
  constexpr bool kKTail = kK % 128 != 0;
  // Chunks are read in order, so each row keeps a pointer to the next chunk's activations
  // (k = 128c + 32t) and the four loads use constant offsets from it.
  const u16* xnext[kMTiles][kHalves];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int h = 0; h < kHalves; ++h) xnext[mt][h] = xrow[mt][h] + c_begin * 128 + 32 * t;
  auto load_next_x = [&](int c, uint4(&dst)[4][kMTiles][kHalves]) {  // chunk c, the next in order
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int h = 0; h < kHalves; ++h)
          dst[p][mt][h] = (!kKTail || c * 128 + 32 * t + 8 * p < kK) ? ld_cached_v4(xnext[mt][h] + 8 * p)
                                                                     : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int h = 0; h < kHalves; ++h) xnext[mt][h] += 128 * kWarpsK;
  };

  // With one full 16-row tile the chunk's activations are prefetched a chunk ahead; otherwise all of
  // a chunk's are loaded at the top of its iteration, before the wait for its weights (L1 hits that
  // overlap the wait). Up to 8 rows the prefetch costs 16 registers a thread for no gain: without it
  // 8192² M = 1 drops from 95 to 72 registers (three blocks of 8 warps per SM instead of two) and the
  // tuned M = 1 layers ran 0-7 % faster on the H100; at 16 rows dropping it lost 1-16 %.
  constexpr bool kPrefetchX = kMTiles == 1 && kUpperRows && !kXShared;

  // This warp's ring: kStages slots, each holding the weight tiles (kNTiles × 128·kBits B) and, per
  // tile and group of the chunk, the 8 scales (16 B) and 8 zeros (8 B integer, 16 B float) of its
  // columns, so scales and zeros arrive with the weights instead of costing a dependent load per chunk.
  constexpr int kGroupsPerChunk = kGroup == 0 ? 0 : (kGroup >= 128 ? 1 : 128 / kGroup);
  constexpr int kMetaRows = kNTiles * kGroupsPerChunk;
  constexpr int kSlot = kNTiles * 8 * kBits + 2 * kMetaRows;  // uint4 per slot
  // When every block's tiles exist (N a multiple of the block's columns) no tile check is needed.
  constexpr bool kAllTiles = kTilesTotal % (kNTiles * kWarpsN) == 0;
  // Block-shared activations (kXShared) come first in shared memory: kStages stages, each holding
  // the activations of the block's kXRows rows for the kWarpsK chunks of one block step, which
  // the block copies with cp.async and every warp reads its A (swapped: B) fragments from, so they cross
  // L2 → SM once per block instead of once per warp. A stage row is kXRowVecs 16-byte vectors;
  // vector v = 16·wk + 4t + p of row r sits at v ^ (2·(t / 2) + r % 2), so that the 8 lanes of a
  // 16-byte shared-load phase (g ∈ {2a, 2a+1}, t = 0..3) hit 8 different 4-bank groups.
  constexpr int kXRowVecs = 16 * kWarpsK;
  // Up to 8 rows: those 8; the kernel of M = 1 (kOneRow) stages its one row, and every lane reads it
  // as its activation row (the B columns of the swapped MMA, unswapped the A rows): output rows
  // 1..7 are computed from row 0 and never stored.
  constexpr int kXRows = kUpperRows ? 16 * kMTiles : kOneRow ? 1 : 8;
  constexpr int kXStage = kXShared ? kXRows * kXRowVecs : 0;  // uint4 per stage
  // Per-group staging: the kWarpsN warps that take the same chunks (one wk; one warp with one warp
  // along N) copy the 16 vectors of their chunk per row themselves, thread l of the group vector
  // l % 16 of rows l / 16, + 2·kWarpsN, ..., and synchronize only among themselves (named barrier
  // 1 + wk), so the block needs no barrier per step: H200, against the block barrier, 7-12 % faster
  // with 2-4 warps along K (docs/perf-notes.md, thirty-second session). With one warp along K the
  // group is the block, and the block path's one barrier per step (the group's takes two) stays.
  constexpr bool kXPerGroup = kXShared && (kWarpsN == 1 || kWarpsK > 1);
  static_assert(!kXPerGroup || kWarpsN == 1 || kWarpsK <= 15, "named barrier ids 1..15");
  constexpr int kXThreads =
      kXPerGroup ? 32 * kWarpsN : 32 * kWarpsN * kWarpsK;               // threads that copy one stage
  constexpr int kXRowStep = kXThreads / (kXPerGroup ? 16 : kXRowVecs);  // rows between one thread's copies
  constexpr int kXTotal = kXPerGroup ? kXRows * 16 : kXStage;           // 16-byte copies per stage
  constexpr bool kXFewer = kXTotal < kXThreads;  // one row: threads past its vectors copy nothing
  constexpr int kXCopies = kXFewer ? 1 : kXTotal / kXThreads;  // 16-byte copies per thread
  static_assert(!kXShared || kXFewer || kXCopies * kXThreads == kXTotal, "whole copies");
  const u32 xs_addr = smem_addr(smem);
  // The copies' column (vector in the stage row) and first row.
  const int group_thread = wn * 32 + lane;  // kXPerGroup: this thread's index in its group
  const int xv = kXPerGroup ? 16 * wk + group_thread % 16 : threadIdx.x % kXRowVecs;
  const int xr0 = kXPerGroup ? group_thread / 16 : threadIdx.x / kXRowVecs;
  // kXPerGroup: the group's warps reach this point together (their copies and reads ordered).
  auto group_sync = [&] {
    if constexpr (kWarpsN == 1)
      __syncwarp();
    else
      asm volatile("bar.sync %0, %1;" ::"r"(1 + wk), "n"(32 * kWarpsN) : "memory");
  };
  const u32 xdst0 = (xr0 * kXRowVecs + (xv ^ (((xv >> 3) & 1) << 1 | (xr0 & 1)))) * 16;
  const bool x_copier = !kXFewer || xr0 < kXRows;
  // When all the block's rows exist (every block but the last row block), a thread's copies are
  // constant offsets from one pointer; otherwise rows past M are not copied at all: their stage
  // rows keep stale values, which reach only MMA rows (or, swapped, B columns) of outputs that are
  // never stored (M = 3 copies three rows, not eight).
  const bool x_rows_full = m0 + kXRows <= M;
  const u16* x_thread = x + static_cast<i64>(x_rows_full && x_copier ? m0 + xr0 : 0) * kK + xv * 8;
  auto issue_x = [&](int j, int stage) {  // block step j → stage; past K: zeros
    if (!x_copier) return;
    const int k0 = (cb0 + j * kWarpsK) * 128;
    const bool valid = k0 + xv * 8 < kK;
    const u32 dst = xs_addr + stage * (kXStage * 16) + xdst0;
    if (x_rows_full) {
      const u16* src = x_thread + (valid ? k0 : 0);
#pragma unroll
      for (int i = 0; i < kXCopies; ++i)
        cp_async_16_or_zero(dst + i * kXRowStep * kXRowVecs * 16, src + static_cast<i64>(i * kXRowStep) * kK,
                            valid);
    } else {
      const u16* col = x + (valid ? k0 + xv * 8 : 0);
#pragma unroll
      for (int i = 0; i < kXCopies; ++i) {
        const int row = m0 + xr0 + i * kXRowStep;
        if (row < M)
          cp_async_16_or_zero(dst + i * kXRowStep * kXRowVecs * 16, col + static_cast<i64>(row) * kK, valid);
      }
    }
  };
  // This lane's A (swapped: B) fragment (tile mt, half h, step pair p) is at xs_lane[p] + stage·(kXStage·16)
  // + (16·mt + 8·h)·kXRowVecs·16.
  u32 xs_lane[4];
  const int xs_row = kOneRow ? 0 : g;
#pragma unroll
  for (int p = 0; p < 4; ++p)
    xs_lane[p] = xs_addr + (xs_row * kXRowVecs + 16 * wk + 4 * t + (p ^ (2 * (t >> 1) + (xs_row & 1)))) * 16;
  auto ring_of = [&](int w) { return smem + kStages * kXStage + w * (kStages * kSlot); };  // warp w's ring
  uint4* ring = ring_of(warp);
  const u32 ring_base = smem_addr(ring);
  const u32 ring_addr = ring_base + lane * kV * 4;  // this lane's first vector in slot 0, tile 0
  // Under 4 bits a lane's fragment of a tile is under 16 bytes (2-bit: 8, copied by .ca, the only
  // 8-byte cp.async); but the warp's tiles of one chunk lie side by side in global memory and in the
  // slot (chunk-major), so the warp copies that band as 16-byte vectors, .cg, lane l vectors
  // l, l + 32, ...: half the copies (2-bit), none through L1. Lanes then read each other's copies (a
  // __syncwarp after each wait). H200, W2 at 1/16 rows: 0-3 % faster (docs/perf-notes.md, session 26).
  constexpr bool kBandCopy = kV < 4 && (kNTiles * kBits) % 4 == 0;
  constexpr int kBandCopies = kNTiles * kBits / 4;  // 16-byte copies per lane and chunk
  const u32 band_addr = ring_base + lane * 16;
  // Chunks are issued in order too: running pointers to the next chunk's weights (this lane's first
  // copy: its fragment of tile 0, or with band copies its vector of the band) and (groups of ≤ 128,
  // where the group index grows by 128 / kGroup per chunk) this lane's scale/zero row.
  // Chunk-major (pack.hpp): the tiles of one chunk lie side by side, so the warps of all blocks, which
  // step through K at about the same pace, read one narrow band of the weights at a time.
  const u32* wnext =
      qweight + (static_cast<i64>(c_begin) * kTilesTotal + tile0) * kTileWords + lane * (kBandCopy ? 4 : kV);
  const int meta_tile = min(tile0 + lane / max(kGroupsPerChunk, 1), kTilesTotal - 1);
  const int meta_sub = lane % max(kGroupsPerChunk, 1);  // group within the chunk
  constexpr bool kMetaLinear = kGroup > 0 && kGroup <= 128;
  i64 meta_next =
      kMetaLinear ? (static_cast<i64>(c_begin) * kGroupsPerChunk + meta_sub) * kNPad + meta_tile * 8 : 0;
  auto issue = [&](int j, int stage) {  // chunk j of this warp (the next in order) → slot `stage`
    const u32 slot = ring_addr + stage * (kSlot * 16);
    if constexpr (kBandCopy) {
#pragma unroll
      for (int i = 0; i < kBandCopies; ++i)
        if (kAllTiles || tile0 + (32 * i + lane) / (8 * kBits) < kTilesTotal)
          cp_async_16(band_addr + stage * (kSlot * 16) + i * 512, wnext + i * 128);
    } else {
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
        if (kAllTiles || tile0 + nt < kTilesTotal)
#pragma unroll
          for (int v = 0; v < kBits / kV; ++v)
            cp_async_words<kV>(slot + (nt * kTileWords + v * 32 * kV) * 4,
                               wnext + nt * kTileWords + v * 32 * kV);
    }
    wnext += static_cast<i64>(kWarpsK) * kTilesTotal * kTileWords;
    if constexpr (kMetaRows > 0) {
      static_assert(kMetaRows <= 32, "one scale/zero row per lane");
      if (lane < kMetaRows) {
        const u32 meta = slot - lane * kV * 4 + kNTiles * kTileWords * 4 + lane * 16;
        const i64 at = kMetaLinear
                           ? meta_next
                           : static_cast<i64>((c_begin + j * kWarpsK) * 128 / kGroup) * kNPad + meta_tile * 8;
        cp_async_16(meta, scales + at);
        if constexpr (kFloatZeros)
          cp_async_16(meta + kMetaRows * 16, zeros16 + at);
        else if constexpr (kHasZeros)
          cp_async_8(meta + kMetaRows * 16, zeros8 + at);
      }
      if constexpr (kMetaLinear) meta_next += static_cast<i64>(kWarpsK) * kGroupsPerChunk * kNPad;
    }
  };
  // The fp16 4-bit one-row kernel issues each chunk's weights first (DRAM), then its 256-byte
  // activation copy (L2), here and at every refill: H200, 0.5-2.4 % faster on five of the six
  // standard layers in two A/Bs (the refills another 0-1.8 %). Elsewhere the order did not pay (16
  // rows up to +4.8 %, W8 4096×14336 at one row +4.5 %, bf16 and 2-bit mixed; docs/perf-notes.md,
  // thirty-third session, sections 12-13).
  constexpr bool kWeightsFirst = kOneRow && kBits == 4 && !kBf16;
  if constexpr (kChain) {  // chunk 0's weights before the wait for the previous kernel (see the top)
    // Only chunk 0's: the later stages' weights before the wait would share chunk 0's copy group (its
    // activations come after the wait), so chunk 0 would wait for all of them (H200, 4 chunks per warp
    // in a 5-stage ring: 8 % slower than not chained; docs/perf-notes.md, thirty-fourth session).
    allow_dependent_launch();
    if (n_chunks > 0) issue(0, 0);
    wait_for_previous_grid();
  }
#pragma unroll
  for (int j = 0; j < kStages - 1; ++j) {
    const bool weights = j < n_chunks && !(kChain && j == 0);
    if (kWeightsFirst && weights) issue(j, j);
    if (kXShared && j < (kXPerGroup ? n_chunks : n_steps)) issue_x(j, j);
    if (!kWeightsFirst && weights) issue(j, j);
    cp_async_commit();  // empty groups keep the count uniform
  }
  uint4 xa[4][kMTiles][kHalves];
  if constexpr (kPrefetchX)
    if (n_chunks > 0) load_next_x(c_begin, xa);
  // Per-channel zero points (and, in the float-zero modes, scales) do not change along K: read once.
  // Integer zeros are kept as integers, float zeros as a pair of act-dtype values.
  u32 z_channel[kNTiles], s_channel[kNTiles];
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt) {
    const int at = min(tile0 + nt, kTilesTotal - 1) * 8 + g;
    z_channel[nt] = channel_zero<kBits, kGroup, kMode>(zeros, at);
    s_channel[nt] = channel_scale<kGroup, !kScaleAfter>(scales, at);
  }

  // The pre-pass's sums (kSumsIn) are read from the first chunk on: wait for that grid here, with
  // the first chunks' copies already in flight (a no-op unless launched as its dependent). Also where
  // the flag changes nothing (kXSums without kSumsIn): the host launched the pre-pass all the same,
  // and this kernel must not finish before it.
  if constexpr (kXSums) wait_for_previous_grid();
  const int sum_rows = static_cast<int>(gridDim.z) * 16 * kMTiles;  // xsums rows (kSumsIn)

  // Step j reads stage j % kStages and refills the stage step j − 1 read: a mask for a power of 2
  // stages, else counted (a division by 3 costs a multiply-high and four more instructions).
  constexpr bool kPow2Stages = (kStages & (kStages - 1)) == 0;
  int next_stage = 0;
  for (int j = 0; j < (kXShared && !kXPerGroup ? n_steps : n_chunks); ++j) {
    const int c = c_begin + j * kWarpsK;
    const int stage = kPow2Stages ? j & (kStages - 1) : next_stage;
    const int refill = kPow2Stages ? (j + kStages - 1) & (kStages - 1) : stage == 0 ? kStages - 1 : stage - 1;
    if constexpr (!kPow2Stages) next_stage = stage + 1 == kStages ? 0 : stage + 1;
    // kSumsIn: this chunk's sums for rows 8b + 2t, 2t + 1 (Σx, Σ base·x, Σx, Σ base·x), loaded now
    // and used after the MMAs. (Block-shared steps may run past this warp's chunks: clamp.)
    float4 xs_in[kSumsIn ? kBTiles : 1];
    if constexpr (kSumsIn)
#pragma unroll
      for (int b = 0; b < kBTiles; ++b)
        xs_in[b] = __ldg(reinterpret_cast<const float4*>(
            xsums + (static_cast<i64>(min(c, kChunks - 1)) * sum_rows + m0 + 8 * b + 2 * t) * 2));
    uint4 xn[4][kMTiles][kHalves];
    if constexpr (kXPerGroup) {
      group_sync();  // all lanes (of the group) are done with the slot and stage refilled next
      if (j + kStages - 1 < n_chunks) {
        if constexpr (kWeightsFirst) issue(j + kStages - 1, refill);
        issue_x(j + kStages - 1, refill);
        if constexpr (!kWeightsFirst) issue(j + kStages - 1, refill);
      }
      cp_async_commit();
      cp_async_wait<kStages - 1>();  // this lane's copies for this chunk have landed
      group_sync();                  // ... and the other lanes' activations, scales and zeros
    } else if constexpr (kXShared) {
      cp_async_wait<kStages - 2>();  // this thread's copies for step j have landed
      __syncthreads();  // ... and every thread's; every warp is done with the slots of step j − 1
      if (j + kStages - 1 < n_steps) issue_x(j + kStages - 1, refill);
      if (j + kStages - 1 < n_chunks) issue(j + kStages - 1, refill);
      cp_async_commit();
      if (j >= n_chunks) continue;  // this warp has no chunk in the block's last step
    } else {
      if constexpr (kMetaRows > 0 || kBandCopy)
        __syncwarp();  // all lanes are done with the slot refilled next
      if (j + kStages - 1 < n_chunks) issue(j + kStages - 1, refill);
      cp_async_commit();
      if constexpr (kPrefetchX) {
        if (j + 1 < n_chunks) load_next_x(c + kWarpsK, xn);  // next chunk's, while this one computes
      } else {
        load_next_x(c, xa);
      }
      cp_async_wait<kStages - 1>();  // this lane's copies for this chunk have landed
      if constexpr (kMetaRows > 0 || kBandCopy) __syncwarp();  // ... and the other lanes' copies
    }
    const u32 slot = ring_base + stage * (kSlot * 16);
    const u32 xstage = stage * (kXStage * 16);

    // Per lane and tile: the zero point of column g and the scale (column g before the MMA, or
    // after it columns 2t, 2t+1, swapped column g). Lane t's 32 k values never straddle a group.
    const int gi = kGroup >= 128 || kGroup == 0 ? 0 : 32 * t / kGroup;  // group within the chunk
    u32 zq[kNTiles], s_pre[kNTiles];
    float s_post[kNTiles][2];  // swapped: both entries hold the scale of column g
    float z_post[kNTiles][2];  // kZeroAfter: base + z of the same columns (kInPlaceBases: z)
    // The lane's element addresses in the first tile's 16-byte scale row (per tile: + kGroupsPerChunk
    // rows), and the zero rows kMetaRows rows later.
    const u32 meta = slot + (kNTiles * 8 * kBits + gi) * 16;
    const u32 meta_g2 = meta + 2 * g, meta_g = meta + g, meta_t4 = meta + 4 * t, meta_t2 = meta + 2 * t;
    static_for<kNTiles>([&](auto nt_c) {
      constexpr int nt = decltype(nt_c)::value;
      constexpr int kS = nt * kGroupsPerChunk * 16;  // this tile's scale row
      constexpr int kZ = kS + kMetaRows * 16;        // ... and zero row
      if constexpr (kGroup == 0) {
        zq[nt] = z_channel[nt];
        s_pre[nt] = s_channel[nt];
      } else {
        if constexpr (kFloatZeros)
          zq[nt] = splat2(ld_shared_u16<kZ>(meta_g2));
        else if constexpr (kZeroAfter)
          zq[nt] = 0u;  // unused: z_post below (the shared loads are volatile, so load only once)
        else
          zq[nt] = kHasZeros ? ld_shared_u8<kZ>(meta_g) : (1u << (kBits - 1));
        if constexpr (!kScaleAfter) s_pre[nt] = splat2(ld_shared_u16<kS>(meta_g2));
        if constexpr (kScaleAfter && kSwap)
          s_post[nt][0] = s_post[nt][1] = to_f32<kBf16>(ld_shared_u16<kS>(meta_g2)) * kPostScale;
        if constexpr (kScaleAfter && !kSwap) {  // columns 2t and 2t + 1: one 32-bit load
          const u32 pair = ld_shared_u32<kS>(meta_t4);
          s_post[nt][0] = to_f32<kBf16>(static_cast<u16>(pair & 0xffffu)) * kPostScale;
          s_post[nt][1] = to_f32<kBf16>(static_cast<u16>(pair >> 16)) * kPostScale;
        }
        if constexpr (kZeroAfter) {
          const u32 z0 = kSwap ? ld_shared_u8<kZ>(meta_g) : ld_shared_u8<kZ>(meta_t2);
          const u32 z1 = kSwap ? z0 : ld_shared_u8<kZ + 1>(meta_t2);
          constexpr float kB = kInPlaceBases ? 0.f : kBase;  // in place: the bases come from Σ base·x
          z_post[nt][0] = kB + (kHasZeros ? static_cast<float>(z0) : float(1 << (kBits - 1)));
          z_post[nt][1] = kB + (kHasZeros ? static_cast<float>(z1) : float(1 << (kBits - 1)));
        }
      }
    });
    u32 wv[kNTiles][kBits];
    const u32 frag = slot + lane * kV * 4;
    static_for<kNTiles>([&](auto nt_c) {
      constexpr int nt = decltype(nt_c)::value;
      if (kAllTiles || tile0 + nt < kTilesTotal) {
        load_fragment<kBits, nt * kTileWords * 4>(frag, wv[nt]);
      } else {
#pragma unroll
        for (int i = 0; i < kBits; ++i) wv[nt][i] = 0u;
      }
    });

    // This chunk's sums when the scale comes after the MMA; with few tiles, even and odd MMA steps
    // accumulate into separate sets so consecutive MMAs of a tile do not wait on each other (with 8
    // accumulator tiles, or 4 when swapped with two 8-row slices, there is enough independent work
    // and the registers matter more: 16 rows × 4 tiles took 142 registers with two sets, 99 with one).
    // fp16 sums always take two chains (4 MMA steps of rounding each instead of 8).
    constexpr int kChains =
        kAccM * kAccN >= (kSwap && kBTiles > 1 ? 4 : 8) && !kDeterministic && !kAccF16 ? 1 : 2;
    float part[kChains][kAccM][kAccN][4];
    u32 part16[kChains][kAccM][kAccN][2];  // kAccF16: half2 of accumulator elements (0, 1) and (2, 3)
    for_each_acc<kAccM, kAccN>([&](int mt, int q, int r) {
#pragma unroll
      for (int e = 0; e < kChains; ++e) {
        part[e][mt][q][r] = 0.f;
        if (r < 2) part16[e][mt][q][r] = 0u;
      }
    });

    // Even steps accumulate into part[0] / acc, odd ones into part[1] / acc_odd.
    auto mma_step = [&](int hs, int mt, int q, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
      if constexpr (kAccF16)
        mma_16816_f16acc(part16[hs % kChains][mt][q], a0, a1, a2, a3, b0, b1);
      else if constexpr (kChunkSums)
        mma_16816<kBf16>(part[hs % kChains][mt][q], a0, a1, a2, a3, b0, b1);
      else if (hs == 0 || kAccChains == 1)
        mma_16816<kBf16>(acc[mt][q], a0, a1, a2, a3, b0, b1);
      else
        mma_16816<kBf16>(acc_odd[mt][q], a0, a1, a2, a3, b0, b1);
    };
    auto dequant = [&](int nt, int p, u32(&b)[4]) {  // pairs: step 2p (b[0], b[1]), step 2p+1 (b[2], b[3])
      if constexpr (kZeroAfter) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          b[i] = kInPlaceBases ? raw_pair_in_place<kBits, kBf16>(wv[nt], 4 * p + i)
                               : raw_pair<kBits, kBf16>(wv[nt], 4 * p + i);
      } else {
        dequant_pairs<kBits, kBf16, kMode, !kScaleAfter>(wv[nt], p, zq[nt], s_pre[nt], b);
      }
    };
    // kZeroAfter: Σx of this chunk per row, laid out like the accumulators (element r of an MMA
    // against ones holds the sum of the row that accumulator element r belongs to); kInPlaceBases:
    // elements 0, 1 hold Σx and 2, 3 Σ base·x of the rows 2t, 2t + 1.
    float xsum[kAccM][4];
#pragma unroll
    for (int mt = 0; mt < kAccM; ++mt)
#pragma unroll
      for (int r = 0; r < 4; ++r) xsum[mt][r] = 0.f;
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      uint4 xsh[kMTiles][kHalves];
      if constexpr (kXShared) {
        const u32 xp_addr = xs_lane[p] + xstage;
        static_for<kMTiles * kHalves>([&](auto i_c) {
          constexpr int mt = decltype(i_c)::value / kHalves, h = decltype(i_c)::value % kHalves;
          xsh[mt][h] = ld_shared_v4<(16 * mt + 8 * h) * kXRowVecs * 16>(xp_addr);
        });
      }
      const uint4(&xp)[kMTiles][kHalves] = kXShared ? xsh : xa[p];
      // Swapped: the B pair of slice b and step 2p + hs is row 8·b + g's words 2·hs, 2·hs + 1.
      auto xb = [&](int b, int hs, int i) { return word(xp[b / kHalves][b % kHalves], 2 * hs + i); };
      if constexpr (kSwap) {
#pragma unroll
        for (int q = 0; q < kAccN; ++q) {
          u32 lo[4], hi[4];  // tiles 2q (A rows 0-7) and 2q+1 (A rows 8-15)
          dequant(2 * q, p, lo);
          dequant(2 * q + 1, p, hi);
#pragma unroll
          for (int hs = 0; hs < 2; ++hs)
#pragma unroll
            for (int b = 0; b < kBTiles; ++b)
              mma_step(hs, b, q, lo[2 * hs], hi[2 * hs], lo[2 * hs + 1], hi[2 * hs + 1], xb(b, hs, 0),
                       xb(b, hs, 1));
        }
        if constexpr (kZeroAfter && !kSumsIn)
#pragma unroll
          for (int hs = 0; hs < 2; ++hs)
#pragma unroll
            for (int b = 0; b < kBTiles; ++b)
              mma_16816<kBf16>(xsum[b], kOne2,
                               kInPlaceBases ? InPlace<kBits, kBf16>::base2(4 * p + 2 * hs) : kOne2, kOne2,
                               kInPlaceBases ? InPlace<kBits, kBf16>::base2(4 * p + 2 * hs + 1) : kOne2,
                               xb(b, hs, 0), xb(b, hs, 1));
      } else {
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt) {
          u32 b[4];
          dequant(nt, p, b);
#pragma unroll
          for (int hs = 0; hs < 2; ++hs)
#pragma unroll
            for (int mt = 0; mt < kMTiles; ++mt) {
              const u32 a0 = word(xp[mt][0], 2 * hs), a2 = word(xp[mt][0], 2 * hs + 1);
              const u32 a1 = kUpperRows ? word(xp[mt][kHalves - 1], 2 * hs) : 0u;
              const u32 a3 = kUpperRows ? word(xp[mt][kHalves - 1], 2 * hs + 1) : 0u;
              mma_step(hs, mt, nt, a0, a1, a2, a3, b[2 * hs], b[2 * hs + 1]);
            }
        }
        if constexpr (kZeroAfter)
#pragma unroll
          for (int hs = 0; hs < 2; ++hs)
#pragma unroll
            for (int mt = 0; mt < kMTiles; ++mt) {
              const u32 a1 = kUpperRows ? word(xp[mt][kHalves - 1], 2 * hs) : 0u;
              const u32 a3 = kUpperRows ? word(xp[mt][kHalves - 1], 2 * hs + 1) : 0u;
              mma_16816<kBf16>(xsum[mt], word(xp[mt][0], 2 * hs), a1, word(xp[mt][0], 2 * hs + 1), a3, kOne2,
                               kOne2);
            }
      }
    }
    // The M = 1 kernel stores row 0 only: the odd accumulator elements (swapped: rows 2t + 1) may
    // skip the per-chunk fix-up. Only on the in-place path (always swapped): H100, two rounds over
    // the six standard layers at M = 1, W2 1.4 % faster on average, but W8 and bf16 4-bit (zero after
    // the MMA too, one base) 0.7-0.9 % slower, for no reason found in their PTX (docs/perf-notes.md,
    // nineteenth session).
    auto row_unused = [](int r) { return kInPlaceBases && kOneRow && (r & 1) != 0; };
    if constexpr (kSumsIn)  // in the Σ MMAs' layout (kZeroAfter above)
#pragma unroll
      for (int b = 0; b < kBTiles; ++b) {
        xsum[b][0] = xs_in[b].x, xsum[b][1] = xs_in[b].z;
        xsum[b][2] = kInPlaceBases ? xs_in[b].y : xs_in[b].x;
        xsum[b][3] = kInPlaceBases ? xs_in[b].w : xs_in[b].z;
      }
    if constexpr (kAccF16) {  // the weights were scaled: the chunk's sums go straight into fp32
      for_each_acc<kAccM, kAccN>([&](int mt, int q, int r) {
#pragma unroll
        for (int e = 0; e < kChains; ++e) acc[mt][q][r] += half2_elem_to_f32(part16[e][mt][q][r >> 1], r & 1);
      });
    } else if constexpr (kChunkSums) {
      for_each_acc<kAccM, kAccN>([&](int mt, int q, int r) {
        if (row_unused(r)) return;
        const float sc = kSwap ? s_post[2 * q + (r >> 1)][0] : s_post[q][r & 1];
        float sum = kChains == 2 ? part[0][mt][q][r] + part[kChains - 1][mt][q][r] : part[0][mt][q][r];
        if constexpr (kInPlaceBases)
          sum = fmaf(-z_post[2 * q + (r >> 1)][0], xsum[mt][r & 1], sum - xsum[mt][2 + (r & 1)]);
        else if constexpr (kZeroAfter)
          sum = fmaf(-(kSwap ? z_post[2 * q + (r >> 1)][0] : z_post[q][r & 1]), xsum[mt][r], sum);
        acc[mt][q][r] = fmaf(sum, sc, acc[mt][q][r]);
      });
    }
    if constexpr (kPrefetchX)
#pragma unroll
      for (int p = 0; p < 4; ++p)
#pragma unroll
        for (int h = 0; h < kHalves; ++h) xa[p][0][h] = xn[p][0][h];
  }
  cp_async_wait<0>();
  if constexpr (!kChunkSums && kAccChains == 2)
    for_each_acc<kAccM, kAccN>([&](int mt, int q, int r) { acc[mt][q][r] += acc_odd[mt][q][r]; });

  // Per-channel scales: one multiply per output, here.
  if constexpr (kScaleAtEnd) {
    for_each_acc<kAccM, kAccN>([&](int mt, int q, int r) {
      const int tile = min(tile0 + (kSwap ? 2 * q + (r >> 1) : q), kTilesTotal - 1);
      acc[mt][q][r] *= to_f32<kBf16>(__ldg(scales + tile * 8 + (kSwap ? g : 2 * t + (r & 1)))) * kPostScale;
    });
  }

  // Sum the kWarpsK partial tiles of each column group through shared memory. Every warp stores its
  // accumulators, then each warp sums and writes the registers i ≡ wk (mod kWarpsK) of all kWarpsK
  // warps, in warp order (the order warp 0 alone used to add them in, reading (kWarpsK − 1)·kRegs values
  // at the end of the kernel; without any reduction 8192² M = 1 and 4096² M = 16 ran 0.3-0.5 µs faster
  // on the H200). From 2 rows, where they fit, a warp stores them in its own ring, which no other warp
  // reads and which is free once its loop is done: one block barrier instead of two (H100, 16 rows: 0.2-2.3 %
  // faster on the standard layers; H200 0.4-2.2 %). Otherwise they go to one array over the rings, once
  // every warp is done with its ring: the one-row kernel (own rings, or only row 0 through them, ran
  // up to 2.8 % slower on some layers), configs with precomputed activation sums (kSumsIn; H200 W4 16384² M =
  // 16: 39.0 µs with the array, 39.4-39.5 with own rings, for no reason found) and where they do not fit. The
  // swapped one-row kernel sums only its even registers (kStride): its odd ones are rows 2t + 1, never
  // stored, so half the stores and loads, and their per-chunk fix-ups become dead code (H200 28672×4096
  // and 4096×14336 0.2-0.3 µs faster, H100 28672×4096 0.3; the rest within ±0.08). Either way the sums,
  // and so the results, are the same (docs/perf-notes.md, fifty-sixth and fifty-seventh sessions).
  constexpr int kRegs = kAccM * kAccN * 4;
  constexpr int kStride = kOneRow && kSwap ? 2 : 1;  // every kStride-th register is summed
  constexpr int kSummed = kRegs / kStride;
  constexpr int kOwned = (kSummed + kWarpsK - 1) / kWarpsK;  // registers a warp sums (the last may be idle)
  constexpr bool kOwnRing =
      !kOneRow && !kSumsIn && kRegs * 8 <= kStages * kSlot;  // [kRegs][32] floats fit the ring
  float sum[kOwned];
  if constexpr (kWarpsK > 1) {
    // Where warp (wn, j) left its summed register i (accumulator register kStride·i): in its ring, or in
    // [kWarpsN][kSummed][kWarpsK][32].
    auto partial = [&](int i, int j) -> float& {
      if constexpr (kOwnRing)
        return reinterpret_cast<float*>(ring_of(j * kWarpsN + wn))[i * 32 + lane];
      else
        return reinterpret_cast<float*>(smem)[((wn * kSummed + i) * kWarpsK + j) * 32 + lane];
    };
    if constexpr (kOwnRing)
      __syncwarp();  // every lane of this warp is done reading its ring
    else
      __syncthreads();  // every warp is done reading its ring
    for_each_acc<kAccM, kAccN>([&](int mt, int q, int r) {
      const int reg = (mt * kAccN + q) * 4 + r;
      if (reg % kStride == 0) partial(reg / kStride, wk) = acc[mt][q][r];
    });
    __syncthreads();
#pragma unroll
    for (int o = 0; o < kOwned; ++o) {
      const int i = o * kWarpsK + wk;
      sum[o] = 0.f;
      if (kSummed % kWarpsK == 0 || i < kSummed)
#pragma unroll
        for (int j = 0; j < kWarpsK; ++j) sum[o] += partial(i, j);
    }
  }

  // kClusterK: rank 0 of the cluster (split piece 0) receives every other rank's values (each
  // thread's summed registers, or all its accumulators with one warp along K) in the last
  // kClusterBytes of its dynamic shared memory (wq::mma_cluster_sums_bytes, which the host adds to
  // the block's), at [rank − 1][value][thread], adds them in rank order and writes the outputs; the
  // other ranks are done once their values are sent. The region is used by nothing else, so the
  // senders need only know that rank 0 has started (the barrier phase every block arrived at on
  // entry) and one barrier phase more orders their stores before rank 0's loads. (A first version
  // reused the rings and needed a blocking barrier before the stores: ~0.3 µs more on the H200.)
  constexpr int kVals = kWarpsK > 1 ? kOwned : kRegs;
  auto value = [&](int v) -> float& {
    if constexpr (kWarpsK > 1)
      return sum[v];
    else
      return acc[v / (kAccN * 4)][(v / 4) % kAccN][v % 4];
  };
  if constexpr (kClusterK) {
    constexpr int kThreads = 32 * kWarpsN * kWarpsK;
    constexpr int kValsBound = (kMTiles * kNTiles * 4 + kWarpsK - 1) / kWarpsK;  // ≥ kVals; the host's
    static_assert(kVals <= kValsBound, "the receive region holds every value");
    constexpr u32 kClusterBytes = (kSplitK - 1) * kValsBound * kThreads * 4;
    const u32 rank = cluster_rank();
    // (Aligned down: a chained launch may give the block any number of bytes past its own, and the
    // region stays clear of the rest, which ends 16-byte aligned where the host's smem_bytes does.)
    const u32 recv = ((smem_addr(smem) + dynamic_smem_size() - kClusterBytes) & ~15u) + threadIdx.x * 4;
    cluster_wait();  // every block of the cluster has started (the phase arrived at on entry)
    if (rank != 0) {
#pragma unroll
      for (int v = 0; v < kVals; ++v)
        st_cluster_f32(cluster_map(recv + ((rank - 1) * kValsBound + v) * kThreads * 4, 0), value(v));
      cluster_arrive();  // release: the stores are visible to rank 0 after its wait
      return;
    }
    cluster_arrive();
    cluster_wait();  // every piece has landed
#pragma unroll
    for (int r = 1; r < kSplitK; ++r)
#pragma unroll
      for (int v = 0; v < kVals; ++v)
        value(v) += __uint_as_float(ld_shared_u32(recv + ((r - 1) * kValsBound + v) * kThreads * 4));
  }

  // Epilogue: accumulator (mt, q, r) → (row, column) as described at kSwap.
  auto output_at = [&](int mt, int q, int r, int& row, int& col) {
    row = kSwap ? m0 + 8 * mt + 2 * t + (r & 1) : m0 + mt * 16 + g + 8 * (r >> 1);
    col = kSwap ? (tile0 + 2 * q + (r >> 1)) * 8 + g : (tile0 + q) * 8 + 2 * t + (r & 1);
  };
  write_outputs<kN, kClusterK ? 1 : kSplitK, kDeterministic, kOutF32, kBf16>(
      [&](auto&& fn) {  // fn may take the value by reference
        int row, col;
        if constexpr (kWarpsK == 1) {
          for_each_acc<kAccM, kAccN>([&](int mt, int q, int r) {
            output_at(mt, q, r, row, col);
            if (row < M && col < kN) fn(row, col, acc[mt][q][r]);
          });
        } else {
#pragma unroll
          for (int o = 0; o < kOwned; ++o) {
            const int i = o * kWarpsK + wk;
            if (kSummed % kWarpsK != 0 && i >= kSummed) continue;
            const int reg = kStride * i;
            output_at(reg / (kAccN * 4), (reg >> 2) % kAccN, reg & 3, row, col);
            if (row < M && col < kN) fn(row, col, sum[o]);
          }
        }
      },
      bias, y, ws, counters, M);
}

// WqGemmConfig::x_sums: for each 128-k chunk c and row, Σx and Σ base·x over the chunk's
// activations, base(k) the in-place base (InPlace in dequant.cuh) of the weight pair k belongs to
// (k % 32 = 2j + {0, 1}: pair j of the lane's word; the kernel above pairs them so): what the Σ MMAs
// of the zero-after path compute against [ones; bases], once per call instead of once per column
// block. sums[(c · rows + row) · 2 + {0, 1}]; rows from M up to `rows` (the GEMM's grid rows) get
// zeros. One warp per (row, chunk), four values a lane, 8 rows per block.
template <int kK, int kBits, bool kBf16>
__global__ void __launch_bounds__(256)
    wq_x_sums_kernel(const u16* __restrict__ x, float* __restrict__ sums, int M, int rows) {
  allow_dependent_launch();  // the GEMM's blocks may start their weight copies meanwhile
  // Chained (launched as the previous call's dependent): x may still be being written, and the sums
  // still read, by the previous kernel. Every block waits, so that this grid's end implies the
  // previous one's (the GEMM waits for this grid only). A no-op in an ordinary launch.
  wait_for_previous_grid();
  const int lane = threadIdx.x & 31, row = blockIdx.y * 8 + threadIdx.x / 32, c = blockIdx.x;
  if (row >= rows) return;
  const int k = c * 128 + 4 * lane;
  float s = 0.f, sb = 0.f;
  if (row < M && (kK % 128 == 0 || k < kK)) {  // K is a multiple of 8: four values never straddle it
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(x + static_cast<i64>(row) * kK + k));
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float xv = to_f32<kBf16>(static_cast<u16>((e < 2 ? v.x : v.y) >> (16 * (e % 2))));
      const float base =
          to_f32<kBf16>(static_cast<u16>(InPlace<kBits, kBf16>::base2((4 * lane + e) % 32 / 2)));
      s += xv;
      sb = fmaf(base, xv, sb);
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    s += __shfl_xor_sync(0xffffffffu, s, o);
    sb += __shfl_xor_sync(0xffffffffu, sb, o);
  }
  if (lane == 0)
    *reinterpret_cast<float2*>(sums + (static_cast<i64>(c) * rows + row) * 2) = make_float2(s, sb);
}

}  // namespace lowbit::kern

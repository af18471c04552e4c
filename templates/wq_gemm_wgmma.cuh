// wq_gemm on Hopper warpgroup MMA (sm_90a, configs with `wgmma`): the same problem, arguments and
// packed layout as wq_gemm_kernel (wq_gemm.cuh), computed as yᵀ = dequant(W) · xᵀ with wgmma.
//
// Why: with mma.sync every 16×8×16 product costs the warp its own A and B fragment loads; from 32
// rows the kernel is bound by those instructions, not by memory or the tensor cores. wgmma takes
// the activations straight from shared memory (the B operand, N = the block's 16·kTokTiles rows)
// and the dequantized weights from registers (the A operand, 64 weight columns per instruction),
// so one instruction does the work of 4·N/8 mma.sync and the warps only dequantize.
//
// Decomposition: kWarpsN / 4 MMA warpgroups per block side by side along N, plus the producer
// warpgroup (below); grid = (N tiles / (kWarpsN·kNTiles), kSplitK, ceil(M / kTok)). The block's
// threads are the MMA warpgroups' (kConsumers) and then the producer's 128. MMA warpgroup v owns
// 64·kM64 weight columns (8-column
// tiles btile0 + 8·kM64·v ..) of the block and all its kTok activation rows; warp w of it
// dequantizes tiles 8i + 2w and 8i + 2w + 1 of each of its m64 tiles i (A rows 16w .. 16w + 15).
// Split K: two or three blocks of a tile are one thread-block cluster and add their sums through
// distributed shared memory at the end (the host launches clusters of (1, kSplitK, 1)); more add
// them in the workspace's scratch (add_split_pieces_and_store): clusters of four ran in two waves on
// the H100 (docs/perf-notes.md, twenty-third session). Stream K (below) shares tiles among any
// blocks, through the same scratch.
//
// Pipeline: kStages stages, each holding one 128-wide K chunk: the activations (kTok rows, in
// wgmma's B layout), the block's weight tiles and their scale and zero rows. A producer warpgroup
// fills them: it copies the weights (one bulk copy) and scales, and loads the activations into
// registers a step before it stores them (transposed, below), or, with kXImage, copies them too from
// an image arranged before the launch by wq_x_image_kernel (act-order layers: wq_permute_x_kernel). Each
// stage has two mbarriers: `full` completes when the producer's copies have landed and its stores are fenced
// for wgmma; `empty` when every MMA thread has waited for its step's wgmma. No block barrier: the MMA
// warpgroups run at their own pace (one can dequantize while the other's wgmmas run), the producer up to
// kStages steps ahead of the slower one; the MMA warps issue no copies. What still bounds the loop:
// docs/perf-notes.md, fourteenth to twenty-first sessions.
//
// K order: the packed weights give lane t the 32 values k = 32t .. 32t + 31 of each chunk, and A's
// register layout makes lane t supply k16-step columns 2t, 2t+1, 2t+8, 2t+9; so k16 step s = 2p + hs
// of a chunk covers k = 32t + 8p + 4hs + {0, 1 | 2, 3} (t = 0..3), the same permutation as the
// mma.sync kernel. The activations are stored in that order: the 16-byte vectors (t, p) of a row,
// t = 0..3, are loaded together and their words transposed into four 16-byte chunks of the row's
// k16 steps 2p and 2p + 1 (words 0 and 1 → step 2p, k 0-7 and 8-15; words 2 and 3 → step 2p + 1).
//
// Scales: every weight is dequantized completely (scale included) before the MMA, except
// per-channel integer scales, which multiply the fp32 sums once at the end.
#pragma once
#include "common/cluster.cuh"
#include "common/grid_dependency.cuh"
#include "common/mbarrier.cuh"
#include "common/stream_k.cuh"
#include "common/wgmma.cuh"
#include "common/x_image.cuh"
#include "wq_gemm.cuh"

namespace lowbit::kern {

// WqGemmConfig::x_image: every stage's activations arranged once per call, so that the kernel below
// fills a stage's with one bulk copy: image [ceil(M / kTok)][chunks][kTok·256 B], each block of bytes
// exactly what one stage holds (x_chunk_offset), rows past M and k past K zero. The producer's loads,
// transposed stores and proxy fence leave the kernel's loop (ablation, H100: the kernel 4-26 % faster
// at 64/128 rows without them; twenty-first session) for one more small launch that reads and writes
// M·K·2 bytes. Thread (n, p) of block (chunk c, row block, z) moves row n's vectors (t, p) of chunk c,
// n counted from z · the block's rows (the host gives 128-row blocks' rows to 8 blocks of 16).
template <int kK, int kTok>
__global__ void __launch_bounds__(kTok * 4)
    wq_x_image_kernel(const u16* __restrict__ x, u8* __restrict__ image, int M) {
  allow_dependent_launch();  // the GEMM's blocks may start their weight copies meanwhile
  constexpr int kChunks = (kK + 127) / 128;
  // A block takes blockDim.x / 4 of the kTok rows (the host may split them over gridDim.z blocks).
  const int n = blockIdx.z * (blockDim.x / 4) + threadIdx.x / 4, p = threadIdx.x % 4, c = blockIdx.x;
  const int row = blockIdx.y * kTok + n;
  uint4 v[4];
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const int k = c * 128 + 32 * t + 8 * p;
    v[t] = row < M && (kK % 128 == 0 || k < kK) ? ld_cached_v4(x + static_cast<i64>(row) * kK + k)
                                                : make_uint4(0, 0, 0, 0);
  }
  u8* stage = image + (static_cast<i64>(blockIdx.y) * kChunks + c) * (kTok * 256);
#pragma unroll
  for (int w = 0; w < 4; ++w)
    *reinterpret_cast<uint4*>(stage + x_chunk_offset<kTok>(n, 4 * p + w)) =
        make_uint4(word(v[0], w), word(v[1], w), word(v[2], w), word(v[3], w));
}

template <int kBits, int kGroup, int kN, int kK, int kTokTiles, int kNTiles, int kWarpsN, int kSplitK,
          bool kClusterK, int kStages, bool kBf16, bool kOutF32, int kMode, bool kStreamK, bool kXImage>
__global__ void __launch_bounds__((kWarpsN + 4) * 32)
    wq_gemm_wgmma_kernel(const u32* __restrict__ qweight, const u16* __restrict__ scales,
                         const void* __restrict__ zeros, const u16* __restrict__ x,
                         const u16* __restrict__ bias, void* __restrict__ y, float* __restrict__ ws,
                         u32* __restrict__ counters, int M) {
  static_assert(kBits == 1 || kBits == 2 || kBits == 3 || kBits == 4 || kBits == 8, "1, 2, 3, 4 or 8 bits");
  static_assert(kMode >= 0 && kMode <= 3, "DequantMode 0..3");
  static_assert(kNTiles == 2 || kNTiles == 4, "one or two m64 tiles per warpgroup");
  static_assert(kTokTiles == 1 || kTokTiles == 2 || kTokTiles == 4 || kTokTiles == 8, "N = 16..128");
  static_assert(kWarpsN == 4 || kWarpsN == 8, "one or two warpgroups");
  static_assert(kStages >= 2, "the producer fills one stage while the MMA warps read another");
  static_assert(!kStreamK || kSplitK == 1, "stream K replaces split K");
  // kClusterK (the host's wq::cluster_split): the split's blocks are one cluster and add through it.
  static_assert(!kClusterK || kSplitK > 1, "a cluster split splits K");
  constexpr int kTok = 16 * kTokTiles;      // activation rows per block: wgmma's N
  constexpr int kM64 = kNTiles / 2;         // m64 tiles per warpgroup
  constexpr int kConsumers = 32 * kWarpsN;  // the MMA warpgroups; then the producer warpgroup
  constexpr int kBlockTiles = 8 * kM64 * (kWarpsN / 4);
  constexpr int kNPad = (kN + 7) / 8 * 8;
  constexpr int kTilesTotal = kNPad / 8;
  constexpr int kKPad = (kK + 127) / 128 * 128;
  constexpr int kChunks = kKPad / 128;
  constexpr int kChunksPerSplit = (kChunks + kSplitK - 1) / kSplitK;
  constexpr bool kIntMode = kMode <= 1;
  constexpr bool kFloatZeros = kMode >= 2;
  constexpr bool kHasZeros = kMode != 1;
  constexpr bool kScaleAtEnd = kIntMode && kGroup == 0;
  constexpr float kPostScale = PostScale<kBits, kBf16>::kFactor;  // the pairs' missing factor
  constexpr int kV = kBits % 4 == 0 ? 4 : kBits == 2 ? 2 : 1;
  constexpr int kTileWords = 32 * kBits;
  constexpr int kGroupsPerChunk = kGroup == 0 ? 0 : (kGroup >= 128 ? 1 : 128 / kGroup);
  constexpr int kMetaRows = kBlockTiles * kGroupsPerChunk;
  static_assert(kMetaRows <= 128, "one scale/zero row per producer thread");
  // One stage (bytes, 1024-aligned for the swizzle): activations [2 halves of the chunk's 128 k]
  // [kTok rows][128 B, swizzled], weights [kBlockTiles][kTileWords words], scale rows
  // [kMetaRows][16 B], zero rows likewise.
  constexpr int kXHalf = kTok * 128;
  constexpr int kXBytes = 2 * kXHalf;
  constexpr int kWBytes = kBlockTiles * kTileWords * 4;
  constexpr int kStageBytes = (kXBytes + kWBytes + 2 * kMetaRows * 16 + 1023) / 1024 * 1024;
  const u8* zeros8 = static_cast<const u8*>(zeros);
  const u16* zeros16 = static_cast<const u16*>(zeros);

  extern __shared__ uint4 smem[];
  const u32 smem0 = (smem_addr(smem) + 1023) & ~1023u;  // the host adds 1 KiB for this
  const bool producer = threadIdx.x >= kConsumers;
  const int pt = threadIdx.x - kConsumers;  // producer thread 0..127
  const int lane = threadIdx.x & 31;
  const int warp = (threadIdx.x >> 5) & 3;           // within the warpgroup
  const int wtile0 = 8 * kM64 * (threadIdx.x >> 7);  // the warpgroup's first tile in the block
  const int g = lane >> 2;
  const int t = lane & 3;
  // Where the block works: its column block, row block and first chunk, and how many steps it runs.
  // Stream K (below) moves them along as it goes.
  int btile0 = blockIdx.x * kBlockTiles;
  int m0 = blockIdx.z * kTok;
  int c_begin = blockIdx.y * kChunksPerSplit;
  int n_steps = max(0, min(kChunks, c_begin + kChunksPerSplit) - c_begin);

  // Stream K: the work is the list of (row block, column block, chunk) steps, row blocks outermost,
  // chunks innermost; block b of the gridDim.x (persistent) blocks takes steps [b·W/G, (b+1)·W/G), so
  // every SM gets the same number of steps whatever the tile count (28672 columns in 256-column
  // blocks are 112 tiles on 132 SMs). A tile whose chunks several blocks share is summed through the
  // workspace (below, at the MMA warps' loop); its pieces are counted by stream_k_pieces.
  constexpr int kColBlocks = (kTilesTotal + kBlockTiles - 1) / kBlockTiles;
  const i64 sk_tiles = static_cast<i64>((M + kTok - 1) / kTok) * kColBlocks;
  const i64 sk_work = sk_tiles * kChunks;
  const int sk_begin = kStreamK ? static_cast<int>(stream_k_begin(blockIdx.x, sk_work, gridDim.x)) : 0;
  const int sk_end = kStreamK ? static_cast<int>(stream_k_begin(blockIdx.x + 1, sk_work, gridDim.x)) : 0;
  if constexpr (kStreamK) n_steps = sk_end - sk_begin;  // the producer's steps: all of the block's
  auto move_to_tile = [&](int u) {                      // stream K: tile u of the list
    btile0 = u % kColBlocks * kBlockTiles;
    m0 = u / kColBlocks * kTok;
  };
  // Moves the producer's position to its step j (split K: chunk c_begin + j of the block's tile).
  int pos_c = c_begin;
  auto seek = [&](int j) {
    if constexpr (kStreamK) {
      const int w = sk_begin + j, u = w / kChunks;
      pos_c = w - u * kChunks;
      move_to_tile(u);
    } else {
      pos_c = c_begin + j;
    }
  };

  // Activation copies: item i = (row slot i / 4, vector column p = i % 4). Its word w of vector t
  // goes to logical k 16·(2p + w/2) + 8·(w%2) + 2t: 16-byte chunk q = 4p + w of the row, i.e. half
  // q / 8, chunk q % 8 ^ n % 8. Done by the producer warpgroup; rows past M and K are zeros.
  // Loads: the 4 lanes of a row read its vectors (t, p = 0..3), 64 contiguous bytes, so one warp
  // instruction touches 8 rows' lines (row-per-lane items touched 32 lines per instruction and kept
  // the L1 pipe busy; fifteenth session). Stores: slot s holds row n = s with bits 0 and 1 swapped
  // and lanes with p ≥ 2 store their words in the order w ^ 1, so the 8 lanes of a store phase (rows
  // n and n ^ 2, p = 0..3) write 8 different 16-byte bank groups.
  // Slots advance by 32 rows per item, so a thread's items share p and one row pointer.
  constexpr int kXItems = (kTok * 4 + 127) / 128;
  constexpr int kXRowsPerItem = 32;
  const int x_slot = pt / 4;
  const int x_n = (x_slot & ~3) | (x_slot & 1) << 1 | (x_slot >> 1 & 1);  // + 32r for item r
  const int x_pv = pt & 3;
  auto x_item_on = [&](int r) { return kTok * 4 % 128 == 0 || pt + 128 * r < kTok * 4; };
  auto x_row_at = [&] {  // the thread's first row at the current m0, chunk 0
    return x + static_cast<i64>(producer && m0 + x_n < M ? m0 + x_n : 0) * kK + 8 * x_pv;
  };
  const u16* x_row = x_row_at();
  auto load_x = [&](int c, uint4(&v)[kXItems][4]) {  // chunk c's vectors (t, p) of the thread's rows
    if constexpr (kStreamK) x_row = x_row_at();
#pragma unroll
    for (int r = 0; r < kXItems; ++r)
#pragma unroll
      for (int tt = 0; tt < 4; ++tt) {
        const bool on = producer && x_item_on(r) && m0 + x_n + kXRowsPerItem * r < M;
        const bool in_k = kK % 128 == 0 || c * 128 + 32 * tt + 8 * x_pv < kK;
        v[r][tt] = on && in_k
                       ? ld_cached_v4(x_row + static_cast<i64>(kXRowsPerItem * r) * kK + c * 128 + 32 * tt)
                       : make_uint4(0, 0, 0, 0);
      }
  };
  auto store_x = [&](int stage, const uint4(&v)[kXItems][4]) {
    const u32 xs = smem0 + stage * kStageBytes;
    const int wflip = x_pv >> 1;  // p ≥ 2: words in the order w ^ 1
#pragma unroll
    for (int r = 0; r < kXItems; ++r) {
      if (!x_item_on(r)) continue;
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        // word ws of the 4 vectors t (step 2p + ws / 2, k 8·(ws % 2) ..); w is unrolled, so the
        // words are register selects, not a divergent branch
        const int ws = w ^ wflip;
        const u32 dst = xs + x_chunk_offset<kTok>(x_n + kXRowsPerItem * r, 4 * x_pv + ws);
        auto word_w = [&](const uint4& vt) { return wflip ? word(vt, w ^ 1) : word(vt, w); };
        st_shared_v4(dst, word_w(v[r][0]), word_w(v[r][1]), word_w(v[r][2]), word_w(v[r][3]));
      }
    }
    // wgmma reads the stage through the async proxy. The fence waits for all of this thread's
    // earlier memory operations, which is why a warpgroup of its own does this (ncu, when the MMA
    // warps stored: the largest stall).
    fence_proxy_async_shared();
  };

  // Stage s's barriers: full at bars + 8s (2·128 + 1 arrivals: the producer threads' cp.async copies,
  // their activation stores, thread 0's expected bytes of the bulk copies), empty at
  // bars + 8·(kStages + s) (every MMA thread). The host allots 16 B per stage after the stages.
  const u32 bars = smem0 + kStages * kStageBytes;
  auto full_bar = [&](int stage) { return bars + 8 * stage; };
  auto empty_bar = [&](int stage) { return bars + 8 * (kStages + stage); };

  // Weight copies: the block's tiles of a chunk lie side by side (chunk-major layout), so producer
  // thread 0 copies them with one bulk copy, completing on the stage's full barrier; tiles past N are
  // not copied (their stale words dequantize to finite values in columns that are never written).
  // One copy per stage instead of a cp.async per 16 bytes (or, 8-bit, a bulk copy per tile): W4 at
  // 64/128 rows −1.5 % on average (H100, twentieth/twenty-first sessions). With kXImage the same
  // thread copies the stage's activations from the image (wq_x_image_kernel or, act-order,
  // wq_permute_x_kernel) alongside. Scale and
  // zero rows by cp.async (producer thread i: row i).
  constexpr int kTileBytes = kTileWords * 4;
  auto issue_w = [&](int c, int stage) {  // chunk c of the block's current tiles
    const u32 base = smem0 + stage * kStageBytes + kXBytes;
    if (pt == 0) {
      const u32 w_bytes = min(kBlockTiles, kTilesTotal - btile0) * kTileBytes;
      mbar_arrive_expect_tx(full_bar(stage), w_bytes + (kXImage ? kXBytes : 0));  // issue_x's too
      bulk_copy(base, qweight + (static_cast<i64>(c) * kTilesTotal + btile0) * kTileWords, w_bytes,
                full_bar(stage));
    }
    if constexpr (kMetaRows > 0) {
      if (pt < kMetaRows) {
        const int tile = pt / kGroupsPerChunk, sub = pt % kGroupsPerChunk;
        const int group = kGroup <= 128 ? c * kGroupsPerChunk + sub : c * 128 / kGroup;
        const i64 at = static_cast<i64>(group) * kNPad + min(btile0 + tile, kTilesTotal - 1) * 8;
        const u32 meta = base + kWBytes + pt * 16;
        cp_async_16(meta, scales + at);
        if constexpr (kFloatZeros)
          cp_async_16(meta + kMetaRows * 16, zeros16 + at);
        else if constexpr (kHasZeros)
          cp_async_8(meta + kMetaRows * 16, zeros8 + at);
      }
    }
  };

  // kXImage: the stage's activations, from the image, completing on the same barrier (issue_w counted
  // their bytes).
  auto issue_x = [&](int c, int stage) {
    if (kXImage && pt == 0)
      bulk_copy(smem0 + stage * kStageBytes,
                reinterpret_cast<const u8*>(x) + (static_cast<i64>(m0 / kTok) * kChunks + c) * kXBytes,
                kXBytes, full_bar(stage));
  };

  // Per-channel zero points (and, in the float-zero modes, scales): read once per column block. Lane
  // (g, t) of warp w dequantizes column g of tiles 8i + 2w + h.
  u32 z_channel[kM64][2], s_channel[kM64][2];
  auto load_channel = [&] {
#pragma unroll
    for (int i = 0; i < kM64; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int at = min(btile0 + wtile0 + 8 * i + 2 * warp + h, kTilesTotal - 1) * 8 + g;
        z_channel[i][h] = channel_zero<kBits, kGroup, kMode>(zeros, at);
        s_channel[i][h] = channel_scale<kGroup, !kScaleAtEnd>(scales, at);
      }
  };
  if constexpr (!kStreamK) load_channel();

  // With 128 rows the accumulators are zeroed inside each role's branch, so that they hold no
  // registers during the producer's loop: (8,2,8) went from 168 registers and a 20 B spill to 130 and
  // 1.1-10 % faster at 128 rows; at 64 rows the same change made 16384² M = 64 3.7 % slower
  // (fifteenth session), so there they are zeroed before the roles split, as before.
  constexpr bool kAccInBranch = kTokTiles == 8 || kStreamK;
  float acc[kM64][kTok / 2];
  auto zero_acc = [&] {
#pragma unroll
    for (int i = 0; i < kM64; ++i)
#pragma unroll
      for (int e = 0; e < kTok / 2; ++e) {
        acc[i][e] = 0.f;
        reg_fence(acc[i][e]);  // zeroed before the first wgmma_fence
      }
  };

  if constexpr (!kAccInBranch) zero_acc();
  // The accumulators as 16-byte vectors: q holds acc elements 4q .. 4q + 3 (of one m64 tile).
  constexpr int kVecs = kM64 * kTok / 8;
  auto vec = [&](int q) -> float(&)[4] {
    return *reinterpret_cast<float(*)[4]>(&acc[4 * q / (kTok / 2)][4 * q % (kTok / 2)]);
  };
  // A tile's slot in the scratch (stream K, K splits past a cluster's): vector q of MMA thread i at
  // slot + q·kConsumers (`slot` already offset by the thread). Reads it into the accumulators (adds
  // to them with `add`) and leaves it zero, one m64 tile's loads at a time, all in flight before any
  // is used (with the zeroing stores in between, each load waited for the one before: 38 → 64 µs at
  // 28672×4096 M = 64; all 64 at once spilled).
  auto take_slot = [&](float4* slot, bool add) {
#pragma unroll
    for (int i = 0; i < kM64; ++i) {
      float4 v[kVecs / kM64];
#pragma unroll
      for (int q = 0; q < kVecs / kM64; ++q) v[q] = __ldcg(slot + (i * kVecs / kM64 + q) * kConsumers);
#pragma unroll
      for (int q = 0; q < kVecs / kM64; ++q) {
        float(&a)[4] = vec(i * kVecs / kM64 + q);
        const float4 b = add ? make_float4(a[0] + v[q].x, a[1] + v[q].y, a[2] + v[q].z, a[3] + v[q].w) : v[q];
        a[0] = b.x, a[1] = b.y, a[2] = b.z, a[3] = b.w;
        __stcg(slot + (i * kVecs / kM64 + q) * kConsumers, make_float4(0.f, 0.f, 0.f, 0.f));
      }
    }
  };
  // Tile u's slot (of `tiles`), in the scratch that ends where the counters begin, at this thread.
  auto slot_of = [&](i64 u, i64 tiles) {
    return reinterpret_cast<float4*>(counters) + (u - tiles) * kVecs * kConsumers + threadIdx.x;
  };
  auto add_to_slot = [&](float4* slot) {  // atomic fp32 adds, 16 bytes each
#pragma unroll
    for (int q = 0; q < kVecs; ++q) {
      const float(&a)[4] = vec(q);
      red_add_v4(slot + q * kConsumers, a[0], a[1], a[2], a[3]);
    }
  };

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full_bar(s), 2 * 128 + 1);
      mbar_init(empty_bar(s), kConsumers);
    }
    fence_mbarrier_init();  // the bulk copies signal them through the async proxy
  }
  block_barrier();

  // acc[i][4j + r]: column (btile0 + wtile0 + 8i + 2w + r / 2)·8 + g, row m0 + 8j + 2t + r % 2.
  auto column = [&](int i, int r) { return (btile0 + wtile0 + 8 * i + 2 * warp + (r >> 1)) * 8 + g; };
  auto row_of = [&](int e) { return m0 + 8 * (e >> 2) + 2 * t + (e & 1); };
  auto holds = [&](int row, int col) { return !producer && row < M && col < kN; };
  auto for_each_output = [&](auto&& fn) {
#pragma unroll
    for (int i = 0; i < kM64; ++i)
#pragma unroll
      for (int e = 0; e < kTok / 2; ++e) {
        const int row = row_of(e), col = column(i, e & 3);
        if (holds(row, col)) fn(row, col, acc[i][e]);
      }
  };
  auto scale_at_end = [&] {  // per-channel scales: one multiply per output
    if constexpr (kScaleAtEnd) {
#pragma unroll
      for (int i = 0; i < kM64; ++i)
#pragma unroll
        for (int e = 0; e < kTok / 2; ++e)
          acc[i][e] *= to_f32<kBf16>(__ldg(scales + min(column(i, e & 3), kNPad - 1))) * kPostScale;
    }
  };

  // Split K: the cluster's kSplitK blocks each hold a piece of the tile's sums. 16-byte vector q of
  // every MMA thread's accumulators belongs to rank q % kSplitK, which receives it from the other
  // ranks in its freed stages, at [sender rank][q / kSplitK][thread] (coalesced), adds the pieces in
  // rank order (the same order every call, whatever M) and writes those outputs. No workspace, no
  // counters, no atomics; two cluster barriers, which every thread of every block passes.
  constexpr int kOwnVecs = (kVecs + kSplitK - 1) / kSplitK;
  static_assert(!kClusterK || kSplitK * kOwnVecs * kConsumers * 16 <= kStages * kStageBytes,
                "the other pieces' sums fit in the stages (the host checks this too)");
  auto add_cluster_pieces_and_store = [&] {
    const int rank = static_cast<int>(cluster_rank());
    auto received = [&](int from, int q) {
      return smem0 + static_cast<u32>((from * kOwnVecs + q / kSplitK) * kConsumers + threadIdx.x) * 16;
    };
    cluster_sync();  // every block of the cluster is done with its stages
    if (!producer) {
#pragma unroll
      for (int q = 0; q < kVecs; ++q) {
        const float(&a)[4] = vec(q);
        if (q % kSplitK != rank)
          st_cluster_v4(cluster_map(received(rank, q), q % kSplitK), a[0], a[1], a[2], a[3]);
      }
    }
    cluster_sync();  // every piece has landed
    if (producer) return;
#pragma unroll
    for (int q = 0; q < kVecs; ++q) {
      if (q % kSplitK != rank) continue;
      float(&a)[4] = vec(q);
      float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
      for (int r = 0; r < kSplitK; ++r) {
        const float4 v = r == rank ? make_float4(a[0], a[1], a[2], a[3]) : ld_shared_f4(received(r, q));
        sum = r == 0 ? v : make_float4(sum.x + v.x, sum.y + v.y, sum.z + v.z, sum.w + v.w);
      }
      a[0] = sum.x, a[1] = sum.y, a[2] = sum.z, a[3] = sum.w;
    }
#pragma unroll
    for (int i = 0; i < kM64; ++i)
#pragma unroll
      for (int e = 0; e < kTok / 2; ++e) {
        const int row = row_of(e), col = column(i, e & 3);
        if ((i * (kTok / 2) + e) / 4 % kSplitK == rank && holds(row, col))
          store_output<kN, kOutF32, kBf16>(row, col, acc[i][e], bias, y);
      }
  };

  // Split K past a cluster's (four ways or more): every piece adds its accumulators as they lie in
  // registers (16-byte vectors, side by side across the MMA threads: coalesced) into the tile's slot,
  // in the scratch that ends where the counters begin (as stream K's), and counts itself in; the
  // piece that counts in last reads the sums back, writes y and leaves slot and count zero. (Scalar
  // atomics per output into the fp32 sums, as wq_gemm.cuh's split K adds, cost this kernel ~6-8 µs
  // at 4096² M = 64 split 4; twenty-fifth session.)
  auto add_split_pieces_and_store = [&] {
    __shared__ u32 last_piece;
    if (producer) return;
    const int u = blockIdx.z * gridDim.x + blockIdx.x;
    float4* slot = slot_of(u, static_cast<i64>(gridDim.z) * gridDim.x);
    add_to_slot(slot);
    // One fence after the barrier, by the thread that counts in (as stream K does), instead of one per
    // thread before it: the barrier orders every thread's adds before that fence (H200: 0.3-1 % faster
    // at 64/128 rows; per-thread fences showed as membar stalls, 1.1 per issue; twenty-sixth session).
    named_barrier<1, kConsumers>();  // every MMA thread's sums are added ...
    if (threadIdx.x == 0) {
      __threadfence();  // ... and visible device-wide before the count
      last_piece = atomicAdd(counters + u, 1u) == kSplitK - 1;
    }
    named_barrier<1, kConsumers>();
    if (!last_piece) return;
    __threadfence();
    take_slot(slot, false);  // the slot holds every piece's sums, this one's too
    for_each_output(
        [&](int row, int col, float v) { store_output<kN, kOutF32, kBf16>(row, col, v, bias, y); });
    if (threadIdx.x == 0) counters[u] = 0;
  };

  // The two roles run separate loops (so neither holds the other's registers). Without stream K both
  // run exactly n_steps iterations and neither returns early, since the split-K epilogue's (cluster)
  // barriers involve every thread; with it the MMA warps write each tile they finish among
  // themselves (a named barrier) while the producer goes on into the next tile's steps. Producer: the
  // weights of the first kStages steps at once, then per step: wait until the stage is free (its step
  // kStages earlier consumed), fill it, and load the next step's activations.
  if (producer) {
    for (int j = 0; j < kStages && j < n_steps; ++j) {
      seek(j);
      issue_w(pos_c, j);
      mbar_arrive_cp_async(full_bar(j));
    }
    if constexpr (kXImage) {
      // The image (act-order: permutation) kernel runs just before this one, which the host may launch
      // early (programmatic
      // dependent launch): the weight copies above overlap it; the image is read only once it is done.
      wait_for_previous_grid();
      for (int j = 0; j < kStages && j < n_steps; ++j) {
        seek(j);
        issue_x(pos_c, j);
      }
    }
    uint4 xv[kXItems][4];
    if (n_steps > 0) {
      seek(0);
      if constexpr (!kXImage) load_x(pos_c, xv);
    }
    int stage = 0;
    u32 phase = 0;  // parity of the stage's current round
    for (int j = 0; j < n_steps; ++j) {
      if (j >= kStages) {
        mbar_wait(empty_bar(stage), phase ^ 1);
        seek(j);
        issue_w(pos_c, stage);
        issue_x(pos_c, stage);
        mbar_arrive_cp_async(full_bar(stage));
      }
      if constexpr (!kXImage) store_x(stage, xv);
      mbar_arrive(full_bar(stage));
      if (j + 1 < n_steps) {
        seek(j + 1);
        if constexpr (!kXImage) load_x(pos_c, xv);
      }
      if (++stage == kStages) stage = 0, phase ^= 1;
    }
    cp_async_commit();  // (the copies are never committed: the mbarriers track them)
    cp_async_wait<0>();
    if constexpr (kAccInBranch) zero_acc();  // never stored
  } else {
    int stage = 0;
    u32 phase = 0;
    // The steps of one tile (stream K: of one piece of a tile).
    auto consume = [&](int steps) {
      for (int j = 0; j < steps; ++j) {
        mbar_wait(full_bar(stage), phase);
        const u32 st = smem0 + stage * kStageBytes;
        // A operands of all 8 k16 steps: a[i][p][h][e] holds pairs e of tile 8i + 2w + h (e = 0, 1: step
        // 2p; 2, 3: step 2p + 1).
        u32 a[kM64][4][2][4];
        // This warp's weight fragments and the scale and zero of its columns (lane t's 32 k values
        // never straddle a group).
        u32 wv[kM64][2][kBits], zq[kM64][2], s2[kM64][2];
        const u32 frag = st + kXBytes + ((wtile0 + 2 * warp) * kTileWords + lane * kV) * 4;
        const int gi = kGroup >= 128 || kGroup == 0 ? 0 : 32 * t / kGroup;
        const u32 meta = st + kXBytes + kWBytes + ((wtile0 + 2 * warp) * kGroupsPerChunk + gi) * 16;
        static_for<kM64 * 2>([&](auto ih_c) {
          constexpr int i = decltype(ih_c)::value / 2, h = decltype(ih_c)::value % 2;
          load_fragment<kBits, (8 * i + h) * kTileWords * 4>(frag, wv[i][h]);
          if constexpr (kGroup == 0) {
            zq[i][h] = z_channel[i][h];
            s2[i][h] = s_channel[i][h];
          } else {
            constexpr int kS = (8 * i + h) * kGroupsPerChunk * 16, kZ = kS + kMetaRows * 16;
            s2[i][h] = splat2(ld_shared_u16<kS>(meta + 2 * g));
            if constexpr (kFloatZeros)
              zq[i][h] = splat2(ld_shared_u16<kZ>(meta + 2 * g));
            else
              zq[i][h] = kHasZeros ? ld_shared_u8<kZ>(meta + g) : (1u << (kBits - 1));
          }
        });
#pragma unroll
        for (int i = 0; i < kM64; ++i)
#pragma unroll
          for (int p = 0; p < 4; ++p)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              dequant_pairs<kBits, kBf16, kMode, !kScaleAtEnd>(wv[i][h], p, zq[i][h], s2[i][h], a[i][p][h]);
#pragma unroll
              for (int e = 0; e < 4; ++e) reg_fence(a[i][p][h][e]);
            }
        wgmma_fence();
        const u64 desc0 = wgmma_desc_sw128(st, 1024);
        // One accumulator's 8 k16 steps, then the next m64 tile's: with the two accumulators taken in
        // turn, the MMA warps alone ran 5-8 % slower (16384² M = 64: 73.2 vs 67.0 µs; sixteenth session).
#pragma unroll
        for (int i = 0; i < kM64; ++i)
#pragma unroll
          for (int p = 0; p < 4; ++p)
#pragma unroll
            for (int hs = 0; hs < 2; ++hs) {
              // Step s = 2p + hs: half s / 4 of the chunk, 32·(s % 4) bytes into its rows.
              const int off = (p / 2) * kXHalf + 32 * ((2 * p + hs) % 4);
              const u64 desc = wgmma_desc_advance(desc0, off);
              wgmma_rs<kTok, kBf16>(acc[i], a[i][p][0][2 * hs], a[i][p][1][2 * hs], a[i][p][0][2 * hs + 1],
                                    a[i][p][1][2 * hs + 1], desc);
            }
        wgmma_commit();
        // Wait before the next step's dequantization writes A registers again (ptxas serializes every
        // wgmma if they are written while one is in flight); other blocks and warpgroups keep the
        // tensor cores busy meanwhile.
        wgmma_wait<0>();
        mbar_arrive(empty_bar(stage));  // this thread's reads of the stage, its wgmma's included, are done
        if (++stage == kStages) stage = 0, phase ^= 1;
      }
#pragma unroll
      for (int i = 0; i < kM64; ++i)
#pragma unroll
        for (int e = 0; e < kTok / 2; ++e) reg_fence(acc[i][e]);
    };
    if constexpr (kStreamK) {
      // Piece by piece: the steps of one tile, then its outputs. A tile the block runs whole is stored
      // directly. A shared tile is written by its head, the block with its first chunks, which runs
      // them last (they end its range). Every other piece is a block's first (or only) one: it leaves
      // its sums in the tile's scratch slot (below), counts itself in (counters[u], release) and goes
      // on. The head waits for that count, adds the slot into its accumulators, writes y and leaves
      // slot and count zero.
      // The head waits only for pieces that came first in their blocks, so it never waits on a block
      // that waits (a fence and a count per piece at the point where it happens cost 10 µs of 38 at
      // 28672×4096 M = 64: the MMA warps stalled mid-run; seventeenth session).
      for (int w = sk_begin; w < sk_end;) {
        const int u = w / kChunks, tile_end = (u + 1) * kChunks, end = min(sk_end, tile_end);
        move_to_tile(u);
        load_channel();
        zero_acc();
        consume(end - w);
        scale_at_end();
        const u32 pieces = stream_k_pieces(u, kChunks, sk_work, gridDim.x);
        // Tile u's slot, in the scratch that ends where the counters begin: the accumulators as they
        // lie in registers, 16-byte vectors j/4 of every MMA thread side by side (coalesced), read back
        // by the head the same way. With two pieces the other one stores its sums there; with more they
        // add them (red.v4), so the slot must start zero: the head zeroes it after reading, whatever the
        // piece count (a later call's M may cut the tile differently), and so every call leaves the
        // workspace zero (a review caught a split-K plan's counters inside a stream-K plan's scratch).
        // Outside this plan's counters and fp32 slice (a scratch after the slice of M = 1 lay in the
        // slice of M = 2: the GPU tests caught it). (Before the slot took every piece count,
        // three or more pieces added scalar atomics per output into the fp32 slice: 4096² M = 64 ran
        // 14.4 µs with ~9 µs of it fixed cost; eighteenth session.)
        float4* slot = slot_of(u, sk_tiles);
        if (pieces > 1 && w != u * kChunks) {  // a later piece
          if (pieces == 2) {
#pragma unroll
            for (int q = 0; q < kVecs; ++q) {
              const float(&a)[4] = vec(q);
              __stcg(slot + q * kConsumers, make_float4(a[0], a[1], a[2], a[3]));
            }
          } else {
            add_to_slot(slot);
          }
          named_barrier<1, kConsumers>();  // every MMA thread's sums are stored ...
          if (threadIdx.x == 0) {
            __threadfence();  // ... and visible device-wide before the count
            atomicAdd(counters + u, 1u);
          }
        } else {
          if (pieces > 1) {  // the head: the other pieces' sums first
            if (threadIdx.x == 0)
              while (ld_acquire_u32(counters + u) != pieces - 1) {
              }
            named_barrier<1, kConsumers>();
            take_slot(slot, true);
          }
          for_each_output(
              [&](int row, int col, float v) { store_output<kN, kOutF32, kBf16>(row, col, v, bias, y); });
          if (pieces > 1 && threadIdx.x == 0) counters[u] = 0;
        }
        w = end;
      }
    } else {
      if constexpr (kAccInBranch) zero_acc();
      consume(n_steps);
    }
  }
  if constexpr (!kStreamK) {
    scale_at_end();
    if constexpr (kClusterK)
      add_cluster_pieces_and_store();
    else if constexpr (kSplitK > 1)
      add_split_pieces_and_store();
    else
      write_outputs<kN, kSplitK, /*kDeterministic=*/false, kOutF32, kBf16>(for_each_output, bias, y, ws,
                                                                           counters, M);
  }
}

}  // namespace lowbit::kern

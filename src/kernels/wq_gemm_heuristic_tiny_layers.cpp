// The heuristic's rules for tiny and narrow layers (v72, v78, v76-v77, v80-v83): at most half as many
// 8-column tiles as SMs (choose_config's first step, 1-128 rows), and up to 2 tiles a SM at 64 and 128 rows
// (a change to the mma.sync rules' choice), on sm_90a. Fitted to `lowbit tune` runs like the rest
// (docs/perf-notes.md, eightieth to eighty-third sessions).
#include <algorithm>
#include <optional>

#include "kernels/wq_gemm_internal.hpp"

namespace lowbit::wq {

namespace {
// Thread-block clusters of `size` (1-8) blocks that run at once with `per_sm` (1 or 2) blocks a SM, scaled
// from the H200's 132 SMs (cudaOccupancyMaxActiveClusters, docs/perf-notes.md § 79.2): not linear in the
// size, since a cluster's blocks must share one GPC.
int64_t clusters_at_once(int64_t size, int per_sm, int sms) {
  static constexpr int kOne[8] = {132, 66, 39, 30, 22, 17, 15, 15},
                       kTwo[8] = {264, 132, 79, 62, 47, 39, 32, 30};
  return int64_t{per_sm >= 2 ? kTwo[size - 1] : kOne[size - 1]} * sms / 132;
}

// Where v72, v76-v78 and v80-v83 apply: sm_90a with activations staged per warp allowed (not deterministic),
// every group and dequantization mode but fp16 accumulation (its own rules,
// wq_gemm_heuristic_fp16_accum.cpp); v77 and the formats each rule was benched in are at the rules.
bool tiny_layer_format(const WqGemmProblem& p, const Arch& arch) {
  return has_wgmma(arch) && may_stage_per_warp(p, arch) && p.accum != DType::F16;
}
}  // namespace

// Heuristic v72 (eightieth session, out of sample): layers of N ≤ 4·SMs columns (tensor-parallel shards of
// MoE experts and unfused K/V projections: 128×8192, 256-512×7168, 384×4096). The rules before gave them a
// handful of blocks: 16-32 blocks of 16 warps along K at one row, per-warp (1,4,1,4) blocks at 64 rows and
// block-shared (2,4,2,2) ones at 128, K split by fill_split. H200 tune of W4 f16 at 1/16/64/128 rows, the
// heuristic before against the best (tuner times): one row 1.10-1.40× (256×7168 3.67 µs against 2.62), 16
// rows 1.03-1.27×, 64 rows 1.01-1.48× (512×7168 7.74 against 5.23), 128 rows 1.19-1.97× (256×7168 10.03
// against 5.08). Most bests staged per warp one 16-row tile of 2 tiles (4-8 at 128 rows, where more rows
// share each dequantized weight) with 4-12 warps along K, K split until the blocks covered about 0.5-1.5 of
// the SMs. Bench, file off, the choice before → this: W4 f16 on 9 layers at 1/4/16/32/64/128 rows 0.50-0.995×
// but 128×4096 at 64 rows (1.046) and 448×14336 at 128 (1.008); on 256/512×7168 at 1/16/64/128 rows bf16
// 0.49-0.99×, W2 0.46-0.94×, W8 0.57-1.000×, GPTQ-symmetric bf16 0.52-0.99×. From 32 chunks of K up to 32
// rows, from 16 at 33-128 rows: on 16-24 chunks the rules before were within 1.08× of the tune's best at one
// row and ran 0.90-0.98× this at 32 rows, while this ran 0.61-0.95× them at 64/128 rows on 7 layers. Under 8
// M weights from 64 rows: from there v24's few-block wgmma stream K ran 0.63-0.98× this (512×16384,
// 280×28672). Groups of 128 with integer zeros or symmetric at first; since the eighty-first session every
// format in tiny_layer_format: the rules before ran 1.05-1.99× the best on 29 of 36 tuned problems in
// g32/g64/g256, per channel and HQQ's float zeros (tuner times), and this ran 0.514-0.974× them on 68 of 69
// pairs (bench, file off; 2/3/4/8-bit, f16/bf16, q·s + z among them; in and out of sample), 1.015× on one
// (float zeros g64, 320×8192 at 128 rows). v78 (eighty-first session): at 9-16 rows on 16-31 chunks, 4 warps
// along K and K split the same way, where that makes 4 pieces or more. Bench, file off, against the rules
// before ((1,2,1,8,1,3), unsplit): 0.785-0.976× on 17 pairs of 128-448 columns, K 2048-3072 (224×3072 3.01
// → 2.49 µs), bf16, W2 and g64 among them; split 3 (512×2048, 32 blocks) 1.062×, so not. (The tune had the
// rules before 1.18× the best on 256×2048; in bench times, weights rotated out of L2, 1.053×.) Benched in
// g128 (W4 and W2, f16 and bf16) and W4 g64; the other formats follow v72's.
std::optional<WqGemmConfig> tiny_layer_config(const WqGemmProblem& p, const HeuristicShape& h,
                                              const Arch& arch) {
  if (!tiny_layer_format(p, arch)) return std::nullopt;
  const double weights = static_cast<double>(p.n) * static_cast<double>(p.k);
  const bool short_k_16 = h.bucket == 16 && h.chunks >= 16 && h.chunks < 32;  // v78
  if (2 * h.tiles > h.sms || h.chunks < (h.bucket <= 32 && !short_k_16 ? 32 : 16) || h.bucket > 128 ||
      (h.bucket >= 64 && weights >= 8e6))
    return std::nullopt;
  // 1-bit weights at 65-128 rows in groups of 128 or 256: 4 stages (a chunk of one tile is 128 bytes).
  // Bench against 3: g128 0.814-0.961× on 6 layers (f16, bf16, symmetric), g256 0.898-0.919× on two, where
  // 2-bit ran 0.979-1.006×; g32, g64 and per channel 0.982-1.031× on 8 (eighty-second session), so not.
  const bool deep_one_bit = p.bits == 1 && (p.group_size == 128 || p.group_size == 256);
  const int stages = h.bucket <= 16 ? 2 : h.bucket >= 128 && deep_one_bit ? 4 : 3;
  WqGemmConfig c = base_config(1, h.bucket >= 128 ? 4 : 2, short_k_16 ? 4 : 8, stages);
  c.x_shared = true;
  // K in the fewest pieces (at most 8, K at least a chunk a warp a piece) that make the SMs' count of blocks
  // at one row, 0.7 of it from 2 rows. v78's 4 warps along K: no piece under a chunk a warp, as in every
  // split benched (pieces are ceil(chunks / split) chunks, so the last is the shortest: 17 chunks in 4 leave
  // it 2, 25 in 6 none). The pieces meet in a cluster, one a block of the unsplit grid, so the split stops
  // short where those clusters would not all run at once (320×8192 at 32 rows: 40 clusters of 3 where 39
  // fit, 1.22× the choice before; split 2 0.81×). Blocks a SM by shared memory (the split's receive region
  // counted), at most 2 (registers: 60-102 a thread of 256).
  const int64_t blocks = ceil_div(h.tiles, c.n_tiles) * ceil_div(h.bucket, int64_t{16});
  const double target = h.bucket == 1 ? h.sms : 0.7 * h.sms;
  const int64_t most = std::min<int64_t>(kMaxMmaClusterSplit, h.chunks / c.warps_k);
  for (int64_t s = 2; s <= most && static_cast<double>(blocks * (s - 1)) < target; ++s) {
    WqGemmConfig split = c;
    split.split_k = static_cast<int>(s);
    if (blocks > clusters_at_once(s, smem_blocks_per_sm(p, split, arch) >= 2 ? 2 : 1, h.sms)) break;
    if (short_k_16 && h.chunks - (s - 1) * ceil_div(h.chunks, s) < c.warps_k) break;
    c.split_k = split.split_k;
  }
  if ((short_k_16 && c.split_k < 4) || !can_implement(p, c, arch)) return std::nullopt;
  return c;
}

// Heuristics v76 and v77 (eightieth session, out of sample): narrow layers past v72's band (over half a tile
// a SM), from 16 chunks. H200 tune of W4 f16 on 640-1152 columns: at 64 rows the heuristic before
// ((1,4,1,4,1,3) staged per warp) 1.10-1.17× the best, every best (1,4,1,8,1,3); at 128 rows (block-shared
// (2,4,2,2)) 1.09-1.24×, (1,4,1,4,1,3) within 1.06× of the bests wherever listed.
// - v76, 64 rows, up to one tile a SM (one wave of (1,4,1,8,1,3)'s blocks, one a SM by shared memory): that
//   block. Bench, file off, µs ratios against the choice before: 0.865-0.961 on 12 layers of 600-1024
//   columns, K 2048-8192 (640×4096 4.97 → 4.46), bf16 0.897-0.914 on two; over one wave it lost
//   (1088×3584 1.217, 1152×2048 1.254). It takes v24's few-block wgmma stream K too on up to 64 chunks:
//   0.733-0.827 on 1000-1056×8192 (1024×8192 9.46 → 7.26; bf16 and 3-bit among them).
// - v77, 128 rows, up to 1.1 tiles a SM (1.5 since the eighty-first session, below): (1,4,1,4,1,3) for the
//   block-shared choice. Bench: 0.836-0.983 on 11 layers (768×2048 5.19 → 4.41), bf16 0.836-0.917 on two;
//   (1,4,1,8,1,3) lost there (1.07-1.19×), and against v24's wgmma (1024/1056×8192) (1,4,1,4,1,3) ran 1.03×
//   and 0.96×: wgmma stays.
// 3/4-bit weights, as measured; at first in groups of 128 with integer zeros or symmetric. Eighty-first
// session, bench, file off, against the choice before: v76 in every format of tiny_layer_format 0.780-0.941
// on 20 pairs (g32, g64, g256, per channel, HQQ's float zeros and q·s + z in g64, bf16 and 3-bit among them);
// v77 0.935 in g256 and 0.945 per channel, but 0.914-1.075 where every weight is dequantized before the MMA
// (g32/g64, float zeros, q·s + z: 1.014-1.075 with float zeros, 1.054-1.071 on 768×7168 in g32/g64), so v77
// only where it is not. A tune at 1.3-1.9 tiles a SM had (2,4,2,2) at 1.18-1.24× the best on 1408×5120 and
// 1536×4096 (best v77's block): forced against (2,4,2,2,1,3), 0.778-0.827 on 7 layers of 1.21-1.45 tiles a SM
// (bf16, 3-bit, g256 among them), 1.079-1.128 on 1600×3584 and 1664×2048 (1.52-1.58: 400-416 blocks of 3 a
// SM, past one wave) and 1.10-1.28 at 1.7-1.94. So up to one wave of its blocks, and at most the 1.5 tiles a
// SM measured.
std::optional<WqGemmConfig> narrow_layer_config(const WqGemmProblem& p, const HeuristicShape& h,
                                                const WqGemmConfig& chosen, const Arch& arch) {
  const bool three_four = p.bits == 3 || p.bits == 4;  // v76, v77 and v81; v80 takes 8-bit weights too
  const bool low_bits = p.bits <= 2;                   // v82 and v83 (3-bit too in v83)
  if (!tiny_layer_format(p, arch) || (!three_four && !low_bits && p.bits != 8) || 2 * h.tiles <= h.sms ||
      h.chunks < 16)
    return std::nullopt;
  WqGemmConfig per_warp = base_config(1, 4, 4, 3);
  per_warp.x_shared = true;
  const bool v24_wgmma = chosen.wgmma && chosen.stream_k && h.chunks <= 64;
  const bool v76 = three_four && h.bucket == 64 && h.tiles <= h.sms && (chosen == per_warp || v24_wgmma);
  const bool block_shared = !chosen.wgmma && chosen.x_shared && chosen.m_tiles == 2 && chosen.n_tiles == 4 &&
                            chosen.warps_n == 2 && chosen.warps_k == 2;  // (2,4,2,2)
  // v77's band at 128 rows (v82's too): up to 1.5 tiles a SM while its blocks make one wave (3 a SM by shared
  // memory in 4-bit g128: 75 KB each).
  const bool v77_band =
      h.bucket == 128 && 10 * h.tiles <= 15LL * h.sms && smem_waves(p, per_warp, arch, h.sms) == 1;
  const bool v77 = three_four && v77_band && !dequantizes_every_weight(p) && block_shared;
  // 64 rows over 1 and up to 2 tiles a SM where the rules leave (1,4,1,4,1,3): v80's and v83's band.
  const bool band_64 = h.bucket == 64 && h.tiles > h.sms && h.tiles <= 2LL * h.sms && chosen == per_warp;
  // v80 (eighty-second session): 4-bit weights (8-bit too, below) at 64 rows over 1 and up to 2 tiles a SM,
  // where the rules leave (1,4,1,4,1,3): 32-row warps, 4 stages. v81: 128 rows over 1.5 and up to 2 tiles a
  // SM, block-shared (2,4,2,2,1,3) with 4 warps along K. H200 tune of W4 f16 on 1536-2176 columns: at 64 rows
  // (2,4,1,4,1,4) the best of 7 of 8 (the heuristic 1.056-1.071× it; 2176×3584, 2.06 a SM,
  // (1,4,1,4,1,2), 1.017×); at 128 rows (2,4,2,4) or (2,4,2,6) on 1536-1920 columns (1.10-1.13×). Bench, file
  // off, forced against the choice before: v80 0.922-0.958 on 12 layers of 1.09-1.94 tiles a SM, bf16
  // 0.947-0.948, g64 0.898-0.905, HQQ g64 0.815-0.821, but 3-bit 1.064-1.069 (so 4-bit only); v81 0.904-0.937
  // on 6 layers of 1.52-1.94 ((2,4,2,6) 0.881-0.986). Both blocks take 150-168 KB of shared memory (one a
  // SM), and 2 tiles a SM make one wave of them (64 rows: 4 tiles × 2 row blocks; 128 rows: 8 tiles × 4).
  // Through the heuristic, out of sample and in other formats: v80 0.936-0.948 on 3 layers, GPTQ-symmetric,
  // g256, g32, q·s + z and HQQ bf16 0.842-0.962, but per channel 1.080-1.086 (so not per channel); v81
  // 0.901-0.909 on 3, bf16, 3-bit, g256, per channel, g64, HQQ and g32 0.877-0.925. A tune of narrow layers
  // in W8 then had the rules 1.15× the best at 64 rows on 1280/1792×4096 (bests v80's block): v80 ran
  // 0.857-0.870 the heuristic on 4 layers of 1.1-1.7 tiles a SM, bf16 0.896, per channel 0.966; so 8-bit
  // weights too, per channel among them.
  const bool v80 = band_64 && ((p.bits == 4 && p.group_size != 0) || p.bits == 8);
  const bool v81 = three_four && h.bucket == 128 && 10 * h.tiles > 15LL * h.sms && h.tiles <= 2LL * h.sms &&
                   block_shared && chosen.split_k == 1 && chosen.stages == 3;  // (2,4,2,2,1,3), as benched
  // v82 (eighty-third session): 1/2-bit weights at 128 rows over half and up to 2 tiles a SM, where the rules
  // leave block-shared (2,4,2,2,1-2,3): over 1 and up to 1.5 tiles a SM, while its blocks make one wave,
  // v77's (1,4,1,4,1,3), in every format; elsewhere (1,8,1,4,1,3), not where every weight is dequantized
  // first. H200 tune of W2 and 1-bit on 1280/1792×4096 and 1920×3072: the heuristic 1.10-1.48× the best (f16,
  // bf16, g64, per channel; tuner times). Bench, file off, forced against the choice before: (1,8,1,4,1,3)
  // 0.79-0.84 on 8 W2 layers of 0.73-1.82 tiles a SM (1280×4096 13.12 → 10.38 µs), bf16, symmetric and g256
  // 0.81-0.86, 1-bit 0.78-0.82 on 4, per channel 0.95-0.98, but g32/g64/HQQ g64 1.02-1.15; (1,4,1,4,1,3)
  // faster still at 1.03-1.45 tiles a SM (0.74-0.79 in g128, 0.79 per channel, 0.88-0.93 in g32/g64/HQQ on
  // 1280×4096) but 0.98-1.21 at 1.7-1.8 and 0.82-0.87 under 1. (Wgmma stream K (2,2,8,1,1,3): 0.69-0.73
  // at 1.0-1.2 tiles a SM, 0.88-1.13 elsewhere.)
  const bool v82 = low_bits && h.bucket == 128 && h.tiles <= 2LL * h.sms && block_shared &&
                   chosen.split_k <= 2 && chosen.stages == 3;
  const bool v82_wave = v82 && h.tiles > h.sms && v77_band;
  const bool v82_eight_tiles = v82 && !v82_wave && !dequantizes_every_weight(p);
  // v83: 1/2/3-bit weights at 64 rows over 1 and up to 2 tiles a SM where the rules leave (1,4,1,4,1,3):
  // (1,8,1,8,1,3), 4 stages where every weight is dequantized first; not per channel, nor 3-bit weights
  // dequantized first (their 4 stages take 240 KB of shared memory; 3 ran 0.97-1.01). Tunes: (1,8,1,8,1,3/4)
  // the best of W2 f16 on 1280/1792×4096, W2 bf16 on 1280×4096 and 1920×3072 and 3-bit on 1792×4096 (the
  // heuristic 1.09-1.16×). Bench, forced: W2 0.85-0.96 on 6 layers of 1.03-1.82 tiles a SM, bf16 0.87-0.91,
  // symmetric 0.89-0.91, g64/g32 with 4 stages 0.89-0.93 (3: 0.92-0.96), HQQ g64 0.93-0.96, 1-bit 0.89-0.93,
  // 3-bit 0.86-0.98 (bf16 0.88-0.92); per channel 1.04-1.12, and under one tile a SM 1.19-1.23. On over 64
  // chunks 1/2-bit weights take v85's wgmma instead (wq_gemm_heuristic_wgmma.cpp).
  const bool v83 =
      band_64 && p.bits <= 3 && p.group_size != 0 && !(p.bits == 3 && dequantizes_every_weight(p));
  if (!v76 && !v77 && !v80 && !v81 && !v82_wave && !v82_eight_tiles && !v83) return std::nullopt;
  WqGemmConfig c = per_warp;
  if (v76) c.warps_k = 8;
  if (v80) c.m_tiles = 2, c.stages = 4;
  if (v81) c = chosen, c.warps_k = 4;
  if (v82_eight_tiles) c.n_tiles = 8;
  if (v83) c.n_tiles = 8, c.warps_k = 8, c.stages = dequantizes_every_weight(p) ? 4 : 3;
  if (!can_implement(p, c, arch)) return std::nullopt;
  return c;
}

}  // namespace lowbit::wq

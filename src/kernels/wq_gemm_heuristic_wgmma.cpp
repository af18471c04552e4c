// The heuristic's warpgroup-MMA choice (sm_90a, from 32 rows): wq::choose_wgmma_config, the first step
// of choose_config (wq_gemm_heuristic.cpp), fitted to `lowbit tune` runs like the rest (docs/perf-notes.md).
#include <optional>

#include "kernels/wq_gemm_internal.hpp"

namespace lowbit::wq {

std::optional<WqGemmConfig> choose_wgmma_config(const WqGemmProblem& p, const Arch& arch, int sm_count) {
  const HeuristicShape h = heuristic_shape(p, sm_count);
  const int64_t bucket = h.bucket, tiles = h.tiles, chunks = h.chunks;
  const int sms = h.sms;
  const double tiles_per_sm = h.tiles_per_sm;
  auto make = base_config;
  // Hopper, warpgroup MMA: two MMA warpgroups, 4 tiles per warp, 3 stages, K split to fill half the
  // SMs (one block fits per SM, so this keeps the grid to one wave). Where (docs/perf-notes.md,
  // "heuristic v4", from `lowbit tune` of the model presets):
  // - 64 and 128 rows from 48 M weights, one m64 tile per warpgroup (a 128-row bucket runs two row
  //   blocks). H100: at 128 rows 2-33 % faster than two m64 tiles on the 8 layers from 117 M
  //   weights; at 64 rows 3 stages 2-4 % faster than 4. H200: best or within 3 % on every such layer.
  // - Not at 32 rows any more (v24: again on the widest large layers, below): wgmma (one 32-row tile)
  //   was best on 7 of 9 large layers there until the mma.sync kernel swapped its operands from 16
  //   rows (session of 2026-11-23, eleventh); then
  //   block-shared mma.sync won on the 3 such standard layers re-tuned on the H200 by 10-19 %
  //   (`lowbit tune` 16384² 69.2 µs against `lowbit bench` of wgmma 76.8, 28672×4096 32.5 vs 37.2,
  //   4096×14336 20.1 vs 24.8), while the old margins of wgmma on the others were 3-15 %, less than
  //   the swap gained (9-21 %).
  // - 4-bit weights; 2- and 8-bit with groups of 128 at 64 and 128 rows only: 1.1-1.7× faster than
  //   x_shared there (H200; 16384² M=128 W8 251 µs against 427). Per-channel scales and other group
  //   sizes spilled registers at 8 bits then (no longer: v39 and v41 below take 3-bit and 1-bit weights and
  //   every 2/8-bit group size; v56 takes 2/8-bit at 32 rows too).
  // - 128 rows below 48 M weights: from 8 M weights at 7-10 tiles per SM (8192×1024…4096) with 2
  //   tiles per warp, a 128-column block (one wave of blocks, K unsplit): 14-28 % faster than
  //   x_shared on both GPUs (tune-day heuristic; 12-17 % than the best x_shared config); K ≥ 2N from 16 M
  //   weights (2560×8192) with 4 tiles: 18-22 % faster on both. Measured on W4 g128 only, so only there
  //   (per-channel W4 and 8-bit spill with them).
  // Heuristic v39 (sixty-second session, out of sample: an H200 tune of four layers of the seventh set
  // in formats beyond groups of 128 with integer zeros): 3-bit weights follow the 4-bit rules and 8-bit
  // weights with per-channel scales the 8-bit g128 ones. At 64 rows the tuned best of all four layers
  // was a wgmma config in both (5120×4096, 8192×6144, 6144×16384, 28672×5120), where the mma.sync
  // configs the heuristic ran took 1.44-2.02× (3-bit g128) and 1.25-1.90× (8-bit per channel) as long;
  // the wgmma configs no longer spill in these formats (ptxas: 90-168 registers).
  // v41 (the same session, a second tune: 8192×6144 and 28672×5120 at 64 rows, all best wgmma, the
  // mma.sync configs the heuristic ran 1.79-1.97× the best in 1-bit g128, 1.53-1.69× in 2-bit g64, 1.43-1.88×
  // in 8-bit g64; tuner times only): 1-bit weights follow the 2-bit rules, and 2/8-bit weights of every group
  // size (per channel included) the g128 ones.
  const int bits = p.bits == 3 ? 4 : p.bits == 1 ? 2 : p.bits;
  const bool g128 = p.group_size == 128 || bits == 2 || bits == 8;
  const double weights = static_cast<double>(p.n) * static_cast<double>(p.k);
  const bool small_128 = bucket == 128 && weights < 48e6 && bits == 4 && g128;
  // v69 (seventy-ninth session): 2/8-bit weights take the one-wave rule too (and the pair's short-K bound,
  // below). H200 tune, 8192×1024 at 128 rows, block-shared mma.sync (the heuristic before) against the best
  // (4,2,8,1) unsplit: W8 13.82 µs against 8.62 (this rule's config, with the image and 4 stages, 9.72), W2
  // 10.02 against 7.97 (8.73).
  const bool one_wave_128 =
      bucket == 128 && weights >= 8e6 && weights < 48e6 && g128 && tiles_per_sm >= 7 && tiles_per_sm <= 10;
  const bool k_heavy_128 = small_128 && weights >= 16e6 && p.k >= 2 * p.n;
  // - Heuristic v10 (after the coalesced activation loads, fifteenth session; H200 re-tune of the
  //   standard layers at 64/128 rows): 5-7 tiles per SM from 8 M weights (6144×4096) at 64 and 128
  //   rows below 48 M weights, groups of 128 at 2, 4 and 8 bits (8 bits: 128 rows only; at 64 rows
  //   the bench timed it 1.21× the best, 24.35 µs against 20.18), a 128-column block. Against the v9
  //   heuristic's mma.sync configs there: M = 64 W4 f16 19.2 µs against 21.9, M = 128 W2 23.0 against 31.4,
  //   bf16 25.3 against 30.9 (tuner times). And 128 rows from 48 M weights take all 128 rows per
  //   block (m_tiles 8, 128 columns): W8 1.10-1.24× faster than 2 row blocks of 256 columns on the
  //   four wgmma standard layers (16384² 161.5 µs against 198.9); W4 f16, once the accumulators
  //   stopped spilling in that config, best or within 0.6 % on the same four (28672×4096 69.3 µs
  //   against 77.1).
  const bool rows_64_128 = bucket == 64 || bucket == 128;
  // Heuristic v26 (forty-third session, out of sample): wide layers of over 16 tiles per SM from 8 M
  // weights and 16 chunks count as large too. Qwen2.5-3B's gate+up, 22016×2048 (45 M weights, 21 tiles
  // per SM, 16 chunks), bench against v25's block-shared mma.sync: H200 64 rows 24.86 → 19.86 µs, 128
  // rows 54.00 → 30.60; H100 24.82 → 19.87, 54.11 → 29.61. Not from 10 tiles per SM: between, the
  // 64-row blocks would be split in two and then turned into stream K on short K (v11, below),
  // unmeasured. Every layer of the shipped files over 10 tiles per SM has 48 M weights or more, so no
  // entry there moves. 4-bit weights, as measured.
  // v27 (forty-fourth session, out of sample again): from over 8 tiles per SM on any K, and 2-bit weights
  // too. Phi-3-mini's QKV 9216×3072 (8.7 tiles per SM, 24 chunks), Llama-3.2-1B's gate+up 16384×2048
  // (15.5, 16) and Qwen2.5-1.5B's 17920×1536 (17, 12 chunks) ran block-shared mma.sync at 1.12-1.91×
  // the tuned best (all wgmma) at 64 and 128 rows in W4 f16, at 64 in bf16 and W2 (H200 tune: 16384×2048
  // M = 128 33.15 µs against 17.37; W2 M = 64 21.42 against 12.22). The flow below gives each its tuned
  // best or a runner-up within 1.06×.
  // 2-bit weights at 64 rows only (the W2 tune ran M 1/16/64).
  // v29 (forty-sixth session, out of sample): 8-bit weights at 64 rows too. Gemma-2-2B's gate+up,
  // 18432×2304 (17.5 tiles per SM), H200 tune: mma.sync (2,4,2,2) 1.46× the best (all wgmma), this
  // rule's (4,4,8,1) with the image 1.02×.
  // v69 (seventy-ninth session, out of sample): 2- and 8-bit weights at 128 rows too, here and in the
  // few-block rule below (they had been left at 64 rows, as measured then). A sweep of the heuristic's grids
  // against the blocks the H200 holds at once found their block-shared mma.sync blocks there; H200 tune of W8
  // and W2 at 128 rows, mma.sync (the heuristic) against the best, all wgmma: W8 8704×4096 (8.2 tiles per
  // SM) 57.72 µs against 26.19 (stream K over 128-row blocks with the image, this rule's), W2 45.29
  // against 24.37 (the same); W8 4608×3584 (Qwen2.5-7B's QKV, 4.4 tiles per SM) 24.21 against 16.54,
  // 4352×4096 26.87 against 17.65 (both K in 2; this rule's stream K 1.10× on 4352). Measured in groups of
  // 128 with integer zeros; 1-bit follows 2, and every group size and mode follows g128 (v41's convention
  // here). So every width at both row counts.
  const bool wide_mid = rows_64_128 && weights >= 8e6 && tiles_per_sm > 8;
  const bool large = weights >= 48e6 || wide_mid;
  const bool mid_wgmma = rows_64_128 && weights >= 8e6 && !large && tiles_per_sm >= 5 && tiles_per_sm < 7 &&
                         g128 && !(bucket == 64 && bits == 8);
  // Heuristic v17: where 128-column blocks split in two along K (a cluster pair, below) make
  // 0.7-1 wave, with at least 8 chunks per piece.
  // 128-column blocks of 16·mt rows over all of K, and split in two along K.
  auto blocks_128 = [&](int mt) { return ceil_div(tiles, 16) * ceil_div(bucket, 16 * mt); };
  // Whether those blocks, K split in `pieces`, make `least` (0.7 unless said) to 1 wave (one block
  // fits per SM).
  auto wave_of = [&](int mt, int pieces, double least = 0.7) {
    const int64_t blocks = pieces * blocks_128(mt);
    return blocks >= least * sms && blocks <= sms;
  };
  // v26 (forty-third session, out of sample): from half a wave on short K (16-27 chunks, too few to
  // share out as stream K), 4-bit weights. Llama-3.2-3B's QKV, 5120×3072, 80 pair blocks, bench against
  // v25's mma.sync: H200 64 rows 16.29 → 11.21 µs, 128 rows 18.54 → 15.25; H100 17.43 → 11.97, 18.48
  // → 15.49.
  auto pair_wave_at = [&](int mt) {
    // v69: at 128 rows every width (H200 tune, 4608×2048 at 128 rows, 72 pair blocks: block-shared mma.sync
    // 1.27× (W8) and 1.36× (W2) the best, (4,2,8,1) unsplit with the image; the pair 1.03× and 1.01×).
    const bool short_k = (bits == 4 || bucket == 128) && chunks < 28;
    return mt * 16 <= bucket && wave_of(mt, 2, short_k ? 0.5 : 0.7) && chunks >= 16;
  };
  // Heuristic v20 (twenty-sixth session): 8-bit weights at 64 rows too. The exclusion dated from before
  // the cluster pair (v10: wgmma 1.21× the best there); since, the pair ran 6144×4096 W8 M = 64 in 15.4
  // µs on the H100 (stream K, its tuned entry, 17.2; block-shared, v19's choice, 18.8) and 14.5 on the
  // H200 (its tuned best; v19's 19.3).
  const bool pair_wave = rows_64_128 && weights >= 8e6 && (pair_wave_at(8) || pair_wave_at(4));
  // Heuristic v21 (thirty-first session): 8-bit weights at 64 rows on the narrow layers (3-4 tiles per
  // SM, 32-63 chunks: 4096²) take the four-way K split of 128-column blocks of 64 rows that v18 (below)
  // gives from 64 chunks, although its pieces keep only 8 chunks: the tuned best of both GPUs' files
  // (H200 12.06 µs against 14.2 for v20's block-shared (2,4,2,4); H100 13.66 against 13.82).
  // v29 (forty-sixth session, out of sample): wherever that split makes 0.7-1 wave (was 3-4 tiles per SM;
  // 2952-4224 columns on 132 SMs). Llama-3-8B's QKV at TP 2, 3072×4096 (2.9 tiles per SM, 96 blocks), H200
  // tune: this config the best, v28's per-warp mma.sync (1,4,1,4,1,4) 1.52× it.
  const bool narrow_w8_64 = bucket == 64 && bits == 8 && g128 && wave_of(4, 4) && chunks >= 32 && chunks < 64;
  // Heuristic v18's four-way K split of 128-column blocks of 64 rows (below), where it makes 0.7-1 wave
  // and each piece keeps 16 chunks or more.
  // v29 (forty-sixth session): from 40 chunks (pieces of 10), with 3 stages under 64 chunks (below). H200
  // bench, v28's block-shared mma.sync (1,8,1,4,1,3) → this split with the image, W4 f16, µs: 4096×5120
  // 13.19 → 12.16, 4096×6144 15.43 → 13.08, 4096×7168 17.88 → 13.97; 3584×5120 13.26 → 12.23, 3584×7168
  // 17.67 → 14.20. At 32 chunks mma.sync stays ahead (4096² 11.06 against 11.24, 3584×4096 11.14 /
  // 11.26). The H200's out-of-sample tune of 4096×7168 put this config first in W4 f16, bf16 and W2
  // (v28 1.21-1.24× behind).
  const bool four_way_64 = bucket == 64 && wave_of(4, 4) && chunks >= 40;
  // Heuristic v24 (forty-first session, docs/perf-notes.md: fitted to the tuned entries of both shipped
  // files where v23 ran over 1.15× them, then benched): the layers of 8-48 M weights under 5 tiles per
  // SM that no rule above sends to wgmma (v4's K-heavy 128-row rule sends some, with the image) ran
  // mma.sync at 1.2-2.0× the tuned best at 64 and 128 rows, whose every tuned best was a wgmma config:
  // four-way splits where v18's apply (3584×8192 at 64 rows), else mostly stream K over 128-column
  // blocks. Bench, v23's config → v24's, H200 (H100), µs:
  // 5120×8192 M = 64 38.12 → 19.53 (36.16 → 19.87), M = 128 44.07 → 27.35 (43.83 → 27.16); 2560×8192
  // M = 64 22.96 → 13.41; 1280×8192 M = 64 14.97 → 10.06, M = 128 20.64 → 13.11; 4608×3584 M = 64
  // 18.44 → 12.45, M = 128 20.80 → 17.22; 3584×8192 M = 64 19.78 → 15.24 (W8 on the H100 21.15 →
  // 18.13). Not 3584² and 4096² at 64 rows (under 64 chunks; v29: under 40 where v18's four-way split
  // makes 0.7-1 wave), whose best is mma.sync. 4-bit weights
  // of every group size, as v4's large-layer rule (measured on groups of 128; per-channel compiles
  // without spills), and 2/8-bit with groups of 128 at the four-way split.
  // v29 (forty-sixth session, out of sample): 8-bit weights in groups of 128 at 64 rows too, as 4-bit
  // ones. Gemma-2-2B's down projection, 2304×9216 (2.2 tiles per SM, 72 chunks), H200 tune: this rule's
  // stream K over 128-column blocks (4,2,8,1) the best, v28's mma.sync (1,4,1,4,1,4) 2.10× it. This takes
  // 4-5 tiles per SM (from 28 chunks) from v10's block-shared rule (eight_bit_x_shared, mma.sync side):
  // H200 bench, 5120×8192 (4.85, 64 chunks), v10's (4,4,2,2) 30.96 µs → 21.88 with the image; under 64
  // chunks there (4608×3584, 5120×4096) unmeasured.
  const bool few_blocks_w8_64 = bucket == 64 && bits == 8 && g128;
  // v32 (forty-ninth session, out of sample): 2-bit weights in groups of 128 at 64 rows over 4 tiles per SM
  // too (up to 5 below: 4232-5279 columns on 132 SMs). Mistral-Nemo-12B's o_proj, 5120×4096 (4.85 tiles per
  // SM, 32 chunks), tunes: v31's mma.sync (1,4,1,2,1,3) staged 1.33× (H200) and 1.29× (H100) the best, every
  // one of them a wgmma config. H200 bench, µs, against (1,4,1,2,1,3) staged: 5120×4096 17.40 → 13.60,
  // 5120×8192 32.56 → 18.72, 4608×3584 15.45 → 12.10.
  const bool few_blocks_w2_64 = bucket == 64 && bits == 2 && g128 && tiles_per_sm > 4;
  // v85 (eighty-third session): and over 1 and up to 2 tiles per SM (v83's band,
  // wq_gemm_heuristic_tiny_layers.cpp) on over 64 chunks. H200 tune, 1-bit 1280×14336: v83's
  // (1,8,1,8,1,3) 1.34× the best, this rule's stream K (4,2,8,1) without the image. Bench, file off, forced
  // against v83's: W2 0.705-0.784 on 1280/1536×14336 and 1280×11008 (1280×14336 17.61 → 12.42 µs), bf16
  // 0.707, g64 0.694, 1-bit 0.717-0.793 on 1280×14336 and 1792×18944; on 64 chunks 0.917-0.925 at 1.1-1.2
  // tiles a SM but 1.040-1.052 at 1.7-1.9 (1792/2048×8192). Through the heuristic, out of sample: 0.66-0.94
  // on 9 layers (per channel 0.742, HQQ g64 0.659, g32 0.662). From the rule's 8 M weights: on fewer SMs the
  // band's narrowest layers fall under it and keep v83's block.
  const bool few_blocks_low_bits_64 =
      bucket == 64 && bits == 2 && tiles_per_sm > 1 && tiles_per_sm <= 2 && chunks > 64;
  const bool few_blocks_wgmma = rows_64_128 && weights >= 8e6 && !large && tiles_per_sm < 5 && chunks >= 28 &&
                                !(bucket == 64 && tiles_per_sm <= 4 && chunks < 64 && !four_way_64) &&
                                (bits == 4 || bucket == 128 || (four_way_64 && g128) || few_blocks_w8_64 ||
                                 few_blocks_w2_64 || few_blocks_low_bits_64);
  // Heuristic v24: 32 rows on large layers of 9 or more tiles per SM or 144 chunks or more (10240×8192 and
  // wider; 8192×28672, 3584×18944, and out of sample 5120×27648), one 32-row tile per block of two MMA
  // warpgroups: the tuned best of every such entry on both GPUs (3584×18944's on the H100 1.03×; 5120×27648
  // 1.01× in an H200 tune, against 1.40× for the mma.sync config). Bench against v23's block-shared
  // mma.sync, H200 (H100): 28672×8192 61.53 → 51.18 µs (61.66 → 52.52), 16384² 62.02 → 52.70,
  // 14336×8192 32.08 → 28.94, 10240×8192 29.39 → 24.39 (35.70 → 25.08). (v4 had left wgmma at 32
  // rows when the mma.sync kernel swapped its operands; the image and the cluster and stream-K splits
  // came after.) 4-bit weights, as measured.
  // v26 (forty-third session, out of sample): from over 8.5 tiles per SM (9216×7168, 8.7: H200 bench
  // 26.15 µs for the staged mma.sync against 20.90 for this rule's (2,2,8,1) stream K with the image;
  // H100 bench 28.36 against 21.18 for its tuned (2,4,8,1) stream K, which the tune put 0.4 % ahead of
  // this rule's config). No layer of the shipped files lies between 8.5 and 9.
  // v56 (seventieth session): 2- and 8-bit weights too (v41: every group size; 1-bit follows 2), which ran
  // block-shared mma.sync at 1.18-1.77× the tuned best on the standard layers (H200 bench, § 69.9), and from
  // 96 chunks (was 144). H200 bench, mma.sync → this rule, µs: W2 16384² 76.44 → 51.02, 28672×4096 38.99 →
  // 26.88, 57344×8192 126.94 → 96.89; W8 16384² 80.30 → 69.01, 8192×28672 111.08 → 63.20, 28672×8192 80.45
  // → 60.36. From 96 chunks (4096×12288 up to 8.5 tiles per SM), out of sample: W4 8192×14336 29.92 →
  // 28.25, 6144×16384 31.03 → 30.66; W8 6144×16384 53.02 → 33.06; and on 3-4 tiles per SM without the
  // image (below) W4 4096×14336 18.46 → 17.31, bf16 18.90 → 18.35, W2 17.93 → 15.96, W8 22.04-27.50 →
  // 22.03 (the mma.sync config's spread over two calls); 4096×12288 W4 16.05 → 15.70, bf16 16.53 → 16.72, W2
  // 15.79 → 14.62, W8 19.25-23.85 → 19.95.
  // The 32-row blocks of the rule below: two MMA warpgroups of 4 tiles a warp, K split to fill half the SMs,
  // and their grid.
  WqGemmConfig c32 = make(2, 4, 1, 3);
  c32.warps_n = 8, c32.wgmma = true;
  c32.split_k = wq::fill_split(p, c32, sms / 2.0);
  // v73 (eightieth session, out of sample): 2-bit weights (1-bit follow) from 8 M weights over 10 tiles per
  // SM (past v71's per-warp band), on short K too, where that split leaves 8 chunks a piece or more. H200
  // tune of W2 f16 at 32 rows, block-shared mma.sync (2,4,2,2,1,3) (the heuristic before) against the best,
  // (2,4,8,1) unsplit without the image (this rule's): 28672×1024 11.95 µs against 9.55, 26624×1024 11.83
  // against 9.43 (4-bit's block-shared config ran 1.03× its best there: 4-bit keeps it). Bench, file off, the
  // choice before → this: 0.765 on those two, out of sample 0.86-0.93 (22016×1024, 17920×1536, 11264×2048
  // (stream K), 16384×2048 (split 2), bf16 22016×1024); 14336×1024, split 2 into pieces of 4 chunks, lost
  // (1.043). Measured in groups of 128 with integer zeros; every group size and mode follows (v41's
  // convention for 2-bit weights here).
  const bool wide_32_two_bit =
      bucket == 32 && bits == 2 && weights >= 8e6 && tiles_per_sm > 10 && chunks / c32.split_k >= 8;
  const bool wide_32 = (bucket == 32 && large && (tiles_per_sm > 8.5 || chunks >= 96)) || wide_32_two_bit;
  const int64_t c32_blocks = ceil_div(tiles, c32.n_tiles * c32.warps_n) * c32.split_k;
  // Heuristic v25 (forty-second session, out-of-sample tunes): 32 rows on narrow layers of 2-5 tiles
  // per SM from 64 chunks, where that K split leaves the grid under 0.7 wave, take stream K (below,
  // without the image): the tuned best or within 1.06× on every such entry of both GPUs, in and out
  // of sample. H200 bench, v24's per-warp mma.sync → v25: 5120×13824 26.38 → 22.00 µs, 5120×17920
  // 33.51 → 26.19, 2304×16384 20.16 → 14.71; in-sample 2560×8192 and 5120×8192 (1.00-1.06× before).
  // Where the split makes 0.7-1 wave (3584 and 4096 columns) it stays as it was (split 8 or mma.sync).
  // v56: 2- and 8-bit weights too. H200 bench, v55's mma.sync → v25's stream K, µs, W2 / W8: 5120×8192 17.66
  // → 15.13 / 26.31 → 17.98, 5120×13824 28.34 → 20.83 / 42.30 → 25.94, 2304×16384 19.36 → 13.88 / 23.83 →
  // 16.62, 2560×8192 10.75 → 9.92 / 12.99 → 12.53.
  const bool narrow_32 =
      bucket == 32 && tiles_per_sm >= 2 && tiles_per_sm < 5 && chunks >= 64 && c32_blocks < 0.7 * sms;
  // Heuristic v75 (eightieth session, out of sample): 128 rows on K of 4 chunks or fewer (MoE experts' down
  // projections at tensor parallelism: 7168×256, 7168×512) where 128-column blocks of 64 rows make 0.8-1.75
  // waves: those blocks unsplit, 4 stages, no image. The rules before gave block-shared mma.sync
  // (2,8,2,2,1,3): H200 tune of W4 f16, 7168×256 1.19× and 7168×512 1.25× the best; bench, file off, the
  // choice before → this: 7168×256 0.846, 7168×512 0.801, out of sample 8192×512 0.777, 14336×512 (224
  // blocks) 0.797. On 80 blocks and fewer (5120×256, 4096×384, 2048×512) it lost 1.02-1.58×. 4-bit weights
  // (3-bit follow) in groups of 128 with integer zeros or symmetric, as measured (bench: bf16 7168×256 /
  // 7168×512 0.821 / 0.806, GPTQ-symmetric 7168×384 0.784, 3-bit 7168×512 0.787; 9216×384 0.866, 10240×512
  // 0.969, 12288×256 0.906).
  const bool tiny_k_128 = bucket == 128 && chunks <= 4 && bits == 4 && p.group_size == 128 &&
                          !dequantizes_every_weight(p) && blocks_128(4) >= 0.8 * sms &&
                          blocks_128(4) <= 1.75 * sms;
  if (tiny_k_128 && wq::has_wgmma(arch) && wq::may_run_wgmma(p)) {
    WqGemmConfig t = make(4, 2, 1, 4);
    t.warps_n = 8, t.wgmma = true;
    if (can_implement(p, t, arch)) return t;
  }
  // Heuristic v51 (sixty-sixth session): over 128 rows (buckets from 256: prefill) no rule above applied,
  // and the mma.sync rules' blocks of 32-64 rows ran 1.31-1.80× a plain wgmma config (H200 bench, 4-bit g128
  // fp16, µs: 8192² M = 256 120.1 → 66.7, M = 1024 486.0 → 305.2, M = 4096 1927.5 → 1203.1; 28672×4096
  // M = 1024 748.6 → 573.4). v51 took blocks of 64 rows × 256 columns without the image, from forced
  // configs without it, where 128 rows × 128 columns ran 1.00-1.12× slower.
  // v52 (sixty-seventh session): the first tune over 128 rows (H200, four layers at 256, 1024 and 4096
  // rows) put 128 rows × 128 columns first in 12 of 12, with the image in 11 (the twelfth, 28672×4096 at
  // 4096 rows, never timed it), v51's blocks at 1.04-1.35× the best: the image is what the larger block
  // needs. 3 stages were within 1.00-1.08× of the best (5 stages on 4096² at 1024 rows), the K split to
  // fill half the SMs the tune's split in 12 of 12. Bench against v51 forced, 20 cases at 200-4096 rows in
  // nine formats: 0.72-0.96×. The image is a copy of the activations the plan owns (ceil(M / 128) · 128 ·
  // K rounded up to 128 · 2 bytes); plans without buffers of their own run without it.
  if (bucket >= 256) {
    if (!(wq::has_wgmma(arch) && wq::may_run_wgmma(p))) return std::nullopt;
    WqGemmConfig big = make(8, 2, 1, 3);
    big.warps_n = 8, big.wgmma = true, big.x_image = true;
    big.split_k = wq::fill_split(p, big, sms / 2.0);
    // v53 (sixty-seventh session, out of sample: eight more layers at 256 and 1024 rows): where those
    // blocks fill under 0.7 of their whole waves (blocks / (⌈blocks / SMs⌉ · SMs), one block per SM),
    // stream K: every SM an equal share of the steps. Tune, v52 against the best: 1.06-1.30× on the seven
    // such cases, each best stream K (10240×8192 at 256 rows 101.20 µs against 78.00, 2560×8192 at 1024
    // 111.74 against 88.42), (8,2,8,1) stream K with the image within 1.00-1.14× (4 stages, the best's in 6
    // of 7); 1.00-1.09× on the nine at 0.81 or fuller (5120×8192 at 1024 rows: split 2 best, stream K 1.03×,
    // v52 1.06×). Bench, against v52 forced: 10 of 10 faster, 0.77-0.94×; 6144×4096 at 256 rows (0.73) stays
    // data-parallel, 27.68 µs against 29.62 with stream K.
    const int64_t blocks = blocks_128(8) * big.split_k, waves = ceil_div(blocks, static_cast<int64_t>(sms));
    if (static_cast<double>(blocks) < 0.7 * static_cast<double>(waves * sms)) {
      WqGemmConfig streamed = big;
      streamed.split_k = 1, streamed.stream_k = true, streamed.stages = 4;
      if (can_implement(p, streamed, arch)) return streamed;
    }
    if (can_implement(p, big, arch)) return big;  // every problem of scripts/heuristic_grid.cpp
    return std::nullopt;
  }
  // Heuristic v79 (eighty-second session, out of sample): 128 rows under 8 M weights (which every rule above
  // needs) over 2 tiles a SM, where the mma.sync rules' block-shared (2,4,2,2,1,3) makes 136-264 blocks of
  // 32 rows: the cluster pair of 64-row blocks, without the image. H200 tune of W4 f16, 2176×3584 (136
  // blocks on 132 SMs): (2,4,2,2,1,3) 1.255× the best, v24's stream K (4,2,8,1). Bench, file off, against
  // (2,4,2,2,1,3): (4,2,8,1,2,3) 0.812-0.906 on 11 layers of 2.06-2.91 tiles a SM, K 2048-3584 (2560×2560
  // 11.42 → 9.84 µs), bf16 0.802-0.857, 3-bit 0.671-0.720, g64 0.767-0.823; stream K 0.79-0.99 on K ≥ 2560
  // but 1.03-1.10 on 16 chunks. Through the heuristic (same bench): 0.869-0.915 on 4 layers of 2.4-3.6 tiles
  // a SM out of sample; HQQ g64 0.727-0.820, GPTQ-symmetric 0.854-0.956, g256 0.818-0.886, g32 0.795-0.882,
  // q·s + z 0.806-0.901, 3-bit bf16 0.708-0.776, but per channel 0.964-1.038. A tune of narrow layers in
  // W2/W8 then had the rules 1.16-1.51× the best there (bests this pair), and the pair ran 0.640-0.734 (W2
  // f16; bf16 0.656, g64 0.773) and 0.810-0.931 (W8 f16; bf16 0.830, per channel 0.894) the heuristic on 5
  // layers of 2.1-3.2 tiles a SM. So every bit width (1-bit follows 2, 3 follows 4) and group but 3/4-bit per
  // channel, from 16 chunks, under 4 tiles a SM (pair_wave's band; on 132 SMs 8 M weights end it first, on
  // fewer SMs this bound can).
  const bool small_pair_128 = bucket == 128 && (bits != 4 || p.group_size != 0) && weights < 8e6 &&
                              tiles > 2LL * sms && tiles_per_sm < 4 && chunks >= 16;
  const bool wgmma_rows = (rows_64_128 && large) || one_wave_128 || k_heavy_128 || mid_wgmma || pair_wave ||
                          narrow_w8_64 || few_blocks_wgmma || wide_32 || narrow_32 || small_pair_128;
  // (v56: every width from 32 rows, so no format check is left here: 1/3-bit map to 2/4, and 2/8-bit weights
  // of every group follow g128's rules, v41.)
  if (!(wq::has_wgmma(arch) && wq::may_run_wgmma(p) && wgmma_rows)) return std::nullopt;
  // v24: all 128 rows per block also on the few-block layers from 4 tiles per SM (5120×8192 M = 128:
  // the seven best configs of both GPUs' tunes all take the 128 rows per block, stream K first: 27.7
  // µs on the H200, 64-row blocks over 1.13× that).
  // v25: and on the K-heavy ones from 96 chunks and 2 tiles per SM, with the image (out of sample, H200
  // bench: 2304×16384 M = 128 stream K 29.91 µs with 64-row blocks, 27.05 with 128-row blocks and the
  // image; under 2 tiles per SM v24's measures say no image: 1280×8192 13.4 µs without, 14.4 with).
  const bool few_blocks_128 =
      few_blocks_wgmma && bucket == 128 && (tiles_per_sm >= 4 || (tiles_per_sm >= 2 && chunks >= 96));
  const bool all_rows_128 = bucket == 128 && (large || few_blocks_128);
  const bool rows_32 = wide_32 || narrow_32;
  WqGemmConfig w = c32;
  if (!rows_32) {
    // v27, out of sample again (H100 tune of a fourth layer set): at 64 rows on short K (under 24 chunks)
    // where 128-column blocks make at most a wave, those blocks unsplit, not 256-column ones whose K
    // split then turns into stream K over pieces of 4-8 chunks. StableLM-2-1.6B's gate+up 11264×2048
    // (88 blocks): 12.36 µs against 14.48 for stream K; Qwen2.5-0.5B's 9728×896 (76 blocks, 7 chunks):
    // 8.01 against 10.44. (Phi-3-mini's 9216×3072, 24 chunks, keeps stream K: 1.02× ahead.) From 0.7 wave
    // the one-wave rule below takes such blocks first, so this acts under 0.7 wave.
    const bool short_wave_64 = bucket == 64 && chunks < 24 && blocks_128(4) <= sms;
    w = make(all_rows_128 ? 8 : 4, one_wave_128 || mid_wgmma || all_rows_128 || short_wave_64 ? 2 : 4, 1, 3);
    w.warps_n = 8, w.wgmma = true;
    w.split_k = wq::fill_split(p, w, sms / 2.0);
  }
  const int64_t w_blocks =
      ceil_div(tiles, w.n_tiles * w.warps_n) * ceil_div(bucket, 16 * w.m_tiles) * w.split_k;
  // 128-column blocks of 16·mt rows (two warpgroups of one m64 tile) with the image: the rules below.
  auto blocks_128_config = [&](int mt, int stages) {
    WqGemmConfig c = make(mt, 2, 1, stages);
    c.warps_n = 8, c.wgmma = true, c.x_image = true;
    return c;
  };
  // - Heuristic v11 (seventeenth session, `lowbit tune` with stream-K candidates, standard layers at
  //   64/128 rows, both GPUs): where that split leaves each block 32 chunks or fewer, stream K over
  //   128-column blocks instead; the tuned best on 8192² (M 64 and 128), 4096×14336 and 6144×4096
  //   (M = 64): H100 W4 f16 8192² M = 64 30.7 µs against 35.7 for (4,4,8) split 4, 4096×14336 28.0
  //   against 35.5. With 64 chunks per split (16384², split 2) split K stays ahead (H200 83.5-84.0
  //   against 86.9 for stream K).
  // - Heuristic v12 (eighteenth session, after the stream-K fix-up moved to vector adds): at 128 rows
  //   on the mid layers (5-7 tiles per SM under 48 M weights, 6144×4096), all 128 rows per block
  //   with stream K over 128-column blocks, the H200's tuned best in all four formats (W4 f16 22.6
  //   µs, bf16 23.0, W2 21.9, W8 25.9) where (4,2,8) without it ran 1.01-1.28× that.
  // - Heuristic v15 (twenty-first session, H100 re-tune with x_image candidates, W4 f16, bf16 and W2
  //   at 64/128 rows on the standard layers): with the activations from an image, one wave of
  //   128-column blocks over all of K won where it makes 0.7-1.5 blocks per SM (v24: at most 1): at 128
  //   rows 64 rows per block on 8192² (W4 f16 36.7 µs against 43.1 for v14's stream K) and 6144×4096 (20.6
  //   against 22.8), all of them on 16384²; at 64 rows on 16384² (70.6 against 79.7 for two m64 tiles, K
  //   split in 2).
  // - Heuristic v17 (twenty-third session): the K split now adds its two pieces through a
  //   thread-block cluster's shared memory, not global memory. Where two-way split blocks of
  //   128 columns make 0.7-1 wave, that beat stream K and the one-wave data-parallel run (H100
  //   W4 f16: 4096² M = 128 13.74 µs against 16.74 for stream K, 8192² M = 64 21.81 against 26.28,
  //   6144×4096 M = 64 13.85 against 14.92; 8192² M = 128 with all 128 rows per block 31.62
  //   against 35.52 for (4,2,8) in one wave). Four-way clusters ran 1.5-1.8× slower (4096×14336
  //   M = 128 52.4 against 34.8 µs), apparently a second wave: 32 clusters of 4 one-block-per-SM CTAs
  //   need 4 free SMs in one GPC each: the H100 holds 30 such clusters at once
  //   (cudaOccupancyMaxActiveClusters, twenty-fifth session), so 32 take two waves. Such splits add through
  //   the workspace's scratch.
  // Heuristic v24: at 128 rows on K-heavy layers (96 chunks or more) where four-way K splits of
  // 128-column blocks of all 128 rows make 0.7-1 wave (4096×14336, 3584×18944), that split: the
  // tuned best of both files on 4096×14336 in every format but the H100's W8 (1.02× there), 1.02-1.04×
  // on 3584×18944, where the pair below ran 1.12-1.21× the best (H100 bench, bf16 47.81 µs against 39.68).
  if (bucket == 128 && wave_of(8, 4) && chunks >= 96) {
    WqGemmConfig s = blocks_128_config(8, 3);
    s.split_k = 4;
    if (can_implement(p, s, arch)) return s;
  }
  if (small_pair_128) {  // v79, above
    WqGemmConfig pair = blocks_128_config(4, 3);
    pair.split_k = 2, pair.x_image = false;
    if (can_implement(p, pair, arch)) return pair;
  }
  for (int mt : {8, 4}) {
    if (!pair_wave_at(mt)) continue;
    WqGemmConfig pair = blocks_128_config(mt, 3);
    pair.split_k = 2;
    if (can_implement(p, pair, arch)) return pair;
  }
  // v24: one wave at most (was up to 1.5 blocks per SM): one block fits per SM, so more run in two
  // waves (10240×8192 M = 128, 160 blocks of 64 rows: 68.50 µs on the H200, 68.59 on the H100; the
  // stream K below 43.46 and 43.17).
  for (int mt : {8, 4}) {
    if (mt * 16 > bucket || !wave_of(mt, 1)) continue;
    const WqGemmConfig wave = blocks_128_config(mt, 4);
    if (can_implement(p, wave, arch)) return wave;
  }
  // - Heuristic v14 (twenty-first session, H100 A/B of every shipped wgmma entry with and without
  //   x_image, four formats, standard layers): the activations from an image wherever K is not
  //   cut into stream-K pieces: all 12 such entries ran 1.6-28 % faster (28672×4096 M = 128 W4 f16
  //   75.3 → 56.3 µs); the stream-K ones on the smaller layers ran up to 12 % slower (the extra
  //   launch and its M·K·2 bytes there weigh more than the loop's gain).
  // - Heuristic v16 (twenty-second session): since the GEMM overlaps the image kernel (programmatic
  //   dependent launch) the image costs 1-1.6 µs less, and stream K with it ran 1.5-3 % faster than
  //   without on the small layers too (H100 W4 f16: 4096² M = 128 16.22 against 16.46 µs,
  //   6144×4096 M = 64 15.05 against 15.33, 4096×14336 M = 64 24.67 against 25.42): the image on
  //   every wgmma config.
  // - Heuristic v18 (twenty-fifth session, after the wgmma kernel's four-way splits moved to the
  //   scratch slots; H100 re-tune of the K-heavy layers at 64/128 rows): at 64 rows, where a
  //   four-way K split of 128-column blocks makes 0.7-1 wave and each piece keeps 16 chunks or more
  //   (4096×14336, 3584×18944), that split: the tuned best in all four formats on 4096×14336 (W4
  //   f16 22.47 µs against 24.72 for stream K, bf16 24.09 against 26.36, W2 21.72 against 22.99, W8
  //   30.69 against 31.75) and W4 f16 3584×18944 (27.36 against 28.73). Not at 128 rows: the
  //   cluster pair of 64-row blocks is within 6 % there, and stream K won on 3584×18944. (v24 splits
  //   128-row blocks four ways there, above.)
  if (narrow_w8_64) {  // v21, above: 3 stages, no image (both files' entry)
    WqGemmConfig s = blocks_128_config(4, 3);
    s.split_k = 4, s.x_image = false;
    if (can_implement(p, s, arch)) return s;
  }
  if (four_way_64) {
    WqGemmConfig s = blocks_128_config(4, chunks >= 64 ? 4 : 3);
    s.split_k = 4;
    if (can_implement(p, s, arch)) return s;
  }
  if (mid_wgmma && bucket == 128) {
    WqGemmConfig s = blocks_128_config(8, 3);
    s.stream_k = true;
    if (can_implement(p, s, arch)) return s;
  }
  // v24: the image only from 4 tiles per SM on the few-block layers: with few column blocks the
  // activations are read by few blocks and the image's launch is not repaid (tunes: 1280×8192 M = 128
  // 13.4 µs without, 14.4 with; 2560×8192 M = 64 13.8 / 14.4; 5120×8192 M = 64 20.6 / 20.1; H200).
  // This takes it from v4's K-heavy 128-row layers under 4 tiles per SM too (2560×8192: H100 19.65
  // without, 20.61 with).
  // v25: nor at 32 rows under 5 tiles per SM (H200 tunes, stream K without the image against with it:
  // 2304×16384 15.1 µs / 15.9, 2560×8192 11.1 / 12.1, with 4 tiles a warp 5120×13824 22.7 / 23.3 and
  // 5120×27648 36.6 / 37.4).
  const bool image =
      bucket == 32 ? tiles_per_sm >= 5 : !few_blocks_wgmma || few_blocks_128 || tiles_per_sm >= 4;
  // v25: stream K at 32 rows keeps 4 tiles a warp from 4 tiles per SM and 96 chunks (5120×13824,
  // ×17920, ×27648: the tuned best of both GPUs; H200 bench 22.00 / 26.19 / 35.86 µs against 22.38 /
  // 26.93 / 37.84 with 2 tiles), else 2 (5120×8192, 64 chunks: 16.27 against 16.62).
  const int stream_k_tiles_32 = rows_32 && tiles_per_sm >= 4 && chunks >= 96 ? 4 : 2;
  // (v24: at 32 rows only where the split leaves the grid under 0.7 wave: 10240×8192, 80 blocks,
  // took stream K, 14336×8192, 112, kept its split of 2, both files' best.)
  if (w.split_k > 1 && chunks / w.split_k <= 32 && (!rows_32 || w_blocks < 0.7 * sms)) {
    WqGemmConfig s = w;
    s.split_k = 1, s.n_tiles = stream_k_tiles_32, s.stream_k = true, s.x_image = image;
    if (can_implement(p, s, arch)) return s;
  }
  // v24: stream K also where the unsplit grid is under 0.7 wave (10240×8192 M = 128, 80 blocks of 128
  // rows: 42.7 µs against 49.3 in the H200's tune) or between one and 1.5 (37888×3584 M = 64, 148
  // blocks of 256 columns: bench 47.24 µs against 58.58 on the H200), keeping the block's tiles there;
  // and where the K split still leaves it under 0.7 wave with over 32 chunks a piece (5120×27648, out
  // of sample, H200 tune: M = 32 37.0 µs against 51.4 for the mma.sync config the heuristic ran;
  // M = 64 48.2 against 59.6 for (4,4,8,1) split 4). v25: at 128 rows too (v24 kept the split there
  // from a tune that had not timed stream K): H200 bench, split 2 → stream K, 5120×13824 44.91 → 38.88
  // µs, 5120×17920 55.74 → 46.76, 5120×27648 83.83 → 67.48 (its split 8 79.49).
  // v26: not on short K (under 32 chunks; 22016×2048 M = 64, 86 blocks of 256 columns: H200 bench
  // 19.86 µs unsplit against 21.14 for stream K).
  const bool under_wave = w_blocks < 0.7 * sms && chunks >= 32;
  if (under_wave || (w.split_k == 1 && w_blocks > sms && w_blocks <= 1.5 * sms)) {
    WqGemmConfig s = w;
    s.split_k = 1, s.stream_k = true, s.x_image = image;
    if (w_blocks < 0.7 * sms) s.n_tiles = stream_k_tiles_32;
    if (can_implement(p, s, arch)) return s;
  }
  // v56 (seventieth session): at 32 rows the K splits and the unsplit blocks follow v25's rule too, and with
  // 2-bit weights take no image at all. H200 bench, with → without, µs: split 8 on 3-4 tiles per SM, W4 /
  // bf16 / W2 / W8: 4096×14336 18.30 → 17.31 / 19.44 → 18.35 / 17.10 → 15.96 / 22.27 → 22.03,
  // 3584×18944 21.77 → 20.83 / 23.38 → 22.37 / 20.79 → 19.47 / 25.50 → 25.43; W2 from 5 tiles per SM: 16384²
  // (split 2) 51.02 → 49.31, 14336×8192 27.99 → 26.47, 28672×4096 26.88 → 25.57, 28672×8192 49.64 → 48.27,
  // 8192×28672 46.89 → 45.80 (the W2 tune's bests all without, with it 1.03-1.06× behind; W4's and W8's tunes
  // differ by layer). Not W2's stream K (10240×8192: 23.40 with, 24.28 without).
  // v56, call 9: nor with 3/4-bit weights and bf16 activations (the bf16 tune at 32 rows put its 16384² and
  // 28672×4096 bests without the image). H200 bench, with → without, µs: 16384² 59.24 → 57.57,
  // 28672×4096 31.28 → 30.28, 14336×8192 32.19 → 30.92, 8192×14336 30.94 → 29.88, 6144×16384 33.64 → 32.30,
  // 28672×8192 57.67 → 55.87 (fp16 activations: 0.97-1.04×, kept).
  const bool bf16_4bit = bits == 4 && p.act == DType::BF16;
  w.x_image = !rows_32 || (image && bits != 2 && !bf16_4bit);
  if (can_implement(p, w, arch)) return w;
  return std::nullopt;
}

}  // namespace lowbit::wq

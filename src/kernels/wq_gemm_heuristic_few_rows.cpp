// choose_config's rules for 1-8 rows (wq_gemm_heuristic.cpp): wq::few_rows_config, the mma.sync config
// before choose_config's shared steps (3-bit rules, registers, shared memory, split K). Moved out of
// choose_config unchanged in the sixty-fourth session (the heuristic grid's choices byte-identical).
#include <algorithm>

#include "kernels/wq_gemm_internal.hpp"

namespace lowbit::wq {

WqGemmConfig few_rows_config(const WqGemmProblem& p, const HeuristicShape& h, const MmaSyncFlags& f) {
  const int64_t bucket = h.bucket, tiles = h.tiles, chunks = h.chunks;
  const int sms = h.sms;
  const double tiles_per_sm = h.tiles_per_sm;
  const bool sm90a = f.sm90a, stage_per_warp = f.stage_per_warp, v26 = f.v26, v28_band = f.v28_band;
  auto make = base_config;
  WqGemmConfig c;
  const int64_t blocks16 = ceil_div(tiles, 16);
  // 4 tiles per warp, 8 warps along K, 2 stages (3 cost registers and gained nothing); ~72
  // registers, so three blocks of 8 warps fit per SM. Fitted to the M ≤ 8 tunes of both GPUs:
  // - Few column blocks (1280-wide shards): 2 tiles per warp for twice the blocks, 3 stages.
  // - Up to 2 blocks of 4 tiles per SM at M ≤ 2 (1.5 at M = 4): 2 tiles per warp, so the grid
  //   fills the SMs' block slots in one wave (8192² M = 1: 11.99 µs against 12.71 on the H200).
  // - Fewer blocks than SMs, or K-heavy narrow layers (≤ 4 tiles per SM, ≥ 64 chunks:
  //   4096×14336, 3584×18944): 16 warps along K.
  // - Wide layers (more than 3 blocks of 4 tiles per SM): 4 warps along K, more than 4: 2, so
  //   more blocks fit per SM and the last wave is short; more than 12: 8 tiles per warp.
  // 2- and 8-bit weights (H200 tune of the standard layers at M = 1): the 2-tile rule only up to
  // one block of 4 tiles per SM (8192² W8: 19.3 µs with 4 tiles, 23.0 with 2); at 2 bits, where
  // a tile-chunk is half the bytes, wide layers take 8 tiles per warp instead of fewer warps
  // along K (16384² W2: 35.5 µs with 8 tiles × 8 warps, 39.8 with 4 × 4, 44.4 with 4 × 8; 1 bit
  // follows 2 unmeasured).
  // Deterministic mode keeps the v4 rules: every bucket reuses M = 1's warps along K, and the
  // larger counts of the v5 rules made 16-row-and-up blocks of 16 warps that spill (11008×4096
  // M = 64: 464 B).
  c = make(1, 4, 8, 2);
  const int64_t col_blocks = ceil_div(tiles, 4);
  const bool v5 = !p.deterministic;
  // Twice the blocks of 4 tiles per SM up to which a warp takes 2 tiles.
  const int64_t two_tile_limit = p.bits == 3 || p.bits == 4 ? (bucket <= 2 ? 4 : bucket == 4 ? 3 : 0) : 2;
  if (2 * col_blocks < sms)
    c.n_tiles = 2, c.stages = 3;
  else if (v5 && bucket <= 4 && 2 * col_blocks <= two_tile_limit * sms)
    c.n_tiles = 2;
  if ((ceil_div(tiles, c.n_tiles) < sms && chunks >= 2LL * 16) || (v5 && tiles_per_sm <= 4 && chunks >= 64))
    c.warps_k = 16;
  const int64_t fewer_warps_above = v5 ? 3 : 2;  // blocks of 4 tiles per SM
  if (v5 && col_blocks > 3LL * sms && p.bits <= 2)
    c.n_tiles = 8;
  else if (col_blocks > fewer_warps_above * sms)
    c.warps_k = col_blocks > 4LL * sms ? 2 : 4;
  // Over 12 blocks of 4 tiles per SM (48 tiles): 8 tiles per warp (v31 below stages 8-bit weights there).
  const bool over_12_blocks_per_sm = col_blocks > 12LL * sms;
  if (over_12_blocks_per_sm) c.n_tiles = 8;
  // 3/4-bit: activations staged per warp on layers of up to 8 tiles per SM (v6: 7), with 2 tiles
  // per warp up to 6 unless K-heavy (16 warps along K); at 8 rows up to 10 tiles per SM. v6, H100
  // re-tune of the model presets: staged won on every such layer at M 1-8, by up to 20 % at M = 8
  // (4096² M = 8: 5.50 µs against 6.76 for the v5 choice). v7: 8192×K (7.8 tiles per SM) too,
  // with 4 tiles per warp: the re-tunes of both GPUs with the 3-stage staged candidates picked it
  // for 43 of the 48 (8192×K layer, M 1/2/4, GPU) entries (H200 8192² M = 2: 16 % faster than 2
  // tiles of registers). The 5 others lose 0.3-6 %: 8192×1024 at M 1-2 on both GPUs, and the
  // H100's 8192² at M = 1. (v30 below: at one row 8192×K up to 16 chunks takes 2 tiles × 4 warps.)
  // Few column blocks keep their 2 tiles (1280×8192: (1,2,1,16,1,3) staged best at M 1-8).
  // Heuristic v9: at M = 1 for every bit width. Since the one-row stage (twelfth session) the
  // registers' configs lost on 4096² and 4096×14336 at 2 and 8 bits (H200 bench: W2 4096² 5.16 µs
  // against 4.32 staged); the W2/W8 tunes at M = 1 (older than the one-row stage) put staged configs first
  // on 10 of 12 standard layers of the H200 (of the buckets up to 8 rows, only M = 1 is tuned at those
  // widths).
  const bool staged_bits = p.bits == 3 || p.bits == 4 || bucket == 1;
  if (stage_per_warp && staged_bits && (tiles_per_sm <= 8 || (bucket == 8 && tiles_per_sm <= 10))) {
    c.x_shared = true;
    if (2 * col_blocks >= sms) c.n_tiles = tiles_per_sm <= 6 && c.warps_k != 16 ? 2 : std::max(c.n_tiles, 4);
    // v24: staged 8-warp blocks over two per SM (10240×8192 at 8 rows) run a second wave; 4 warps
    // along K fit in one: both files' best (bench: H200 14.55 µs against 17.07, H100 17.49 against 22.00).
    if (v5 && c.n_tiles == 4 && c.warps_k == 8 && col_blocks > 2LL * sms) c.warps_k = 4;
    // Heuristic v21 (thirty-first session): bf16 4-bit weights at one row from 6 tiles per SM (8192²)
    // take 8 tiles per warp, like 2-bit ones (v19): their zero comes after the MMA, so each chunk
    // carries Σ MMAs that more tiles share. The best of both GPUs' files (H200 (1,8,1,8) 10.70 µs
    // with 3 stages, 11.78 with 2, against 12.29 for v20's 4 tiles; H100 14.50 with 2 stages against
    // 14.78). (v30 below takes 6.5-10 tiles per SM on short K back to 2 tiles.) Since the seventy-fifth
    // session bf16 4-bit folds its zero in as fp16 does (no Σ MMAs but with x_sums), so the reason is
    // gone; the rule stays measured: the H200 re-tune of W4 bf16 at one row on the six standard layers
    // had the heuristic within 1.000-1.036× of each best (docs/perf-notes.md § 75.5).
    if (v5 && bucket == 1 && p.bits == 4 && p.act == DType::BF16 && p.group_size == 128 && tiles_per_sm > 6 &&
        2 * col_blocks >= sms)
      c.n_tiles = 8;
  }
  // Heuristic v24: 8 rows on 12-16 tiles per SM (14336×8192, 16384²), 3- and 4-bit: staged per warp,
  // 8 tiles × 4 warps along K, the tuned best of both files (H200 14336×8192 17.75 µs against 20.78
  // for the registers' (1,4,1,4); 1.12× on 16384²; H100 1.03-1.04×).
  if (v5 && bucket == 8 && stage_per_warp && (p.bits == 3 || p.bits == 4) && tiles_per_sm > 12 &&
      tiles_per_sm <= 16)
    c.n_tiles = 8, c.warps_k = 4, c.x_shared = true;
  // Heuristic v26 (forty-third session, out of sample): 1-8 rows on wide layers (over 8 tiles per
  // SM) with short K (16 chunks or fewer), 3- and 4-bit: staged per warp too, 3 stages. Qwen2.5-3B's
  // gate+up, 22016×2048, bench against the registers' (1,4,1,2): H200 M = 1 9.66 → 8.35 µs, M = 4
  // 10.00 → 8.54, M = 8 10.20 → 8.52; H100 11.19 → 10.32, 11.42 → 10.76, 11.58 → 10.76.
  // (After v24's 8-row rule, whose staged configs keep their 2 stages.)
  if (v26 && stage_per_warp && tiles_per_sm > 8 && chunks <= 16 && !c.x_shared)
    c.x_shared = true, c.stages = 3;
  // Heuristic v19 (twenty-sixth session; the W2 M = 1 entries of both GPUs, the H200's re-tuned
  // with the band copies): 2-bit weights at one row, where a tile-chunk is 256 bytes, take 8 tiles
  // per warp from 4.5 tiles per SM (6144×4096, 8192²), with 16 warps along K from 64 chunks: the
  // tuned best or within 0.5 % on both GPUs (H200 8192² 8.68 µs against 10.02 for v18's
  // (1,4,1,8), 6144×4096 5.74 against 6.25). On the wide layers that already take 8 tiles, 4 warps
  // along K up to 32 chunks (28672×4096): the tuned best on both (H200 14.78 against 16.12 for 8
  // warps; H100 16.08 against 18.22). 1 bit follows 2, unmeasured.
  // Heuristic v32 (forty-ninth session, out of sample): on sm_90a over 20 tiles per SM from 33 up to 63
  // chunks too. H100 W2 tune of the seventh set, (1,8,1,8) against the best: 28672×5120 1.17×
  // ((1,8,1,4) 1.04×), 32768×6144 1.14× (1.05×), 40960×7168 1.20× (the best), 73728×4608 1.10× (1.05×); the
  // H200's 51200×5120 1.08× and 1.07×. Bench, µs, H200 / H100: 28672×5120 18.47 → 16.96 / 20.16 → 17.83,
  // 32768×6144 21.52 → 19.84 / 24.22 → 22.29, 40960×7168 29.38 → 27.30 / 36.93 → 30.92, 73728×4608 34.84
  // → 31.80 / 39.38 → 37.42. Not from 64 chunks: 45056×8192 (H200) 37.30 → 40.35 (its tunes' best,
  // (1,16,1,4) staged, 33.18). Up to 20 tiles per SM (16384×K) 8 warps stay, unmeasured here (16384², 128
  // chunks, has its best with 8 on the H100).
  if (v5 && bucket == 1 && p.bits <= 2 && 2 * col_blocks >= sms) {
    if (c.x_shared && tiles_per_sm > 4.5)
      c.n_tiles = 8, c.warps_k = chunks >= 64 ? 16 : 8;
    else if (!c.x_shared && c.n_tiles == 8 && (chunks <= 32 || (sm90a && tiles_per_sm > 20 && chunks < 64)))
      c.warps_k = 4;
  }
  // Heuristic v27 (forty-fourth session, out of sample): v26's staged rule on wide short-K layers,
  // extended to 32 chunks, and at one row to 1-2-bit weights (2-8 rows stay 3/4-bit, as every staged
  // rule here; the stages stay: 2 over 16 chunks, and at 1-2 bits). H200 tune:
  // 9216×3072 and 16384×3072 (24 chunks) ran the registers' configs at 1.10-1.16× the best (all
  // staged) in W4 f16, bf16 and W2, and 16384×2048 W2 at 1.21 (W2 16384×3072: (1,8,1,4,1,2) 8.84 µs,
  // staged 7.20); the shipped files' 28672×4096 and 37888×3584 (28-32 chunks) have staged bests at
  // 1-8 rows (H200 28672×4096 M = 8: 1.09 → 1.00). Not over 32 chunks: 10240×8192 at 2-4 rows kept
  // the registers (staged 1.09-1.10× on the H200), and 8-bit weights are unmeasured.
  if (sm90a && stage_per_warp && staged_bits && p.bits <= 4 && tiles_per_sm > 8 && chunks <= 32)
    c.x_shared = true;
  // v27, out of sample again (H100 tune of a fourth layer set): staged, on 16 chunks or fewer, at most 4
  // warps along K, so each keeps about 2 chunks or more (1.75 at 7 chunks). StableLM-2-1.6B's gate+up
  // 11264×2048 and Qwen2.5-0.5B's 9728×896 (7 chunks), whose blocks of 4 tiles (2.3-2.7 per SM) kept v5's 8
  // warps: 1.33-1.43× the best (11264×2048 8.49 µs against 6.38; (1,4,1,4,1,3) staged 6.62). (v30 below
  // gives 9728×896 at one row 2 tiles × 4 warps.)
  if (sm90a && c.x_shared && tiles_per_sm > 8 && chunks <= 16 && c.warps_k > 4) c.warps_k = 4;
  // v34 (fifty-first session, out of sample at 2-8 rows): v24's rule for staged 8-warp blocks over two per
  // SM (4 warps along K, one wave) at 2-8 rows on the blocks v27 stages (over 8 tiles per SM, 17-32
  // chunks), which skip the staged branch above (8 rows take it up to 10 tiles per SM). Phi-2's fc1,
  // 10240×2560 (320 blocks of 4 tiles, 20 chunks), H200 tune at 2 and 4 rows: (1,4,1,8,1,2) staged 1.29×
  // the best in f16 and 1.10-1.11× in bf16, (1,4,1,4,1,2) 1.01× and 1.02-1.03× (the best: 6 tiles × 4
  // warps, which v28's test below does not give here: 12 tiles on the busiest SM either way).
  if (sm90a && bucket > 1 && c.x_shared && (p.bits == 3 || p.bits == 4) && c.n_tiles == 4 && c.warps_k == 8 &&
      col_blocks > 2LL * sms)
    c.warps_k = 4;
  // Heuristic v28 (forty-fifth session, out of sample): one row, 3/4-bit, staged 2 tiles × 8 warps.
  // - Where 6-tile blocks fill 70-90 % of the SMs in one wave (4424-5664 columns on 132 SMs) and K
  //   has 32 chunks or more: 6 tiles × 12 warps along K. H200 bench, bf16, µs against v27's (1,2,1,8,1,2):
  //   5120×5120 6.49 / 7.54, 5120×7168 7.91 / 9.82, 5120×13824 12.70 / 17.48; H100 5120×13824 15.04 /
  //   17.65. f16: H200 5120×32768 25.53 / 28.22 (its tunes of 5120×K, K 7168-32768, had 6 tiles first,
  //   1.02-1.12× ahead); the H100 1-3 % slower (5120×8192 9.91 / 9.64), its tunes had 2 tiles first.
  // - Otherwise bf16 over 16 chunks: 3 stages. The Σ MMA bf16 carries after the zero (v21) lengthens
  //   each chunk, and a third stage in flight hides it. Bench against 2 stages, µs, H200 / H100:
  //   4608×3584 5.38 / 5.96, 5.84 / 6.22; 4096² 4.72 / 5.06, 5.10 / 5.30; 6144×4096 5.94 / 6.47 on the
  //   H200, 6.86 / 6.70 on the H100 (its one loss, 2.4 %).
  // - Staged 4-tile blocks where 6-tile ones take tiles off the busiest SM (17920×1536, 18432×2304:
  //   18 tiles against 20; on 132 SMs only wide layers, over 8 tiles per SM, which v27 stages up to 32
  //   chunks): 6 tiles × 4 warps along K, 2 stages, as v27 at 16 rows. The tunes' best there in W4 f16
  //   and bf16 (H200; 18432×2304 f16 8.22 µs against 9.20 for (1,4,1,2), bf16 8.67 against 10.27;
  //   17920×1536 f16 6.38 against 6.89 for (1,4,1,2,1,3)).
  // v34 (fifty-first session, out of sample at 2-8 rows): the third item at 2-8 rows too. H200 tune of the
  // fifth set, Gemma-2-2B's gate+up 18432×2304: this config the best at 2, 4 and 8 rows in f16 and bf16,
  // where v33's (1,4,1,2,1,2) staged ran 1.11-1.16× (f16) and 1.17-1.20× (bf16) and
  // (1,4,1,4,1,2) 1.05-1.09×.
  if (sm90a && bucket <= 8 && c.x_shared && (p.bits == 3 || p.bits == 4) && c.n_tiles == 4 &&
      wq::busiest_sm_tiles(h, 6) < wq::busiest_sm_tiles(h, 4))
    c.n_tiles = 6, c.warps_k = 4, c.stages = 2;
  if (sm90a && bucket == 1 && c.x_shared && (p.bits == 3 || p.bits == 4) && c.n_tiles == 2 &&
      c.warps_k == 8) {
    if (chunks >= 32 &&
        wq::blocks_fill_within(h, 6, wq::kSixTileMinFillPercent, wq::kSixTileOneRowMaxFillPercent))
      c.n_tiles = 6, c.warps_k = 12;
    // v32 (forty-ninth session, out of sample): bf16 on 128 chunks or more up to a full wave of 6-tile
    // blocks too. InternLM2-20B's down projection, 6144×16384 (128 blocks of 6 tiles, 97 %), bench, µs,
    // v28's (1,2,1,8,1,3) → this: H200 18.78 → 15.98, H100 21.14 → 21.39. f16 keeps v28's 2 tiles (H200
    // 15.57 → 14.86, H100 19.60 → 20.22); shorter K unmeasured.
    else if (p.act == DType::BF16 && chunks >= 128 &&
             wq::blocks_fill_within(h, 6, wq::kSixTileMinFillPercent, 100))
      c.n_tiles = 6, c.warps_k = 12;
    else if (p.act == DType::BF16 && chunks > 16)
      c.stages = 3;
  }
  // Heuristic v29 (forty-sixth session, out of sample): one row, 1-2-bit weights staged 2 tiles a warp
  // on about 2-4 tiles per SM (the 2-tile rule above; 2088-4224 columns on 132 SMs): 4 tiles, where a 2-bit
  // tile-chunk is half the bytes of a 4-bit one, with 16 warps along K from 32 chunks, else 8 and 3
  // stages. H200 tunes, v28's (1,2,1,8,1,2) against the best (this rule's config, or 1.008× for
  // 4096×7168): 4096×7168 1.26×, 3072×4096 1.14×, 4096×2304 1.13×, 2304×2048 1.06×; the shipped
  // file's 4096² 1.12× (the H100's best there is (1,2,1,16,1,2): this config and v28's both 1.09×).
  if (sm90a && bucket == 1 && c.x_shared && p.bits <= 2 && c.n_tiles == 2 && 2 * col_blocks >= sms &&
      tiles_per_sm <= 4) {
    c.n_tiles = 4;
    if (chunks >= 32)
      c.warps_k = 16;
    else
      c.stages = 3;
  }
  // Heuristic v45 (sixty-third session, out of sample): one row, 1-2-bit weights that v19 stages 8 tiles
  // a warp, where blocks of 6 tiles fill 70-90 % of the SMs in one wave (4424-5664 columns on 132 SMs;
  // up to 100 %, 6336 columns, where the format dequantizes every weight before the MMA): 6 tiles, 3
  // stages, v19's warps along K. Tunes, v19's (1,8,1,8|16,1,2) against the best (6-tile configs in
  // every case): W2 g128 5120×4096 1.13 (H200) / 1.09 (H100), 5120×25600 1.11 / 1.12, 5120×32768 1.12
  // (H200); HQQ 2-bit (float zeros g64) 6144×16384 1.24, 5120×4096 1.07 (H200). W2 g128 keeps 8 tiles
  // on 6144-wide layers (97 % fill): 6144×16384's best on both GPUs. Bench (H200), µs, v19's config →
  // this: g128 5120×4096 5.12 → 4.67, 5120×8192 7.75 → 6.85, 5120×25600 18.87 → 16.71 (bf16 0.88-0.92×);
  // float zeros g64 6144×16384 21.73 → 17.46, 5120×8192 12.19 → 9.83, 6144×4096 7.18 → 6.29; g64
  // 6144×16384 18.77 → 15.18; g32 6144×4096 6.64 → 5.77; 1-bit g128 5120×8192 7.28 → 6.79 (14 of 14
  // faster, 0.80-0.93×).
  if (sm90a && bucket == 1 && c.x_shared && p.bits <= 2 && c.n_tiles == 8 && c.warps_n == 1 &&
      wq::blocks_fill_within(h, 6, wq::kSixTileMinFillPercent,
                             wq::dequantizes_every_weight(p) ? 100 : wq::kSixTileOneRowMaxFillPercent))
    c.n_tiles = 6, c.stages = 3;
  // Heuristic v30 (forty-seventh session, out of sample): one row, 4-bit weights in groups of 128 on
  // 8.5-10 tiles per SM (8977-10560 columns on 132 SMs) up to 40 chunks, and on 6.5-8.5 up to 16:
  // 2 tiles × 4 warps along K, staged, 2 stages (the many small blocks fill the SMs' slots evenly).
  // The tunes' best or within 4 % wherever they timed it, on both GPUs (9216×3072, 9728×896, 10240×2560,
  // 10240×5120, 8192×1024, 8192×2048, 7168×2048), where v29 ran 1.02-1.17×; bench, both GPUs, f16 and bf16:
  // 2-17 % faster than v29 on all seven. Not on longer K (8192×4096: the H200's best is v29's (1,4,1,8),
  // this 1.07×), nor wider (11264×2048, 16384×2048: the H200 bench had v29's (1,4,1,4,1,3) 2-18 % ahead of
  // this tiling with 3 stages, f16 and bf16).
  const bool short_k_one_row_band = (tiles_per_sm > 8.5 && tiles_per_sm <= 10 && chunks <= 40) ||
                                    (tiles_per_sm > 6.5 && tiles_per_sm <= 8.5 && chunks <= 16);
  if (sm90a && stage_per_warp && bucket == 1 && p.bits == 4 && p.group_size == 128 && short_k_one_row_band) {
    c = make(1, 2, 4, 2);
    c.x_shared = true;
  }
  // Heuristic v31 (forty-eighth session, out of sample): one row, 8-bit weights where v5 takes 8 tiles per
  // warp in registers (over 12 blocks of 4 tiles per SM: 48 tiles, 50689 columns on 132 SMs), K of 32
  // chunks or more: staged, 4 tiles × 6 warps along K, 2 stages. Qwen3-32B's gate+up, 51200×5120: the H200
  // tune's best, where (1,8,1,2) ran 1.19× (H100 1.10×). Bench, µs, (1,8,1,2) → this, H200 / H100:
  // 51200×5120 75.42 → 63.83 / 99.47 → 90.82; 65536×5120 86.47 → 80.12 / 118.31 → 115.02; 57344×8192
  // 128.25 → 111.90 / 170.20 → 159.79 ((1,16,1,4) staged: 1 % ahead on the H100, 1-4 % behind on the
  // H200). Not narrower, where v5 keeps 4 tiles × 2 warps: the H200 bench had it within 2 % of this config
  // either way (49152×4096, 40960×5120, 32768×8192).
  // v33 (fiftieth session): at 2-4 rows too (8 rows take the 16-row rules). H200 tune of the sixth set at 2
  // rows: 51200×5120 (1,8,1,2,1,2) 1.23× the best, this config 1.01×; the seventh set's 73728×4608 at 4
  // rows 1.02× (H200; the H100's tune had it within 1.007-1.03×, untimed), where (1,8,1,2,1,2)
  // ran 1.03-1.06×.
  if (sm90a && stage_per_warp && bucket <= 4 && p.bits == 8 && over_12_blocks_per_sm && chunks >= 32) {
    c = make(1, 4, 6, 2);
    c.x_shared = true;
  }
  // Heuristic v32 (forty-ninth session, out of sample): one row, 4-bit f16 where v5 takes 8 tiles × 2 warps
  // in registers and those blocks run past 8 per SM (over 64 tiles; 67584 columns on 132 SMs): their 107
  // registers (112 allocated, 3584 a warp) fit 4 warps in each quarter's 16384, 8 blocks per SM, so a
  // second wave runs. Staged, 4 tiles × 2 warps side by side × 4 along K. Gemma-2-27B's gate+up,
  // 73728×4608, bench, µs: H200 56.62 → 44.60, H100 81.16 → 61.66. bf16's blocks (96 registers) fit 10 per
  // SM and keep v5's: there this config ran 48.19 → 48.93 (H200), 65.83 → 64.98 (H100). Not narrower:
  // 65536×5120 (1024 blocks, 7.8 per SM) H200 44.45 → 46.20, H100 62.17 → 61.72.
  // v33 (fiftieth session): at 2-8 rows too. H200 tune, 73728×4608 f16 at M = 4 / 8: v32's (1,8,1,2,1,2)
  // 1.25× / 1.29× the best, this config 1.03× / 1.03×.
  if (sm90a && stage_per_warp && p.bits == 4 && p.act == DType::F16 && !c.x_shared && c.n_tiles == 8 &&
      ceil_div(tiles, 8) > 8LL * sms) {
    c = make(1, 4, 4, 2);
    c.warps_n = 2;
    c.x_shared = true;
  }
  // Heuristic v33 (fiftieth session, out of sample at 4 and 8 rows): 2-8 rows, 3/4-bit, staged 2 tiles ×
  // 8 warps where 6-tile blocks fill 70-100 % of the SMs in one wave (4424-6336 columns on 132 SMs) and K
  // has 32 chunks or more: 6 tiles, 8 warps along K, 2 stages (v23's 16-row rule; one row has v28's 12
  // warps). H200 tune, v32's choice → this, against the best: 6144×16384 bf16 M = 4 1.30 → 1.00, M = 8
  // 1.24 → 1.00, f16 1.06 → 1.02, 1.11 → 1.03; 5120×4096 bf16 1.12 → 1.01, 1.10 → 1.02, f16 1.03 → 1.00,
  // 1.06 → 1.00. In the shipped files (W4 f16): 5120×8192 at 2-8 rows 1.03-1.10 → 1.00-1.01; 6144×4096
  // (32 chunks) 1.00-1.02 → 1.00-1.04; 4608×3584 (28 chunks) stays: there 6 tiles ran 1.08-1.13×. (The
  // 100 % bound never decides: 2 tiles per warp here means at most 6 tiles per SM, 132 blocks of 6.)
  if (sm90a && bucket > 1 && c.x_shared && (p.bits == 3 || p.bits == 4) && c.n_tiles == 2 && c.warps_k == 8 &&
      chunks >= 32 && wq::blocks_fill_within(h, 6, wq::kSixTileMinFillPercent, 100))
    c.n_tiles = 6, c.stages = 2;
  // Heuristic v34 (fifty-first session, out of sample at 2-8 rows): bf16 at 2-4 rows, 3/4-bit, staged 2
  // tiles × 8 warps on layers of fewer 4-tile blocks than SMs (up to 4192 columns on 132 SMs) from 32
  // chunks: the 8-row choice, 4 tiles × 16 warps along K, 2 stages. bf16's Σ MMA after the zero (v21)
  // lengthens each chunk, and more warps hide it. H200 tunes, bf16, v33's (1,2,1,8,1,2) → this, against
  // the best: 4096×7168 1.18-1.19 → 1.00, 3072×4096 1.10 → 1.03, 3584×4096 1.10-1.11 → 1.03 (the H100's
  // tune had v33's 1.06-1.07×, this one untimed). f16 keeps 2 tiles: there this config ran 1.01-1.13×,
  // v33's 1.00-1.04×.
  if (sm90a && bucket > 1 && bucket <= 4 && p.act == DType::BF16 && c.x_shared &&
      (p.bits == 3 || p.bits == 4) && c.n_tiles == 2 && c.warps_k == 8 && col_blocks < sms && chunks >= 32)
    c.n_tiles = 4, c.warps_k = 16, c.stages = 2;
  // Heuristic v33: 8 rows, 3/4-bit, on the band of v28's 16-row rule (over 40 tiles per SM, over 16
  // chunks) up to 3 blocks of 16 tiles per SM (50688 columns): v32's 16-row config there, (1,8,2,2,1,2)
  // staged. H200 tune, Command-R's gate+up 45056×8192 at M = 8: the best in f16 and bf16, where the
  // registers' (1,4,1,2,1,2) ran 1.10× and 1.17×. (At 4 rows f16's best is (1,4,1,2,1,2); the tune did
  // not time this config there.)
  if (stage_per_warp && bucket == 8 && v28_band && blocks16 <= 3LL * sms) {
    c = make(1, 8, 2, 2);
    c.warps_n = 2;
    c.x_shared = true;
  }
  // Heuristic v35 (fifty-second session, bench of both GPUs): bf16, 3/4-bit, 2-8 rows, on the widest
  // layers, which the rules above leave in the registers' 8 tiles × 2 warps along K (over 12 blocks of 4
  // tiles per SM, up to 5 blocks of 16 per SM: 50689-84480 columns on 132 SMs; measured 51200-73728;
  // over 32 chunks, since v27 stages up to 32): activations staged per warp, in 8 tiles × 2 warps side by
  // side and 3 stages, or v28's six tiles × 4 warps along K where these take a tenth or more off the
  // busiest SM's tiles (K up to 48 chunks). The SM with the most tiles sets the time (16-tile blocks are
  // all resident at once here, six-tile ones run in 2-3 rounds; H200: ~0.0165 and ~0.018 µs per tile-chunk
  // on the busiest SM). Bench, µs, registers → this, H200 / H100, at 2 / 4 / 8 rows:
  // - 51200×5120 (six: 54 tiles against 64): 42.75 → 38.97, 45.38 → 39.52, 46.73 → 38.93 / 50.06 →
  //   51.78, 50.33 → 52.06, 52.42 → 51.93 (the H100's best, 16-tile blocks, 48.4-49.0);
  // - 73728×4608 (72 against 80): 49.17 → 46.45, 51.79 → 46.87, 53.06 → 47.56 / 64.85 → 63.90, 65.12 →
  //   64.31, 66.82 → 64.80 (16-tile blocks: H200 52.8-52.9);
  // - 65536×5120 (16 tiles: 64 against 66): 45.50 → 42.95, 47.62 → 43.25, 50.26 → 43.49 / 63.19 → 60.13,
  //   63.22 → 60.40, 63.62 → 61.02; 57344×5120 at 4 rows 46.10 → 41.79 / 56.01 → 53.34;
  // - 57344×8192 (64 chunks): 69.12 → 64.65, 73.42 → 65.33, 73.64 → 64.66 / 86.07 → 82.90, 86.74 →
  //   83.30, 90.12 → 84.65 (six tiles there: H100 92.7-93.2).
  const bool bf16_wide_registers = sm90a && stage_per_warp && bucket > 1 && p.act == DType::BF16 &&
                                   (p.bits == 3 || p.bits == 4) && !c.x_shared && c.n_tiles == 8 &&
                                   c.warps_k == 2 && blocks16 <= 5LL * sms;
  if (bf16_wide_registers) {
    if (chunks <= 48 && 10 * wq::busiest_sm_tiles(h, 6) <= 9 * wq::busiest_sm_tiles(h, 16)) {
      c = make(1, 6, 4, 2);
    } else {
      c = make(1, 8, 1, 3);
      c.warps_n = 2;
    }
    c.x_shared = true;
  }
  // Heuristic v36 (sixtieth session, out of sample on the H200): 1-8 rows, 4-bit weights in groups of 128
  // with integer zeros, left in v5's registers config of 4 tiles × 2 warps along K (over 4 blocks of 4
  // tiles per SM, K over 32 chunks, where v27 stages nothing): 4 warps along K wherever those 4-warp
  // blocks all fit in one wave. v5 took 2 warps so that the last wave is short; in one wave there is
  // none, and twice the warps keep twice the loads in flight. A block of 4 warps holds 72 registers a
  // thread in fp16 (and bf16 at one row: 68-70, allocated as 72), so 7 fit per SM; bf16 from 2 rows
  // holds 80, so 6. H200 bench, µs, (1,4,1,2,1,2) → (1,4,1,4,1,2) at 1 / 8 rows, fp16: 18432×16384
  // 50.7 → 40.0 / 60.4 → 44.7 (1.35× at 8 rows), 20480×8192 27.8 → 23.2 / 32.3 → 24.8, 24576×8192
  // 29.9 → 26.8 / 34.5 → 28.5, 28672×8192 32.6 → 30.3 / 37.0 → 32.2 (the tuned best at 1-2 rows, 0.99-1.00×
  // it at 4-8: the one shipped entry v35 had over 1.15×), 22528×6144 22.5 → 20.1 / 25.8 → 21.9,
  // 27648×5120 21.7 → 20.1 / 24.3 → 21.7, 28672×6144 25.8 → 24.2 / 28.7 → 25.8; bf16 24576×8192 31.2 →
  // 28.0 / 34.9 → 29.6. Over the wave it loses: bf16 28672×8192 (6.8 blocks per SM) at 2-8 rows 35.8-38.1
  // → 40.6-45.1 (at one row 35.1 → 32.0); fp16 32768×6144 (7.8) 29.2-31.1 → 36.1-39.9, 35840×5120 (8.5)
  // 26.9-28.9 → 33.0-37.5. Unmeasured on the H100 (same SMs and registers; its tunes had v35's choice
  // 1.02-1.05× its best on 28672×8192). Other modes, groups, 3- and 8-bit weights and fp16 accumulation:
  // v37 below. Past that wave, fp16 at 2-8 rows: 3 warps along K where those blocks fit in one (9 per SM at
  // 72 registers). H200 bench, µs, (1,4,1,2,1,2) → (1,4,1,3,1,2) at 2 / 8 rows: 32768×6144 29.2 →
  // 27.3 / 31.1 → 28.8, 35840×5120 27.0 → 25.8 / 28.9 → 27.2, 36864×8192 40.8 → 39.3 / 43.8 → 40.9;
  // one row ±1.6 % (and an 8-byte spill there), so not at one row; past 9 per SM it loses too
  // (40960×7168 39.1-41.1 → 48.2-53.0).
  // Heuristic v37 (sixty-first session, H200 bench, out of sample): the same first rule for every other
  // format that reaches v5's registers config, with the wave each one's registers allow
  // (four_warp_register_blocks_per_sm). (1,4,1,2,1,2) → (1,4,1,4,1,2), µs, over 4 blocks a SM (where v5
  // took 2 warps) and inside the wave: faster in all 68 cases of 11 formats at 1 and 8 rows, by 2-31 %
  // (geomean 0.85×; 18432×16384 at 8 rows per channel 58.8 → 40.8, symmetric 57.5 → 42.2; 25344×8192,
  // exactly 6 blocks a SM, at 1 / 8 rows: g64 33.6 → 29.9 / 36.8 → 32.9, bf16 symmetric 31.5 → 27.8 /
  // 35.5 → 29.2, float zeros 35.8 → 34.8 / 38.3 → 36.8). Just past it (25600×8192) the formats at 73-80
  // registers ran −5 to +15 % (per channel at one row 29.5 → 33.9, bf16 symmetric at 8 rows 36.3 → 41.0;
  // float zeros, 79, gained: −10 / −12 %); those at up to 72 (7 blocks fit) gained there and at 28672×8192.
  // Seven are counted for v36's format and, at one row, for 4-bit g128 with integer or no zeros.
  // Heuristic v38 (sixty-second session): seven for every 3/4-bit format whose 4-warp config holds up to 72
  // registers (the table in wq_gemm_registers.cpp), as the sixty-first session's runs past the wave
  // sorted them.
  const bool v5_two_warps = sm90a && v5 && !c.x_shared && c.warps_n == 1 && c.warps_k == 2 && chunks > 32;
  const bool v5_registers = v5_two_warps && c.n_tiles == 4;
  const bool v36 = v5_registers && p.bits == 4 && p.group_size == 128 &&
                   p.mode == DequantMode::SubZeroThenScale && p.accum == DType::F32;
  // Past the wave, 3 warps stay v36's (fp16): in six other formats at 2 / 8 rows on 28672×8192 and
  // 32768×8192 they ran 0.92-1.02× (0.99 median), on 35840×5120 1.10-1.32×.
  if (v5_registers && col_blocks <= wq::four_warp_register_blocks_per_sm(p, bucket) * sms)
    c.warps_k = 4;
  else if (v36 && p.act == DType::F16 && bucket > 1 && col_blocks <= 9LL * sms)
    c.warps_k = 3;
  // Heuristic v40 (sixty-second session, out of sample: an H200 tune of the seventh set in 3-bit g128,
  // fp16): 3-bit weights at one row, where v5's 2-warp config stays (past the 4-warp wave), take 8 tiles
  // a warp staged per warp, 4 warps along K. Tuner times, that config against the best: 28672×5120 1.05×,
  // 32768×6144 1.04×, 40960×7168 and 73728×4608 the best, 45056×8192 1.06×; v5's (1,4,1,2,1,2) 1.11-1.21×
  // (on 73728×4608, over 40 tiles a SM, its 8-tile form (1,8,1,2,1,2): 1.20×).
  // (A 3-bit tile is 12 bytes a lane where a 4-bit one is 16: a warp needs more tiles to keep as many
  // bytes in flight.)
  else if (v5_two_warps && (c.n_tiles == 4 || c.n_tiles == 8) && p.bits == 3 && bucket == 1) {
    c = make(1, 8, 4, 2);
    c.x_shared = true;
  }
  // Heuristic v49 (sixty-sixth session, out of sample): 4-bit float zeros (HQQ) at 1-8 rows, where the rules
  // above leave 2 warps along K (over 4 blocks of 4 tiles a SM: v5's registers past the format's wave, or
  // v27's staged config up to 32 chunks): 4 warps along K, staged per warp. Float zeros are bound by their
  // own dequantization (a subtraction and a multiply per pair), which 2 warps a block leave exposed. H200
  // tunes, fp16 g64 / g128, 2 warps against the best at one row: 28672×4096 1.15 / 1.16, 28672×5120 1.14 /
  // 1.15, 28672×8192 1.17 / 1.17, 37888×3584 1.12 / 1.12, 22016×4096 1.04 / 1.07 (this config 1.00-1.03);
  // g64 at 2 / 8 rows 1.04-1.16 (this config 1.00-1.04). Bench, 2 → 4 warps: fp16 at one row 0.864-0.972×
  // (28672×8192 45.58 → 39.67 µs, 28672×4096 24.47 → 21.39, 37888×3584 26.28 → 23.55; g32 0.96×, g256
  // 0.88×), at 2-8 rows 0.883-0.964×; bf16 at one row 0.895-0.941× on 28-32 chunks and g256, 0.995-1.004×
  // past its 7-block wave (32768×8192), at 8 rows 0.985× and 0.995×.
  if (sm90a && v5 && bucket <= 8 && p.bits == 4 && p.mode == DequantMode::SubFloatZeroThenScale &&
      stage_per_warp && c.warps_n == 1 && c.warps_k == 2 && c.n_tiles == 4) {
    c.warps_k = 4, c.stages = 2;
    c.x_shared = true;
  }
  // Heuristic v58 (seventy-second session): bf16, 4-bit g128 integer zeros or symmetric, 2-8 rows, where
  // the rules above leave 4 tiles a warp (v5's registers, 2 warps along K past bf16's 6-block wave and 4
  // inside it, or staged), K of 32 chunks or more: 16 tiles a warp × 4 warps along K, staged per warp, 2
  // stages, where those blocks all fit at once (at most 2 a SM: 186 registers, 86 KB of rings) and the
  // busiest SM holds at most 1.3× the mean tiles. One warp streams four times the columns of v5's, and bf16's
  // Σ MMAs after the zero (v21) are shared by 16 tiles. H200 bench, file off, µs, the choice before → this:
  // - tuned (the tunes had it within 1.01-1.05× of each best, the heuristic before 1.07-1.16×): 28672×8192
  //   at 4 / 8 rows 36.41 → 32.66 / 38.29 → 33.20, 14336×8192 at 4 20.14 → 18.30, 16384² at 2 37.55 → 35.04,
  //   28672×4096 at 2 19.90 → 18.08;
  // - out of sample, 2 / 8 rows: 27648×5120 0.904 / 0.884, 32768×8192 0.944 / 0.899, 29696×5120 0.936 /
  //   0.885, 30720×8192 0.937 / 0.877 (symmetric at 4 rows 0.923), 33792×8192 0.960 / 0.914, 27648×8192
  //   0.887 / 0.859, 26624×8192 at 8 0.843 (busiest SM 1.27× the mean), 31744×4096 0.966 / 0.994, and at 2
  //   rows 13824×5120 0.927, 14336×4096 0.930, 15360×8192 0.931, 15360×4096 0.933, 16384×4096 0.939,
  //   16384×8192 0.937 (0.915 at 4 rows); at 8 rows those take 8 tiles staged (v24), and this ran 0.98-1.01×.
  // - lost where the busiest SM holds 1.375× the mean or more (24576×8192 1.05-1.10×, 20480×8192 1.20-1.26×,
  //   18432×16384 1.19-1.29×, 22016×4096, 11008×4096, 12288×4096, 10240×8192 1.08-1.10×), with 3 blocks a SM
  //   (40960×7168 1.03-1.12×, 37888×3584 1.09×) and at 28 chunks (32768×3584 1.007×).
  // Not fp16: in the H200 tunes this config ran 1.02-1.05× the best on its wide layers at 2-8 rows, where the
  // choice there (v36's 4 warps fit 7 blocks a SM) runs 1.00-1.05×. The H100 is unmeasured but for two of its
  // tunes (28672×5120 and 32768×6144 at 4 / 8 rows): 1.027-1.030× the best where timed, the choice before
  // 1.041-1.060×.
  // v59 (seventy-third session): 3-bit weights and groups of 256 too (their Σ MMAs as 4-bit g128's); 3-bit
  // only over one 16-tile block a SM (a 3-bit tile is 12 bytes a lane: one 4-warp block a SM keeps too few in
  // flight). H200 bench, file off, the choice before → this, µs or ×: 4-bit g256 at 2-8 rows 0.822-0.965 on
  // nine layers (28672×8192 at 8 rows 39.17 → 33.05; symmetric 0.872-0.965); 3-bit g128 over one block a SM
  // 0.813-0.904 (32768×8192 at 8 rows 40.32 → 32.77; symmetric and g256 0.818-0.845), at one a SM 1.035-1.075
  // (14336-16384 columns). Out of sample: 3-bit 0.808-0.893 (6 cases), 4-bit g256 0.826-0.923 (5). Not where
  // the format dequantizes every weight before the MMA (float zeros 1.04-1.12×, q·s + z 1.05-1.09×, g64
  // 0.95-1.04× with symmetric g64 0.95-0.97: fit_registers would cut 16 tiles to 8 there anyway), nor per
  // channel (1.15-1.18×).
  const bool sixteen_tile_candidate =
      p.act == DType::BF16 && (p.bits == 4 || (p.bits == 3 && blocks16 > sms)) && wq::sixteen_tile_groups(p);
  const bool v58 = sm90a && stage_per_warp && bucket >= 2 && sixteen_tile_candidate && c.n_tiles == 4 &&
                   c.warps_n == 1 && wq::sixteen_tile_blocks_fit_evenly(h);
  if (v58) {
    c = make(1, 16, 4, 2);
    c.x_shared = true;
  }
  // v64 (seventy-seventh session): at 2-4 rows, where those blocks make at most one a SM (102-132 of them on
  // 132 SMs: 12993-16896 columns), 8 warps along K. Such a block (172 KB of shared memory at 8 warps) has its
  // SM alone, so its warps along K are what keeps bytes in flight, as v63's at 32 rows. H200 bench, file off,
  // (1,16,1,4,1,2) → (1,16,1,8,1,2), 2 / 4 rows: 13312×8192 0.846 / 0.846 (20.18 → 17.07 µs), 14336×8192
  // 0.857 / 0.862, 13824×5120 0.897 / 0.891, 14336×4096 0.913 / 0.914, 15360×8192 0.917 / 0.921, 16384×4096
  // 0.946 / 0.946, 16384×8192 0.965 / 0.963, 16384² 0.946 / 0.942; at 4 rows symmetric 0.897-1.003
  // (16384×8192 the 1.003), g256 0.829-0.907. (The tune of 14336×8192 at 2/4 rows had v58 at 1.17× this
  // config.) At 8 rows v24's 8 tiles come first, and the forced block ran 0.95-1.05× them: not there. The
  // H100 unmeasured.
  if (v58 && bucket <= 4 && blocks16 <= sms) c.warps_k = 8;
  return c;
}

}  // namespace lowbit::wq

// choose_config's rules for 9-16 rows with activations staged per warp (wq_gemm_heuristic.cpp):
// wq::sixteen_rows_staged_config, the mma.sync config before choose_config's shared steps (3-bit rules,
// registers, shared memory, split K). Moved out of choose_config unchanged in the sixty-fourth session (the
// heuristic grid's choices byte-identical).
#include <algorithm>

#include "kernels/wq_gemm_internal.hpp"

namespace lowbit::wq {

WqGemmConfig sixteen_rows_staged_config(const WqGemmProblem& p, const HeuristicShape& h,
                                        const MmaSyncFlags& f) {
  const int64_t bucket = h.bucket, tiles = h.tiles, chunks = h.chunks;
  const int sms = h.sms;
  const double tiles_per_sm = h.tiles_per_sm;
  const bool sm90a = f.sm90a, v26 = f.v26, v28_band = f.v28_band;
  auto make = base_config;
  WqGemmConfig c;
  const int64_t blocks8 = ceil_div(tiles, 8), blocks16 = ceil_div(tiles, 16);
  // Activations staged per warp (x_shared with one warp along N; docs/perf-notes.md, "wq_gemm
  // v9"): 4 tiles × 8 warps along K (~124 registers before the 16-row operand swap, ~99 since;
  // with 2 stages two blocks fit per SM, with 3 one), 3 stages up to 4 tiles per SM, else 2 (re-tuned after
  // the swap: the heuristic within 10 % of the best on the six standard layers of the H200 at 16 rows).
  // Wide layers (over 12 tiles per SM): 8 tiles × 4 warps (over 20: 4 × 4; v26/v30 below: 2 × 2 warps on
  // short K). Few column blocks (1280-wide shards): 2 tiles per warp for twice the blocks. Re-tunes of both
  // GPUs: 4-23 % faster than the per-warp registers of v5. Measured on W4; at 2 bits 8192² the registers
  // still won (H100 14.6 µs against 16.0).

  // Heuristic v9: 8-bit weights up to 12 tiles per SM: 4 warps along K (a chunk is twice the bytes of 4-bit
  // ones), the best config of the H200's W8 re-tunes at 16 rows on 4096², 6144×4096 and 8192²
  // (6144×4096: 9.34 µs against 11.58 with 8 warps).
  c = make(1, 4, 8, tiles_per_sm <= 4 ? 3 : 2);
  // v26 (forty-third session, out of sample): short K (16 chunks or fewer) shares each chunk's
  // activations between 2 warps side by side, 2 along K (22016×2048 bench: H100 10.65 µs against
  // 12.29 for (1,4,1,4), H200 9.90 against 10.65; on the long-K wide layers of the shipped files
  // it lost: H100 37888×3584 35.46 against 28.38 for the tuned (1,4,2,1)).
  // v30 (forty-seventh session, out of sample): up to 32 chunks on 20-24 tiles per SM (21121-25344
  // columns on 132 SMs), where the 8-tile blocks of 2 warps side by side put no more tiles on the busiest
  // SM than v9's 4-tile blocks (3 blocks of 8 against 6 of 4). Qwen3-8B's gate+up, 24576×4096 (23.3): the
  // H100 tune's best, 1.02× the H200's (its best had 3 stages), where (1,4,1,4) ran 1.16× (H100) and
  // 1.06× (H200); bench, µs, H200 18.60 → 17.43 (bf16 19.80 → 19.75), H100 24.12 → 20.72 (bf16 23.67 →
  // 21.19). Not 25600×4096 (24.2: 4 blocks of 8 against 7 of 4): H200 bench 19.62 → 21.24 (bf16 22.32 →
  // 24.22), though the H100's tune had it 1.07 → 1.00. Not wider: in the shipped files this config ran
  // 28672×4096 1.02× (H100) and 1.06× (H200) the best. Like v26, any group size and 3-bit weights too
  // (measured: 4-bit, groups of 128).
  // v34's exception to v9's 8-bit rule below: 2-8 rows under one 4-tile block per SM, from 32 chunks.
  const bool eight_bit_few_blocks_long_k = sm90a && bucket <= 8 && ceil_div(tiles, 4) < sms && chunks >= 32;
  const bool pair_sharing_chunks = chunks <= 16 || (tiles_per_sm <= 24 && chunks <= 32);
  if (v26 && tiles_per_sm > 20 && pair_sharing_chunks)
    c.warps_n = 2, c.warps_k = 2;
  else if (tiles_per_sm > 20)
    c.warps_k = 4;
  else if (tiles_per_sm > 12)
    c.n_tiles = 8, c.warps_k = 4;
  else if (2 * ceil_div(tiles, 4) < sms)
    c.n_tiles = 2;
  // v34 (fifty-first session, out of sample): not 8-bit weights at 2-8 rows (v33 sends them here) on layers
  // of fewer 4-tile blocks than SMs from 32 chunks, which keep 8 warps along K (and v9's 3 stages). H200
  // tune of the fifth set, Gemma-2-2B's down 2304×9216 (72 blocks): (1,4,1,4,1,3) staged 1.17-1.22× the
  // best at 2, 4 and 8 rows, this config the best; on the other such layers tuned at 2-8 rows (3072×4096,
  // 3584×4096, 4096×7168, 4096×12288, 4096×12800; both GPUs) within 1.044× wherever timed.
  else if (p.bits == 8 && !eight_bit_few_blocks_long_k)
    c.warps_k = 4;
  // Heuristic v24: more than two blocks of 4 tiles per SM (10240×8192): 4 warps along K. Two 8-warp
  // blocks fit per SM, so a third runs in a second wave; 4-warp blocks fit in one. The tuned best of
  // both GPUs at 16 rows (bench: H100 18.48 µs against 25.33 for 8 warps, H200 16.77 against 18.67).
  // (Not 1- and 2-bit weights: v13 below gives them 8 tiles per warp, whose blocks fit in one wave;
  // v27's 6-tile rule below may then take a quarter off the busiest SM with 6.)
  else if (ceil_div(tiles, 4) > 2LL * sms && p.bits > 2)
    c.warps_k = 4;
  // Heuristic v13 (nineteenth session, H100 W2 re-tune at 16 rows with the in-place bases): 2-bit
  // weights (1 bit follows 2, unmeasured) over 4 tiles per SM take 8 tiles per warp, where a 2-bit
  // tile-chunk is half the bytes of a 4-bit one: 8192² 12.30 µs against 14.41 for 4 tiles, 6144×4096
  // 7.63 against 8.52, 28672×4096 21.39 against 22.05 (4 warps along K; the tuned best, 2 warps,
  // 20.90); 16384² had 8 tiles already.
  if (p.bits <= 2 && tiles_per_sm > 4) c.n_tiles = 8;
  // Heuristic v22 (thirty-third session): 8-bit weights over 20 tiles per SM (28672×4096) take 4
  // warps side by side sharing each chunk's activations, one along K, 3 stages: the tuned best of
  // both GPUs' files (H200 31.0 µs against 35.7 for v21's (1,4,1,4), the one standard case over
  // 1.15 × the best; H100 43.0 against 45.8).
  if (p.bits == 8 && tiles_per_sm > 20) c.warps_n = 4, c.warps_k = 1, c.stages = 3;
  // Heuristic v29 (forty-sixth session, out of sample; H200 tune, 8-bit weights at 16 rows):
  // - Over 12 up to 20 tiles per SM: 8 tiles × 2 warps along K (v9's 4 warps keep 4.5 chunks each on
  //   Gemma-2-2B's gate+up, 18432×2304: 1.25× the best, (1,4,2,2,1,2); this config 1.05×). The best of
  //   both shipped files on 16384², where 4 warps ran 1.015-1.017× it.
  // - Over 40 tiles per SM: v22's config with 2 stages. Mistral-Small-24B's gate+up, 65536×5120 (62
  //   tiles per SM): 3 stages 1.26× the best, this config; 25600×4096 (24) keeps 3, its best.
  if (sm90a && p.bits == 8 && tiles_per_sm > 12 && tiles_per_sm <= 20) c.warps_k = 2;
  if (sm90a && p.bits == 8 && tiles_per_sm > 40) c.stages = 2;
  // v32 (forty-ninth session, out of sample): over 4 of v22's 16-tile blocks per SM (67584 columns on 132
  // SMs), whose 4 warps (121 registers) fit 4 per SM, so a second wave runs: 8 tiles × 2 warps side by
  // side, 2 stages. Gemma-2-27B's gate+up, 73728×4608, tunes: v22/v29's (1,4,4,1,1,2) 1.22× (H200)
  // and 1.28× (H100) the best; this config the H200's best, 1.012× the H100's. H200 bench 102.90 → 84.55
  // µs.
  if (sm90a && p.bits == 8 && blocks16 > 4LL * sms) c.n_tiles = 8, c.warps_n = 2, c.stages = 2;
  // Heuristic v28 (forty-fifth session, out of sample): 3/4-bit over 40 tiles per SM and 16 chunks
  // (Mistral-Small-24B's gate+up, 65536×5120; Llama-3-70B's, 57344×8192): 8 tiles × 2 warps side by
  // side sharing each chunk's activations, one along K, 3 stages. H200 tune, 65536×5120: the best in
  // W4 f16 (bf16's best took 2 stages), v27's (1,4,1,4) 1.13× / 1.21× behind. Bench against v27's, µs,
  // H200 / H100: f16 47.56 / 54.69, 62.55 / 65.55; bf16 52.35 / 60.74, 62.83 / 66.15; 57344×8192 f16
  // 71.42 / 75.32, 88.14 / 92.29.
  // v31 (forty-eighth session, out of sample): bf16 with 2 stages, its tunes' best on 65536×5120 (H200).
  // Bench, µs, 3 → 2 stages, H200 / H100: 51200×5120 51.85 → 48.13 / 52.56 → 52.90; 65536×5120 52.39 →
  // 49.48 / 63.05 → 62.42; 57344×8192 81.40 → 75.22 / 87.58 → 87.90; 49152×4096 (H200) 42.01 → 38.81.
  // Qwen3-32B's gate+up (51200×5120) ran 1.17× the H200 tune's best with 3 stages (an x_sums config, 45.14
  // µs; 2 stages benched 48.13). 4 stages ran 2-3 % ahead of 2 on the H200 and up to 8 % behind 3 on the
  // H100.
  if (v28_band) c.n_tiles = 8, c.warps_n = 2, c.warps_k = 1, c.stages = p.act == DType::BF16 ? 2 : 3;
  // Heuristic v32 (forty-ninth session, out of sample): v28's 2-warp blocks of 16 tiles run near a fixed
  // time per block, so they lose at both ends of its band. Bench, µs, v31 → v32, H200 / H100:
  // - Up to 3 of those blocks per SM (up to 48 tiles; 50688 columns on 132 SMs): 2 warps along K as well,
  //   (1,8,2,2,1,2), whose 168 registers fit 3 four-warp blocks per SM in one wave. Command-R's gate+up,
  //   45056×8192: f16 70.34 → 55.72 / 71.36 → 72.03, bf16 74.17 → 59.90 / 77.14 → 72.32; 49152×4096 f16
  //   36.81 → 30.05 / 39.30 → 40.12, bf16 38.98 → 32.09 / 42.10 → 40.68. Not 51200×5120 (past one wave):
  //   H100 f16 50.18 → 58.10.
  // - Over 4 per SM (over 64 tiles; 67584 columns), where bf16's 2-stage blocks (178 registers: 2 warps in
  //   each quarter, 4 blocks per SM) run a second wave: 6 tiles × 2 warps along K, 2 stages, the best of
  //   both GPUs' bench in both dtypes (within 0.7 %). Gemma-2-27B's gate+up, 73728×4608: f16 59.26 → 53.93
  //   / 71.50 → 66.39, bf16 71.46 → 56.56 / 81.54 → 66.53. Between the two (50689-67584 columns; measured
  //   51200, 57344, 65536) v28/v31 stay the best (fp16, and bf16 under 32 chunks; bf16 from 32: v65a below).
  if (v28_band) {
    if (blocks16 <= 3LL * sms)
      c.warps_k = 2, c.stages = 2;
    else if (blocks16 > 4LL * sms)
      c = make(1, 6, 2, 2);
  }
  // v32: 3.5-4 blocks of 8 tiles per SM (28-32 tiles; 29569-33792 columns on 132 SMs) from 48 chunks:
  // 8 tiles × 2 warps along K, 3 stages; its 176-180 registers fit 2 warps in each quarter of the
  // SM's registers, 4 such blocks per SM, one wave.
  // InternLM2-20B's gate+up, 32768×6144: H200 tunes' best in f16 (v31 1.08×) and bf16, bench bf16 37.54 →
  // 32.06; H100 f16 40.60 → 40.41, bf16 41.24 → 40.69. Not past 4 blocks: 40960×7168 on the H100 f16 60.66
  // → 74.30 (a second wave).
  if (sm90a && (p.bits == 3 || p.bits == 4) && 2 * blocks8 > 7LL * sms && blocks8 <= 4LL * sms &&
      chunks >= 48)
    c = make(1, 8, 2, 3);
  // Heuristic v23 (thirty-ninth session): 6 tiles per warp (48-column blocks, 8 warps along K) where
  // those blocks fill 70-100 % of the SMs once and the rules above put more tiles on
  // the busiest SM: 4608-6336 columns on 132 SMs (Qwen2.5-7B's 4608×3584, Llama-3-70B's 5120×8192
  // at TP 2, 6144×K), whose 32-column blocks leave some SMs with twice the others' work. H200, 16
  // rows, µs against the tuned entries: 6144×4096 W4 f16 6.43 / 7.25, bf16 6.74 / 7.55, W2 6.06 /
  // 6.87, W8 8.72 / 8.94; 5120×8192 10.12 / 11.70; 4608×3584 5.76 / 6.49. (Not beyond one wave:
  // 28672×4096 ran 21.70 µs with (1,6,1,4) against 20.15 with its tuned (1,4,1,4).) The stages stay
  // the rule's (2 on these layers): the H100's tunes took 2 on all three (3 ran 2.4-6 % slower), the
  // H200's 3 on some (2 ran 1-2 % slower).
  const auto busiest = [&](int nt) { return wq::busiest_sm_tiles(h, nt); };
  const int64_t blocks6 = ceil_div(tiles, 6);
  // v27 (forty-fourth session, out of sample): beyond one wave too where 6 tiles take at least a
  // quarter off the busiest SM's tiles, keeping the warps along K. Qwen2.5-1.5B's gate+up,
  // 17920×1536 (2240 tiles): 3 blocks of 6 tiles on the busiest SM against 3 of 8; H200 tune, W4
  // f16 7.43 µs against 9.62 for (1,8,1,4), bf16 7.67 against 9.79; W2 9216×3072 (2 blocks of 6
  // against 2 of 8) 7.91 against 10.55 in the bench. (28672×4096 and the other shipped wide layers gain
  // no quarter: 4 tiles × 7 blocks against 6 × 5.) Measured at 2 and 4 bits (1 and 3 follow); within
  // one wave v23's rule alone decides (the tuner has not timed 6 tiles under its 70 % fill).
  const bool one_wave6 = wq::blocks_fill_within(h, 6, wq::kSixTileMinFillPercent, 100);
  const bool quarter_off6 = sm90a && p.bits <= 4 && blocks6 > sms && 4 * busiest(6) <= 3 * busiest(c.n_tiles);
  if (c.warps_n == 1 && c.n_tiles >= 4) {
    if (busiest(6) < busiest(c.n_tiles) && one_wave6)
      c.n_tiles = 6, c.warps_k = 8;
    else if (quarter_off6)
      c.n_tiles = 6;
  }
  // Heuristic v43 (sixty-third session, out of sample): 3/4-bit weights in groups of 128 (integer zeros
  // or symmetric) where the rules above leave 4 tiles × 8 warps and blocks of 8 tiles fill 70-100 % of the
  // SMs in one wave (6337-8448 columns on 132 SMs: v23's 6 tiles take those up to 6336), 48 chunks or
  // more: 8 tiles a warp. Not where the format dequantizes every weight before the MMA (its ALU bounds
  // it: 3-bit g64 8192² ran this config 1.026×), nor per channel or 4-bit g256 (4-bit 8192²: 1.049× /
  // 1.010×). 3-bit g256 takes it (sixty-fourth session: 8192×6144 tune 1.16×, the best (1,8,1,8,1,3)).
  // - 3-bit, H200 tunes, (1,4,1,8,1,2) against the best: 8192×14336 1.22, 8192×6144 1.16-1.18,
  //   7168×8192 1.15, 8192² 1.12 (this config 1.00-1.04 where timed). Bench, µs, f16 / bf16: 8192×14336
  //   23.05 → 19.38 / 22.56 → 19.78, 8192² 14.03 → 12.14 / 13.77 → 12.52, 7168×8192 14.00 → 12.11 /
  //   13.77 → 12.42, 8192×6144 11.19 → 9.91, 8192×28672 44.10 → 35.86.
  // - 4-bit: the H200 file's f16 entries on such layers from 56 chunks hold this config (8192², 7168×8192,
  //   8192×14336; 8192×7168 and 8192×28672 with 3 stages), where (1,4,1,8,1,2) ran 1.05-1.14× (H100
  //   1.03-1.06×, its bests 4 tiles × 4 warps: this config 1.02-1.04×); GPTQ symmetric bf16 8192×6144
  //   tune (H200): 1.12×, this config the best. Bench (H200, call 4), µs, f16: 8192×28672 38.59 → 34.38,
  //   7168×20480 27.99 → 25.13, 8192×14336 20.59 → 18.99, 8192² 12.78 → 12.05, 7168×8192 12.70 → 11.90,
  //   8192×6144 10.32 → 9.83; bf16 0.87-0.91× (8192×14336 22.81 → 19.74); symmetric 0.91-0.96×.
  const bool v43 = sm90a && (p.bits == 3 || p.bits == 4) && wq::eight_tile_groups(p) &&
                   !wq::dequantizes_every_weight(p) && c.warps_n == 1 && c.n_tiles == 4 && c.warps_k == 8 &&
                   wq::blocks_fill_within(h, 8, 70, 100) && chunks >= 48;
  if (v43) c.n_tiles = 8;
  // Heuristic v60 (seventy-third session): 2-bit weights at 2-8 rows (which take these rules) in groups of
  // 128 or 256 with integer zeros or none, where v13 leaves 8 tiles × 4 warps along K, over one 16-tile block
  // a SM and where v58's blocks fit evenly at once: v58's 16 tiles a warp, both dtypes (a 2-bit zero comes
  // after the MMA in both). H200 bench, file off, (1,8,1,4,1,2) → (1,16,1,4,1,2), staged: bf16 0.931-0.955×
  // (28672×8192 at 8 rows 27.71 → 25.81 µs; 27648×5120, 32768×8192, 26624×8192, 28672×4096), fp16
  // 0.926-0.935× (32768×8192, 28672×4096); at one block a SM 0.990-1.029× (14336-16384 columns), so not
  // there. Out of sample 0.916-0.960× (11 cases, both dtypes, symmetric, g256).
  const bool v60 = sm90a && bucket >= 2 && bucket <= 8 && p.bits == 2 && wq::sixteen_tile_groups(p) &&
                   c.warps_n == 1 && c.n_tiles == 8 && c.warps_k == 4 && blocks16 > sms &&
                   wq::sixteen_tile_blocks_fit_evenly(h);
  if (v60) c = make(1, 16, 4, 2);
  // Heuristic v65 (seventy-eighth session; H200 bench of the shipped file, heuristic against served:
  // GPTQ-symmetric bf16 at 16 rows 1.177× on 37888×3584 and 1.170× on 57344×8192, bf16 1.152× and 1.113×).
  // Both at 9-16 rows, 4-bit integer-zero or symmetric groups of 128 as measured (eight_tile_groups; 3-bit
  // unmeasured), sm_90a:
  // - v65a: bf16 between v32's two exceptions (3-4 blocks of 16 tiles a SM; 50689-67584 columns on 132 SMs),
  //   where v28/v31's (1,8,2,1,1,2) stood since the forty-ninth session: 8 tiles × 4 warps along K, 2 stages,
  //   the bf16 tune's best on 57344×8192 since § 75's dequantization. Bench, file off, µs, bf16
  //   / symmetric: 51200×5120 48.47 → 41.87 / 50.17 → 40.66, 57344×8192 75.87 → 67.14 / 78.48 → 67.68,
  //   53248×6144 58.41 → 50.73 / 60.21 → 51.01, 65536×5120 0.964 / 0.956, 61440×4096 0.967 / 0.925. Not fp16:
  //   0.98-1.005× on three of those layers, 1.11× on 65536×5120 and 61440×4096 (2 or 3 stages alike). From
  //   32 chunks, as measured (32-64); shorter K keeps v31's pair sharing.
  // - v65b: where v9's (1,4,1,4) stands past v26's band (over 24 tiles a SM) and blocks of 12 tiles, 6 a warp
  //   × 2 warps side by side sharing each chunk's activations × 2 along K, make 2.75-3 a SM (34753-38016
  //   columns on 132 SMs, tiles = ceil(N/8)): one even wave of three 4-warp blocks, the fp16 and bf16 tunes'
  //   best on 37888×3584. Bench, file off, (1,4,1,4,1,2) → (1,6,2,2,1,2), bf16 / symmetric bf16 / fp16:
  //   37888×3584 0.869 / 0.838 / 0.900, 36864×4096 0.889 / 0.876 / 0.904, 35840×5120 0.902 / 0.905 / 0.943,
  //   37888×8192 0.895 / 0.896 / 0.936, 34816×3584 (2.75 a SM) 0.889 / 0.901 / 0.922; at 2.26 a SM
  //   (28672×4096) it lost 1.11-1.21×. Measured from 28 to 64 chunks; 2-bit gained 0.8-2.4 % only against its
  //   own (1,8,1,4,1,2) (v13's 8 tiles).
  // The H100 unmeasured.
  const bool v65_format = sm90a && bucket > 8 && bucket <= 16 && wq::eight_tile_groups(p) &&
                          !wq::dequantizes_every_weight(p) && !p.deterministic;
  const bool v65a = v65_format && v28_band && p.bits == 4 && p.act == DType::BF16 && blocks16 > 3LL * sms &&
                    blocks16 <= 4LL * sms && chunks >= 32 && c.n_tiles == 8 && c.warps_n == 2 &&
                    c.warps_k == 1;
  if (v65a) c = make(1, 8, 4, 2);
  const int64_t blocks12 = ceil_div(tiles, 12);
  const bool v65b = v65_format && p.bits == 4 && c.n_tiles == 4 && c.warps_n == 1 && c.warps_k == 4 &&
                    chunks >= 28 && blocks12 <= 3LL * sms && 4 * blocks12 >= 11LL * sms;
  if (v65b) c = make(1, 6, 2, 2), c.warps_n = 2;
  c.x_shared = true;
  return c;
}

}  // namespace lowbit::wq

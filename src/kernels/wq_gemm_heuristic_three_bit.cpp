// 3-bit weights' own mma.sync rules (heuristic v42 and v44, sixty-third session; groups of 256 since v46,
// sixty-fourth; v43, shared with 4-bit weights, is in wq_gemm_heuristic_sixteen_rows.cpp):
// wq::three_bit_config, which choose_config (wq_gemm_heuristic.cpp) applies after the rules 3-bit weights
// share with 4-bit ones and before it fits registers and shared memory. A 3-bit tile is 12 bytes a lane
// where a 4-bit one is 16, so a warp needs more tiles, and a block more warps, to keep as many bytes in
// flight (v40 in wq_gemm_heuristic_few_rows.cpp, one row past the 4-warp wave, is the same finding). Fitted
// to H200 tunes of 3-bit g128 fp16 (docs/perf-notes.md, sixty-second to sixty-fourth sessions).
#include <optional>

#include "kernels/wq_gemm_internal.hpp"

namespace lowbit::wq {

std::optional<WqGemmConfig> three_bit_config(const WqGemmProblem& p, const HeuristicShape& h,
                                             const WqGemmConfig& c, const Arch& arch) {
  // Measured on sm_90a with activations staged per warp (which deterministic problems leave), in groups of
  // 128 (integer zeros and symmetric). Not where the format dequantizes every weight before the MMA: there
  // the ALU, not the bytes in flight, bounds a warp, and the bench had these rules 0.4-6 % slower (H200,
  // against the shared rules' config: g64 at one row 6144×4096 1.045, 7168×8192 1.004, 8192² 1.024, float
  // zeros g64 8192² 1.061). Groups of 256 too (sixty-fourth session, H200 tunes, fp16: one row 6144×16384
  // 1.33× → this config the best, 8192×6144 1.056× → the best), not per channel (its bests kept 2-4 tiles at
  // one row, 4-6 at 16 rows).
  if (p.bits != 3 || !eight_tile_groups(p) || !has_wgmma(arch) || !may_stage_per_warp(p, arch) ||
      dequantizes_every_weight(p))
    return std::nullopt;
  const int64_t blocks8 = ceil_div(h.tiles, 8), blocks16 = ceil_div(h.tiles, 16);
  const bool staged_per_warp = c.x_shared && c.warps_n == 1;
  WqGemmConfig t = base_config(1, 8, 8, 2);
  t.x_shared = true;
  // v42: one row where blocks of 8 tiles fill over half the SMs in one wave (4225-8448 columns on 132
  // SMs), 28 chunks or more: 8 tiles a warp, 16 warps along K from 64 chunks, else 12. H200 tunes, the
  // heuristic's staged config before (2 tiles × 8 warps, 4 × 8 or v28's 6 × 12) → this, against the best:
  // 6144×16384 1.30-1.31 → 1.00, 8192×14336 1.21 → 1.00, 4608×3584 1.18 → ?, 7168×8192 1.14 → 1.00,
  // 8192² 1.12 → 1.006, 8192×6144 1.07-1.10 → 1.00, 6144×4096 1.08 → ?, 5120×8192 1.06 → 1.00, 5120×4096 1.03
  // → 1.02. Bench (call 2), µs, fp16: 6144×16384 20.26 → 15.38, 8192×28672 32.72 → 25.20, 6144×8192 11.21
  // → 9.19, 8192×14336 17.46 → 14.41, 7168×8192 10.83 → 9.42, 4608×3584 6.16 → 5.36, 8192² 10.94 → 9.69,
  // 8192×6144 8.80 → 7.93, 6144×4096 6.71 → 6.01, 5120×8192 9.57 → 8.99, 5120×13824 13.88 → 13.24,
  // 5120×4096 5.87 → 5.81; bf16 0.84-0.93× where the old config had 2 or 4 tiles; symmetric 0.89-0.91×. Not
  // under half a wave: 4096² (64 blocks), whose best is (1,4,1,16), took no 8-tile config among its six
  // fastest.
  // bf16 keeps v28/v32's 6 tiles × 12 warps (its Σ MMAs after the zero): there this config ran 1.002×
  // (5120×8192) and 1.017× (6144×16384) in the bench.
  const bool bf16_six_tiles = p.act == DType::BF16 && c.n_tiles == 6;
  if (h.bucket == 1 && staged_per_warp && !bf16_six_tiles && 2 * blocks8 > h.sms && blocks8 <= h.sms &&
      h.chunks >= 28) {
    t.warps_k = h.chunks >= 64 ? 16 : 12;
    return t;
  }
  if (h.bucket != 16) return std::nullopt;
  // v44: 16 rows on the widest layers (over 36 tiles a SM, over 16 chunks) but v32's band of up to 3
  // blocks of 16 tiles a SM past 40 (its (1,8,2,2,1,2) ran 1.016-1.05× the best on 45056×8192 and
  // 49152×4096): 8 tiles × 4 warps along K, 2 stages. H200 tunes, the heuristic before → this: 40960×7168
  // (1,4,1,4,1,2) 1.19 → 1.03, 73728×4608 v32's (1,6,1,2,1,2) 1.15 → 1.03, 51200×5120 v28's (1,8,2,1,1,3)
  // 1.15 → ? (the best: this config with activation sums). 35840×5120 (33.9 tiles a SM) keeps (1,4,1,4):
  // 1.055×, its best that config with sums; 28672×5120 too (this config 1.06-1.08×). Bench (call 2), µs,
  // fp16 / bf16: 40960×7168 52.31 → 44.77 / 52.79 → 46.28, 73728×4608 58.08 → 51.97 / 58.94 → 53.45,
  // 51200×5120 50.40 → 44.99, 57344×8192 78.96 → 71.10; 65536×5120 50.69 → 51.21 / 51.81 → 52.57 (1-1.5 %
  // slower: v28/v31's band keeps its best there, kept for one rule over the band).
  const bool v32_three_blocks_of_16 = h.tiles_per_sm > 40 && blocks16 <= 3LL * h.sms;
  if (h.tiles_per_sm > 36 && h.chunks > 16 && !v32_three_blocks_of_16) {
    t.warps_k = 4;
    return t;
  }
  return std::nullopt;
}

}  // namespace lowbit::wq

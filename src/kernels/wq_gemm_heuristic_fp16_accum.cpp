// fp16 accumulation's own rules from 32 rows (heuristics v47, sixty-fourth session, v48, sixty-fifth, v54):
// wq::fp16_accum_config, which choose_config (wq_gemm_heuristic.cpp) applies last, after fill_split. fp16
// accumulation cannot run wgmma, so from 32 rows it falls to the mma.sync rules fitted before wgmma took
// those layers in fp32 accumulation; and it dequantizes every weight before the MMA, so fit_registers halves
// any block of 2 row tiles × 8 column tiles to 1 × 8 (16 rows a block: above 6 tiles a SM at 128 rows the
// weights are read 8 times, 1.45-1.8× the best). Fitted to H200 tunes of fp16 accumulation, g128 integer
// zeros (docs/perf-notes.md, sixty-fourth and sixty-fifth sessions): every best keeps block-shared
// activations and most 2 stages.
#include <optional>

#include "kernels/wq_gemm_internal.hpp"

namespace lowbit::wq {

namespace {

// Block-shared activations in warps_n warps side by side, warps_k along K, 2 stages.
WqGemmConfig block_shared(int m_tiles, int n_tiles, int warps_n, int warps_k, int split_k) {
  WqGemmConfig c = base_config(m_tiles, n_tiles, warps_k, 2);
  c.warps_n = warps_n, c.split_k = split_k, c.x_shared = true;
  return c;
}

// The blocks the busiest SM runs, per split of K: the grid's time in units of one unsplit block's, when the
// blocks are memory-bound and each SM streams the bytes of all it holds.
double busiest_sm_share(int64_t blocks, int split, int sms) {
  return static_cast<double>(ceil_div(blocks * split, sms)) / split;
}

// 4 row tiles × 4 column tiles in 4 warps side by side (64 rows × 128 columns a block). K split in two where
// the unsplit grid leaves SMs with one block or none (8192² at 128 rows, 128 blocks: split 2 the tune's
// best, (4,4,4,1,1,3) 1.18×), and at 4 bits where the split gives the busiest SM less (28672-wide layers at
// 128 rows, 448 blocks: 4 rounds unsplit, 3.5 split; bench 28672×4096 107.1 µs → 100.4, 28672×8192 208.4 →
// 187.4, 28672×5120 132.2 → 122.4; 14336×4096's 224, 2 rounds either way, stay unsplit, its tune's best).
// The tunes of 2- and 8-bit weights on 28672×4096 kept them unsplit.
// wide_block's grid unsplit: blocks of 64 rows × 128 columns.
int64_t wide_blocks(const HeuristicShape& h) {
  return ceil_div(h.tiles, 16) * ceil_div(h.bucket, 64);
}

WqGemmConfig wide_block(const WqGemmProblem& p, const HeuristicShape& h) {
  const int64_t blocks = wide_blocks(h);
  const bool split = blocks <= h.sms ||
                     (p.bits == 4 && busiest_sm_share(blocks, 2, h.sms) < busiest_sm_share(blocks, 1, h.sms));
  return block_shared(4, 4, 4, 1, split ? 2 : 1);
}

}  // namespace

std::optional<WqGemmConfig> fp16_accum_config(const WqGemmProblem& p, const HeuristicShape& h, bool sm90a) {
  // Measured on sm_90a, from 32 chunks (K from 4096), not deterministic (whose K order is the one-row
  // choice's).
  if (p.accum != DType::F16 || !sm90a || p.deterministic || h.chunks < 32) return std::nullopt;
  const double t = h.tiles_per_sm;
  const bool up_to_4_bits = p.bits <= 4;
  // H200 tunes (tuner times, each ratio the config before over the best): 4-bit on 4096², 4096×14336,
  // 5120×4096, 6144×4096, 8192², 8192×6144, 8192×28672, 14336×4096, 28672×4096, 28672×5120, 6144×16384 at
  // 32-128 rows; 2- and 8-bit on 4096², 6144×4096, 8192², 28672×4096 at 64 and 128. 3-bit weights were
  // benched, not tuned; 1-bit weights, other group sizes and modes follow g128 integer zeros unmeasured.
  if (h.bucket == 32) {
    // v48: 4-bit at 6-8 tiles a SM: two warps side by side of 4 tiles, one 32-row block, split in two, 3
    // stages (v24's 32-row block, which fit_registers cut to 16 rows). 8192² 1.14× → the best, 8192×28672
    // 1.23× → 1.01×. 2/3/8-bit weights unmeasured here (v24 was 4-bit only; v56's 1/2/8-bit
    // blocks are cut back to 16 rows by fit_registers with fp16 accumulation).
    if (p.bits == 4 && t > 6 && t <= 8) {
      WqGemmConfig c = block_shared(2, 4, 2, 2, 2);
      c.stages = 3;
      return c;
    }
    return std::nullopt;
  }
  if (h.bucket == 64) {
    // v47: over 4.2 up to 6 tiles a SM (4440-6336 columns on 132 SMs), 2 × 2 warps of 2 × 4 tiles, split in
    // two. Bench, µs, the heuristic before → this: 6144×4096 23.71 → 15.11, 6144×16384 71.05 → 49.13,
    // 5120×4096 18.90 → 14.79. v48: every bit width (2-bit 6144×4096 tune 1.39× → the best; forced in the
    // bench, 2/3/8-bit at 5120×4096 and 6144×16384 ran 1.24-1.39× faster than the heuristic before), and
    // bits up to 4 from 3 tiles a SM (4-bit 4096² 1.08× → the best, 4096×14336 1.19× → the best; 8-bit
    // 4096² keeps (2,4,2,4,1,3), its best). Not timed: 8-bit 6144×4096, whose tune had (2,2,2,2,1,2) first
    // and this config not within 1.132× (the rules before 1.114×).
    if ((t > 4.2 || (up_to_4_bits && t > 3)) && t <= 6) return block_shared(2, 4, 2, 2, 2);
    // v48: up to 4 bits over 6 up to 8 tiles a SM: 2 × 2 warps of 2 × 8 tiles, unsplit (4-bit 8192²,
    // 8192×6144, 8192×28672 1.10-1.15× → the best or 1.004×; 2-bit 8192² 1.18× → 1.02×). 8-bit keeps
    // (2,4,2,2,1,3), its best.
    if (up_to_4_bits && t > 6 && t <= 8) return block_shared(2, 8, 2, 4, 1);
    // v48: over 12 up to 16 tiles a SM and over 24, every bit width: wide_block (4-bit 14336×4096 1.16× →
    // the best, split in two; 13824×5120 the best; 28672×4096 and 28672×5120 1.08× → the best; 2-bit
    // 28672×4096 1.11× → the best; 8-bit 1.24× → 1.01×). Not between: 20480×4096 (19.4 tiles a SM, 160
    // blocks, 28 SMs with two) ran 54.8 µs against 43.2 for the earlier rules' (2,4,2,2,1,3); nor at
    // 10240×8192 (9.7, 80 blocks), 1.02-1.14× the rules before in the bench.
    if ((t > 12 && t <= 16) || t > 24) return wide_block(p, h);
    return std::nullopt;
  }
  if (h.bucket == 128) {
    // v48: up to 4 bits, 3-4.2 tiles a SM: 2 × 2 warps of 2 × 8 tiles (4-bit 4096² 1.06× → the best,
    // 4096×14336 1.15× → the best; 2-bit 4096² 1.14× → 1.02×; 8-bit 4096² keeps its best, (2,4,2,2,1,3)).
    if (up_to_4_bits && t > 3 && t <= 4.2) return block_shared(2, 8, 2, 4, 1);
    // v48: over 4.2 up to 6, 2 stages where the rules before kept 3 (4-bit 6144×4096 and 6144×16384
    // 1.02-1.03× → the best, 5120×4096 1.06× → 1.04×; 2-bit 6144×4096 1.01× → the best; 8-bit 1.10× →
    // the best).
    if (t > 4.2 && t <= 6) return block_shared(2, 4, 2, 2, 1);
    // v48: over 6 up to 8 tiles a SM and over 12: wide_block (4-bit 8192², 8192×6144 1.67× → the best, split
    // in two; 7168×8192 and 13824×5120 the best; 14336×4096 1.58× → the best; 28672×4096 and 28672×5120
    // 1.52-1.57× → 1.05-1.09× unsplit, split as wide_block does in the bench; 2-bit 8192² 1.56× → the best;
    // bench, µs, the rules before → this: 8192² 93.6 → 55.4, 8192×28672 322.3 → 182.8 (the tune's best of
    // 28 tried, (2,8,2,2,1,3), 217.6), 8-bit 28672×4096 205.3 → 112.8).
    if ((t > 6 && t <= 8) || t > 12) return wide_block(p, h);
    // v48: over 8 up to 12: 2 × 2 warps of 2 × 4 tiles, 2 stages (10240×8192, 160 blocks of wide_block: the
    // tune's best, wide_block unsplit 1.32×, split 1.08×; bench, wide_block unsplit against the rules
    // before: 11008×4096 and 12288×4096 54.5 µs against 72.6-73.1, as slow as 14336×4096's 54.1; this
    // config there: 48.95-49.24, sixty-sixth session).
    // v50 (sixty-sixth session): 4-bit on 32 chunks (K = 4096) over 10 tiles a SM takes wide_block, split in
    // two (its busiest-SM rule): bench, µs, 11008×4096 48.95 → 46.40, 12288×4096 49.24 → 46.71. Not from 8
    // (9216×4096, 144 blocks: 41.58 → 45.81, though the busiest-SM share drops from 2 to 1.5 there too), nor
    // on 64 chunks (10240×8192: 80.8 against 86.8 split).
    if (t > 8 && t <= 12)
      return p.bits == 4 && h.chunks <= 32 && t > 10 ? wide_block(p, h) : block_shared(2, 4, 2, 2, 1);
  }
  // v54 (sixty-seventh session): over 128 rows no rule above applied, and the mma.sync rules' blocks (cut to
  // 16 rows by fit_registers on 8192² and 28672×4096) read every weight M/16 times: H200 bench at 256 and
  // 1024 rows 3.0-3.6× the fp32 accumulation's wgmma (8192² at 256 rows 186.73 µs against 52.22). Now
  // wide_block's 64 × 128 blocks, K split in two only where the unsplit grid leaves SMs with one block or
  // none (its busiest-SM rule, fitted at 128 rows, would split 28672×4096 at 1024 rows for a busiest-SM share
  // 2 % smaller, 28 → 27.5 blocks; unmeasured).
  if (h.bucket > 128) return block_shared(4, 4, 4, 1, wide_blocks(h) <= h.sms ? 2 : 1);
  return std::nullopt;
}

}  // namespace lowbit::wq

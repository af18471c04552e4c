// Deterministic mode's own config from 16-32 rows (heuristic v55): wq::deterministic_config, which choose()
// (wq_gemm_heuristic.cpp) runs instead of the plain problem's choice wherever no exact tuning entry applies.
#include <optional>

#include "kernels/wq_gemm_internal.hpp"

namespace lowbit::wq {

std::optional<WqGemmConfig> deterministic_config(const WqGemmProblem& pb, const WqGemmConfig& k_order,
                                                 const Arch& arch) {
  // Every bucket of a deterministic problem sums K in the one-row choice's order (its warps_k and
  // split_k; the rest of the config does not change a row's arithmetic there: no operand swap and two
  // accumulator chains in every config, the scale before or after the MMA by the format alone). Before v55
  // the other fields came from the plain problem's choice (tuned or heuristic), a block shape sized for its
  // own warps along K: with the one-row K order's 8 or 16 instead it made blocks of 16 warps capped at 128
  // registers or 32 tiles a warp, spilling 72-1868 B (ptxas) at 16-1024 rows, or, past 128 rows, the wgmma
  // choice cut to mma.sync (deterministic problems do not run wgmma). H200, 4-bit g128 fp16
  // (docs/perf-notes.md, sixty-eighth session): a bench of candidates (most without spills) at 16-1024 rows,
  // no tuning file; then v55 against the choice before, with the shipped file and without. The shapes, by the
  // one-row K order:
  // - 16 warps along K (4096², 4096×14336 and the like), from 16 rows: 16 rows × 4 tiles a block, 2
  //   stages, activations staged per warp, the best candidate at every bucket; 0.27-0.76× the choice
  //   before in 4-bit fp16, at most 0.82× in other formats (4096² at 64 rows with the shipped file 70.41
  //   → 19.01 µs).
  // - 8 (8192², 6144×4096), from 32 rows: 2 × 4 tiles, 2 stages, staged; 0.20-0.65× (8192² at 128 rows
  //   471.82 → 95.58 µs). At 16 rows the choice before stays: it does not spill, and the shipped
  //   6144×4096 entry's 6 tiles ran 1.22× faster than 8.
  // - 4 (12288×4096, and 16384² and 28672×4096 with the shipped file), from 32 rows: 8 tiles in
  //   registers, 3 stages; at 64 rows 2 × 4 tiles with 2 warps side by side sharing their staged
  //   activations, 3 stages (3-5.5 % faster there on all three layers, 1.20× slower at 32 rows). Within
  //   1.03× of the best candidate at 32-1024 rows; 0.30-0.77× where the choice before spilled (128-256
  //   rows).
  // - 2 (28672×4096 without the file), from 32 rows: 2 × 4 tiles, 2 warps side by side, staged, 3 stages:
  //   within 1.02× of the best, where the choice before ran 2.8-3.3× past 64 rows.
  // Warps along K beyond those counts (a tuned one-row entry may hold 6 or 12) take the next larger
  // count's shape, so a block's registers stay in its threads' budget. ptxas (sm_90a) of the five shapes in
  // 96 formats (bits 2/3/4/8, fp16/bf16, four modes, groups 32/128/per channel): 13 of 480 spill 4-64 B
  // (mostly 8-bit); the choices before spilled up to 1.8 KB in 4-bit g128.
  const int wk = k_order.warps_k;
  if (pb.m < 16 || (pb.m <= 16 && wk <= 8)) return std::nullopt;
  WqGemmConfig c;
  if (wk > 8) {
    c = base_config(1, 4, wk, 2), c.x_shared = true;
  } else if (wk > 4) {
    c = base_config(2, 4, wk, 2), c.x_shared = true;
  } else if (wk > 2 && pb.m != 64) {
    c = base_config(1, 8, wk, 3);
  } else {
    c = base_config(2, 4, wk, 3), c.warps_n = 2, c.x_shared = true;
  }
  c.split_k = k_order.split_k;
  // Smaller shared memory (sm_80-sm_89: 99-163 KiB a block) may not hold the staged activations of 8-16
  // warps along K: then each warp loads its own into registers (unmeasured there; the choices before
  // spilled on every arch alike).
  if (!can_implement(pb, c, arch)) c.x_shared = false;
  if (!can_implement(pb, c, arch)) c.stages = 2;
  if (!can_implement(pb, c, arch)) return std::nullopt;
  return c;
}

WqGemmConfig deterministic_tile_cap(WqGemmConfig c) {
  // A deterministic problem's mma.sync kernel keeps the A/B roles (no operand swap) and two accumulator
  // chains in every config, so a warp holds 8 fp32 registers per 16 × 8 tile (12 with per-chunk sums): 16
  // tiles spill (ptxas, 4-bit g128 fp16: (1,16,1,4,1,3) staged 552 B). The plain problem's entries serve
  // deterministic problems as a similar format, and some hold 16 tiles (4-bit fp16 28672×4096 at one row,
  // 28672×8192 at 4-8 rows; bf16 16384² and 28672×4096 at one row; 2-bit 16384² and 28672×4096 at one row;
  // and 2 × 6-8 tiles in the 2/8-bit 32-row entries of 6144×4096 and 8192²). H200, one row, with the bf16
  // entries (sixty-eighth session, when those served fp16 too): 16384² ran 104.27 µs against the plain
  // problem's 33.82, 28672×4096 31.80 against 16.68. Halving n_tiles changes no row's arithmetic (the K order
  // is warps_k and split_k); 6 tiles go to 4, a count can_implement takes.
  while (!c.wgmma && c.m_tiles * c.n_tiles > 8 && c.n_tiles > 1)
    c.n_tiles = c.n_tiles == 6 ? 4 : c.n_tiles / 2;
  return c;
}

}  // namespace lowbit::wq

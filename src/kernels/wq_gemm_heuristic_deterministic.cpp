// Deterministic mode's own config from 16 rows (heuristic v55): wq::deterministic_config, which choose()
// (wq_gemm_heuristic.cpp) runs instead of the plain problem's choice wherever no exact tuning entry applies.
#include <optional>

#include "kernels/wq_gemm_internal.hpp"

namespace lowbit::wq {

std::optional<WqGemmConfig> deterministic_config(const WqGemmProblem& pb, const WqGemmConfig& k_order,
                                                 const Arch& arch) {
  // Every bucket of a deterministic problem sums K in the one-row choice's order (its warps_k and
  // split_k; the rest of the config does not change a row's arithmetic there: no operand swap, two
  // accumulator chains, the scale after the MMA in every config). Before v55 the other fields came from
  // the plain problem's choice, a block shape sized for its own warps along K: with the one-row K order's
  // 8 or 16 instead they made blocks of 16 warps capped at 128 registers, spilling 72-1428 B (ptxas) from
  // 16-32 rows, or, past 128 rows, the wgmma choice cut to mma.sync (deterministic problems do not run
  // wgmma). H200 bench of candidates without spills, 16-1024 rows, 4-bit g128 fp16, no tuning file
  // (docs/perf-notes.md, sixty-eighth session), the best of each K order:
  // - 16 warps along K (4096², 4096×14336): 16 rows × 4 tiles a block, 2 stages, activations staged
  //   per warp; 1.24-1.98× faster than the choice before at 16-1024 rows (4096² at 128 rows 68.55 →
  //   37.05 µs), the best candidate at every bucket.
  // - 8 (8192²): at 16 rows 8 tiles, 3 stages, staged (1.07×); from 32 rows 2 × 4 tiles, 2 stages,
  //   staged: 2.2-5.2× faster (1024 rows 3790 → 733 µs).
  // - 4 (12288×4096): 8 tiles in registers, 2 stages at 16 rows (the choice before), 3 from 32 rows:
  //   within 1.03× of the best at 32-1024 rows, where the choice before ran 1.20-1.33×.
  // - 2 (28672×4096): 8 tiles in registers at 16 rows (the choice before); from 32 rows 2 × 4 tiles,
  //   2 warps side by side sharing their staged activations, 3 stages: within 1.02×, where the choice
  //   before ran 2.8-3.3× past 64 rows.
  // Warps along K beyond those counts (a tuned one-row entry may hold 6 or 12) take the next larger
  // count's shape, so a block's registers stay in its threads' budget. ptxas (sm_90a) of the six shapes in 96
  // formats (bits 2/3/4/8, fp16/bf16, four modes, groups 32/128/per channel): 17 of the 576 spill 4-64 B
  // (8-bit, float zeros, q·s + z, groups of 32); the choices before spilled up to 1.8 KB in 4-bit g128.
  if (pb.m < 16) return std::nullopt;
  const int wk = k_order.warps_k;
  const bool sixteen = pb.m <= 16;
  WqGemmConfig c;
  if (wk > 8) {
    c = base_config(1, 4, wk, 2), c.x_shared = true;
  } else if (wk > 4) {
    c = sixteen ? base_config(1, 8, wk, 3) : base_config(2, 4, wk, 2);
    c.x_shared = true;
  } else if (wk > 2 || sixteen) {
    c = base_config(1, 8, wk, sixteen ? 2 : 3);
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

}  // namespace lowbit::wq

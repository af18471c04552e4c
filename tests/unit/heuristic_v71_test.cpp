// Heuristic v71 (docs/perf-notes.md, seventy-ninth session): 2-bit weights at 17-32 rows over 8 tiles per SM
// (up to the per-warp branch's 10): 6 tiles × 8 warps along K from 24 chunks, else 4 warps along K.
#include <cstdint>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::DType;
using lowbit::WqGemmProblem;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::staged;
using lowbit::test::with_act;

TEST_CASE("choose_config v71: 2-bit at 32 rows over 8 tiles per SM", "[config][heuristic]") {
  for (DType act : {DType::F16, DType::BF16})
    for (int bits : {1, 2}) {
      INFO(static_cast<int>(act) << " w" << bits);
      CHECK(staged(choose_hopper(with_act(g128_problem(8704, 4096, 32, bits), act))) == "1,6,1,8,1,2+xs");
      CHECK(staged(choose_hopper(with_act(g128_problem(9216, 3072, 32, bits), act))) == "1,6,1,8,1,2+xs");
      CHECK(staged(choose_hopper(with_act(g128_problem(9216, 3072, 24, bits), act))) == "1,6,1,8,1,2+xs");
      // Under 24 chunks: 4 warps along K.
      CHECK(staged(choose_hopper(with_act(g128_problem(10112, 2048, 32, bits), act))) == "1,4,1,4,1,2+xs");
    }
  // The band's edge on 132 SMs: 8448 columns (8.0 tiles per SM) keep v56's 32-row block, 8456 are in.
  CHECK(staged(choose_hopper(8448, 4096, 32, 2)) == "2,8,1,4,1,3+xs");
  CHECK(staged(choose_hopper(8456, 4096, 32, 2)) == "1,6,1,8,1,2+xs");
  // Not 3/4-bit (v27), not where every weight is dequantized first, not off sm_90a.
  CHECK(staged(choose_hopper(8704, 4096, 32)) == "1,4,1,4,1,2+xs");
  WqGemmProblem g64 = g128_problem(8704, 4096, 32, 2);
  g64.group_size = 64;
  CHECK(staged(choose_hopper(g64)) == "1,4,1,8,1,2+xs");
  CHECK(lowbit::choose_config(g128_problem(8704, 4096, 32, 2), kSm80, 132).n_tiles != 6);
}

// Heuristic v70 (docs/perf-notes.md, seventy-ninth session): at 17-32 rows the 8 tiles × 8 warps band (2-4.2
// tiles per SM) only while its blocks fit one wave; past that, the 4 × 4 band's blocks.
#include <cstdint>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::staged;

TEST_CASE("choose_config v70: 32 rows, 8 × 8 while its blocks fit one wave", "[config][heuristic]") {
  // 132 SMs: 2 row blocks × ⌈tiles / 8⌉ up to 132 (4224 columns); 4352 (136 blocks) was the tune's miss.
  for (int bits : {3, 4}) {
    CHECK(staged(choose_hopper(4096, 4096, 32, bits)) == "1,8,1,8,1,3+xs");
    CHECK(staged(choose_hopper(4224, 4096, 32, bits)) == "1,8,1,8,1,3+xs");
    CHECK(staged(choose_hopper(4352, 4096, 32, bits)) == "1,4,1,4,1,3+xs");
    CHECK(staged(choose_hopper(4352, 4096, 24, bits)) == "1,4,1,4,1,3+xs");
  }
  // Not on sm_90 without the a, nor where every weight is dequantized before the MMA (groups of 64, fp16
  // accumulation): 8 × 8 up to 4.2 tiles per SM there.
  CHECK(staged(lowbit::choose_config(g128_problem(4352, 4096, 32), lowbit::Arch::parse("sm_90"), 132)) ==
        "1,8,1,8,1,3+xs");
  lowbit::WqGemmProblem g64 = g128_problem(4352, 4096, 32), accum = g64;
  g64.group_size = 64, accum.accum = lowbit::DType::F16;
  CHECK(staged(choose_hopper(g64)) == "1,8,1,8,1,3+xs");
  CHECK(staged(choose_hopper(accum)) == "1,8,1,8,1,3+xs");
  // 2-bit takes the 4 × 4 band's v56 block there (one 32-row block of 6 tiles × 8 warps along K).
  CHECK(staged(choose_hopper(4352, 4096, 32, 2)) == "2,6,1,8,1,2+xs");
}

// Heuristic v36 (docs/perf-notes.md, sixtieth session): 4-bit g128 layers that v5 keeps in registers with
// 2 warps along K at 1-8 rows take 4 wherever those 4-warp blocks fit in one wave, else (fp16, 2-8 rows) 3
// where 3-warp ones do (H200 bench, out of sample).
#include <cstdint>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::WqGemmProblem;
using lowbit::test::choose_bf16_hopper;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::v5_registers;

TEST_CASE("choose_config v36: one wave of 4-warp register blocks takes 4 warps along K at 1-8 rows",
          "[config][heuristic]") {
  for (int64_t m : {1, 2, 3, 4, 8}) {
    INFO("M = " << m);
    // fp16: over 4 blocks of 4 tiles per SM (16897 columns on 132 SMs) up to 7 (29568), over 32 chunks.
    for (int64_t n : {18432, 20480, 24576, 27648, 28672, 29568})
      CHECK(v5_registers(choose_hopper(n, 8192, m), 4));
    CHECK(v5_registers(choose_hopper(28672, 5120, m), 4));
    CHECK(v5_registers(choose_hopper(18432, 16384, m), 4));
    // Past one wave of 4-warp blocks (29576 columns: 925 blocks), fp16 takes 3 warps from 2 rows while
    // those fit in one wave (9 per SM: 38016 columns); one row keeps 2, and so does anything wider.
    const int past_wave = m == 1 ? 2 : 3;
    CHECK(v5_registers(choose_hopper(29576, 8192, m), past_wave));
    CHECK(v5_registers(choose_hopper(32768, 6144, m), past_wave));
    CHECK(v5_registers(choose_hopper(35840, 5120, m), past_wave));
    CHECK(v5_registers(choose_hopper(36864, 8192, m), past_wave));
    CHECK(v5_registers(choose_hopper(38016, 16384, m), past_wave));
    CHECK(v5_registers(choose_hopper(38024, 16384, m), 2));
    CHECK(v5_registers(choose_hopper(40960, 7168, m), 2));
    // (bf16 from 2 rows on 26112-33792 columns: v58's 16 tiles, heuristic_v58_test.cpp.)
    if (m == 1) CHECK(v5_registers(choose_bf16_hopper(32768, 6144, m), 2));
    // Up to 32 chunks v27 stages these layers (28672×4096): not this rule's.
    CHECK(choose_hopper(28672, 4096, m).x_shared);
    // bf16 holds 80 registers from 2 rows, so 6 blocks per SM (25344 columns); 68-70 at one row, so 7.
    CHECK(v5_registers(choose_bf16_hopper(24576, 8192, m), 4));
    CHECK(v5_registers(choose_bf16_hopper(25344, 8192, m), 4));
    if (m == 1) CHECK(v5_registers(choose_bf16_hopper(28672, 8192, m), 4));
    CHECK(v5_registers(choose_bf16_hopper(36864, 8192, m), 2));  // past both waves and v58
    // Other formats take the same rule with their own wave since v37 (heuristic_v37_test.cpp); v36's
    // 3-warp rule stays fp16 4-bit g128 with integer zeros: per channel past the wave keeps 2.
    WqGemmProblem p = g128_problem(32768, 6144, m);
    p.group_size = 0;
    CHECK(v5_registers(choose_hopper(p), 2));
    // sm_90a only, and not in deterministic mode.
    CHECK(lowbit::choose_config(g128_problem(24576, 8192, m), kSm80, 132).warps_k != 4);
    p = g128_problem(24576, 8192, m);
    p.deterministic = true;
    CHECK(choose_hopper(p).warps_k != 4);
  }
}

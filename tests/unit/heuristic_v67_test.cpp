// Heuristic v67 (docs/perf-notes.md, seventy-eighth session): 4-bit at 9-16 rows, where v25's split 3 makes
// more clusters of 3 than fit at once (over 0.595 of the SMs' 4-tile blocks), K splits in 4 with 2 stages.
#include <cstdint>
#include <string>

#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::DequantMode;
using lowbit::DType;
using lowbit::WqGemmProblem;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::staged;
using lowbit::test::with_act;

TEST_CASE(
    "choose_config v67: 4-bit at 9-16 rows, v25's split 3 past the clusters of 3 that fit at once: K in 4",
    "[config][heuristic]") {
  // v25's 4-tile blocks over 64 chunks: split 3 up to 78 of them (the clusters of 3 that fit at once on 132
  // SMs, 2496 columns), K in 4 with 2 stages from 79 (2497 columns) to v25's 0.7 bound (92 blocks, 2944
  // columns); both dtypes and modes.
  for (int64_t n : {2504, 2560, 2816, 2944})
    for (int64_t k : {9216, 16384})
      for (DType act : {DType::F16, DType::BF16}) {
        INFO(n << "x" << k << " " << static_cast<int>(act));
        WqGemmProblem p = with_act(g128_problem(n, k, 16), act);
        CHECK(staged(choose_hopper(p)) == "1,4,1,4,4,2+xs");
        p.mode = DequantMode::Symmetric;
        CHECK(staged(choose_hopper(p)) == "1,4,1,4,4,2+xs");
      }
  for (int64_t n : {2304, 2464, 2496}) CHECK(staged(choose_hopper(n, 16384, 16)) == "1,4,1,4,3,3+xs");
  CHECK(staged(choose_hopper(2976, 16384, 16)) == "1,4,1,8,1,3+xs");  // past v25's 0.7
  // From 65 chunks (v25's bound on sm_90a): 2560×8320 splits, 2560×8192 is v66's (bf16) or unsplit (fp16).
  CHECK(staged(choose_hopper(2560, 8320, 16)) == "1,4,1,4,4,2+xs");
  CHECK(choose_hopper(2560, 8192, 16).split_k == 1);
  // Not other groups and formats (3- and 2-bit: v68), nor sm_90 without the a.
  for (int group : {64, 256, 0}) {
    WqGemmProblem q = g128_problem(2560, 16384, 16);
    q.group_size = group;
    CHECK(choose_hopper(q).split_k != 4);
  }
  CHECK(lowbit::choose_config(g128_problem(2560, 16384, 16), lowbit::Arch::parse("sm_90"), 132).split_k != 4);
}

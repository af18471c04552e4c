// Heuristic v68 (docs/perf-notes.md, seventy-ninth session): v67's band at every row count up to 16,
// 2/3/4-bit: where v25's split 3 covers over 0.595 of the SMs' 4-tile blocks, (1,4,1,4,4,2).
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

TEST_CASE("choose_config v68: 1-16 rows in v67's band, 2/3/4-bit: 4 warps along K, K in 4",
          "[config][heuristic]") {
  // 79-92 blocks of 4 tiles (2497-2944 columns on 132 SMs) over 64 chunks; every bucket up to 16 rows, both
  // dtypes and modes.
  for (int64_t n : {2504, 2560, 2816, 2944})
    for (int64_t k : {9216, 16384})
      for (int64_t m : {1, 2, 3, 4, 5, 8, 9, 16})
        for (int bits : {2, 3, 4})
          for (DType act : {DType::F16, DType::BF16}) {
            INFO(n << "x" << k << " m" << m << " w" << bits << " " << static_cast<int>(act));
            WqGemmProblem p = with_act(g128_problem(n, k, m, bits), act);
            CHECK(staged(choose_hopper(p)) == "1,4,1,4,4,2+xs");
            p.mode = DequantMode::Symmetric;
            CHECK(staged(choose_hopper(p)) == "1,4,1,4,4,2+xs");
          }
  // Up to 78 blocks v25's split 3 stays (2304×16384: the bench's best); past 0.7 of the SMs v25 does not
  // split.
  for (int64_t n : {2304, 2464, 2496}) {
    CHECK(staged(choose_hopper(n, 16384, 4)) == "1,4,1,8,3,2+xs");
    CHECK(staged(choose_hopper(n, 16384, 8, 2)) == "1,4,1,8,3,3+xs");
  }
  CHECK(choose_hopper(2976, 16384, 4).split_k == 1);
  CHECK(staged(choose_hopper(2304, 16384, 1)) == "1,4,1,8,3,2+xs");
  CHECK(staged(choose_hopper(2304, 16384, 16, 2)) == "1,4,1,4,3,3+xs");
  // Not other groups (3-bit g256 and per channel included), float zeros, q·s + z or fp16 accumulation (v25's
  // split 3 stays), nor deterministic problems (unsplit), nor sm_90 without the a. (Off sm_90 no K split
  // meets in a cluster, so v25 never splits there.)
  for (int group : {64, 256, 0}) {
    WqGemmProblem q = g128_problem(2560, 16384, 4, 3);
    q.group_size = group;
    CHECK(choose_hopper(q).split_k == 3);
  }
  for (DequantMode mode : {DequantMode::SubFloatZeroThenScale, DequantMode::ScaleThenAddZero}) {
    WqGemmProblem q = g128_problem(2560, 16384, 4);
    q.mode = mode;
    CHECK(choose_hopper(q).split_k == 3);
  }
  WqGemmProblem accum = g128_problem(2560, 16384, 4), det = accum;
  accum.accum = DType::F16, det.deterministic = true;
  CHECK(choose_hopper(accum).split_k == 3);
  CHECK(choose_hopper(det).split_k == 1);
  CHECK(lowbit::choose_config(g128_problem(2560, 16384, 4), lowbit::Arch::parse("sm_90"), 132).split_k == 3);
}

// Heuristic v33 (docs/perf-notes.md, fiftieth session): fitted to the tunes of the seventh layer set at 4 and
// 8 rows (H200: W4 f16, W4 bf16, W2; H100: W8), the first out-of-sample tunes of the 2-8-row buckets, and the
// H200's tune of the sixth set's W8 at 2 rows (the last rule).
#include <cstdint>
#include <utility>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::WqGemmProblem;
using lowbit::test::choose_bf16_hopper;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::staged;

TEST_CASE("choose_config v33: 1-2-bit weights at 2-8 rows take the 16-row rules", "[config][heuristic]") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{6144, 16384},
                      {5120, 4096},
                      {2560, 2560},
                      {8192, 6144},
                      {28672, 5120},
                      {45056, 8192},
                      {73728, 4608},
                      {4096, 4096},
                      {1280, 8192}}) {
    // v60 (heuristic_v60_test.cpp) then takes 28672×5120 to 16 tiles a warp.
    const std::string sixteen = n == 28672 ? "1,16,1,4,1,2+xs" : staged(choose_hopper(n, k, 16, 2));
    for (int64_t m : {2, 3, 4, 5, 8}) {
      INFO(n << "x" << k << " M = " << m);
      CHECK(staged(choose_hopper(n, k, m, 2)) == sixteen);
      CHECK(staged(choose_hopper(n, k, m, 1)) == staged(choose_hopper(n, k, 16, 1)));
    }
  }
  // The tunes' cases: 6144×16384 and 5120×4096 at 4 and 8 rows, 6 tiles × 8 warps staged (v23's 16-row rule).
  CHECK(staged(choose_hopper(6144, 16384, 8, 2)) == "1,6,1,8,1,2+xs");
  CHECK(staged(choose_hopper(5120, 4096, 4, 2)) == "1,6,1,8,1,2+xs");
  // One row keeps its own rules; 3-bit weights, sm_80 and deterministic mode keep the 2-8-row rules.
  CHECK(staged(choose_hopper(6144, 16384, 1, 2)) != "1,6,1,8,1,2+xs");
  CHECK(staged(choose_hopper(2560, 2560, 4, 3)) == staged(choose_hopper(2560, 2560, 4, 4)));
  CHECK_FALSE(lowbit::choose_config(g128_problem(6144, 16384, 4, 2), kSm80, 132).x_shared);
  WqGemmProblem det = g128_problem(6144, 16384, 4, 2);
  det.deterministic = true;
  CHECK_FALSE(choose_hopper(det).x_shared);
  // Not the deterministic 16-row branch either (its (1,8,1,8,1,2)): the registers' 2-8-row config.
  CHECK(staged(choose_hopper(det)) ==
        "WqGemmConfig(m_tiles=1, n_tiles=4, warps_n=1, warps_k=8, split_k=1, stages=2)");
}

TEST_CASE(
    "choose_config v33: 2-8 rows, 3/4-bit, 6 tiles x 8 warps where 6-tile blocks fill 70-100 % of the SMs",
    "[config][heuristic]") {
  for (int64_t m : {2, 4, 8}) {
    INFO("M = " << m);
    CHECK(staged(choose_bf16_hopper(6144, 16384, m)) == "1,6,1,8,1,2+xs");
    CHECK(staged(choose_hopper(6144, 16384, m)) == "1,6,1,8,1,2+xs");
    CHECK(staged(choose_hopper(5120, 4096, m)) == "1,6,1,8,1,2+xs");
    CHECK(staged(choose_hopper(5120, 8192, m)) == "1,6,1,8,1,2+xs");
    CHECK(staged(choose_hopper(6144, 4096, m, 3)) == "1,6,1,8,1,2+xs");
    // Fill bounds: 4424 columns (93 blocks of 6 tiles, 70.5 %) in, 4416 (92) out; 6336 (132) in, 6344 out
    // (there the 2-tile precondition's 6 tiles per SM decides, not the 100 % bound).
    CHECK(choose_hopper(4424, 7168, m).n_tiles == 6);
    CHECK(choose_hopper(4416, 7168, m).n_tiles != 6);
    CHECK(choose_hopper(6336, 7168, m).n_tiles == 6);
    CHECK(choose_hopper(6344, 7168, m).n_tiles != 6);
    // From 32 chunks: 5120×3968 (31) keeps 2 tiles; 4608×3584 (28) too.
    CHECK(choose_hopper(5120, 3968, m).n_tiles == 2);
    CHECK(choose_hopper(4608, 3584, m).n_tiles == 2);
    // sm_90a only.
    CHECK(lowbit::choose_config(g128_problem(5120, 4096, m), kSm80, 132).n_tiles != 6);
  }
  // One row keeps v28's 12 warps (and 6144×4096, 97 %, its 2 tiles).
  CHECK(staged(choose_hopper(5120, 4096, 1)) == "1,6,1,12,1,2+xs");
  CHECK(staged(choose_hopper(6144, 4096, 1)) == "1,2,1,8,1,2+xs");
}

TEST_CASE(
    "choose_config v33: 8-bit weights take the 16-row rules at 8 rows, and at 2-4 up to 20 tiles per SM",
    "[config][heuristic]") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{2048, 1408},
                      {2560, 2560},
                      {2816, 2048},
                      {5120, 4096},
                      {6144, 16384},
                      {8192, 6144},
                      {21120, 4096}}) {
    const std::string sixteen = staged(choose_hopper(n, k, 16, 8));
    for (int64_t m : {2, 4, 8}) {
      INFO(n << "x" << k << " M = " << m);
      CHECK(staged(choose_hopper(n, k, m, 8)) == sixteen);
    }
  }
  // The H100 tune's misses: 2048×1408, 2560² and 2816×2048 at 4 and 8 rows.
  CHECK(staged(choose_hopper(2560, 2560, 4, 8)) == "1,4,1,4,1,3+xs");
  CHECK(staged(choose_hopper(2048, 1408, 8, 8)) == "1,2,1,8,1,3+xs");
  // Over 20 tiles per SM (21128 columns) at 2-4 rows: the registers' rules, (1,4,1,2,1,2) on 28672×5120 (from
  // 50689 columns v31's staged rule, below); at 8 rows the 16-row rules at any width.
  for (int64_t n : {21128, 28672, 45056}) {
    INFO(n);
    CHECK_FALSE(choose_hopper(n, 5120, 4, 8).x_shared);
    CHECK_FALSE(choose_hopper(n, 5120, 2, 8).x_shared);
    CHECK(staged(choose_hopper(n, 5120, 8, 8)) == staged(choose_hopper(n, 5120, 16, 8)));
  }
  CHECK(staged(choose_hopper(28672, 5120, 4, 8)) ==
        "WqGemmConfig(m_tiles=1, n_tiles=4, warps_n=1, warps_k=2, "
        "split_k=1, stages=2)");
  // sm_80 and deterministic mode keep theirs.
  CHECK_FALSE(lowbit::choose_config(g128_problem(2560, 2560, 4, 8), kSm80, 132).x_shared);
  WqGemmProblem det = g128_problem(2560, 2560, 8, 8);
  det.deterministic = true;
  CHECK_FALSE(choose_hopper(det).x_shared);
  // Not the deterministic 16-row branch either (its 3 stages): the registers' 2-8-row config.
  CHECK(staged(choose_hopper(det)) ==
        "WqGemmConfig(m_tiles=1, n_tiles=4, warps_n=1, warps_k=8, split_k=1, stages=2)");
}

TEST_CASE("choose_config v33: v32's one-row rule for 4-bit f16 past 8 blocks of 8 tiles per SM at 2-8 rows",
          "[config][heuristic]") {
  for (int64_t m : {1, 2, 4, 8}) {
    INFO("M = " << m);
    CHECK(staged(choose_hopper(73728, 4608, m)) == "1,4,2,4,1,2+xs");
    CHECK(staged(choose_hopper(67585, 4608, m)) == "1,4,2,4,1,2+xs");
    CHECK_FALSE(choose_hopper(67584, 4608, m).x_shared);  // 8 blocks per SM: one wave
    CHECK(choose_bf16_hopper(73728, 4608, m).warps_n == 1);
  }
}

TEST_CASE("choose_config v33: 8 rows on v28's 16-row band up to 3 blocks of 16 tiles per SM",
          "[config][heuristic]") {
  for (auto [n, k] :
       {std::pair<int64_t, int64_t>{45056, 8192}, {49152, 4096}, {42248, 2176}, {50688, 4096}}) {
    INFO(n << "x" << k);
    CHECK(staged(choose_hopper(n, k, 8)) == "1,8,2,2,1,2+xs");
    CHECK(staged(choose_bf16_hopper(n, k, 8)) == "1,8,2,2,1,2+xs");
    CHECK(staged(choose_hopper(n, k, 8, 3)) == "1,8,2,2,1,2+xs");
    CHECK(staged(choose_hopper(n, k, 4)) != "1,8,2,2,1,2+xs");  // 8 rows only
  }
  // Bounds: 40 tiles per SM (42240 columns) out; over 3 blocks of 16 tiles per SM (50696) out; 16 chunks out.
  CHECK(staged(choose_hopper(42240, 8192, 8)) != "1,8,2,2,1,2+xs");
  CHECK(staged(choose_hopper(50696, 8192, 8)) != "1,8,2,2,1,2+xs");
  CHECK(staged(choose_hopper(45056, 2048, 8)) != "1,8,2,2,1,2+xs");
  // 8-bit weights (and 2-bit: both take the 16-row rules at 8 rows) and sm_80 keep theirs.
  CHECK(staged(choose_hopper(45056, 8192, 8, 8)) != "1,8,2,2,1,2+xs");
  CHECK(lowbit::choose_config(g128_problem(45056, 8192, 8), kSm80, 132).warps_n == 1);
  // Deterministic mode keeps the registers' config (the rule needs activations staged per warp).
  WqGemmProblem det = g128_problem(45056, 8192, 8);
  det.deterministic = true;
  CHECK_FALSE(choose_hopper(det).x_shared);
}

TEST_CASE(
    "choose_config v33: v31's one-row rule for 8-bit weights past 12 blocks of 4 tiles per SM at 2-4 rows",
    "[config][heuristic]") {
  for (int64_t m : {1, 2, 3, 4}) {
    INFO("M = " << m);
    CHECK(staged(choose_hopper(51200, 5120, m, 8)) == "1,4,1,6,1,2+xs");
    CHECK(staged(choose_hopper(73728, 4608, m, 8)) == "1,4,1,6,1,2+xs");
    // Bounds as at one row: 50688 columns (12 blocks of 4 tiles per SM) and 31 chunks keep the registers.
    CHECK_FALSE(choose_hopper(50688, 5120, m, 8).x_shared);
    CHECK_FALSE(choose_hopper(51200, 3968, m, 8).x_shared);
  }
  // 8 rows take the 16-row rules instead; 4-bit weights are not this rule's.
  CHECK(staged(choose_hopper(51200, 5120, 8, 8)) == staged(choose_hopper(51200, 5120, 16, 8)));
  CHECK(staged(choose_hopper(51200, 5120, 4)) != "1,4,1,6,1,2+xs");
}

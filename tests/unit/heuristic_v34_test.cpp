// Heuristic v34 (docs/perf-notes.md, fifty-first session): fitted to the H200's tune of the fifth layer set
// at 2, 4 and 8 rows (W4 f16, W4 bf16, W8), the third out-of-sample set tuned at those rows.
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

TEST_CASE("choose_config v34: 2-8 rows, 6 tiles x 4 warps where they take tiles off the busiest SM",
          "[config][heuristic]") {
  // v28's one-row rule: 17920×1536 and 18432×2304, 3 blocks of 6 on the busiest SM (18 tiles) against 5 of
  // 4 (20).
  for (auto [n, k] : {std::pair<int64_t, int64_t>{17920, 1536}, {18432, 2304}}) {
    for (int64_t m : {1, 2, 3, 4, 8}) {
      INFO(n << "x" << k << " M = " << m);
      CHECK(staged(choose_hopper(n, k, m)) == "1,6,1,4,1,2+xs");
      CHECK(staged(choose_bf16_hopper(n, k, m)) == "1,6,1,4,1,2+xs");
      CHECK(staged(choose_hopper(n, k, m, 3)) == "1,6,1,4,1,2+xs");
      // sm_90a only.
      CHECK(lowbit::choose_config(g128_problem(n, k, m), kSm80, 132).n_tiles != 6);
    }
  }
  // Not where 6 tiles take none off: 16384×2048 (18 against 16), 22016×2048 (24 against 24), 28672×4096
  // (30 against 28, the shipped files' best (1,4,1,2,1,2) staged at 2-8 rows).
  for (int64_t m : {2, 4, 8}) {
    INFO("M = " << m);
    CHECK(choose_hopper(16384, 2048, m).n_tiles != 6);
    CHECK(choose_hopper(22016, 2048, m).n_tiles != 6);
    CHECK(staged(choose_hopper(28672, 4096, m)) == "1,4,1,2,1,2+xs");
  }
  // Deterministic mode stages nothing, so keeps its registers.
  WqGemmProblem det = g128_problem(18432, 2304, 4);
  det.deterministic = true;
  CHECK_FALSE(choose_hopper(det).x_shared);
}

TEST_CASE("choose_config v34: 2-8 rows, v27's staged 8-warp blocks over two per SM take 4 warps along K",
          "[config][heuristic]") {
  // Phi-2's fc1, 10240×2560 (320 blocks of 4 tiles, 20 chunks), at 2 and 4 rows; 8 rows had it (v24).
  for (int64_t m : {2, 3, 4, 8}) {
    INFO("M = " << m);
    CHECK(staged(choose_hopper(10240, 2560, m)) == "1,4,1,4,1,2+xs");
    CHECK(staged(choose_bf16_hopper(10240, 2560, m)) == "1,4,1,4,1,2+xs");
    // Bounds: over 8 tiles per SM (v27 stages: 8456 columns, 265 blocks) in, 8448 (264 blocks, the staged
    // branch's, 8 warps) out; 12288×3072 (24 chunks, 384 blocks) in; 10240×4224 (33 chunks: v27 does not
    // stage, the registers' 8 warps at 2-4 rows) out.
    CHECK(choose_hopper(8456, 2560, m).warps_k == 4);
    CHECK(choose_hopper(8448, 2560, m).warps_k == 8);
    CHECK(choose_hopper(12288, 3072, m).warps_k == 4);
    // sm_90a only (at 8 rows v24's staged rule gives 4 warps on any arch).
    if (m < 8) CHECK(lowbit::choose_config(g128_problem(10240, 2560, m), kSm80, 132).warps_k != 4);
  }
  // 3-bit weights too.
  CHECK(staged(choose_hopper(10240, 2560, 2, 3)) == "1,4,1,4,1,2+xs");
  CHECK_FALSE(choose_hopper(10240, 4224, 4).x_shared);
  CHECK(choose_hopper(10240, 4224, 4).warps_k == 8);
  // One row keeps v30's 2 tiles × 4 warps.
  CHECK(staged(choose_hopper(10240, 2560, 1)) == "1,2,1,4,1,2+xs");
}

TEST_CASE(
    "choose_config v34: bf16 at 2-4 rows, under one 4-tile block per SM from 32 chunks, 4 tiles x 16 warps",
    "[config][heuristic]") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 7168}, {3072, 4096}, {3584, 4096}, {4192, 7168}}) {
    for (int64_t m : {2, 3, 4}) {
      INFO(n << "x" << k << " M = " << m);
      CHECK(staged(choose_bf16_hopper(n, k, m)) == "1,4,1,16,1,2+xs");
      CHECK(staged(choose_bf16_hopper(n, k, m, 3)) == "1,4,1,16,1,2+xs");
      // f16 keeps v33's 2 tiles × 8 warps.
      CHECK(staged(choose_hopper(n, k, m)) == "1,2,1,8,1,2+xs");
    }
  }
  for (int64_t m : {2, 4}) {
    INFO("M = " << m);
    // Bounds: 4224 columns (132 blocks of 4 tiles) out; 3584×3968 (31 chunks) out.
    CHECK(staged(choose_bf16_hopper(4224, 7168, m)) == "1,2,1,8,1,2+xs");
    CHECK(staged(choose_bf16_hopper(3584, 3968, m)) == "1,2,1,8,1,2+xs");
    // sm_90a only.
    WqGemmProblem p = g128_problem(4096, 7168, m);
    p.act = lowbit::DType::BF16, p.out = lowbit::DType::BF16;
    CHECK(lowbit::choose_config(p, kSm80, 132).warps_k != 16);
  }
  // Not the 2-tile blocks that already have 16 warps along K (under half a wave of 4-tile blocks: 2048×4096).
  CHECK(staged(choose_bf16_hopper(2048, 4096, 2)) == "1,2,1,16,1,3+xs");
  // 8 rows had it already; one row keeps v28's 3 stages of 2 tiles.
  CHECK(staged(choose_bf16_hopper(4096, 7168, 8)) == "1,4,1,16,1,2+xs");
  CHECK(staged(choose_bf16_hopper(4096, 7168, 1)) == "1,2,1,8,1,3+xs");
}

TEST_CASE(
    "choose_config v34: 8-bit weights at 2-8 rows, under one 4-tile block per SM from 32 chunks, 8 warps",
    "[config][heuristic]") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{2304, 9216}, {3072, 4096}, {4096, 7168}, {4192, 9216}}) {
    for (int64_t m : {2, 4, 5, 8}) {
      INFO(n << "x" << k << " M = " << m);
      CHECK(staged(choose_hopper(n, k, m, 8)) == "1,4,1,8,1,3+xs");
    }
  }
  for (int64_t m : {2, 4, 8}) {
    INFO("M = " << m);
    // Bounds: 4224 columns (132 blocks) and 2304×3968 (31 chunks) keep v9's 4 warps.
    CHECK(staged(choose_hopper(4224, 9216, m, 8)) == "1,4,1,4,1,3+xs");
    CHECK(staged(choose_hopper(2304, 3968, m, 8)) == "1,4,1,4,1,3+xs");
  }
  // 16 rows keep v9's 4 warps.
  CHECK(choose_hopper(2304, 9216, 16, 8).warps_k == 4);
  CHECK(choose_hopper(4096, 7168, 16, 8).warps_k == 4);
}

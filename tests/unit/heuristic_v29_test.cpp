// Heuristic v29 (docs/perf-notes.md, forty-sixth session): fitted to the H200's out-of-sample tunes of the
// fifth layer set in W2, W8 and bf16, and a bench of 64 rows on 40-56 chunks.
#include <cstdint>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"
#include "unit/unit_helpers.hpp"

using lowbit::WqGemmConfig;
using lowbit::test::choose_bf16_hopper;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kArch90;
using lowbit::test::kSm80;
using lowbit::test::staged;
using lowbit::test::wgmma_shape;

TEST_CASE("choose_config v29: 2-bit weights at one row on 2-4 tiles per SM take 4 staged tiles",
          "[config][heuristic]") {
  CHECK(staged(choose_hopper(4096, 7168, 1, 2)) == "1,4,1,16,1,2+xs");
  CHECK(staged(choose_hopper(3072, 4096, 1, 2)) == "1,4,1,16,1,2+xs");
  CHECK(staged(choose_hopper(4096, 4096, 1, 2)) == "1,4,1,16,1,2+xs");
  // Under 32 chunks: 8 warps along K, 3 stages.
  CHECK(staged(choose_hopper(4096, 2304, 1, 2)) == "1,4,1,8,1,3+xs");
  CHECK(staged(choose_hopper(2304, 2048, 1, 2)) == "1,4,1,8,1,3+xs");
  CHECK(staged(choose_hopper(4096, 3968, 1, 2)) == "1,4,1,8,1,3+xs");
  // From 2088 columns (66 blocks of 4 tiles: half the SMs); 2080 keeps the few-block rule's 2 tiles. (On
  // 32 chunks or more v5's 16 warps give 4 tiles there already: short K shows the bound.)
  CHECK(staged(choose_hopper(2088, 2048, 1, 2)) == "1,4,1,8,1,3+xs");
  CHECK(choose_hopper(2080, 2048, 1, 2).n_tiles == 2);
  // Up to 4 tiles per SM (4224 columns are 4.0); 4232 keeps 2 tiles.
  CHECK(staged(choose_hopper(4224, 4096, 1, 2)) == "1,4,1,16,1,2+xs");
  CHECK(staged(choose_hopper(4232, 4096, 1, 2)) == "1,2,1,8,1,2+xs");
  // 1-bit weights follow 2; 3-bit ones keep 2 tiles.
  CHECK(staged(choose_hopper(4096, 4096, 1, 1)) == "1,4,1,16,1,2+xs");
  CHECK(staged(choose_hopper(4096, 4096, 1, 3)) == "1,2,1,8,1,2+xs");
  // Only 2-bit weights at one row on sm_90a: 4-bit ones, 2 rows and sm_80 keep 2 tiles.
  CHECK(staged(choose_hopper(4096, 7168, 1)) == "1,2,1,8,1,2+xs");
  CHECK(choose_hopper(4096, 7168, 2).n_tiles == 2);
  CHECK(staged(choose_hopper(4096, 7168, 2, 2)) == staged(choose_hopper(4096, 7168, 16, 2)));  // v33
  CHECK(lowbit::choose_config(g128_problem(4096, 7168, 1, 2), kSm80, 132).n_tiles == 2);
}

TEST_CASE(
    "choose_config v29: 8-bit weights at 16 rows, 2 warps along K on 12-20 tiles per SM, 2 stages "
    "over 40",
    "[config][heuristic]") {
  CHECK(staged(choose_hopper(18432, 2304, 16, 8)) == "1,8,1,2,1,2+xs");
  CHECK(staged(choose_hopper(16384, 16384, 16, 8)) == "1,8,1,2,1,2+xs");
  // Over 12 tiles per SM (12672 columns are 12.0), up to 20 (21120); past 20 v22's 4 warps side by side.
  CHECK(choose_hopper(12672, 2304, 16, 8).warps_k == 4);
  CHECK(choose_hopper(12680, 2304, 16, 8).warps_k == 2);
  CHECK(choose_hopper(21120, 2304, 16, 8).warps_k == 2);
  CHECK(staged(choose_hopper(21128, 2304, 16, 8)) == "1,4,4,1,1,3+xs");
  // v22's config takes 2 stages over 40 tiles per SM (42240 columns are 40.0).
  CHECK(staged(choose_hopper(65536, 5120, 16, 8)) == "1,4,4,1,1,2+xs");
  CHECK(choose_hopper(42248, 5120, 16, 8).stages == 2);
  CHECK(choose_hopper(42240, 5120, 16, 8).stages == 3);
  CHECK(choose_hopper(25600, 4096, 16, 8).stages == 3);
  // Both rules on sm_90a only.
  CHECK(lowbit::choose_config(g128_problem(18432, 2304, 16, 8), kSm80, 132).warps_k == 4);
  CHECK(lowbit::choose_config(g128_problem(65536, 5120, 16, 8), kSm80, 132).stages == 3);
  // 4-bit weights keep their rules (v27's 6 tiles; v28's 16-row rule over 40 tiles per SM).
  CHECK(staged(choose_hopper(18432, 2304, 16)) == "1,6,1,4,1,2+xs");
  CHECK(staged(choose_hopper(65536, 5120, 16)) == "1,8,2,1,1,3+xs");
  // No K split for 8-bit weights (the H100 ran it 8 % slower on 2304×9216).
  CHECK(choose_hopper(2304, 9216, 16, 8).split_k == 1);
}

TEST_CASE("choose_config v29: 8-bit weights at 64 rows follow the 4-bit rules", "[config][heuristic]") {
  // Small layers: staged per warp, 3 stages (deterministic problems and sm_80 not).
  // (v32: 8-bit weights over 2 blocks per SM with 2 stages, heuristic_v32_test.cpp.)
  for (int64_t n : {2304, 2560, 3072}) CHECK(staged(choose_hopper(n, 2048, 64, 8)) == "1,4,1,4,1,2+xs");
  // (2048²: one wave of v62's 32-row blocks, heuristic_v62_test.cpp.)
  CHECK(staged(choose_hopper(2048, 2048, 64, 8)) == "2,4,1,4,1,2+xs");
  lowbit::WqGemmProblem d = g128_problem(2304, 2048, 64, 8);
  d.deterministic = true;
  CHECK_FALSE(lowbit::choose_config(d, kArch90, 132).x_shared);
  CHECK_FALSE(lowbit::choose_config(g128_problem(2304, 2048, 64, 8), kSm80, 132).x_shared);
  CHECK(staged(choose_hopper(2304, 2048, 64, 1)) == "1,4,1,4,1,3+xs");
  // v21's four-way split wherever it makes 0.7-1 wave: 3072×4096 (96 blocks) and from 2952 columns.
  CHECK(wgmma_shape(choose_hopper(3072, 4096, 64, 8)) == "4,2,8,1 sk4");
  CHECK(wgmma_shape(choose_hopper(2952, 4096, 64, 8)) == "4,2,8,1 sk4");
  CHECK_FALSE(choose_hopper(2944, 4096, 64, 8).wgmma);
  // Under 64 chunks only (63: 8064), where v18's split with the image takes over.
  CHECK(wgmma_shape(choose_hopper(4096, 8064, 64, 8)) == "4,2,8,1 sk4");
  // The few-block layers: stream K over 128-column blocks (the image from 4 tiles per SM).
  CHECK(wgmma_shape(choose_hopper(2304, 9216, 64, 8)) == "4,2,8,1 sK");
  CHECK(wgmma_shape(choose_hopper(5120, 8192, 64, 8)) == "4,2,8,1 sK img");
  // Over 8 tiles per SM under 48 M weights: v4's large-layer blocks.
  CHECK(wgmma_shape(choose_hopper(18432, 2304, 64, 8)) == "4,4,8,1 sk1 img");
  CHECK(choose_hopper(16384, 2048, 64, 8).wgmma);
  // At 128 rows since v69 (tests/unit/heuristic_v69_test.cpp). (Groups of 32 too since v41:
  // tests/unit/heuristic_v39_test.cpp.)
  CHECK(choose_hopper(16384, 2048, 128, 8).wgmma);
  CHECK(choose_hopper(2304, 9216, 128, 8).wgmma);
  lowbit::WqGemmProblem g32 = g128_problem(2304, 9216, 64, 8);
  g32.group_size = 32;
  CHECK(lowbit::choose_config(g32, kArch90, 132).wgmma);
}

TEST_CASE("choose_config v29: 64 rows on narrow layers, the four-way split from 40 chunks",
          "[config][heuristic]") {
  for (int64_t k : {5120, 6144, 7168}) {
    INFO("K = " << k);
    for (int64_t n : {3584, 4096}) {
      const WqGemmConfig c = choose_hopper(n, k, 64);
      CHECK(wgmma_shape(c) == "4,2,8,1 sk4 img");
      CHECK(c.stages == 3);
    }
    CHECK(wgmma_shape(choose_bf16_hopper(4096, k, 64)) == "4,2,8,1 sk4 img");
    CHECK(wgmma_shape(choose_hopper(4096, k, 64, 2)) == "4,2,8,1 sk4 img");
  }
  // From 64 chunks v18's 4 stages; under 40 mma.sync (4096² at 32 chunks, 39).
  CHECK(choose_hopper(4096, 8192, 64).stages == 4);
  CHECK(choose_hopper(4096, 8064, 64).stages == 3);
  CHECK_FALSE(choose_hopper(4096, 4992, 64).wgmma);
  CHECK_FALSE(choose_hopper(4096, 4096, 64).wgmma);
  // Only where the split makes 0.7-1 wave: 2304 and 2944 columns keep mma.sync at 40 chunks.
  CHECK_FALSE(choose_hopper(2304, 5120, 64).wgmma);
  CHECK_FALSE(choose_hopper(2944, 5120, 64).wgmma);
  CHECK(wgmma_shape(choose_hopper(2952, 5120, 64)) == "4,2,8,1 sk4 img");
  // Under 40 chunks at 4 tiles per SM (4224 columns) mma.sync too.
  CHECK_FALSE(choose_hopper(4224, 4096, 64).wgmma);
  // 8-bit weights keep v21's split without the image.
  CHECK(wgmma_shape(choose_hopper(4096, 7168, 64, 8)) == "4,2,8,1 sk4");
}

TEST_CASE("choose_config v29: 64 rows on narrow block-shared layers, 4 warps along K on short K",
          "[config][heuristic]") {
  // 4096×2304 (18 chunks), every format; 3584² (28 chunks) at 8 bits (2-bit weights from 20 chunks take
  // v31's 2 row tiles × 8 column tiles, staged per warp).
  CHECK(staged(choose_hopper(4096, 2304, 64)) == "2,4,2,4,1,3+xs");
  CHECK(staged(choose_bf16_hopper(4096, 2304, 64)) == "2,4,2,4,1,3+xs");
  CHECK(staged(choose_hopper(4096, 2048, 64)) == "2,4,2,4,1,3+xs");
  CHECK(staged(choose_hopper(4096, 2304, 64, 2)) == "2,4,2,4,1,3+xs");
  CHECK(staged(choose_hopper(4096, 2304, 64, 8)) == "2,4,1,4,1,2+xs");  // v62
  CHECK(staged(choose_hopper(3584, 3584, 64, 8)) == "2,4,2,4,1,3+xs");
  // Not on sm_80, nor at 128 rows (3584×2048 kept v7's block-shared config until v79's wgmma pair,
  // eighty-second session; 4096×2304 takes wgmma there).
  CHECK(lowbit::choose_config(g128_problem(4096, 2304, 64), kSm80, 132).warps_k == 2);
  CHECK(wgmma_shape(choose_hopper(3584, 2048, 128)) == "4,2,8,1 sk2");
}

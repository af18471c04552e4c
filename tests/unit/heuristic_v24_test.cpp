// Heuristic v24 (docs/perf-notes.md, forty-first session): the rules fitted to the tuned entries of
// both shipped files where v23's choice ran over 1.15× the tuned best.
#include <cstdint>
#include <string>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::WqGemmConfig;
using lowbit::test::choose_hopper;
using lowbit::test::staged;
using lowbit::test::wgmma_shape;

TEST_CASE("choose_config v24: few-block layers at 64 and 128 rows run wgmma", "[config][heuristic]") {
  // Stream K over 128-column blocks; the image from 4 tiles per SM; all 128 rows per block there.
  CHECK(wgmma_shape(choose_hopper(5120, 8192, 64)) == "4,2,8,1 sK img");
  CHECK(wgmma_shape(choose_hopper(5120, 8192, 128)) == "8,2,8,1 sK img");
  CHECK(wgmma_shape(choose_hopper(4608, 3584, 64)) == "4,2,8,1 sK img");
  CHECK(wgmma_shape(choose_hopper(4608, 3584, 128)) == "8,2,8,1 sK img");
  CHECK(wgmma_shape(choose_hopper(2560, 8192, 64)) == "4,2,8,1 sK");
  CHECK(wgmma_shape(choose_hopper(2560, 8192, 128)) == "4,2,8,1 sK");
  CHECK(wgmma_shape(choose_hopper(1280, 8192, 64)) == "4,2,8,1 sK");
  CHECK(wgmma_shape(choose_hopper(1280, 8192, 128)) == "4,2,8,1 sK");
  // v18's four-way split where it makes 0.7-1 wave, at 2, 4 and 8 bits (3584×8192: 112 blocks).
  for (int bits : {2, 4, 8}) CHECK(wgmma_shape(choose_hopper(3584, 8192, 64, bits)) == "4,2,8,1 sk4 img");
  // Not the narrow layers under 64 chunks at 64 rows: mma.sync, staged per warp (3584² from v24; 2 row
  // tiles from v31).
  for (int64_t n : {3584, 4096}) {
    const WqGemmConfig c = choose_hopper(n, n, 64);
    CHECK_FALSE(c.wgmma);
    CHECK(c.m_tiles == 2);
    CHECK(c.n_tiles == 8);
    CHECK(c.warps_k == 4);
    CHECK(c.x_shared);
  }
  // 3-bit weights too since v39, 1-bit (as 2-bit) since v41 (tests/unit/heuristic_v39_test.cpp).
  CHECK(choose_hopper(5120, 8192, 64, 3).wgmma);
  CHECK(choose_hopper(5120, 8192, 64, 1).wgmma);
}

TEST_CASE("choose_config v24: wgmma grids of one wave, or stream K", "[config][heuristic]") {
  // 128 rows on 10240×8192: 80 blocks of all 128 rows (0.6 wave) take stream K; v15's one wave of
  // 64-row blocks (160 of them) ran in two.
  CHECK(wgmma_shape(choose_hopper(10240, 8192, 128)) == "8,2,8,1 sK img");
  // 64 rows on 37888×3584: 148 blocks of 256 columns (1.1 waves): stream K over the same blocks.
  CHECK(wgmma_shape(choose_hopper(37888, 3584, 64)) == "4,4,8,1 sK img");
  // Unchanged: one wave (14336×8192 M = 128, 112 blocks), or more than 1.5 (57344×8192 M = 64).
  CHECK(wgmma_shape(choose_hopper(14336, 8192, 128)) == "8,2,8,1 sk1 img");
  CHECK(wgmma_shape(choose_hopper(57344, 8192, 64)) == "4,4,8,1 sk1 img");
}

TEST_CASE("choose_config v24: 32 rows on large layers from 9 tiles per SM or 96 chunks (v56) run wgmma",
          "[config][heuristic]") {
  CHECK(wgmma_shape(choose_hopper(28672, 4096, 32)) == "2,4,8,1 sk1 img");
  CHECK(wgmma_shape(choose_hopper(16384, 16384, 32)) == "2,4,8,1 sk2 img");
  CHECK(wgmma_shape(choose_hopper(14336, 8192, 32)) == "2,4,8,1 sk2 img");  // the split makes 0.85 wave
  CHECK(wgmma_shape(choose_hopper(10240, 8192, 32)) == "2,2,8,1 sK img");   // ... 0.6: stream K
  CHECK(wgmma_shape(choose_hopper(8192, 28672, 32)) == "2,4,8,1 sk4 img");
  // mma.sync where it won: 8192×K under 96 chunks (v56: was 144), the small layers.
  for (auto [n, k] : {std::pair{8192, 8192}, {6144, 4096}}) CHECK_FALSE(choose_hopper(n, k, 32).wgmma);
  // v56: 2- and 8-bit weights too (heuristic_v56_test.cpp).
  CHECK(wgmma_shape(choose_hopper(28672, 4096, 32, 2)) == "2,4,8,1 sk1");
  CHECK(wgmma_shape(choose_hopper(28672, 4096, 32, 8)) == "2,4,8,1 sk1 img");
}

TEST_CASE("choose_config v24: more than two 8-warp blocks per SM at 8-16 rows take 4 warps along K",
          "[config][heuristic]") {
  for (int64_t m : {8, 16}) {
    const WqGemmConfig c = choose_hopper(10240, 8192, m);
    CHECK(c.n_tiles == 4);
    CHECK(c.warps_k == 4);
    CHECK(c.x_shared);
    // Two blocks per SM or fewer keep 8 (8192 columns: 256 blocks of 4 tiles on 132 SMs).
    CHECK(choose_hopper(8192, 8192, m).warps_k == 8);
  }
}

TEST_CASE("choose_config v24: 8 rows on 12-16 tiles per SM stage per warp, 8 tiles × 4 warps along K",
          "[config][heuristic]") {
  for (auto [n, k] : {std::pair{14336, 8192}, {16384, 16384}}) {
    const WqGemmConfig c = choose_hopper(n, k, 8);
    CHECK(c.n_tiles == 8);
    CHECK(c.warps_k == 4);
    CHECK(c.x_shared);
    // 2-bit weights took the registers' rules here until v33, which gives them the 16-row rules.
    CHECK(staged(choose_hopper(n, k, 8, 2)) == staged(choose_hopper(n, k, 16, 2)));
  }
  CHECK_FALSE(choose_hopper(28672, 8192, 8).x_shared);  // 27 tiles per SM: unchanged
}

TEST_CASE("choose_config v24: 32 rows on 6-8 tiles per SM, one 32-row block", "[config][heuristic]") {
  for (auto [n, k] : {std::pair{8192, 8192}, {7168, 8192}, {8192, 2048}}) {
    const WqGemmConfig c = choose_hopper(n, k, 32);
    CHECK(c.m_tiles == 2);
    CHECK(c.n_tiles == 8);
    CHECK(c.warps_k == 4);
    CHECK(c.x_shared);
  }
  CHECK(choose_hopper(8192, 1024, 32).m_tiles == 1);  // 8 chunks
  CHECK(choose_hopper(6144, 4096, 32).m_tiles == 1);  // 5.8 tiles per SM
}

TEST_CASE("choose_config v24: 128 rows on K-heavy narrow layers, four-way splits of 128-row blocks",
          "[config][heuristic]") {
  for (int bits : {2, 4, 8}) {
    CHECK(wgmma_shape(choose_hopper(4096, 14336, 128, bits)) == "8,2,8,1 sk4 img");
    CHECK(wgmma_shape(choose_hopper(3584, 18944, 128, bits)) == "8,2,8,1 sk4 img");
  }
  CHECK(wgmma_shape(choose_hopper(3584, 8192, 128)) == "4,2,8,1 sk2 img");  // 64 chunks: the cluster pair
  // Four 128-row pieces of 40 column blocks would make 160 blocks, over a wave; v25: stream K (its
  // split of two makes 0.6 wave; heuristic_v25_test.cpp).
  CHECK(wgmma_shape(choose_hopper(5120, 18944, 128)) == "8,2,8,1 sK img");
}

TEST_CASE("choose_config v24: where the new rules stop", "[config][heuristic]") {
  // 2-bit weights on the few-block layers, away from the four-way split: mma.sync as before (v29: 8-bit
  // ones take the rule at 64 rows, heuristic_v29_test.cpp; v32: 2-bit ones over 4 tiles per SM,
  // heuristic_v32_test.cpp).
  CHECK_FALSE(choose_hopper(2560, 8192, 64, 2).wgmma);
  // 2-bit weights at 16 rows past two blocks of 4 tiles per SM: v13's 8 warps along K (and v27's 6 tiles,
  // which take a quarter off the busiest SM: heuristic_v27_test.cpp).
  const WqGemmConfig w2 = choose_hopper(10240, 8192, 16, 2);
  CHECK(w2.n_tiles == 6);
  CHECK(w2.warps_k == 8);
  // 32 rows: from 144 chunks on narrow layers too (3584×18944; 5120×27648 out of sample), stream K where
  // the split leaves under 0.7 wave (5120×27648: 20 blocks split 4); v56: from 96 chunks (4096×14336).
  // (v25: without the image at 32 rows under 5 tiles per SM; v56: the K splits there too.)
  CHECK(wgmma_shape(choose_hopper(3584, 18944, 32)) == "2,4,8,1 sk8");
  CHECK(wgmma_shape(choose_hopper(5120, 27648, 32)) == "2,4,8,1 sK");  // v25: 4 tiles a warp kept
  CHECK(wgmma_shape(choose_hopper(4096, 14336, 32)) == "2,4,8,1 sk8");
  // ... and at 64 rows the same (v23: (4,4,8,1) split 4); v25 at 128 rows too.
  CHECK(wgmma_shape(choose_hopper(5120, 27648, 64)) == "4,2,8,1 sK img");
  CHECK(wgmma_shape(choose_hopper(5120, 27648, 128)) == "8,2,8,1 sK img");
  // The few-block rule's edges: from 8 M weights (1024×4096 is 4 M) and under 5 tiles per SM.
  CHECK_FALSE(choose_hopper(1024, 4096, 64).wgmma);
  CHECK(wgmma_shape(choose_hopper(6144, 4096, 64)) == "4,2,8,1 sk2 img");  // 5.8 tiles per SM: v10/v17's pair
}

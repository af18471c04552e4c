// Heuristic v25 (docs/perf-notes.md, forty-second session): fitted to out-of-sample tunes of twelve
// layers in neither shipped file (H200 and H100) and to an H200 bench of the new choices.
#include <cstdint>
#include <string>
#include <utility>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::WqGemmConfig;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::wgmma_shape;

TEST_CASE("choose_config v25: 32 rows on narrow K-heavy layers take wgmma stream K", "[config][heuristic]") {
  // 2-5 tiles per SM, 64 chunks or more, the K split under 0.7 wave: stream K, no image; 4 tiles a
  // warp from 4 tiles per SM and 96 chunks, else 2.
  for (int64_t k : {13824, 17920, 27648}) CHECK(wgmma_shape(choose_hopper(5120, k, 32)) == "2,4,8,1 sK");
  CHECK(wgmma_shape(choose_hopper(5120, 8192, 32)) == "2,2,8,1 sK");  // 64 chunks
  CHECK(wgmma_shape(choose_hopper(2304, 16384, 32)) == "2,2,8,1 sK");
  CHECK(wgmma_shape(choose_hopper(2560, 8192, 32)) == "2,2,8,1 sK");
  // Where the split makes 0.7-1 wave it stays: split 8 from 144 chunks (v24; v56: from 96, and without the
  // image under 5 tiles per SM), else mma.sync.
  CHECK(wgmma_shape(choose_hopper(3584, 18944, 32)) == "2,4,8,1 sk8");
  CHECK(wgmma_shape(choose_hopper(4096, 14336, 32)) == "2,4,8,1 sk8");
  CHECK(wgmma_shape(choose_hopper(3584, 14336, 32)) == "2,4,8,1 sk8");
  // Edges: under 2 tiles per SM, under 64 chunks, 5 tiles per SM or more (5632 columns: 88 blocks
  // split 4, under 0.7 wave, so only the tiles bound stops it; v56 takes it from 96 chunks, with the
  // image there).
  CHECK_FALSE(choose_hopper(1280, 8192, 32).wgmma);
  CHECK_FALSE(choose_hopper(5120, 7936, 32).wgmma);  // 62 chunks
  CHECK_FALSE(choose_hopper(5632, 8192, 32).wgmma);
  CHECK(wgmma_shape(choose_hopper(5632, 16384, 32)) == "2,4,8,1 sK img");
}

TEST_CASE("choose_config v25: 128 rows take stream K where the K split leaves under 0.7 wave",
          "[config][heuristic]") {
  // 40 column blocks of 128 rows, split in two: 80 blocks (v24 kept that split), at 2, 4 and 8 bits.
  for (int bits : {2, 4, 8})
    for (int64_t k : {13824, 17920, 27648})
      CHECK(wgmma_shape(choose_hopper(5120, k, 128, bits)) == "8,2,8,1 sK img");
  // Where four pieces make 0.7-1 wave, v24's four-way split stays; a split that fills a wave stays.
  CHECK(wgmma_shape(choose_hopper(4096, 14336, 128)) == "8,2,8,1 sk4 img");
  CHECK(wgmma_shape(choose_hopper(7168, 5120, 128)) == "8,2,8,1 sk2 img");
  // 64 rows as before.
  CHECK(wgmma_shape(choose_hopper(5120, 13824, 64)) == "4,2,8,1 sK img");
}

TEST_CASE("choose_config v25: few-block K-heavy layers at 128 rows take all rows and the image",
          "[config][heuristic]") {
  CHECK(wgmma_shape(choose_hopper(2304, 16384, 128)) == "8,2,8,1 sK img");  // 128 chunks
  // Under 2 tiles per SM as v24 however long K is (v24's measures: no image there).
  CHECK(wgmma_shape(choose_hopper(1280, 16384, 128)) == "4,2,8,1 sK");
  // Under 96 chunks as v24 (64-row blocks, no image under 4 tiles per SM); at 64 rows no image.
  CHECK(wgmma_shape(choose_hopper(2560, 8192, 128)) == "4,2,8,1 sK");
  CHECK(wgmma_shape(choose_hopper(1280, 8192, 128)) == "4,2,8,1 sK");
  CHECK(wgmma_shape(choose_hopper(2304, 16384, 64)) == "4,2,8,1 sK");
}

TEST_CASE("choose_config v25: K-heavy narrow layers up to 16 rows split K in a cluster",
          "[config][heuristic]") {
  // 2304×16384: 72 blocks of 4 tiles (0.55 of the SMs), 128 chunks: 3 pieces make 1.6 blocks per SM.
  for (int64_t m : {1, 2, 4, 8, 16}) {
    const WqGemmConfig c = choose_hopper(2304, 16384, m);
    INFO("M = " << m << ": " << c.str());
    CHECK_FALSE(c.wgmma);
    CHECK(c.x_shared);
    CHECK(c.n_tiles == 4);
    CHECK(c.split_k == 3);
    CHECK(c.warps_k == (m <= 8 ? 8 : 4));
  }
  CHECK(choose_hopper(2304, 16384, 1, 3).split_k == 3);  // 3-bit follows 4
  // Not 8-bit weights (unmeasured), nor at 64 chunks (1280/2560×8192, both files' best
  // unsplit at one row; v25's bound was 96, v28 lowered it on sm_90a), nor where the blocks fill 0.7
  // of the SMs (4096×14336: 128 blocks).
  CHECK(choose_hopper(2304, 16384, 1, 8).split_k == 1);  // (2-bit: v28 on sm_90a)
  CHECK(choose_hopper(2304, 8192, 1).split_k == 1);      // 64 chunks
  CHECK(choose_hopper(2560, 8192, 1).split_k == 1);
  CHECK(choose_hopper(4096, 14336, 1).split_k == 1);
  CHECK(choose_hopper(4096, 14336, 16).split_k == 1);
  // Nor 2-tile blocks (1280-wide shards: 80 blocks), unmeasured, nor deterministic problems.
  CHECK(choose_hopper(1280, 16384, 1).split_k == 1);
  lowbit::WqGemmProblem d = g128_problem(2304, 16384, 1);
  d.deterministic = true;
  CHECK(lowbit::choose_config(d, lowbit::Arch::parse("sm_90a"), 132).split_k == 1);
  // Nor before sm_90 (no cluster: the split would go through the workspace; sm_80 stages per warp too).
  CHECK(lowbit::choose_config(g128_problem(2304, 16384, 1), lowbit::Arch::parse("sm_80"), 132).split_k == 1);
}

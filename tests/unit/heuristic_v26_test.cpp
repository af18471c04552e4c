// Heuristic v26 (docs/perf-notes.md, forty-third session): fitted to out-of-sample tunes of eleven
// layers in neither shipped file (H200 and H100) and to a bench of the new choices on both GPUs.
#include <cstdint>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"
#include "unit/unit_helpers.hpp"

using lowbit::WqGemmConfig;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::wgmma_shape;

TEST_CASE("choose_config v26: wide layers from 8 M weights take the large layers' wgmma at 64/128 rows",
          "[config][heuristic]") {
  // 22016×2048: 45 M weights, 21 tiles per SM, 16 chunks. At 64 rows 86 blocks of 256 columns, under
  // 0.7 wave, but 16 chunks are too few for stream K: unsplit. At 128 rows 172 blocks: stream K.
  CHECK(wgmma_shape(choose_hopper(22016, 2048, 64)) == "4,4,8,1 sk1 img");
  CHECK(wgmma_shape(choose_hopper(22016, 2048, 128)) == "8,2,8,1 sK img");
  // 17408 columns: 16.5 tiles per SM, 68 blocks unsplit. (v27 moved the rule's bounds: from over 8 tiles
  // per SM on any K, 2-bit weights too; heuristic_v27_test.cpp.)
  CHECK(wgmma_shape(choose_hopper(17408, 2048, 64)) == "4,4,8,1 sk1 img");
  // Not under 8 M weights.
  CHECK_FALSE(choose_hopper(22016, 256, 64).wgmma);
  // Under-wave stream K stays on long K (10240×8192 M = 64: 40 blocks, 64 chunks).
  CHECK(wgmma_shape(choose_hopper(10240, 8192, 64)) == "4,2,8,1 sK img");
}

TEST_CASE("choose_config v26: the cluster pair from half a wave on short K", "[config][heuristic]") {
  // 5120×3072: 40 column blocks of 128, split in two: 80 blocks (0.61 wave), 24 chunks.
  CHECK(wgmma_shape(choose_hopper(5120, 3072, 64)) == "4,2,8,1 sk2 img");
  CHECK(wgmma_shape(choose_hopper(5120, 3072, 128)) == "8,2,8,1 sk2 img");
  // From 28 chunks v24's few-block rule keeps stream K; under half a wave (3072 columns: 48 blocks)
  // and at 2 bits nothing changes (mma.sync).
  CHECK(wgmma_shape(choose_hopper(5120, 3584, 64)) == "4,2,8,1 sK img");
  CHECK_FALSE(choose_hopper(3072, 3072, 64).wgmma);
  CHECK_FALSE(choose_hopper(5120, 3072, 64, 2).wgmma);
}

TEST_CASE("choose_config v26: wide short-K layers stage activations up to 16 rows", "[config][heuristic]") {
  // 1-8 rows: staged per warp, 3 stages, the registers' tiles and warps (4 tiles, 2 along K).
  for (int64_t m : {1, 2, 4, 8}) {
    const WqGemmConfig c = choose_hopper(22016, 2048, m);
    INFO("M = " << m << ": " << c.str());
    CHECK(c.x_shared);
    CHECK(c.stages == 3);
    CHECK(c.n_tiles == 4);
    CHECK(c.warps_k == 2);
    CHECK(c.warps_n == 1);
  }
  // 16 rows: 2 warps side by side, 2 along K.
  const WqGemmConfig c16 = choose_hopper(22016, 2048, 16);
  CHECK(c16.x_shared);
  CHECK(c16.warps_n == 2);
  CHECK(c16.warps_k == 2);
  // Long K (28672×4096, 32 chunks): one warp along N at 16 rows; staged at one row since v27, 2 stages
  // (heuristic_v27_test.cpp).
  const WqGemmConfig long_k = choose_hopper(28672, 4096, 1);
  CHECK(long_k.stages == 2);
  CHECK(long_k.n_tiles == 4);
  CHECK(long_k.warps_k == 2);
  CHECK(choose_hopper(28672, 4096, 16).warps_n == 1);
  // 2-bit weights keep their tiles and stages (v27 stages them, heuristic_v27_test.cpp).
  const WqGemmConfig w2 = choose_hopper(22016, 2048, 1, 2);
  CHECK(w2.stages == 2);
  CHECK(w2.n_tiles == 8);
  CHECK(w2.warps_k == 4);
  CHECK(choose_hopper(22016, 2048, 16, 2).warps_n == 1);
  // v24's 8-row staged configs keep their 2 stages (16384×2048: 15.5 tiles per SM).
  CHECK(choose_hopper(16384, 2048, 8).stages == 2);
  // Measured on sm_90a only: sm_80 keeps v25's registers.
  CHECK_FALSE(lowbit::choose_config(g128_problem(22016, 2048, 1), kSm80, 108).x_shared);
}

TEST_CASE("choose_config v26: small layers at 64 rows stage activations per warp", "[config][heuristic]") {
  // 2560×2048 (5 M weights, under every wgmma rule): (1,4,1,4), staged, 3 stages.
  const WqGemmConfig c = choose_hopper(2560, 2048, 64);
  CHECK(c.x_shared);
  CHECK(c.stages == 3);
  CHECK(c.m_tiles == 1);
  CHECK(c.n_tiles == 4);
  CHECK(c.warps_n == 1);
  CHECK(c.warps_k == 4);
  // Not deterministic problems. (v29: 8-bit weights too, heuristic_v29_test.cpp.)
  lowbit::WqGemmProblem d = g128_problem(2560, 2048, 64);
  d.deterministic = true;
  CHECK_FALSE(lowbit::choose_config(d, lowbit::test::kArch90, 132).x_shared);
  // Not on sm_80 (measured on sm_90a only). (v27: 2-bit weights too, heuristic_v27_test.cpp.)
  CHECK_FALSE(lowbit::choose_config(g128_problem(2560, 2048, 64), kSm80, 108).x_shared);
}

TEST_CASE("choose_config v26: 32 rows take wgmma stream K from over 8.5 tiles per SM on large layers",
          "[config][heuristic]") {
  // 9216×7168: 8.7 tiles per SM, 56 chunks; 36 blocks split in 2 stay under 0.7 wave: stream K.
  CHECK(wgmma_shape(choose_hopper(9216, 7168, 32)) == "2,2,8,1 sK img");
  // 8.5 tiles per SM and under (8960 columns: 8.48) as before, and v24's 10240×8192 unchanged.
  CHECK_FALSE(choose_hopper(8960, 7168, 32).wgmma);
  CHECK(choose_hopper(10240, 8192, 32).wgmma);
}

TEST_CASE("choose_config v26: 32 rows up to 2 tiles per SM with long K take 16 warps along K",
          "[config][heuristic]") {
  CHECK(choose_hopper(2048, 11008, 32).warps_k == 16);     // 1.9 tiles per SM, 86 chunks
  CHECK(choose_hopper(1280, 8192, 32).warps_k == 16);      // 64 chunks
  CHECK(choose_hopper(1280, 7936, 32).warps_k == 8);       // 62 chunks
  CHECK(choose_hopper(2304, 11008, 32).warps_k != 16);     // 2.2 tiles per SM
  CHECK(choose_hopper(2048, 11008, 32, 2).warps_k != 16);  // 2-bit: unmeasured
}

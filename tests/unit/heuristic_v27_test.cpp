// Heuristic v27 (docs/perf-notes.md, forty-fourth session): fitted to out-of-sample tunes (H200) of
// eleven layers in neither shipped file, in W4 f16, bf16 and W2, and to a bench of the new choices.
#include <cstdint>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::WqGemmConfig;
using lowbit::test::choose_bf16_hopper;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::staged;
using lowbit::test::wgmma_shape;

TEST_CASE("choose_config v27: 64/128 rows take wgmma from over 8 tiles per SM and 8 M weights, any K",
          "[config][heuristic]") {
  for (int bits : {2, 4}) {
    INFO("bits " << bits);
    // 16384×2048: 128 blocks of 128 columns, one wave.
    CHECK(wgmma_shape(choose_hopper(16384, 2048, 64, bits)) == "4,2,8,1 sk1 img");
    // 9216×3072: 72 such blocks (0.55 wave), 24 chunks: stream K at 64 rows.
    CHECK(wgmma_shape(choose_hopper(9216, 3072, 64, bits)) == "4,2,8,1 sK img");
    // 17920×1536: 12 chunks.
    CHECK(choose_hopper(17920, 1536, 64, bits).wgmma);
  }
  // 128 rows at 4 bits (2-bit weights since v69 too: tests/unit/heuristic_v69_test.cpp).
  CHECK(wgmma_shape(choose_hopper(16384, 2048, 128)) == "8,2,8,1 sk1 img");
  CHECK(wgmma_shape(choose_hopper(16384, 2048, 128, 2)) == "8,2,8,1 sk1 img");
  CHECK(wgmma_shape(choose_hopper(17920, 1536, 64)) == "4,4,8,1 sk1 img");
  CHECK(wgmma_shape(choose_hopper(17920, 1536, 128)) == "8,2,8,1 sK img");
  // From over 8 tiles per SM: 8448 columns are 8.0, 8576 are 8.1 (12 chunks: no cluster pair).
  CHECK_FALSE(choose_hopper(8448, 1536, 64).wgmma);
  CHECK(choose_hopper(8576, 1536, 64).wgmma);
  // Not under 8 M weights, nor at 32 rows. (v29: 8-bit weights at 64 rows too, heuristic_v29_test.cpp.)
  CHECK_FALSE(choose_hopper(17920, 384, 64).wgmma);
  CHECK_FALSE(choose_hopper(16384, 2048, 32).wgmma);
}

TEST_CASE("choose_config v27: 2-bit weights at 64 rows on small layers stage per warp",
          "[config][heuristic]") {
  // (2048×2048, 1.94 tiles a SM, takes v83's block since the eighty-third session:
  // heuristic_v82_v85_test.cpp.)
  for (int64_t n : {2560, 3072}) {
    const WqGemmConfig c = choose_hopper(n, 2048, 64, 2);
    CHECK(c.x_shared);
    CHECK(c.stages == 3);
    CHECK(c.m_tiles == 1);
    CHECK(c.n_tiles == 4);
    CHECK(c.warps_k == 4);
  }
  CHECK(choose_hopper(2048, 8192, 64, 2).x_shared);
  // Not on sm_80. (v29: 8-bit weights too, heuristic_v29_test.cpp.)
  CHECK_FALSE(lowbit::choose_config(g128_problem(3072, 2048, 64, 2), kSm80, 132).x_shared);
}

TEST_CASE("choose_config v27: 1-8 rows stage per warp on wide layers up to 32 chunks",
          "[config][heuristic]") {
  // 9216×3072 (8.7 tiles per SM, 24 chunks) and 16384×3072: the registers' tiles, warps and stages.
  // (At one row v30 gives 9216×3072 2 tiles × 4 warps, heuristic_v30_test.cpp: 2 rows show v27's; since
  // v34 with 4 warps along K, heuristic_v34_test.cpp.)
  const WqGemmConfig a = choose_hopper(9216, 3072, 2);
  CHECK(a.x_shared);
  CHECK(a.n_tiles == 4);
  CHECK(a.warps_k == 4);
  CHECK(a.stages == 2);
  CHECK(choose_hopper(16384, 3072, 1).x_shared);
  CHECK(choose_bf16_hopper(9216, 3072, 2).x_shared);
  const WqGemmConfig w2 = choose_hopper(16384, 3072, 1, 2);
  CHECK(w2.x_shared);
  CHECK(w2.n_tiles == 8);
  CHECK(w2.warps_k == 4);
  // 28672×4096 (32 chunks) at 1-8 rows.
  for (int64_t m : {1, 2, 4, 8}) CHECK(choose_hopper(28672, 4096, m).x_shared);
  // 2-bit weights at 2-8 rows: not this rule's (M = 1 only); since v33 they take the 16-row rules (there
  // 8 tiles, v13), and since v60 16 tiles on this layer.
  CHECK(staged(choose_hopper(28672, 4096, 16, 2)) == "1,8,1,4,1,2+xs");
  CHECK(staged(choose_hopper(28672, 4096, 4, 2)) == "1,16,1,4,1,2+xs");
  // Not over 32 chunks (28672×4224: 33; 10240×8192: 64), nor 8-bit weights, nor on sm_80.
  CHECK_FALSE(choose_hopper(28672, 4224, 1).x_shared);
  CHECK_FALSE(choose_hopper(10240, 8192, 2).x_shared);  // 64 chunks
  CHECK_FALSE(choose_hopper(28672, 4096, 1, 8).x_shared);
  CHECK_FALSE(lowbit::choose_config(g128_problem(9216, 3072, 1), kSm80, 132).x_shared);
}

TEST_CASE("choose_config v27: 16 rows take 6 tiles a warp where they take a quarter off the busiest SM",
          "[config][heuristic]") {
  // 17920×1536: 2240 tiles; 3 blocks of 6 tiles on the busiest SM against 3 of 8. Warps along K kept.
  const WqGemmConfig c = choose_hopper(17920, 1536, 16);
  CHECK(c.n_tiles == 6);
  CHECK(c.warps_k == 4);
  CHECK(c.x_shared);
  CHECK(choose_bf16_hopper(17920, 1536, 16).n_tiles == 6);
  // 2-bit 9216×3072: 2 blocks of 8 against 2 of 6.
  CHECK(choose_hopper(9216, 3072, 16, 2).n_tiles == 6);
  // 16384×2048 (2 blocks of 8 against 3 of 6) and 28672×4096 (7 of 4 against 5 of 6) keep theirs.
  CHECK(choose_hopper(16384, 2048, 16).n_tiles == 8);
  CHECK(choose_hopper(28672, 4096, 16).n_tiles == 4);
  // Not inside one wave under v23's 70 % fill (4352×2048: 91 blocks of 6, 69 %), nor 8-bit weights.
  // (At 8 tiles over 12-20 tiles per SM the busiest SM's share of 6 is 3/4 or over 4/5 on 132 SMs, so
  // no layer there tells a quarter from a fifth.)
  CHECK(choose_hopper(4352, 2048, 16).n_tiles == 4);
  CHECK(choose_hopper(17920, 1536, 16, 8).n_tiles != 6);
  CHECK(lowbit::choose_config(g128_problem(17920, 1536, 16), kSm80, 132).n_tiles != 6);
}

TEST_CASE(
    "choose_config v27: 32 rows, short K on 2-4.2 tiles per SM and over 8 tiles per SM take 4 warps along K",
    "[config][heuristic]") {
  for (int64_t n : {2560, 3072}) {
    const WqGemmConfig c = choose_hopper(n, 2048, 32);
    CHECK(c.n_tiles == 4);
    CHECK(c.warps_k == 4);
    CHECK(c.x_shared);
  }
  // 17 chunks keep 8 tiles × 8 warps; under 2 tiles per SM (2048 columns) keeps (1,4,1,8).
  CHECK(choose_hopper(3072, 2176, 32).warps_k == 8);
  CHECK(choose_hopper(4352, 2048, 32).warps_k == 4);  // 4.1 tiles per SM
  CHECK(choose_hopper(2432, 2048, 32).warps_k == 4);  // 2.3
  CHECK(choose_hopper(2048, 2048, 32).warps_k == 8);
  // 9216×3072 (8.7 tiles per SM, 28 M weights: no wgmma at 32 rows).
  const WqGemmConfig w = choose_hopper(9216, 3072, 32);
  CHECK_FALSE(w.wgmma);
  CHECK(w.n_tiles == 4);
  CHECK(w.warps_k == 4);
  CHECK(lowbit::choose_config(g128_problem(3072, 2048, 32), kSm80, 132).n_tiles == 8);
  CHECK(lowbit::choose_config(g128_problem(9216, 3072, 32), kSm80, 132).warps_k != 4);
  // 4-bit weights as measured (3 follows): 8-bit keep theirs (3072×2048 at 32 rows: v61/v62's 32-row block).
  CHECK(choose_hopper(3072, 2048, 32, 8).n_tiles == 4);
  CHECK(choose_hopper(3072, 2048, 32, 8).m_tiles == 2);
  CHECK(choose_hopper(9216, 3072, 32, 8).warps_k == 8);
}

TEST_CASE("choose_config v27: a fourth layer set (H100 tune), short K and tiny layers",
          "[config][heuristic]") {
  // 1-8 rows on wide layers of 16 chunks or fewer: at most 4 warps along K (11264×2048; 9728×896, 7 chunks).
  for (int64_t m : {1, 8}) CHECK(choose_hopper(11264, 2048, m).warps_k == 4);
  // (At one row v30 gives 9728×896 2 tiles × 4 warps: 2 and 8 rows show v27's.)
  for (int64_t m : {2, 8}) CHECK(choose_hopper(9728, 896, m).warps_k == 4);
  CHECK(choose_hopper(11264, 2176, 1).warps_k == 8);  // 17 chunks: v5's 8 warps
  CHECK(choose_hopper(22016, 2048, 1).warps_k == 2);  // fewer stay fewer
  // Staged configs only: the registers' configs of 8-bit weights, and of 2-bit ones over one row, keep 8.
  CHECK(choose_hopper(11264, 2048, 1, 8).warps_k == 8);
  CHECK(choose_hopper(11264, 2048, 4, 2).warps_k == 8);
  // 64 rows, under 24 chunks, 128-column blocks in one wave: those, unsplit, with the image.
  CHECK(wgmma_shape(choose_hopper(11264, 2048, 64)) == "4,2,8,1 sk1 img");
  CHECK(wgmma_shape(choose_hopper(11264, 2944, 64)) == "4,2,8,1 sk1 img");  // 23 chunks
  CHECK(wgmma_shape(choose_hopper(9728, 896, 64)) == "4,2,8,1 sk1 img");
  CHECK(wgmma_shape(choose_hopper(11264, 3072, 64)) == "4,2,8,1 sK img");   // 24 chunks
  CHECK(wgmma_shape(choose_hopper(17920, 1536, 64)) == "4,4,8,1 sk1 img");  // 140 blocks
  // 32 rows under one wave of 2-tile blocks: 2 tiles, 3 stages (896 columns); 1280 columns keep 4.
  const WqGemmConfig tiny = choose_hopper(896, 4864, 32);
  CHECK(tiny.n_tiles == 2);
  CHECK(tiny.stages == 3);
  CHECK(choose_hopper(1024, 4096, 32).n_tiles == 2);  // 128 blocks of 2 tiles
  CHECK(choose_hopper(1088, 4096, 32).n_tiles == 4);  // 136: over a wave
  CHECK(choose_hopper(1280, 8192, 32).n_tiles == 4);
  // From 64 chunks v26's 16 warps along K keep their 4 tiles. (8-bit weights kept theirs until v84,
  // eighty-third session: heuristic_v82_v85_test.cpp.)
  const WqGemmConfig long_k = choose_hopper(1024, 8192, 32);
  CHECK(long_k.n_tiles == 4);
  CHECK(long_k.warps_k == 16);
  CHECK(choose_hopper(896, 4864, 32, 8).n_tiles == 2);
  CHECK(lowbit::choose_config(g128_problem(896, 4864, 32), kSm80, 132).n_tiles == 4);
}

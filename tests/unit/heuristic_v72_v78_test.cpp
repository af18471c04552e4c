// Heuristics v72-v78 (docs/perf-notes.md, eightieth and eighty-first sessions): tiny layers' 16-row blocks
// (v72; v78 at 9-16 rows on short K), 2-bit weights' wgmma at 17-32 rows over 10 tiles per SM (v73), 8-bit
// weights' 2 stages where 3 would leave a second wave (v74), wgmma blocks of 64 rows at 128 rows on K of 4
// chunks or fewer (v75), narrow layers at 64 and 128 rows (v76-v77).
#include <cstdint>
#include <vector>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"
#include "unit/unit_helpers.hpp"

using lowbit::DType;
using lowbit::WqGemmProblem;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kArch90;
using lowbit::test::kSm80;
using lowbit::test::other_formats;
using lowbit::test::staged;
using lowbit::test::wgmma_shape;
using lowbit::test::with_act;

TEST_CASE("choose_config v72: tiny layers", "[config][heuristic]") {
  // One row: K split until the blocks number the SMs (at most 8 pieces, at least a chunk a warp).
  CHECK(staged(choose_hopper(128, 8192, 1)) == "1,2,1,8,8,2+xs");
  CHECK(staged(choose_hopper(256, 7168, 1)) == "1,2,1,8,7,2+xs");  // 56 chunks: 7 a piece of 8 warps
  CHECK(staged(choose_hopper(512, 7168, 1)) == "1,2,1,8,5,2+xs");
  CHECK(staged(choose_hopper(384, 4096, 1)) == "1,2,1,8,4,2+xs");
  // The split stops where its clusters would not all fit at once (one block a SM from 17 rows): 320×8192 at
  // 32 rows, 40 unsplit blocks, takes 2 pieces (66 clusters of 2 fit), not 3 (39 of 3); at 64 rows, 80, none.
  CHECK(staged(choose_hopper(320, 8192, 32)) == "1,2,1,8,2,3+xs");
  CHECK(staged(choose_hopper(320, 8192, 64)) == "1,2,1,8,1,3+xs");
  CHECK(staged(choose_hopper(320, 8192, 128)) == "1,4,1,8,1,3+xs");
  // From 2 rows: 0.7 of the SMs; 3 stages from 17 rows, 4 tiles a block from 65.
  CHECK(staged(choose_hopper(256, 7168, 4)) == "1,2,1,8,6,2+xs");
  CHECK(staged(choose_hopper(256, 7168, 16)) == "1,2,1,8,6,2+xs");
  CHECK(staged(choose_hopper(512, 7168, 16)) == "1,2,1,8,3,2+xs");
  CHECK(staged(choose_hopper(256, 7168, 64)) == "1,2,1,8,2,3+xs");
  CHECK(staged(choose_hopper(384, 4096, 64)) == "1,2,1,8,1,3+xs");
  CHECK(staged(choose_hopper(256, 7168, 128)) == "1,4,1,8,2,3+xs");
  CHECK(staged(choose_hopper(512, 7168, 128)) == "1,4,1,8,1,3+xs");
  for (DType act : {DType::F16, DType::BF16})
    for (int bits : {2, 3, 4, 8}) {
      INFO(static_cast<int>(act) << " w" << bits);
      CHECK(staged(choose_hopper(with_act(g128_problem(256, 7168, 16, bits), act))) == "1,2,1,8,6,2+xs");
    }
  // The edges: 528 columns (66 tiles, half the SMs) are in, 536 are not; under 32 chunks not; over 128 rows
  // not.
  CHECK(staged(choose_hopper(528, 4096, 1)) == "1,2,1,8,4,2+xs");
  CHECK(choose_hopper(536, 4096, 1).warps_k != 8);
  CHECK(choose_hopper(256, 3968, 1).split_k == 1);
  // From 33 rows from 16 chunks (K = 2048); under 16 not, nor at 17-32 rows under 32 (at 9-16 rows v78
  // below).
  CHECK(staged(choose_hopper(256, 2048, 64)) == "1,2,1,8,2,3+xs");
  CHECK(staged(choose_hopper(512, 2048, 128)) == "1,4,1,8,1,3+xs");
  CHECK(staged(choose_hopper(256, 1920, 64)) != "1,2,1,8,1,3+xs");
  CHECK(staged(choose_hopper(256, 2048, 32)) == "1,2,1,8,1,3+xs");
  // The split's receive region counts in the blocks a SM: 2-bit 144×8192 at 32 rows holds one block a SM (116
  // KB with K in 5 pieces), where 18 clusters of 5 fit and of 6 do not.
  CHECK(staged(choose_hopper(144, 8192, 32, 2)) == "1,2,1,8,5,3+xs");
  // From 8 M weights at 64 and 128 rows v24's few-block wgmma rule keeps them.
  CHECK(choose_hopper(512, 16384, 64).wgmma);
  CHECK(choose_hopper(512, 16384, 128).wgmma);
  CHECK(staged(choose_hopper(512, 16384, 32)) == "1,2,1,8,2,3+xs");
  CHECK(choose_hopper(256, 7168, 256).wgmma);
  // Not off sm_90a. Every group and dequantization mode since the eighty-first session, but not fp16
  // accumulation or deterministic mode.
  CHECK(lowbit::choose_config(g128_problem(256, 7168, 1), kSm80, 132).split_k != 7);
  for (const WqGemmProblem& p : other_formats(g128_problem(256, 7168, 1))) {
    INFO(p.str());
    CHECK((staged(choose_hopper(p)) == "1,2,1,8,7,2+xs") == (p.accum != DType::F16 && !p.deterministic));
  }
  WqGemmProblem g32 = g128_problem(256, 7168, 128), sz = g32;
  g32.group_size = 32;
  sz.group_size = 64, sz.mode = lowbit::DequantMode::ScaleThenAddZero;
  CHECK(staged(choose_hopper(g32)) == "1,4,1,8,2,3+xs");
  CHECK(staged(choose_hopper(sz)) == "1,4,1,8,2,3+xs");
}

TEST_CASE("choose_config v78: tiny layers at 9-16 rows on 16-31 chunks", "[config][heuristic]") {
  // 4 warps along K, K split to 0.7 of the SMs' blocks (at least a chunk a warp in every piece), where that
  // is 4 pieces or more.
  CHECK(staged(choose_hopper(256, 2048, 16)) == "1,2,1,4,4,2+xs");
  CHECK(staged(choose_hopper(192, 2560, 16)) == "1,2,1,4,5,2+xs");
  CHECK(staged(choose_hopper(224, 3072, 16)) == "1,2,1,4,6,2+xs");
  CHECK(staged(choose_hopper(448, 2048, 16)) == "1,2,1,4,4,2+xs");
  CHECK(staged(choose_hopper(256, 2048, 9)) == "1,2,1,4,4,2+xs");
  for (DType act : {DType::F16, DType::BF16})
    for (int bits : {2, 3, 4, 8}) {
      INFO(static_cast<int>(act) << " w" << bits);
      CHECK(staged(choose_hopper(with_act(g128_problem(384, 3072, 16, bits), act))) == "1,2,1,4,4,2+xs");
    }
  // Split 3 (512 columns: 32 blocks) not; nor at 8 or 17 rows, on 15 or 32 chunks.
  CHECK(choose_hopper(512, 2048, 16).warps_k != 4);
  CHECK(choose_hopper(512, 2560, 16).warps_k != 4);
  CHECK(choose_hopper(256, 2048, 8).warps_k != 4);
  CHECK(choose_hopper(256, 2048, 17).warps_k != 4);
  CHECK(choose_hopper(256, 1920, 16).warps_k != 4);
  CHECK(staged(choose_hopper(256, 4096, 16)) == "1,2,1,8,4,2+xs");
  // Pieces are ceil(chunks / split) chunks, the last the shortest: the split stops before a last piece of
  // under 4 chunks. 25 chunks: 5 pieces of 5, not 6 (the sixth empty); 31: 4 pieces, not 5 (8, 8, 8, 7
  // against 7 × 4 and 3); 17: 3 pieces (4 would leave 2), so not v78. The GPU case's layers: 136×2432 (19
  // chunks) in 4, 136×3072 (24) in 6.
  CHECK(staged(choose_hopper(128, 3200, 16)) == "1,2,1,4,5,2+xs");
  CHECK(staged(choose_hopper(128, 3968, 16)) == "1,2,1,4,4,2+xs");
  CHECK(choose_hopper(128, 2176, 16).warps_k != 4);
  CHECK(staged(choose_hopper(136, 2432, 16)) == "1,2,1,4,4,2+xs");
  CHECK(staged(choose_hopper(136, 3072, 16)) == "1,2,1,4,6,2+xs");
}

TEST_CASE("choose_config v73: 2-bit at 32 rows over 10 tiles per SM from 8 M weights",
          "[config][heuristic]") {
  for (int bits : {1, 2}) {
    INFO("w" << bits);
    CHECK(wgmma_shape(choose_hopper(28672, 1024, 32, bits)) == "2,4,8,1 sk1");
    CHECK(wgmma_shape(choose_hopper(22016, 1024, 32, bits)) == "2,4,8,1 sk1");
  }
  // 4-bit keeps its block-shared mma.sync (1.03× the best there); under 8 M weights, or 10 tiles per SM,
  // neither.
  CHECK(staged(choose_hopper(28672, 1024, 32)) == "2,4,2,2,1,3+xs");
  CHECK(!choose_hopper(14336, 512, 32, 2).wgmma);
  // Under 8 M weights not (on 66 SMs 5632×1024 is over 10 tiles a SM with 5.8 M).
  CHECK(!lowbit::choose_config(g128_problem(5632, 1024, 32, 2), lowbit::Arch::parse("sm_90a"), 66).wgmma);
  CHECK(lowbit::choose_config(g128_problem(8448, 1024, 32, 2), lowbit::Arch::parse("sm_90a"), 66).wgmma);
  // Nor where the blocks' K split leaves pieces of under 8 chunks (14336×1024: 2 of 4).
  CHECK(!choose_hopper(14336, 1024, 32, 2).wgmma);
  CHECK(wgmma_shape(choose_hopper(16384, 2048, 32, 2)) == "2,4,8,1 sk2");
  CHECK(!choose_hopper(10496, 4096, 32, 2).wgmma);
}

TEST_CASE("choose_config v74: 8-bit (2,4,2,2) at 32 rows, 2-3 blocks a SM, 2 stages", "[config][heuristic]") {
  for (DType act : {DType::F16, DType::BF16}) {
    INFO(static_cast<int>(act));
    CHECK(staged(choose_hopper(with_act(g128_problem(17408, 2048, 32, 8), act))) == "2,4,2,2,1,2+xs");
    CHECK(staged(choose_hopper(with_act(g128_problem(19456, 2048, 32, 8), act))) == "2,4,2,2,1,2+xs");
  }
  // 264 blocks (two a SM at 3 stages) keep 3, as do 397 (past three a SM at 2); so does 4-bit.
  CHECK(staged(choose_hopper(16896, 2048, 32, 8)) == "2,4,2,2,1,3+xs");
  CHECK(staged(choose_hopper(25344, 1024, 32, 8)) == "2,4,2,2,1,2+xs");
  CHECK(staged(choose_hopper(25408, 1024, 32, 8)) == "2,4,2,2,1,3+xs");
  // Every group and mode since the eighty-second session; not fp16 accumulation or deterministic mode.
  for (const WqGemmProblem& p : other_formats(g128_problem(17408, 2048, 32, 8))) {
    INFO(p.str());
    CHECK((staged(choose_hopper(p)) == "2,4,2,2,1,2+xs") == (p.accum != DType::F16 && !p.deterministic));
  }
  CHECK(staged(choose_hopper(19456, 2048, 32)) == "2,4,2,2,1,3+xs");
}

TEST_CASE("choose_config v75: 128 rows on K of 4 chunks or fewer, 0.8-1.75 waves of 64-row wgmma blocks",
          "[config][heuristic]") {
  for (DType act : {DType::F16, DType::BF16})
    for (int64_t k : {256, 384, 512}) {
      INFO(static_cast<int>(act) << " k" << k);
      const lowbit::WqGemmConfig c = choose_hopper(with_act(g128_problem(7168, k, 128), act));
      CHECK(wgmma_shape(c) == "4,2,8,1 sk1");
      CHECK(c.stages == 4);
    }
  CHECK(wgmma_shape(choose_hopper(14336, 512, 128)) == "4,2,8,1 sk1");  // 224 blocks: 1.7 waves
  // Under 0.8 wave (5120 columns: 80 blocks), over 1.75 (16384: 256), over 4 chunks, 2-bit: not this rule.
  CHECK(!choose_hopper(5120, 256, 128).wgmma);
  CHECK(wgmma_shape(choose_hopper(16384, 512, 128)) != "4,2,8,1 sk1");
  CHECK(wgmma_shape(choose_hopper(7168, 640, 128)) != "4,2,8,1 sk1");
  CHECK(!choose_hopper(7168, 512, 128, 2).wgmma);
  CHECK(wgmma_shape(choose_hopper(7168, 512, 128, 3)) == "4,2,8,1 sk1");
  for (const WqGemmProblem& p : other_formats(g128_problem(7168, 512, 128))) {
    INFO(p.str());
    const lowbit::WqGemmConfig c = choose_hopper(p);
    CHECK(!(c.wgmma && c.m_tiles == 4 && c.stages == 4 && !c.x_image));
  }
}

TEST_CASE("choose_config v76-v77: narrow layers (over half a tile a SM) at 64 and 128 rows",
          "[config][heuristic]") {
  for (DType act : {DType::F16, DType::BF16})
    for (int bits : {3, 4}) {
      INFO(static_cast<int>(act) << " w" << bits);
      // v76: 8 warps along K at 64 rows up to one tile a SM, also in place of v24's wgmma (8 M weights or
      // more).
      CHECK(staged(choose_hopper(with_act(g128_problem(640, 4096, 64, bits), act))) == "1,4,1,8,1,3+xs");
      CHECK(staged(choose_hopper(with_act(g128_problem(1056, 8192, 64, bits), act))) == "1,4,1,8,1,3+xs");
      // v77: (1,4,1,4,1,3) at 128 rows up to 1.1 tiles a SM, not in place of wgmma.
      CHECK(staged(choose_hopper(with_act(g128_problem(1152, 2048, 128, bits), act))) == "1,4,1,4,1,3+xs");
      CHECK(choose_hopper(with_act(g128_problem(1024, 8192, 128, bits), act)).wgmma);
    }
  // Over one tile a SM at 64 rows (two waves of 8-warp blocks), past 64 chunks for wgmma's layers: not v76
  // (v80 below).
  CHECK(staged(choose_hopper(1088, 3584, 64)) == "2,4,1,4,1,4+xs");
  // At 128 rows since the eighty-first session: up to 1.5 tiles a SM while v77's blocks (3 a SM by shared
  // memory in 4-bit g128) make one wave: 1560 columns (49 column blocks × 8 row blocks = 392 of 396) in, 1584
  // (400) not.
  CHECK(staged(choose_hopper(1168, 4096, 128)) == "1,4,1,4,1,3+xs");
  CHECK(staged(choose_hopper(1536, 4096, 128)) == "1,4,1,4,1,3+xs");
  CHECK(staged(choose_hopper(1560, 4096, 128)) == "1,4,1,4,1,3+xs");
  CHECK(staged(choose_hopper(1584, 4096, 128)) == "2,4,2,2,1,3+xs");  // 1.5 tiles a SM: not v81 either
  CHECK(staged(choose_hopper(1600, 3584, 128)) != "1,4,1,4,1,3+xs");
  CHECK(choose_hopper(1024, 16384, 64).wgmma);
  // 2/8-bit weights keep them.
  CHECK(staged(choose_hopper(640, 4096, 64, 2)) != "1,4,1,8,1,3+xs");
  CHECK(staged(choose_hopper(640, 4096, 64, 8)) != "1,4,1,8,1,3+xs");
  // v76 in every group and mode since the eighty-first session (not fp16 accumulation or deterministic mode);
  // v77 in g256 and per channel, not where every weight is dequantized before the MMA (g64, float zeros).
  for (const WqGemmProblem& p : other_formats(g128_problem(640, 4096, 64))) {
    INFO(p.str());
    CHECK((staged(choose_hopper(p)) == "1,4,1,8,1,3+xs") == (p.accum != DType::F16 && !p.deterministic));
  }
  for (const WqGemmProblem& p : other_formats(g128_problem(1152, 2048, 128))) {
    INFO(p.str());
    const bool scale_after = p.group_size != 64 && p.mode != lowbit::DequantMode::SubFloatZeroThenScale &&
                             p.accum != DType::F16 && !p.deterministic;
    CHECK((staged(choose_hopper(p)) == "1,4,1,4,1,3+xs") == scale_after);
  }
}

TEST_CASE("choose_config v72: 1-bit weights at 65-128 rows take 4 stages", "[config][heuristic]") {
  CHECK(staged(choose_hopper(256, 7168, 128, 1)) == "1,4,1,8,2,4+xs");
  CHECK(staged(choose_hopper(512, 7168, 128, 1)) == "1,4,1,8,1,4+xs");
  CHECK(staged(choose_hopper(256, 7168, 64, 1)) == "1,2,1,8,2,3+xs");
  CHECK(staged(choose_hopper(256, 7168, 128, 2)) == "1,4,1,8,2,3+xs");
  // Groups of 256 too; g32, g64 and per channel ran flat (0.982-1.031×) and keep 3.
  for (int group : {32, 64, 256, 0}) {
    WqGemmProblem p = g128_problem(256, 7168, 128, 1);
    p.group_size = group;
    INFO(p.str());
    CHECK(staged(choose_hopper(p)) == (group == 256 ? "1,4,1,8,2,4+xs" : "1,4,1,8,2,3+xs"));
  }
}

TEST_CASE("choose_config v79-v81: 64 rows over 1 tile a SM, 128 rows over 1.5", "[config][heuristic]") {
  for (DType act : {DType::F16, DType::BF16}) {
    INFO(static_cast<int>(act));
    // v80: 4-bit at 64 rows, over 1 and up to 2 tiles a SM: 32-row warps, 4 stages (3-bit takes v83's
    // block, heuristic_v82_v85_test.cpp).
    for (int64_t n : {1088, 1536, 2112})
      CHECK(staged(choose_hopper(with_act(g128_problem(n, 4096, 64), act))) == "2,4,1,4,1,4+xs");
    CHECK(staged(choose_hopper(with_act(g128_problem(2176, 3584, 64), act))) != "2,4,1,4,1,4+xs");
    CHECK(staged(choose_hopper(with_act(g128_problem(1536, 4096, 64, 3), act))) == "1,8,1,8,1,3+xs");
    WqGemmProblem per_channel = with_act(g128_problem(1536, 4096, 64), act);
    per_channel.group_size = 0;
    CHECK(staged(choose_hopper(per_channel)) == "1,4,1,4,1,3+xs");
    // v81: 128 rows over 1.5 and up to 2 tiles a SM: (2,4,2,2,1,3) takes 4 warps along K.
    for (int64_t n : {1600, 1920, 2112})
      CHECK(staged(choose_hopper(with_act(g128_problem(n, 3584, 128), act))) == "2,4,2,4,1,3+xs");
    // v79: 128 rows over 2 tiles a SM under 8 M weights, from 16 chunks, under 4 tiles a SM: the wgmma pair
    // of 64-row blocks without the image (3-bit too); short K and 8 M weights (v24's stream K) not; 4 tiles a
    // SM not (on 132 SMs 8 M weights come first; on 114, 3648×2048 is 4 tiles a SM, 3600×2048 under).
    for (int bits : {3, 4})
      for (auto [n, k] : {std::pair<int64_t, int64_t>{2176, 3584}, {2560, 2048}, {3840, 2048}}) {
        const lowbit::WqGemmConfig c = choose_hopper(with_act(g128_problem(n, k, 128, bits), act));
        CHECK(wgmma_shape(c) == "4,2,8,1 sk2");
        CHECK(!c.x_image);
      }
    CHECK(!choose_hopper(with_act(g128_problem(2304, 1536, 128), act)).wgmma);
    CHECK(choose_hopper(with_act(g128_problem(2240, 3584, 128), act)).stream_k);
    CHECK(wgmma_shape(lowbit::choose_config(with_act(g128_problem(3600, 2048, 128), act), kArch90, 114)) ==
          "4,2,8,1 sk2");
    CHECK(wgmma_shape(lowbit::choose_config(with_act(g128_problem(3648, 2048, 128), act), kArch90, 114)) !=
          "4,2,8,1 sk2");
    // 1/2/8-bit too since call 6 (eighty-second session); 8-bit per channel too, not 4-bit per channel.
    for (int bits : {1, 2, 8})
      CHECK(wgmma_shape(choose_hopper(with_act(g128_problem(2560, 2048, 128, bits), act))) == "4,2,8,1 sk2");
    WqGemmProblem w8_per_channel = with_act(g128_problem(2560, 2048, 128, 8), act);
    w8_per_channel.group_size = 0;
    CHECK(wgmma_shape(choose_hopper(w8_per_channel)) == "4,2,8,1 sk2");
    // v80 for 8-bit weights (per channel too); 2-bit keeps the rules'.
    CHECK(staged(choose_hopper(with_act(g128_problem(1536, 4096, 64, 8), act))) == "2,4,1,4,1,4+xs");
    w8_per_channel.m = 64, w8_per_channel.n = 1536, w8_per_channel.k = 4096;
    CHECK(staged(choose_hopper(w8_per_channel)) == "2,4,1,4,1,4+xs");
    CHECK(staged(choose_hopper(with_act(g128_problem(1536, 4096, 64, 2), act))) != "2,4,1,4,1,4+xs");
  }
  // Every group and mode but per channel (not fp16 accumulation or deterministic mode: no wgmma).
  for (const WqGemmProblem& p : other_formats(g128_problem(2560, 2560, 128))) {
    INFO(p.str());
    CHECK((wgmma_shape(choose_hopper(p)) == "4,2,8,1 sk2") ==
          (p.group_size != 0 && p.accum != DType::F16 && !p.deterministic));
  }
}

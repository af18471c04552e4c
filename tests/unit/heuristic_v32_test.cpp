// Heuristic v32 (docs/perf-notes.md, forty-ninth session): fitted to the out-of-sample tunes of the seventh
// layer set (H200 and H100) and a bench of its misses on both GPUs.
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

TEST_CASE("choose_config v32: 16 rows, v28's band: 2 warps along K up to 3 blocks of 16 tiles per SM",
          "[config][heuristic]") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{45056, 8192}, {49152, 4096}, {42248, 2176}}) {
    INFO(n << "x" << k);
    CHECK(staged(choose_hopper(n, k, 16)) == "1,8,2,2,1,2+xs");
    CHECK(staged(choose_bf16_hopper(n, k, 16)) == "1,8,2,2,1,2+xs");
    CHECK(staged(choose_hopper(n, k, 16, 3)) == "1,8,2,2,1,2+xs");
  }
  // Bound: 50688 columns are 396 blocks of 16 tiles, 3 per SM (in); 50689 are 397 (out: v28/v31).
  CHECK(staged(choose_hopper(50688, 5120, 16)) == "1,8,2,2,1,2+xs");
  CHECK(staged(choose_hopper(50689, 5120, 16)) == "1,8,2,1,1,3+xs");
  CHECK(staged(choose_bf16_hopper(51200, 2176, 16)) == "1,8,2,1,1,2+xs");  // from 32 chunks bf16 takes v65a
  // 40.0 tiles per SM (42240 columns) is not over 40: v27's choice.
  CHECK(staged(choose_hopper(42240, 4096, 16)) == "1,4,1,4,1,2+xs");
}

TEST_CASE("choose_config v32: 16 rows over 4 blocks of 16 tiles per SM take 6 tiles x 2 warps along K",
          "[config][heuristic]") {
  CHECK(staged(choose_hopper(73728, 4608, 16)) == "1,6,1,2,1,2+xs");
  CHECK(staged(choose_bf16_hopper(73728, 4608, 16)) == "1,6,1,2,1,2+xs");
  // Bound: 67584 columns are 528 blocks, 4 per SM (out: v28); 67585 are 529 (in).
  CHECK(staged(choose_hopper(67584, 4608, 16)) == "1,8,2,1,1,3+xs");
  CHECK(staged(choose_hopper(67585, 4608, 16)) == "1,6,1,2,1,2+xs");
  // v28's band only: 16 chunks stay v26's, 2- and 8-bit weights and sm_80 keep their rules.
  CHECK(staged(choose_hopper(73728, 2048, 16)) != "1,6,1,2,1,2+xs");
  for (int bits : {2, 8}) CHECK(staged(choose_hopper(73728, 4608, 16, bits)) != "1,6,1,2,1,2+xs");
  CHECK(lowbit::choose_config(g128_problem(73728, 4608, 16), kSm80, 132).n_tiles != 6);
}

TEST_CASE(
    "choose_config v32: 16 rows on 3.5-4 blocks of 8 tiles per SM from 48 chunks: 8 tiles x 2 warps "
    "along K, 3 stages",
    "[config][heuristic]") {
  CHECK(staged(choose_hopper(32768, 6144, 16)) == "1,8,1,2,1,3+xs");
  CHECK(staged(choose_bf16_hopper(32768, 6144, 16)) == "1,8,1,2,1,3+xs");
  // Bounds: 29568 columns are 462 blocks of 8 tiles, 3.5 per SM (out); 29569 in; 33792 are 528, 4 per SM
  // (in); 33793 out. 47 chunks out.
  CHECK(staged(choose_hopper(29568, 6144, 16)) != "1,8,1,2,1,3+xs");
  CHECK(staged(choose_hopper(29569, 6144, 16)) == "1,8,1,2,1,3+xs");
  CHECK(staged(choose_hopper(33792, 6144, 16)) == "1,8,1,2,1,3+xs");
  CHECK(staged(choose_hopper(33793, 6144, 16)) != "1,8,1,2,1,3+xs");
  CHECK(staged(choose_hopper(32768, 6016, 16)) != "1,8,1,2,1,3+xs");
  CHECK(staged(choose_hopper(40960, 7168, 16)) !=
        "1,8,1,2,1,3+xs");  // 640 blocks, over 4 per SM: a second wave
  CHECK(staged(choose_hopper(32768, 6144, 16, 3)) == "1,8,1,2,1,3+xs");
  CHECK(staged(lowbit::choose_config(g128_problem(32768, 6144, 16), kSm80, 132)) == "1,4,1,4,1,2+xs");
  CHECK(staged(choose_hopper(32768, 6144, 16, 8)) != "1,8,1,2,1,3+xs");
}

TEST_CASE(
    "choose_config v32: one row, 4-bit f16 over 8 blocks of 8 tiles per SM: staged 4 tiles x 2 x 4 warps",
    "[config][heuristic]") {
  CHECK(staged(choose_hopper(73728, 4608, 1)) == "1,4,2,4,1,2+xs");
  // Bound: 67584 columns are 1056 blocks of 8 tiles, 8 per SM (out: v5's registers); 67585 in.
  const auto at_bound = choose_hopper(67584, 4608, 1);
  CHECK(at_bound.n_tiles == 8);
  CHECK_FALSE(at_bound.x_shared);
  CHECK(staged(choose_hopper(67585, 4608, 1)) == "1,4,2,4,1,2+xs");
  // Short K is staged with 8 tiles already (v27) and keeps it.
  CHECK(staged(choose_hopper(73728, 4096, 1)) == "1,8,1,2,1,2+xs");
  // f16 4-bit only: bf16 (10 blocks per SM) keeps v5's, 3-bit and 16 rows keep theirs, sm_80 too.
  CHECK(choose_bf16_hopper(73728, 4608, 1).warps_n == 1);
  CHECK(choose_hopper(73728, 4608, 1, 3).warps_n == 1);
  CHECK(staged(choose_hopper(73728, 4608, 16)) != "1,4,2,4,1,2+xs");  // (2-8 rows take it since v33)
  CHECK(lowbit::choose_config(g128_problem(73728, 4608, 1), kSm80, 132).warps_n == 1);
  WqGemmProblem det = g128_problem(73728, 4608, 1);
  det.deterministic = true;
  CHECK_FALSE(choose_hopper(det).x_shared);
}

TEST_CASE(
    "choose_config v32: one row, 2-bit weights 8 tiles in registers take 4 warps along K under 64 chunks",
    "[config][heuristic]") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{40960, 7168}, {73728, 4608}, {28672, 5120}}) {
    INFO(n << "x" << k);
    const auto c = choose_hopper(n, k, 1, 2);
    CHECK(c.n_tiles == 8);
    CHECK(c.warps_k == 4);
    CHECK_FALSE(c.x_shared);
  }
  // From 64 chunks (45056×8192) and up to 20 tiles per SM (16384×5120) 8 warps stay; v19's bound off sm_90a.
  CHECK(choose_hopper(45056, 8192, 1, 2).warps_k == 8);
  CHECK(choose_hopper(16384, 5120, 1, 2).warps_k == 8);
  CHECK(choose_hopper(21120, 5120, 1, 2).warps_k == 8);  // 2640 tiles, 20 per SM
  CHECK(choose_hopper(21128, 5120, 1, 2).warps_k == 4);
  CHECK(lowbit::choose_config(g128_problem(40960, 7168, 1, 2), kSm80, 132).warps_k == 8);
}

TEST_CASE(
    "choose_config v32: 8-bit weights at 16 rows past 4 blocks of 16 tiles per SM take 8 tiles x 2 warps",
    "[config][heuristic]") {
  CHECK(staged(choose_hopper(73728, 4608, 16, 8)) == "1,8,2,1,1,2+xs");
  // Bound: 67584 columns, 528 blocks, 4 per SM (out: v22/v29's (1,4,4,1,1,2)); 67585 in.
  CHECK(staged(choose_hopper(67584, 4608, 16, 8)) == "1,4,4,1,1,2+xs");
  CHECK(staged(choose_hopper(67585, 4608, 16, 8)) == "1,8,2,1,1,2+xs");
  // 8-bit weights only: 4-bit on 16 chunks (v26) and 2-bit (v13) keep theirs.
  CHECK(staged(choose_hopper(73728, 2048, 16)) == "1,4,2,2,1,2+xs");
  CHECK(staged(choose_hopper(73728, 4608, 16, 2)) == "1,8,1,4,1,2+xs");
  CHECK(lowbit::choose_config(g128_problem(73728, 4608, 16, 8), kSm80, 132).n_tiles != 8);
}

TEST_CASE("choose_config v32: 8-bit weights at 64 rows staged per warp with 4 warps along K keep 2 stages",
          "[config][heuristic]") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{2816, 2048}, {2560, 2560}, {2304, 2048}}) {
    INFO(n << "x" << k);
    CHECK(staged(choose_hopper(n, k, 64, 8)) == "1,4,1,4,1,2+xs");
    CHECK(staged(choose_hopper(n, k, 64)) != "1,4,1,4,1,2+xs");  // 4-bit weights keep 3 stages
  }
  // Up to 2 blocks per SM: 3 stages (2048×1408: 64 column blocks × 4 row blocks, 256 on 132 SMs); 2304×2048
  // is 288. (1536×2048, 16 chunks, takes v80's block since the eighty-second session.)
  for (auto [n, k] : {std::pair<int64_t, int64_t>{2048, 1408}, {2048, 768}})
    CHECK(staged(choose_hopper(n, k, 64, 8)) == "1,4,1,4,1,3+xs");
  CHECK(staged(choose_hopper(1536, 2048, 64, 8)) == "2,4,1,4,1,4+xs");
  // The bound: 2112 columns are 66 column blocks × 4 row blocks, 264 = 2 per SM (3 stages; at 16 chunks,
  // K = 2048, v62's one wave of 32-row blocks takes them, at 11 chunks, K = 1408, not); 2120 are 268.
  // 3144 columns make 396 blocks, 2 warps along K (v9), and keep 3 stages.
  CHECK(staged(choose_hopper(2112, 1408, 64, 8)) == "1,4,1,4,1,3+xs");
  CHECK(staged(choose_hopper(2112, 2048, 64, 8)) == "2,4,1,4,1,2+xs");
  CHECK(staged(choose_hopper(2120, 2048, 64, 8)) == "1,4,1,4,1,2+xs");
  CHECK(staged(choose_hopper(3144, 2048, 64, 8)) == "1,4,1,2,1,3+xs");
}

TEST_CASE("choose_config v32: 2-bit weights at 64 rows over 4 tiles per SM on few blocks take wgmma",
          "[config][heuristic]") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{5120, 4096}, {5120, 8192}, {4608, 3584}}) {
    INFO(n << "x" << k);
    const auto c = choose_hopper(n, k, 64, 2);
    CHECK(c.wgmma);
    CHECK(lowbit::can_implement(g128_problem(n, k, 64, 2), c, lowbit::Arch::parse("sm_90a")));
  }
  CHECK_FALSE(choose_hopper(4096, 4096, 64, 2).wgmma);  // 3.9 tiles per SM: v31's 2 row tiles
  CHECK_FALSE(choose_hopper(5120, 4096, 16, 2).wgmma);
  CHECK(choose_hopper(5120, 4096, 128, 2).wgmma);  // at 128 rows since v69
  // 3600 columns on 114 SMs: 3.9 tiles per SM, not over 4.
  CHECK_FALSE(
      lowbit::choose_config(g128_problem(3600, 8192, 64, 2), lowbit::Arch::parse("sm_90a"), 114).wgmma);
  CHECK_FALSE(lowbit::choose_config(g128_problem(5120, 4096, 64, 2), kSm80, 132).wgmma);
}

TEST_CASE(
    "choose_config v32: one row, bf16 from 128 chunks on a full wave of 6-tile blocks: 6 tiles x 12 warps",
    "[config][heuristic]") {
  CHECK(staged(choose_bf16_hopper(6144, 16384, 1)) == "1,6,1,12,1,2+xs");
  CHECK(staged(choose_hopper(6144, 16384, 1)) != "1,6,1,12,1,2+xs");      // f16 keeps v28's
  CHECK(staged(choose_bf16_hopper(6144, 16256, 1)) == "1,2,1,8,1,3+xs");  // 127 chunks: v28's
  CHECK(staged(choose_bf16_hopper(6144, 16384, 2)) != "1,6,1,12,1,2+xs");
  CHECK(staged(choose_bf16_hopper(4352, 16384, 1)) == "1,2,1,8,1,3+xs");  // 91 blocks of 6 tiles: 69 %
}

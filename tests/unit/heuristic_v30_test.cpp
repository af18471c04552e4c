// Heuristic v30 (docs/perf-notes.md, forty-seventh session): fitted to the out-of-sample tunes of the
// sixth layer set (H200 and H100) and a bench of wide short-K layers at one row.
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

TEST_CASE(
    "choose_config v30: one row, 4-bit weights on 6.5-10 tiles per SM with short K take 2 tiles x 4 warps",
    "[config][heuristic]") {
  // 8.5-10 tiles per SM up to 40 chunks: 9216×3072, 9728×896, 10240×2560, 10240×5120, f16 and bf16.
  for (auto [n, k] : {std::pair<int64_t, int64_t>{9216, 3072}, {9728, 896}, {10240, 2560}, {10240, 5120}}) {
    CHECK(staged(choose_hopper(n, k, 1)) == "1,2,1,4,1,2+xs");
    CHECK(staged(choose_bf16_hopper(n, k, 1)) == "1,2,1,4,1,2+xs");
  }
  // 6.5-8.5 tiles per SM up to 16 chunks: 8192×1024, 8192×2048, 7168×2048 (bf16 too, over v21's 8 tiles).
  CHECK(staged(choose_hopper(8192, 1024, 1)) == "1,2,1,4,1,2+xs");
  CHECK(staged(choose_hopper(8192, 2048, 1)) == "1,2,1,4,1,2+xs");
  CHECK(staged(choose_hopper(7168, 2048, 1)) == "1,2,1,4,1,2+xs");
  CHECK(staged(choose_bf16_hopper(8192, 2048, 1)) == "1,2,1,4,1,2+xs");
  // Bounds of the upper band: 10560 columns are 10.0 tiles per SM (in), 10568 out; 40 chunks in, 41 out.
  CHECK(staged(choose_hopper(10560, 4096, 1)) == "1,2,1,4,1,2+xs");
  CHECK(choose_hopper(10568, 4096, 1).n_tiles == 4);
  CHECK(choose_hopper(10240, 5248, 1).n_tiles == 4);
  // 8984 columns are over 8.5 (in at 40 chunks); 8976 are 8.5, the lower band: only up to 16 chunks.
  CHECK(staged(choose_hopper(8984, 5120, 1)) == "1,2,1,4,1,2+xs");
  CHECK(choose_hopper(8976, 5120, 1).n_tiles == 4);
  CHECK(staged(choose_hopper(8976, 2048, 1)) == "1,2,1,4,1,2+xs");
  // Bounds of the lower band: 6864 columns are 6.5 (out), 6872 in; 16 chunks in, 17 out.
  CHECK(choose_hopper(6864, 2048, 1).n_tiles == 4);
  CHECK(staged(choose_hopper(6872, 2048, 1)) == "1,2,1,4,1,2+xs");
  CHECK(choose_hopper(6872, 2176, 1).n_tiles == 4);
  // Longer K in the lower band keeps v29 (8192×4096: the H200's best is (1,4,1,8)); wider layers too
  // (11264×2048, 16384×2048: the H200 bench had (1,4,1,4,1,3) ahead).
  CHECK(staged(choose_hopper(8192, 4096, 1)) == "1,4,1,8,1,2+xs");
  CHECK(staged(choose_hopper(11264, 2048, 1)) == "1,4,1,4,1,3+xs");
  CHECK(staged(choose_hopper(16384, 2048, 1)) == "1,4,1,4,1,3+xs");
  // One row, 4-bit weights in groups of 128, sm_90a, not deterministic only.
  CHECK(choose_hopper(10240, 2560, 2).n_tiles == 4);
  for (int bits : {2, 3, 8}) CHECK(choose_hopper(10240, 2560, 1, bits).n_tiles == 4);
  WqGemmProblem g64 = g128_problem(10240, 2560, 1);
  g64.group_size = 64;
  CHECK(choose_hopper(g64).n_tiles == 4);
  WqGemmProblem det = g128_problem(10240, 2560, 1);
  det.deterministic = true;
  CHECK_FALSE(choose_hopper(det).x_shared);
  CHECK(lowbit::choose_config(g128_problem(10240, 2560, 1), kSm80, 132).n_tiles == 4);
}

TEST_CASE("choose_config v30: 16 rows on 20-24 tiles per SM share each chunk between 2 warps up to 32 chunks",
          "[config][heuristic]") {
  CHECK(staged(choose_hopper(24576, 4096, 16)) == "1,4,2,2,1,2+xs");
  // 25600×4096 (24.2 tiles per SM) keeps (1,4,1,4): 4 blocks of 8 tiles on the busiest SM against 7 of 4.
  CHECK(staged(choose_hopper(25600, 4096, 16)) == "1,4,1,4,1,2+xs");
  CHECK(staged(choose_bf16_hopper(24576, 4096, 16)) == "1,4,2,2,1,2+xs");
  // v26's short-K case unchanged, inside this band and past it (28672×2048: 27 tiles per SM, 16 chunks).
  CHECK(staged(choose_hopper(22016, 2048, 16)) == "1,4,2,2,1,2+xs");
  CHECK(staged(choose_hopper(28672, 2048, 16)) == "1,4,2,2,1,2+xs");
  // Bounds: 25344 columns are 24.0 tiles per SM (in), 25352 out; 21128 over 20 (in), 21120 v9's 8 tiles;
  // 32 chunks in, 33 out.
  CHECK(staged(choose_hopper(25344, 4096, 16)) == "1,4,2,2,1,2+xs");
  CHECK(staged(choose_hopper(25352, 4096, 16)) == "1,4,1,4,1,2+xs");
  CHECK(staged(choose_hopper(21128, 4096, 16)) == "1,4,2,2,1,2+xs");
  CHECK(staged(choose_hopper(21120, 4096, 16)) == "1,8,1,4,1,2+xs");
  CHECK(staged(choose_hopper(24576, 4224, 16)) == "1,4,1,4,1,2+xs");
  // Wider layers keep (1,4,1,4): 28672×4096 and 28672×3584.
  CHECK(staged(choose_hopper(28672, 4096, 16)) == "1,4,1,4,1,2+xs");
  CHECK(staged(choose_hopper(28672, 3584, 16)) == "1,4,1,4,1,2+xs");
  // 3/4-bit on sm_90a only: 2-bit weights keep v13's 8 tiles, sm_80 one warp along N. (8-bit weights take
  // v22's 4 warps side by side after this rule whatever it chose.)
  CHECK(staged(choose_hopper(24576, 4096, 16, 2)) == "1,8,1,4,1,2+xs");
  CHECK(staged(choose_hopper(24576, 4096, 16, 3)) == "1,4,2,2,1,2+xs");
  CHECK(lowbit::choose_config(g128_problem(24576, 4096, 16), kSm80, 132).warps_n == 1);
}

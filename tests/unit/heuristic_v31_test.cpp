// Heuristic v31 (docs/perf-notes.md, forty-eighth session): fitted to the out-of-sample tunes of the sixth
// layer set in bf16, W2 and W8 (H200 and H100) and a bench of the widest layers on both GPUs.
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

TEST_CASE("choose_config v31: one row, 8-bit weights over 48 tiles per SM stage 4 tiles x 6 warps along K",
          "[config][heuristic]") {
  // 51200×5120, 65536×5120, 57344×8192: where v5 took 8 tiles × 2 warps in registers.
  for (auto [n, k] : {std::pair<int64_t, int64_t>{51200, 5120}, {65536, 5120}, {57344, 8192}})
    CHECK(staged(choose_hopper(n, k, 1, 8)) == "1,4,1,6,1,2+xs");
  // Bounds: 50689 columns are 1585 blocks of 4 tiles, over 12 per SM (in); 50688 are 1584 (out, v5's 4
  // tiles).
  CHECK(staged(choose_hopper(50689, 5120, 1, 8)) == "1,4,1,6,1,2+xs");
  CHECK(choose_hopper(50688, 5120, 1, 8).str() == choose_hopper(49152, 4096, 1, 8).str());
  CHECK_FALSE(choose_hopper(50688, 5120, 1, 8).x_shared);
  // 32 chunks in, 31 out (v5's 8 tiles in registers).
  CHECK(staged(choose_hopper(51200, 4096, 1, 8)) == "1,4,1,6,1,2+xs");
  const auto short_k = choose_hopper(51200, 3968, 1, 8);
  CHECK(short_k.n_tiles == 8);
  CHECK_FALSE(short_k.x_shared);
  // 8-bit weights, sm_90a, not deterministic only (one row here; 2-4 rows since v33).
  CHECK(choose_hopper(51200, 5120, 8, 8).warps_k != 6);
  for (int bits : {2, 4}) CHECK(choose_hopper(51200, 5120, 1, bits).warps_k != 6);
  WqGemmProblem det = g128_problem(51200, 5120, 1, 8);
  det.deterministic = true;
  CHECK_FALSE(choose_hopper(det).x_shared);
  CHECK(lowbit::choose_config(g128_problem(51200, 5120, 1, 8), kSm80, 132).warps_k != 6);
}

TEST_CASE("choose_config v31: bf16 16 rows over 40 tiles per SM keep v28's pair sharing with 2 stages",
          "[config][heuristic]") {
  for (auto [n, k] :
       {std::pair<int64_t, int64_t>{51200, 5120}, {65536, 5120}, {57344, 8192}}) {  // v32 takes 49152×4096
    CHECK(staged(choose_hopper(n, k, 16)) == "1,8,2,1,1,3+xs");                     // f16 keeps 3
  }
  // bf16 from 32 chunks takes v65a's 4 warps along K (heuristic_v65_test.cpp); under 32 it keeps v31's.
  for (auto [n, k] : {std::pair<int64_t, int64_t>{51200, 2176}, {57344, 3968}, {65536, 2560}})
    CHECK(staged(choose_bf16_hopper(n, k, 16)) == "1,8,2,1,1,2+xs");
}

TEST_CASE(
    "choose_config v31: 64 rows on narrow layers staged per warp take 2 row tiles; 2-bit from 20 chunks",
    "[config][heuristic]") {
  // 4096², 3584×4096 in f16, bf16 and W2; 3584² (28 chunks, 4-bit); 4096×4608.
  for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {3584, 4096}}) {
    CHECK(staged(choose_hopper(n, k, 64)) == "2,8,1,4,1,3+xs");
    CHECK(staged(choose_bf16_hopper(n, k, 64)) == "2,8,1,4,1,3+xs");
    CHECK(staged(choose_hopper(n, k, 64, 2)) == "2,8,1,4,1,3+xs");
  }
  CHECK(staged(choose_hopper(3584, 3584, 64)) == "2,8,1,4,1,3+xs");
  CHECK(staged(choose_hopper(4096, 4608, 64)) == "2,8,1,4,1,3+xs");
  // 2-bit weights from 20 chunks (3584×2560), not 19; 4- and 8-bit keep v29's (2,4,2,4) at 20 chunks.
  CHECK(staged(choose_hopper(3584, 2560, 64, 2)) == "2,8,1,4,1,3+xs");
  CHECK(staged(choose_hopper(3584, 2432, 64, 2)) == "2,4,2,4,1,3+xs");
  for (int bits : {4, 8}) CHECK(staged(choose_hopper(3584, 2560, 64, bits)) == "2,4,2,4,1,3+xs");
  // sm_90a only: sm_80 keeps one row tile (v18), and 20-chunk W2 keeps its block-shared config there.
  CHECK(lowbit::choose_config(g128_problem(4096, 4096, 64), kSm80, 132).m_tiles == 1);
  CHECK(lowbit::choose_config(g128_problem(3584, 2560, 64, 2), kSm80, 132).warps_n == 2);
  // 64 rows only: 128 rows keep v9's 4 row tiles of block-shared activations.
  CHECK(choose_hopper(3584, 4096, 128).warps_n != 1);
}

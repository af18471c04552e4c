// Heuristic v28 (docs/perf-notes.md, forty-fifth session): fitted to the H200's out-of-sample tune of a
// fifth layer set (W4 f16 and bf16) and a bench of bf16 at one row on 4.4-5.8 tiles per SM.
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

namespace {

WqGemmConfig choose_deterministic_hopper(int64_t n, int64_t k, int64_t m) {
  lowbit::WqGemmProblem p = g128_problem(n, k, m);
  p.deterministic = true;
  return lowbit::choose_config(p, lowbit::Arch::parse("sm_90a"), 132);
}
}  // namespace

TEST_CASE("choose_config v28: one row, 6 tiles x 12 warps where 6-tile blocks fill 70-90 % of the SMs",
          "[config][heuristic]") {
  // 5120-wide: 107 blocks of 6 tiles (81 %), 32-256 chunks; f16 and bf16, 3- and 4-bit.
  for (int64_t k : {4096, 5120, 7168, 13824, 32768}) {
    INFO("K = " << k);
    CHECK(staged(choose_hopper(5120, k, 1)) == "1,6,1,12,1,2+xs");
    CHECK(staged(choose_bf16_hopper(5120, k, 1)) == "1,6,1,12,1,2+xs");
  }
  // (3-bit weights take 8 tiles there since v42: heuristic_v42_test.cpp.)
  CHECK(staged(choose_hopper(5120, 7168, 1, 3)) == "1,8,1,12,1,2+xs");
  // The fill bounds: 4424 columns (553 tiles, 93 blocks) in, 4416 (92 blocks, 69.7 %) out; 5664 (118
  // blocks) in, 5672 (119, 90.2 %) out; 6144×4096 (128 blocks) keeps 2 tiles.
  CHECK(choose_hopper(4424, 7168, 1).n_tiles == 6);
  CHECK(choose_hopper(4416, 7168, 1).n_tiles == 2);
  CHECK(choose_hopper(5664, 7168, 1).n_tiles == 6);
  CHECK(choose_hopper(5672, 7168, 1).n_tiles == 2);
  CHECK(staged(choose_hopper(6144, 4096, 1)) == "1,2,1,8,1,2+xs");
  // From 32 chunks: 5120×3968 (31) keeps 2 tiles.
  CHECK(choose_hopper(5120, 3968, 1).n_tiles == 2);
  // One row only, 3/4-bit, sm_90a, not deterministic.
  CHECK(choose_hopper(5120, 7168, 2).warps_k != 12);  // 2-8 rows: v33's 6 tiles × 8 warps
  for (int bits : {2, 8}) CHECK(choose_hopper(5120, 7168, 1, bits).warps_k != 12);
  CHECK(lowbit::choose_config(g128_problem(5120, 7168, 1), kSm80, 132).n_tiles != 6);
  CHECK(choose_deterministic_hopper(5120, 7168, 1).n_tiles != 6);
}

TEST_CASE("choose_config v28: bf16 at one row on 2 staged tiles x 8 warps takes 3 stages over 16 chunks",
          "[config][heuristic]") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{6144, 4096}, {4608, 3584}, {4096, 4096}, {3072, 3072}}) {
    INFO(n << "x" << k);
    CHECK(staged(choose_bf16_hopper(n, k, 1)) == "1,2,1,8,1,3+xs");
    CHECK(choose_hopper(n, k, 1).stages == 2);  // f16 keeps 2
  }
  CHECK(choose_bf16_hopper(6144, 2176, 1).stages == 3);  // 17 chunks
  CHECK(choose_bf16_hopper(6144, 2048, 1).stages == 2);  // 16
  CHECK(choose_bf16_hopper(6144, 4096, 2).stages == 2);
  CHECK(choose_bf16_hopper(6144, 4096, 1, 2).stages == 2);
  // Only on 2-tile blocks: v21's 8-tile bf16 blocks (8192²) and 4-tile staged ones (7168×4096) keep 2.
  CHECK(choose_bf16_hopper(8192, 8192, 1).stages == 2);
  CHECK(choose_bf16_hopper(7168, 4096, 1, 3).stages == 2);
  // Not the 16-warp K-heavy blocks (4096×14336: the tunes' best (1,4,1,16,1,2) on the H200).
  CHECK(choose_bf16_hopper(4096, 14336, 1).stages == 2);
}

TEST_CASE("choose_config v28: the K-heavy split from over 64 chunks on sm_90a", "[config][heuristic]") {
  // 2304×9216 (72 chunks, 72 blocks of 4 tiles): 3 pieces at one and 16 rows, f16 and bf16.
  CHECK(staged(choose_hopper(2304, 9216, 1)) == "1,4,1,8,3,2+xs");
  CHECK(staged(choose_hopper(2304, 9216, 16)) == "1,4,1,4,3,3+xs");
  CHECK(staged(choose_bf16_hopper(2304, 9216, 1)) == "1,4,1,8,3,2+xs");
  CHECK(staged(choose_bf16_hopper(2304, 9216, 16)) == "1,4,1,4,3,3+xs");
  // 2-bit weights too on sm_90a (W2 tune), not 8-bit, nor before sm_90.
  CHECK(staged(choose_hopper(2304, 9216, 1, 2)) == "1,4,1,8,3,2+xs");
  CHECK(staged(choose_hopper(2304, 9216, 16, 2)) == "1,4,1,4,3,3+xs");
  CHECK(choose_hopper(2304, 9216, 16, 8).split_k == 1);
  CHECK(lowbit::choose_config(g128_problem(2304, 16384, 1, 2), kSm80, 132).split_k == 1);
  // sm_90 (no "a") keeps v25's 96 chunks and 3/4 bits.
  const lowbit::Arch sm90 = lowbit::Arch::parse("sm_90");
  CHECK(lowbit::choose_config(g128_problem(2304, 9216, 1), sm90, 132).split_k == 1);
  CHECK(lowbit::choose_config(g128_problem(2304, 16384, 1, 2), sm90, 132).split_k == 1);
  CHECK(lowbit::choose_config(g128_problem(2304, 16384, 1), sm90, 132).split_k == 3);
  CHECK(choose_hopper(2304, 8320, 1).split_k == 3);   // 65 chunks
  CHECK(choose_hopper(2304, 8192, 16).split_k == 1);  // 64
}

TEST_CASE("choose_config v28: 16 rows over 40 tiles per SM take 8 tiles x 2 warps side by side",
          "[config][heuristic]") {
  // (v32: 42248×2176, 331 blocks of 16 tiles, takes 2 warps along K; its test.)
  for (auto [n, k] : {std::pair<int64_t, int64_t>{65536, 5120}, {57344, 8192}, {51200, 2176}}) {
    INFO(n << "x" << k);
    CHECK(staged(choose_hopper(n, k, 16)) == "1,8,2,1,1,3+xs");
    // v31: bf16 with 2 stages; from 32 chunks v65a's 4 warps along K (heuristic_v65_test.cpp).
    CHECK(staged(choose_bf16_hopper(n, k, 16)) == (k >= 4096 ? "1,8,1,4,1,2+xs" : "1,8,2,1,1,2+xs"));
    CHECK(staged(choose_hopper(n, k, 16, 3)) == "1,8,1,4,1,2+xs");  // v44 (heuristic_v42_test.cpp)
  }
  CHECK(choose_hopper(42240, 5120, 16).warps_n == 1);  // 40.0 tiles per SM
  CHECK(choose_hopper(65536, 2048, 16).warps_k == 2);  // 16 chunks: v26's 2 × 2
  for (int bits : {2, 8}) CHECK(staged(choose_hopper(65536, 5120, 16, bits)) != "1,8,2,1,1,3+xs");
  CHECK(lowbit::choose_config(g128_problem(65536, 5120, 16), kSm80, 132).warps_n == 1);
}

TEST_CASE("choose_config v28: one row, 6 tiles x 4 warps where they take tiles off the busiest SM",
          "[config][heuristic]") {
  // 17920×1536 and 18432×2304: 3 blocks of 6 on the busiest SM (18 tiles) against 5 of 4 (20).
  for (auto [n, k] : {std::pair<int64_t, int64_t>{17920, 1536}, {18432, 2304}}) {
    INFO(n << "x" << k);
    CHECK(staged(choose_hopper(n, k, 1)) == "1,6,1,4,1,2+xs");
    CHECK(staged(choose_bf16_hopper(n, k, 1)) == "1,6,1,4,1,2+xs");
  }
  // Not where 6 tiles take none off: 16384×2048 (18 against 16), 22016×2048 (24 against 24); nor on
  // the registers' blocks (17920×5120, 40 chunks: v27 stages only up to 32).
  CHECK(choose_hopper(17920, 5120, 1).n_tiles == 4);
  CHECK(choose_hopper(16384, 2048, 1).n_tiles == 4);
  CHECK(choose_hopper(22016, 2048, 1).n_tiles == 4);
  // 3/4-bit (since v34 at 2-8 rows too, heuristic_v34_test.cpp), sm_90a only.
  CHECK(choose_hopper(18432, 2304, 1, 2).n_tiles != 6);
  CHECK(lowbit::choose_config(g128_problem(18432, 2304, 1), kSm80, 132).n_tiles != 6);
}

// Heuristic v56 (docs/perf-notes.md, seventieth session): 32 rows in 2- and 8-bit weights, fitted to the
// H200's tune of the standard layers at 32 rows and benched in and out of sample.
#include <cstdint>
#include <string>
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
using lowbit::test::wgmma_shape;

TEST_CASE("choose_config v56: 2- and 8-bit weights at 32 rows take v24's and v25's wgmma rules",
          "[config][heuristic]") {
  // Large layers from 9 tiles per SM or 96 chunks: 32-row blocks of two warpgroups; 2-bit weights without
  // the activation image (but in stream K), 8-bit ones with it from 5 tiles per SM, as 4-bit ones.
  CHECK(wgmma_shape(choose_hopper(16384, 16384, 32, 2)) == "2,4,8,1 sk2");
  CHECK(wgmma_shape(choose_hopper(16384, 16384, 32, 8)) == "2,4,8,1 sk2 img");
  CHECK(wgmma_shape(choose_hopper(16384, 16384, 32, 4)) == "2,4,8,1 sk2 img");
  CHECK(wgmma_shape(choose_hopper(8192, 28672, 32, 2)) == "2,4,8,1 sk4");
  CHECK(wgmma_shape(choose_hopper(10240, 8192, 32, 8)) == "2,2,8,1 sK img");
  CHECK(wgmma_shape(choose_hopper(10240, 8192, 32, 2)) == "2,2,8,1 sK img");
  // 3/4-bit weights with bf16 activations: no image either (but in stream K); 8-bit ones keep it.
  CHECK(wgmma_shape(choose_bf16_hopper(16384, 16384, 32)) == "2,4,8,1 sk2");
  CHECK(wgmma_shape(choose_bf16_hopper(28672, 4096, 32, 3)) == "2,4,8,1 sk1");
  CHECK(wgmma_shape(choose_bf16_hopper(10240, 8192, 32)) == "2,2,8,1 sK img");
  CHECK(wgmma_shape(choose_bf16_hopper(16384, 16384, 32, 8)) == "2,4,8,1 sk2 img");
  CHECK(wgmma_shape(choose_bf16_hopper(16384, 16384, 64)).find(" img") != std::string::npos);  // 32 rows only
  // 96 chunks on 3-4 tiles per SM: split 8, no image in any width.
  // (8-bit: v63's one wave of mma.sync blocks since the seventy-seventh session, heuristic_v63_test.cpp.)
  for (int bits : {2, 4}) CHECK(wgmma_shape(choose_hopper(4096, 14336, 32, bits)) == "2,4,8,1 sk8");
  CHECK(wgmma_shape(choose_bf16_hopper(4096, 12288, 32)) == "2,4,8,1 sk8");
  // Under 96 chunks below 9 tiles per SM: mma.sync (4096×12160 is 95 chunks).
  CHECK_FALSE(choose_hopper(4096, 12160, 32, 2).wgmma);
  // Narrow K-heavy layers under 0.7 wave: v25's stream K.
  CHECK(wgmma_shape(choose_hopper(5120, 8192, 32, 2)) == "2,2,8,1 sK");
  CHECK(wgmma_shape(choose_hopper(5120, 8192, 32, 8)) == "2,2,8,1 sK");
  CHECK(wgmma_shape(choose_hopper(2304, 16384, 32, 8)) == "2,2,8,1 sK");
  CHECK(wgmma_shape(choose_hopper(5120, 13824, 32, 8)) == "2,4,8,1 sK");
  // Every group size of 2 and 8 bits (v41); 1 bit follows 2 and 3 follows 4.
  WqGemmProblem per_channel = g128_problem(28672, 4096, 32, 8);
  per_channel.group_size = 0;
  CHECK(wgmma_shape(choose_hopper(per_channel)) == "2,4,8,1 sk1 img");
  CHECK(wgmma_shape(choose_hopper(28672, 4096, 32, 1)) == "2,4,8,1 sk1");
  CHECK(wgmma_shape(choose_hopper(28672, 4096, 32, 3)) == "2,4,8,1 sk1 img");
  // Not at 16 rows, not off sm_90a.
  CHECK_FALSE(choose_hopper(16384, 16384, 16, 2).wgmma);
  CHECK_FALSE(lowbit::choose_config(g128_problem(16384, 16384, 32, 8), kSm80, 108).wgmma);
}

TEST_CASE("choose_config v56: 32-row mma.sync blocks in 2- and 8-bit weights", "[config][heuristic]") {
  // 6-8 tiles per SM: one 32-row block (v24's 4-bit rule).
  for (int bits : {1, 2, 4, 8}) {
    INFO(bits << "-bit");
    CHECK(staged(choose_hopper(8192, 8192, 32, bits)) == "2,8,1,4,1,3+xs");
    CHECK(staged(choose_hopper(7168, 8192, 32, bits)) == "2,8,1,4,1,3+xs");
  }
  // 2-bit weights over 4.2 up to 6 tiles per SM: 6 tiles × 8 warps along K, one 32-row block, 2 stages.
  for (auto [n, k] : {std::pair<int64_t, int64_t>{6144, 4096}, {5120, 4096}, {4608, 3584}, {5632, 2048}}) {
    INFO(n << "x" << k);
    CHECK(staged(choose_hopper(n, k, 32, 2)) == "2,6,1,8,1,2+xs");
    CHECK(staged(choose_hopper(n, k, 32, 1)) == "2,6,1,8,1,2+xs");
    CHECK(staged(choose_hopper(n, k, 32, 4)) == "1,4,1,4,1,3+xs");  // 4-bit keeps two 16-row blocks
    // 8-bit: v61/v62's one 32-row block of 4 tiles, 2 stages (v56: two 16-row blocks, 2 stages).
    CHECK(staged(choose_hopper(n, k, 32, 8)) == "2,4,1,4,1,2+xs");
  }
  // Not where every weight is dequantized before the MMA (groups under 128, float zeros).
  WqGemmProblem g64 = g128_problem(6144, 4096, 32, 2), float_zeros = g64;
  g64.group_size = 64, float_zeros.mode = lowbit::DequantMode::SubFloatZeroThenScale;
  CHECK(staged(choose_hopper(g64)) == "1,4,1,4,1,3+xs");
  CHECK(staged(choose_hopper(float_zeros)) == "1,4,1,4,1,3+xs");
  // The bounds on 132 SMs: from v70 the band starts where 8 × 8's blocks stop fitting one wave, so 4224
  // columns (132 blocks) are out, 4232 and 4432 (4.197 per SM, once v56's lower bound at 4.2) in; 6336 (6.0)
  // in, 6344 (6.008) out; under 16 chunks out (5632×1920 is 15).
  // (8-bit weights take v61/v62's 32-row block over 2 up to 6 tiles per SM.)
  CHECK(staged(choose_hopper(4224, 4096, 32, 2)) == "1,8,1,8,1,3+xs");
  CHECK(staged(choose_hopper(4232, 4096, 32, 2)) == "2,6,1,8,1,2+xs");
  CHECK(staged(choose_hopper(4432, 4096, 32, 2)) == "2,6,1,8,1,2+xs");
  CHECK(staged(choose_hopper(4440, 4096, 32, 2)) == "2,6,1,8,1,2+xs");
  CHECK(staged(choose_hopper(6336, 4096, 32, 2)) == "2,6,1,8,1,2+xs");
  for (int64_t n : {4432, 4440, 6336}) CHECK(staged(choose_hopper(n, 4096, 32, 8)) == "2,4,1,4,1,2+xs");
  for (int bits : {2, 8}) CHECK(staged(choose_hopper(6344, 4096, 32, bits)) == "2,8,1,4,1,3+xs");
  CHECK(staged(choose_hopper(5632, 2048, 32, 2)) == "2,6,1,8,1,2+xs");
  CHECK(staged(choose_hopper(5632, 1920, 32, 2)) == "1,4,1,4,1,3+xs");
  // 8-bit with fp16 accumulation keeps 3 stages (unmeasured there).
  WqGemmProblem w8_f16_accum = g128_problem(6144, 4096, 32, 8);
  w8_f16_accum.accum = lowbit::DType::F16;
  CHECK(choose_hopper(w8_f16_accum).stages == 3);
  // sm_80 keeps its rules: no 6-tile 32-row block, 3 stages for 8-bit, two 16-row blocks at 6-8 tiles per SM
  // (on 108 SMs: 5120 columns are 5.9 tiles per SM, 6144 are 7.1).
  auto ampere = [](int64_t n, int64_t k, int bits) {
    return staged(lowbit::choose_config(g128_problem(n, k, 32, bits), kSm80, 108));
  };
  CHECK(ampere(5120, 4096, 2).rfind("2,6,", 0) != 0);
  CHECK(ampere(5120, 4096, 8).find(",3+xs") != std::string::npos);
  CHECK(ampere(6144, 8192, 2).rfind("1,", 0) == 0);
  CHECK(ampere(6144, 8192, 8).rfind("1,", 0) == 0);
}

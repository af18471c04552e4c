// Heuristic v58 (docs/perf-notes.md, seventy-second session): bf16 at 2-8 rows on wide layers whose 16-tile
// blocks all fit at once and spread evenly, fitted to the H200's W4 bf16 tunes and benched out of sample;
// v59 (seventy-third session) takes 3-bit weights and groups of 256 too.
#include <cstdint>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::DType;
using lowbit::WqGemmProblem;
using lowbit::test::choose_bf16_hopper;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::staged;
using lowbit::test::v5_registers;

TEST_CASE(
    "choose_config v58: bf16 at 2-8 rows takes 16 tiles x 4 warps where those blocks fit evenly at once",
    "[config][heuristic]") {
  // One or two 16-tile blocks a SM, the busiest SM at most 1.3x the mean: 13056-16896 and 26112-33792
  // columns on 132 SMs, from 32 chunks; 2, 4 and 8 rows where the rules before left 4 tiles a warp.
  for (int64_t n : {26624, 27648, 28672, 30720, 33792}) {
    for (int64_t m : {2, 3, 4, 8}) {
      INFO(n << " " << m);
      CHECK(staged(choose_bf16_hopper(n, 8192, m)) == "1,16,1,4,1,2+xs");
    }
  }
  CHECK(staged(choose_bf16_hopper(28672, 4096, 2)) == "1,16,1,4,1,2+xs");
  // Up to one such block a SM (13056-16896 columns) v64 gives them 8 warps along K (heuristic_v64_test.cpp).
  CHECK(staged(choose_bf16_hopper(16384, 16384, 4)) == "1,16,1,8,1,2+xs");
  CHECK(staged(choose_bf16_hopper(13312, 8192, 2)) == "1,16,1,8,1,2+xs");
  // At 8 rows 12-16 tiles a SM take 8 tiles staged (v24) before it: unchanged.
  CHECK(staged(choose_bf16_hopper(14336, 8192, 8)) == "1,8,1,4,1,2+xs");
  WqGemmProblem p = g128_problem(30720, 8192, 4);
  p.act = DType::BF16, p.out = DType::BF16, p.mode = lowbit::DequantMode::Symmetric;
  CHECK(staged(choose_hopper(p)) == "1,16,1,4,1,2+xs");
  // v59: 3-bit weights over one 16-tile block a SM, and groups of 256 too, with integer zeros or none.
  CHECK(staged(choose_bf16_hopper(28672, 8192, 8, 3)) == "1,16,1,4,1,2+xs");
  CHECK(staged(choose_bf16_hopper(16384, 8192, 2, 3)) != "1,16,1,4,1,2+xs");
  CHECK(staged(choose_bf16_hopper(16896, 8192, 2, 3)) != "1,16,1,4,1,2+xs");
  CHECK(staged(choose_bf16_hopper(16384, 8192, 2, 4)) == "1,16,1,8,1,2+xs");
  for (int bits : {3, 4}) {
    for (auto mode : {lowbit::DequantMode::SubZeroThenScale, lowbit::DequantMode::Symmetric}) {
      p = g128_problem(28672, 8192, 2);
      p.act = DType::BF16, p.out = DType::BF16, p.bits = bits, p.mode = mode, p.group_size = 256;
      INFO(bits << " " << static_cast<int>(mode));
      CHECK(staged(choose_hopper(p)) == "1,16,1,4,1,2+xs");
    }
  }
  // The busiest SM over 1.3x the mean (25600: 1.32, 24576 and 12288: 1.375), 3 blocks a SM (34816 on),
  // 28 chunks, one row: unchanged.
  CHECK(choose_bf16_hopper(25600, 8192, 4).n_tiles == 4);
  CHECK(choose_bf16_hopper(24576, 8192, 8).n_tiles == 4);
  CHECK(choose_bf16_hopper(12288, 4096, 2).n_tiles == 4);
  CHECK(choose_bf16_hopper(34816, 8192, 8).n_tiles == 4);
  CHECK(choose_bf16_hopper(40960, 7168, 2).n_tiles == 4);
  CHECK(choose_bf16_hopper(32768, 3584, 8).n_tiles == 4);
  CHECK(choose_bf16_hopper(28672, 8192, 1).n_tiles == 4);
  // fp16, 8-bit weights (at 2 rows: from 8 it takes the 16-row rules), other groups and modes
  // (v5's registers, 4 warps along K, as before: 16 tiles cut to 8 would pass a tile count), deterministic
  // problems, other arches, 16 rows: unchanged.
  CHECK(choose_hopper(28672, 8192, 8).n_tiles != 16);
  CHECK(v5_registers(choose_bf16_hopper(28672, 8192, 2, 8), 2));
  CHECK(choose_bf16_hopper(28672, 8192, 16).n_tiles != 16);
  p = g128_problem(28672, 8192, 8);
  p.act = DType::BF16, p.out = DType::BF16;
  // (4 tiles a warp; the warps along K follow v37's register count: 4 until the seventy-fifth session's
  // bf16 4-bit dequantization took these formats to 74-78 registers, 6 blocks a SM, 2 since; float zeros
  // now stage their activations, as in fp16.)
  for (int group : {64, 0}) {
    p.group_size = group;
    CHECK(v5_registers(choose_hopper(p), 2));
  }
  p.group_size = 128, p.mode = lowbit::DequantMode::SubFloatZeroThenScale;
  CHECK(staged(choose_hopper(p)) == "1,4,1,4,1,2+xs");
  p.mode = lowbit::DequantMode::ScaleThenAddZero;
  CHECK(v5_registers(choose_hopper(p), 2));
  p.mode = lowbit::DequantMode::SubZeroThenScale, p.deterministic = true;
  CHECK(lowbit::choose_config(p, lowbit::Arch::parse("sm_90a"), 132).n_tiles != 16);
  p.deterministic = false;
  CHECK(lowbit::choose_config(p, kSm80, 132).n_tiles != 16);
  CHECK(staged(choose_hopper(p)) == "1,16,1,4,1,2+xs");
}

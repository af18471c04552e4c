// Heuristic v57 (docs/perf-notes.md, seventy-first session): bf16 activations at 9-16 rows on narrow K-heavy
// layers, fitted to the H200's W4 bf16 tune of the preset layers and benched in and out of sample.
#include <cstdint>
#include <string>

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

TEST_CASE("choose_config v57: bf16 at 9-16 rows on narrow K-heavy layers under 0.7 wave splits K in 4",
          "[config][heuristic]") {
  // The config's own blocks fill under 0.7 of the SMs, 64 chunks or more: 4 warps along K, K in 4 pieces;
  // with 2-tile blocks (1280 columns) and 4-tile ones (2304-2816). 4-bit keeps its tiles (v66,
  // heuristic_v66_test.cpp); 3-bit takes v57's 6 tiles, 2 stages.
  for (int64_t n : {1280, 2304, 2560, 2816}) {
    INFO(n);
    CHECK(staged(choose_bf16_hopper(n, 8192, 16, 3)) == "1,6,1,4,4,2+xs");
    CHECK(choose_bf16_hopper(n, 8192, 16).split_k == 4);
  }
  CHECK(staged(choose_bf16_hopper(1280, 16384, 16, 3)) == "1,6,1,4,4,2+xs");
  CHECK(staged(choose_bf16_hopper(1280, 8192, 12, 3)) == "1,6,1,4,4,2+xs");  // the 16-row bucket
  // 2-tile blocks over 0.7 of the SMs (1536, 2048 columns): unsplit, as measured.
  CHECK(staged(choose_bf16_hopper(1536, 8192, 16)) == "1,2,1,8,1,3+xs");
  CHECK(staged(choose_bf16_hopper(2048, 8192, 16)) == "1,2,1,8,1,3+xs");
  // Over 64 chunks with 4-tile blocks v25/v28 split first (2304×16384: in 3, 4 tiles; 2560×16384 in 4, v67).
  CHECK(staged(choose_bf16_hopper(2304, 16384, 16)) == "1,4,1,4,3,3+xs");
  // Under 64 chunks, past the band (3072: 0.73 of the SMs), other rows, fp16, 2/8-bit, per channel, float
  // zeros, deterministic problems, other arches: unchanged.
  CHECK(staged(choose_bf16_hopper(2560, 7168, 16)).find(",1,3+xs") != std::string::npos);
  CHECK(staged(choose_bf16_hopper(3072, 8192, 16)) == "1,4,1,8,1,3+xs");
  CHECK(choose_bf16_hopper(2560, 8192, 8).split_k == 1);
  CHECK(choose_bf16_hopper(2560, 8192, 32).n_tiles != 6);
  CHECK(staged(choose_hopper(2560, 8192, 16)) == "1,4,1,8,1,3+xs");
  CHECK(choose_bf16_hopper(2560, 8192, 16, 2).n_tiles != 6);
  CHECK(choose_bf16_hopper(2560, 8192, 16, 8).n_tiles != 6);
  WqGemmProblem p = g128_problem(2560, 8192, 16);
  p.act = DType::BF16, p.out = DType::BF16;
  p.group_size = 0;
  CHECK(choose_hopper(p).split_k == 1);
  p.group_size = 128, p.mode = lowbit::DequantMode::SubFloatZeroThenScale;
  CHECK(choose_hopper(p).n_tiles != 6);
  p.mode = lowbit::DequantMode::SubZeroThenScale, p.deterministic = true;
  CHECK(lowbit::choose_config(p, lowbit::Arch::parse("sm_90a"), 132).n_tiles != 6);
  p.deterministic = false;
  CHECK(lowbit::choose_config(p, kSm80, 108).split_k == 1);
}

// Heuristics v51/v52 (docs/perf-notes.md, sixty-sixth and sixty-seventh sessions, from H200 benches and
// tunes): over 128 rows (M buckets from 256, prefill) sm_90a runs the warpgroup-MMA kernel, v52's blocks of
// 128 rows × 128 columns with the activation image, 3 stages, K split to fill half the SMs; the mma.sync
// rules' 32- and 64-row blocks ran 1.31-1.80× as long, v51's 64 × 256 blocks 1.04-1.35× the tune's best.
#include <cstdint>
#include <string>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::DequantMode;
using lowbit::DType;
using lowbit::WqGemmProblem;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::wgmma_shape;

TEST_CASE("choose_config v52: wgmma from 256 rows, 128 × 128 blocks with the image", "[config][heuristic]") {
  for (int64_t m : {129, 256, 1000, 4096, 16384}) {
    INFO("m " << m);
    CHECK(wgmma_shape(choose_hopper(8192, 8192, m)) == "8,2,8,1 sk1 img");
    CHECK(wgmma_shape(choose_hopper(28672, 4096, m)) == "8,2,8,1 sk1 img");
    for (int bits : {1, 2, 3, 8}) CHECK(choose_hopper(8192, 8192, m, bits).wgmma);
    CHECK(choose_hopper(8192, 8192, m).stages == 3);
  }
  // Few blocks: K split to fill half the SMs (4096² at 256 rows: 32 × 2 blocks, split 2, the tune's;
  // 1792×5504: 14 × 2, split 4).
  CHECK(wgmma_shape(choose_hopper(4096, 4096, 256)) == "8,2,8,1 sk2 img");
  CHECK(wgmma_shape(choose_hopper(1792, 5504, 256)) == "8,2,8,1 sk4 img");
  CHECK(wgmma_shape(choose_hopper(4096, 4096, 1024)) == "8,2,8,1 sk1 img");
  // Every format the wgmma kernel runs: other groups, modes, bf16.
  for (DequantMode mode :
       {DequantMode::Symmetric, DequantMode::SubFloatZeroThenScale, DequantMode::ScaleThenAddZero})
    for (int group : {32, 64, 0}) {
      WqGemmProblem p = g128_problem(8192, 8192, 512);
      p.mode = mode, p.group_size = group, p.act = p.out = DType::BF16;
      INFO(p.str());
      CHECK(wgmma_shape(choose_hopper(p)) == "8,2,8,1 sk1 img");
    }
}

TEST_CASE("choose_config v53: stream K over 128 rows where the blocks fill under 0.7 of their whole waves",
          "[config][heuristic]") {
  // 10240×8192 at 256 rows: 80 × 2 blocks of 128 × 128 on 132 SMs, 2 whole waves 0.61 full.
  auto streamed = [](int64_t n, int64_t k, int64_t m) {
    const lowbit::WqGemmConfig c = choose_hopper(n, k, m);
    return wgmma_shape(c) == "8,2,8,1 sK img" && c.stages == 4;
  };
  CHECK(streamed(10240, 8192, 256));
  CHECK(streamed(11008, 4096, 256));  // 172 blocks
  CHECK(streamed(5120, 8192, 256));   // 80 blocks, 0.61 wave
  CHECK(streamed(2560, 8192, 1024));  // 160
  CHECK(streamed(1280, 8192, 1024));  // 80
  CHECK(streamed(1280, 8192, 256));   // 20 blocks, K split 4: 80
  // 0.7 wave or fuller: data-parallel.
  CHECK(wgmma_shape(choose_hopper(10240, 8192, 1024)) == "8,2,8,1 sk1 img");  // 640 blocks, 4.85 waves
  CHECK(wgmma_shape(choose_hopper(5120, 8192, 1024)) == "8,2,8,1 sk1 img");   // 320, 2.42
  CHECK(wgmma_shape(choose_hopper(6144, 4096, 256)) == "8,2,8,1 sk1 img");    // 96, 0.73
  CHECK(wgmma_shape(choose_hopper(3584, 18944, 256)) == "8,2,8,1 sk2 img");   // 56 × 2, 0.85
}

TEST_CASE("choose_config v51/v52 leave fp16 accumulation, deterministic problems and sm_80",
          "[config][heuristic]") {
  WqGemmProblem p = g128_problem(8192, 8192, 1024);
  p.accum = DType::F16;
  CHECK_FALSE(choose_hopper(p).wgmma);
  p = g128_problem(8192, 8192, 1024);
  p.deterministic = true;
  CHECK_FALSE(choose_hopper(p).wgmma);
  CHECK_FALSE(lowbit::choose_config(g128_problem(8192, 8192, 1024), kSm80, 108).wgmma);
}

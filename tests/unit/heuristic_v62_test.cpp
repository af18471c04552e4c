// Heuristic v62 (docs/perf-notes.md, seventy-sixth session): 8-bit weights at 33-64 rows run one wave of
// 32-row mma.sync blocks (4 tiles × 4 warps along K, 2 stages) where those blocks make at most 2 a SM, the
// busiest SM at most 1.1× the mean, on 16-64 chunks with the busiest SM taking at most 96 in all; and
// v61's 32-row block at 17-32 rows takes fp16 too.
#include <cstdint>
#include <string>

#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::DequantMode;
using lowbit::WqGemmProblem;
using lowbit::test::choose_bf16_hopper;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::other_formats;
using lowbit::test::staged;

namespace {
const std::string kBlock = "2,4,1,4,1,2+xs";
}

TEST_CASE("choose_config v62: 8-bit weights at 33-64 rows, one wave of 32-row blocks",
          "[config][heuristic]") {
  // In: 240-264 blocks (2 a SM: 3840-4224 columns) up to 48 chunks, 120-132 blocks (1 a SM: 1920-2112
  // columns) up to 64 chunks; both dtypes, M 33-64.
  for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096},
                      {3840, 4096},
                      {4224, 4096},
                      {4096, 6144},
                      {4096, 2048},
                      {2048, 8192},
                      {1920, 8192},
                      {2048, 2048},
                      {2112, 4096}})
    for (int64_t m : {33, 64}) {
      INFO(n << "x" << k << " " << m);
      CHECK(staged(choose_hopper(n, k, m, 8)) == kBlock);
      CHECK(staged(choose_bf16_hopper(n, k, m, 8)) == kBlock);
    }
  // Symmetric weights too.
  WqGemmProblem sym = g128_problem(4096, 4096, 64, 8);
  sym.mode = DequantMode::Symmetric;
  CHECK(staged(choose_hopper(sym)) == kBlock);
  // Out: 4096×8192 (2 a SM × 64 chunks = 128 > 96: 1.07× in the bench), 2048×12288 (96 chunks), 2048×1408
  // (11 chunks), 3584² (224 blocks: 1.18× the mean), 2560×8192 (160), 6144×4096 (384: 3 a SM), 3808 columns
  // (238 blocks, 1.109× the mean), 4256 (266 blocks).
  CHECK(staged(choose_hopper(4096, 8192, 64, 8)) != kBlock);
  CHECK(staged(choose_hopper(2048, 12288, 64, 8)) != kBlock);
  CHECK(staged(choose_hopper(2048, 1408, 64, 8)) != kBlock);
  CHECK(staged(choose_hopper(3584, 3584, 64, 8)) == "2,4,2,4,1,3+xs");
  CHECK(staged(choose_hopper(2560, 8192, 64, 8)) != kBlock);
  CHECK(staged(choose_hopper(6144, 4096, 64, 8)) != kBlock);
  CHECK(staged(choose_hopper(3808, 4096, 64, 8)) != kBlock);
  CHECK(staged(choose_hopper(4256, 4096, 64, 8)) != kBlock);
  // Not other widths, 32 or 128 rows (their own rules), groups other than 128, float zeros, fp16
  // accumulation, deterministic problems, or off sm_90a.
  CHECK(staged(choose_hopper(4096, 4096, 64, 4)) != kBlock);
  CHECK(staged(choose_hopper(4096, 4096, 64, 2)) != kBlock);
  CHECK(staged(choose_hopper(4096, 4096, 128, 8)) != kBlock);
  CHECK(staged(choose_hopper(2048, 8192, 32, 8)) != kBlock);
  for (const WqGemmProblem& q : other_formats(g128_problem(4096, 4096, 64, 8))) {
    INFO(q.str());
    CHECK(staged(choose_hopper(q)) != kBlock);
  }
  CHECK(staged(lowbit::choose_config(g128_problem(4096, 4096, 64, 8), kSm80, 132)) != kBlock);
}

TEST_CASE("choose_config v62: v61's 32-row block at 17-32 rows for fp16 8-bit weights too",
          "[config][heuristic]") {
  // Over one such block a SM (4608-6144 columns); up to one, v63's 8 warps along K (heuristic_v63_test.cpp).
  for (int64_t n : {4608, 5120, 6144})
    for (int64_t k : {2048, 4096})
      for (int64_t m : {17, 32}) {
        INFO(n << "x" << k << " " << m);
        CHECK(staged(choose_hopper(n, k, m, 8)) == kBlock);
      }
  // Not up to 2 tiles per SM (2048 columns), nor over 6 (8192: v24/v56's (2,8,1,4)).
  CHECK(staged(choose_hopper(2048, 4096, 32, 8)) != kBlock);
  CHECK(staged(choose_hopper(8192, 8192, 32, 8)) == "2,8,1,4,1,3+xs");
}

// Heuristic v66 (docs/perf-notes.md, seventy-eighth session): in v57's band (bf16 at 9-16 rows, 64 chunks or
// more, blocks under 0.7 of the SMs), 4-bit weights keep the config's own 2 or 4 tiles a warp, 4 warps along
// K, K in 4 pieces (3 stages with 2 tiles, 2 with 4), not v57's 6 tiles.
#include <cstdint>
#include <string>

#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::DequantMode;
using lowbit::DType;
using lowbit::WqGemmProblem;
using lowbit::test::choose_bf16_hopper;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::staged;
using lowbit::test::with_act;

TEST_CASE("choose_config v66: bf16 4-bit in v57's band keeps 2 or 4 tiles, K in 4 pieces",
          "[config][heuristic]") {
  // The benched layers, both modes: 2-tile blocks (1024-1280 columns) and 4-tile ones (2304-2816).
  for (auto [n, k] : {std::pair<int64_t, int64_t>{1280, 8192}, {1280, 16384}, {1024, 8192}})
    for (int64_t m : {9, 16})
      for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric}) {
        INFO(n << "x" << k << " " << m << " " << static_cast<int>(mode));
        WqGemmProblem p = with_act(g128_problem(n, k, m), DType::BF16);
        p.mode = mode;
        CHECK(staged(choose_hopper(p)) == "1,2,1,4,4,3+xs");
      }
  for (int64_t n : {2304, 2560, 2816})
    for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric}) {
      INFO(n << " " << static_cast<int>(mode));
      WqGemmProblem p = with_act(g128_problem(n, 8192, 16), DType::BF16);
      p.mode = mode;
      CHECK(staged(choose_hopper(p)) == "1,4,1,4,4,2+xs");
    }
  // Outside v57's band nothing changes: under 64 chunks, blocks over 0.7 of the SMs (1536, 3072 columns),
  // v25's split first (2304×16384), fp16, 3-bit (v57's 6 tiles), 8 rows, sm_80.
  CHECK(choose_bf16_hopper(1280, 7168, 16).split_k != 4);
  CHECK(staged(choose_bf16_hopper(1536, 8192, 16)) == "1,2,1,8,1,3+xs");
  CHECK(staged(choose_bf16_hopper(1472, 8192, 16)) == "1,2,1,4,4,3+xs");  // 92 blocks: under 0.7 of 132
  CHECK(choose_bf16_hopper(1480, 8192, 16).split_k == 1);                 // 93
  CHECK(choose_bf16_hopper(1280, 8064, 16).split_k == 1);                 // 63 chunks
  CHECK(staged(choose_bf16_hopper(3072, 8192, 16)) == "1,4,1,8,1,3+xs");
  CHECK(staged(choose_bf16_hopper(2304, 16384, 16)) == "1,4,1,4,3,3+xs");
  CHECK(staged(choose_hopper(1280, 8192, 16)) == "1,2,1,8,1,3+xs");
  CHECK(staged(choose_bf16_hopper(1280, 8192, 16, 3)) == "1,6,1,4,4,2+xs");
  CHECK(choose_bf16_hopper(1280, 8192, 8).split_k != 4);
  const WqGemmProblem p = with_act(g128_problem(1280, 8192, 16), DType::BF16);
  CHECK(lowbit::choose_config(p, kSm80, 108).split_k == 1);
}

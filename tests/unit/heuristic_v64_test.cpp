// Heuristic v64 (docs/perf-notes.md, seventy-seventh session): where v58's 16-tile blocks (bf16 4-bit at
// 2-8 rows) make at most one a SM, they run 8 warps along K.
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

namespace {
const std::string kDeep = "1,16,1,8,1,2+xs";
// A bf16 4-bit problem of the given mode and group.
WqGemmProblem bf16_problem(int64_t n, int64_t k, int64_t m, DequantMode mode, int group) {
  WqGemmProblem p = g128_problem(n, k, m);
  p.act = p.out = DType::BF16;
  p.mode = mode, p.group_size = group;
  return p;
}
}  // namespace

TEST_CASE("choose_config v64: v58's 16-tile blocks at up to one a SM take 8 warps along K",
          "[config][heuristic]") {
  // 102-132 blocks of 16 tiles on 132 SMs (12993-16896 columns: from 102 blocks the busiest SM holds at most
  // 1.3× the mean), 2-4 rows, from 32 chunks: the benched layers and the edges.
  for (int64_t n : {13000, 13056, 13312, 13824, 14336, 15360, 16384, 16896})
    for (int64_t k : {4096, 8192, 16384})
      for (int64_t m : {2, 3, 4}) {
        INFO(n << "x" << k << " " << m);
        CHECK(staged(choose_bf16_hopper(n, k, m)) == kDeep);
      }
  // Symmetric weights and groups of 256 too (v58/v59's formats).
  CHECK(staged(choose_hopper(bf16_problem(14336, 8192, 4, DequantMode::Symmetric, 128))) == kDeep);
  CHECK(staged(choose_hopper(bf16_problem(14336, 8192, 4, DequantMode::SubZeroThenScale, 256))) == kDeep);
  // Not over one a SM (28672 columns: v58's 4 warps), nor at 8 rows (v24's 8 tiles there), nor 3-bit (v59
  // takes 3-bit only over one a SM), nor fp16, nor off sm_90a.
  CHECK(staged(choose_bf16_hopper(28672, 8192, 4)) == "1,16,1,4,1,2+xs");
  CHECK(staged(choose_bf16_hopper(12992, 8192, 4)) != kDeep);  // 102 blocks, the busiest SM 1.3× the mean
  CHECK(staged(choose_bf16_hopper(14336, 3968, 4)) != kDeep);  // 31 chunks: v58 needs 32
  // The SMs scale it: on 114 SMs 14336 columns (112 blocks) take it, 16384 (128) not.
  WqGemmProblem q = bf16_problem(14336, 8192, 4, DequantMode::SubZeroThenScale, 128);
  CHECK(staged(lowbit::choose_config(q, lowbit::Arch::parse("sm_90a"), 114)) == kDeep);
  q.n = 16384;
  CHECK(staged(lowbit::choose_config(q, lowbit::Arch::parse("sm_90a"), 114)) != kDeep);
  CHECK(staged(choose_bf16_hopper(14336, 8192, 8)) == "1,8,1,4,1,2+xs");
  CHECK(staged(choose_bf16_hopper(14336, 8192, 4, 3)) != kDeep);
  CHECK(staged(choose_hopper(14336, 8192, 4, 4)) != kDeep);
  CHECK(staged(lowbit::choose_config(bf16_problem(14336, 8192, 4, DequantMode::SubZeroThenScale, 128), kSm80,
                                     108)) != kDeep);
}

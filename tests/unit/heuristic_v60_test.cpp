// Heuristic v60 (docs/perf-notes.md, seventy-third session): 2-bit weights at 2-8 rows take v58's 16 tiles a
// warp over one 16-tile block a SM where those blocks fit evenly at once, in both dtypes.
#include <cstdint>

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
// The 16-row rules' config before choose_config's shared steps: fit_registers later cuts 16 tiles to 8 where
// the format dequantizes every weight before the MMA, so only this shows whether v60 itself left them out.
lowbit::WqGemmConfig sixteen_rows_rules(const WqGemmProblem& p) {
  namespace wq = lowbit::wq;
  const lowbit::Arch hopper = lowbit::Arch::parse("sm_90a");
  const wq::HeuristicShape h = wq::heuristic_shape(p, 132);
  return wq::sixteen_rows_staged_config(p, h, wq::mma_sync_flags(p, h, hopper));
}
}  // namespace

TEST_CASE("choose_config v60: 2-bit weights at 2-8 rows take 16 tiles a warp where 2 blocks a SM fit evenly",
          "[config][heuristic]") {
  // 133-264 blocks of 16 tiles on 132 SMs, the busiest SM at most 1.3x the mean: 26112-33792 columns.
  for (int64_t n : {26624, 28672, 32768, 33792}) {
    for (int64_t m : {2, 3, 4, 8}) {
      INFO(n << " " << m);
      CHECK(staged(choose_hopper(n, 8192, m, 2)) == "1,16,1,4,1,2+xs");
      CHECK(staged(choose_bf16_hopper(n, 8192, m, 2)) == "1,16,1,4,1,2+xs");
    }
  }
  CHECK(staged(choose_hopper(28672, 4096, 2, 2)) == "1,16,1,4,1,2+xs");
  WqGemmProblem p = g128_problem(28672, 8192, 4, 2);
  for (auto mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric}) {
    for (int group : {128, 256}) {
      p.mode = mode, p.group_size = group;
      INFO(static_cast<int>(mode) << " " << group);
      CHECK(staged(choose_hopper(p)) == "1,16,1,4,1,2+xs");
    }
  }
  // One block a SM or fewer (16384: 0.99-1.03x in the bench; 16896: 132 blocks), the busiest SM over 1.3x the
  // mean (17024: 133 blocks, 1.98; 25600: 1.32; 24576: 1.375), 3 blocks a SM (34816), 28 chunks, one and 16
  // rows: v13's 8 tiles as before.
  CHECK(staged(choose_hopper(16384, 8192, 2, 2)) == "1,8,1,4,1,2+xs");
  CHECK(staged(choose_hopper(16896, 8192, 2, 2)) == "1,8,1,4,1,2+xs");
  CHECK(choose_hopper(17024, 8192, 2, 2).n_tiles != 16);
  CHECK(choose_hopper(25600, 8192, 4, 2).n_tiles == 8);
  CHECK(choose_hopper(24576, 8192, 4, 2).n_tiles == 8);
  CHECK(choose_hopper(34816, 8192, 4, 2).n_tiles == 8);
  CHECK(choose_hopper(28672, 3584, 4, 2).n_tiles != 16);
  CHECK(choose_hopper(28672, 8192, 1, 2).n_tiles != 16);
  CHECK(choose_hopper(28672, 8192, 16, 2).n_tiles == 8);
  // 1-bit (unmeasured), other groups and modes, fp16 accumulation: v60 leaves them 8 tiles (and fit_registers
  // would cut 16 to 8 in the modes and groups that dequantize every weight), deterministic problems and sm_80
  // never reach it.
  CHECK(choose_hopper(28672, 8192, 4, 1).n_tiles != 16);
  p = g128_problem(28672, 8192, 4, 2);
  CHECK(sixteen_rows_rules(p).n_tiles == 16);
  for (int group : {64, 0}) {
    p.group_size = group;
    INFO(group);
    CHECK(sixteen_rows_rules(p).n_tiles == 8);
    CHECK(choose_hopper(p).n_tiles != 16);
  }
  p.group_size = 128;
  for (auto mode : {DequantMode::SubFloatZeroThenScale, DequantMode::ScaleThenAddZero}) {
    p.mode = mode;
    INFO(static_cast<int>(mode));
    CHECK(sixteen_rows_rules(p).n_tiles == 8);
    CHECK(choose_hopper(p).n_tiles != 16);
  }
  p.mode = DequantMode::SubZeroThenScale, p.accum = DType::F16;
  CHECK(sixteen_rows_rules(p).n_tiles == 8);
  CHECK(choose_hopper(p).n_tiles != 16);
  p.accum = DType::F32, p.deterministic = true;
  CHECK(choose_hopper(p).n_tiles != 16);
  p.deterministic = false;
  CHECK(lowbit::choose_config(p, kSm80, 132).n_tiles != 16);
  CHECK(staged(choose_hopper(p)) == "1,16,1,4,1,2+xs");
}

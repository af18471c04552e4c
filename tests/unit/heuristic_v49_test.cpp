// Heuristic v49 (docs/perf-notes.md, sixty-sixth session, from an H200 tune of float zeros at one row on wide
// layers): 4-bit float zeros (HQQ) at 1-8 rows, where the rules before leave 2 warps along K (over 4 blocks
// of 4 tiles a SM), take 4 warps along K with activations staged per warp.
#include <cstdint>
#include <utility>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::DequantMode;
using lowbit::DType;
using lowbit::WqGemmProblem;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::staged;
using lowbit::test::v5_registers;

namespace {
WqGemmProblem float_zeros(int64_t n, int64_t k, int64_t m, int group, DType act = DType::F16, int bits = 4) {
  WqGemmProblem p = g128_problem(n, k, m, bits);
  p.mode = DequantMode::SubFloatZeroThenScale, p.group_size = group, p.act = act, p.out = act;
  return p;
}
using Layers = std::initializer_list<std::pair<int64_t, int64_t>>;
}  // namespace

TEST_CASE("choose_config v49: 4-bit float zeros at one row over 4 blocks a SM stage 4 warps along K",
          "[config][heuristic]") {
  // The tuned layers: v5's registers past the wave (over 32 chunks) and v27's staged config (up to 32).
  for (auto [n, k] :
       Layers{{28672, 4096}, {28672, 5120}, {28672, 8192}, {32768, 5120}, {37888, 3584}, {22016, 4096}})
    for (int group : {32, 64, 128, 256}) {
      INFO(n << "x" << k << " g" << group);
      CHECK(staged(choose_hopper(float_zeros(n, k, 1, group))) == "1,4,1,4,1,2+xs");
    }
  // bf16 past its wave (7 blocks of 4 tiles a SM for g64: 32768 wide is 7.8) and on 32 chunks.
  CHECK(staged(choose_hopper(float_zeros(32768, 8192, 1, 64, DType::BF16))) == "1,4,1,4,1,2+xs");
  CHECK(staged(choose_hopper(float_zeros(28672, 4096, 1, 64, DType::BF16))) == "1,4,1,4,1,2+xs");
  // Inside the wave the registers' 4 warps stay (24576×5120: 6 blocks a SM; per channel 7, so 28672 wide).
  CHECK(v5_registers(choose_hopper(float_zeros(24576, 5120, 1, 64)), 4));
  CHECK(v5_registers(choose_hopper(float_zeros(28672, 5120, 1, 0)), 4));
  CHECK(staged(choose_hopper(float_zeros(32768, 5120, 1, 0))) == "1,4,1,4,1,2+xs");
}

TEST_CASE("choose_config v49 leaves other modes, 3-bit weights, deterministic problems and sm_80",
          "[config][heuristic]") {
  // Integer zeros and q·s + z keep 2 warps past their waves (28672×8192: 6.8 blocks a SM).
  WqGemmProblem zp = g128_problem(32768, 8192, 1);
  CHECK(choose_hopper(zp).warps_k == 2);
  WqGemmProblem sz = float_zeros(32768, 8192, 1, 64);
  sz.mode = DequantMode::ScaleThenAddZero;
  CHECK(choose_hopper(sz).warps_k == 2);
  // 3-bit weights (v40's 8 tiles).
  CHECK(staged(choose_hopper(float_zeros(40960, 8192, 1, 64, DType::F16, 3))) == "1,8,1,4,1,2+xs");
  WqGemmProblem det = float_zeros(28672, 8192, 1, 64);
  det.deterministic = true;
  CHECK(choose_hopper(det).warps_k != 4);
  CHECK(lowbit::choose_config(float_zeros(28672, 8192, 1, 64), kSm80, 108).warps_k != 4);
}

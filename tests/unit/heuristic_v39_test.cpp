// Heuristics v39-v41 (docs/perf-notes.md, sixty-second session, from out-of-sample H200 tunes in formats
// beyond 4-bit g128): the wgmma rules for 3-bit and 1-bit weights and for 2/8-bit weights of every group
// size; 3-bit weights at one row staged with 8 tiles a warp past the 4-warp register wave.
#include <cstdint>
#include <optional>
#include <utility>

#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::DequantMode;
using lowbit::DType;
using lowbit::WqGemmConfig;
using lowbit::WqGemmProblem;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::staged;
using lowbit::test::v5_registers;
using lowbit::test::wgmma_shape;

namespace {
const lowbit::Arch kHopper = lowbit::Arch::parse("sm_90a");

std::optional<WqGemmConfig> wgmma_choice(const WqGemmProblem& p) {
  return lowbit::wq::choose_wgmma_config(p, kHopper, 132);
}

// The layers both rules are checked on (the tuned four first), N × K.
constexpr std::pair<int64_t, int64_t> kLayers[] = {{5120, 4096},  {8192, 6144}, {6144, 16384}, {28672, 5120},
                                                   {4096, 14336}, {2304, 9216}, {22016, 2048}, {9216, 3072}};

// Whether `p` runs wgmma; checks that `same_as` gets the same choice (or none either).
bool same_wgmma_choice(const WqGemmProblem& p, const WqGemmProblem& same_as) {
  INFO(p.str() << " as " << same_as.str());
  const auto c = wgmma_choice(p), c_as = wgmma_choice(same_as);
  REQUIRE(c.has_value() == c_as.has_value());
  if (c) CHECK(*c == *c_as);
  return c.has_value();
}
}  // namespace

TEST_CASE("choose_config v39: 3-bit weights take the 4-bit wgmma rules, 8-bit per channel the g128 ones",
          "[config][heuristic]") {
  int wgmma_3 = 0, wgmma_8 = 0;
  for (auto [n, k] : kLayers) {
    for (int64_t m : {32, 64, 128}) {
      for (int group : {32, 64, 128, 0}) {
        WqGemmProblem p3 = g128_problem(n, k, m, 3), p4 = g128_problem(n, k, m, 4);
        p3.group_size = p4.group_size = group;
        wgmma_3 += same_wgmma_choice(p3, p4);
      }
      WqGemmProblem pc = g128_problem(n, k, m, 8), g128 = g128_problem(n, k, m, 8);
      pc.group_size = 0, pc.mode = DequantMode::Symmetric, g128.mode = DequantMode::Symmetric;
      wgmma_8 += same_wgmma_choice(pc, g128);
    }
  }
  // Not vacuous: most of these layers run wgmma at 64 and 128 rows.
  CHECK(wgmma_3 >= 40);
  CHECK(wgmma_8 >= 10);
  // The tuned layers: the tuner's best tile and split (stages aside).
  CHECK(wgmma_shape(choose_hopper(g128_problem(8192, 6144, 64, 3))) == "4,2,8,1 sk2 img");
  CHECK(wgmma_shape(choose_hopper(g128_problem(28672, 5120, 64, 3))) == "4,4,8,1 sk1 img");
  WqGemmProblem w8 = g128_problem(28672, 5120, 64, 8);
  w8.group_size = 0, w8.mode = DequantMode::Symmetric;
  CHECK(wgmma_shape(choose_hopper(w8)) == "4,4,8,1 sk1 img");
}

TEST_CASE("choose_config v41: 1-bit weights take the 2-bit wgmma rules, 2/8-bit of every group the g128 ones",
          "[config][heuristic]") {
  int wgmma_1 = 0, wgmma_groups = 0;
  for (auto [n, k] : kLayers) {
    for (int64_t m : {32, 64, 128}) {
      wgmma_1 += same_wgmma_choice(g128_problem(n, k, m, 1), g128_problem(n, k, m, 2));
      for (int bits : {2, 8})
        for (int group : {32, 64, 0}) {
          WqGemmProblem p = g128_problem(n, k, m, bits);
          p.group_size = group;
          wgmma_groups += same_wgmma_choice(p, g128_problem(n, k, m, bits));
        }
    }
  }
  CHECK(wgmma_1 >= 8);
  CHECK(wgmma_groups >= 60);
  // The tuned layers (8192×6144 and 28672×5120 at 64 rows): the tuner's best tile and split.
  for (auto [bits, group] : {std::pair{1, 128}, {2, 64}, {8, 64}}) {
    WqGemmProblem p = g128_problem(8192, 6144, 64, bits);
    p.group_size = group;
    CHECK(wgmma_shape(choose_hopper(p)) == "4,2,8,1 sk2 img");
    p.n = 28672, p.k = 5120;
    CHECK(wgmma_shape(choose_hopper(p)) == "4,4,8,1 sk1 img");
  }
}

TEST_CASE("choose_config v40: 3-bit weights at one row past the 4-warp wave stage 8 tiles a warp",
          "[config][heuristic]") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{28672, 5120},
                      {32768, 6144},
                      {40960, 7168},
                      {45056, 8192},
                      {73728, 4608}}) {
    for (DType act : {DType::F16, DType::BF16}) {
      WqGemmProblem p = g128_problem(n, k, 1, 3);
      p.act = p.out = act;
      CHECK(staged(choose_hopper(p)) == "1,8,1,4,1,2+xs");
      // Not from 2 rows, not for 4-bit weights, not on sm_80, not in deterministic mode.
      p.m = 2;
      CHECK(staged(choose_hopper(p)) != "1,8,1,4,1,2+xs");
      p.m = 1, p.bits = 4;
      CHECK(staged(choose_hopper(p)) != "1,8,1,4,1,2+xs");
      p.bits = 3;
      CHECK(staged(lowbit::choose_config(p, lowbit::test::kSm80, 132)) != "1,8,1,4,1,2+xs");
      p.deterministic = true;
      CHECK(staged(choose_hopper(p)) != "1,8,1,4,1,2+xs");
    }
  }
  // Within the wave its registers allow (3-bit symmetric g64 at one row: 72, 7 blocks a SM) v37's 4 warps
  // stay.
  WqGemmProblem sym = g128_problem(20480, 8192, 1, 3);
  sym.mode = DequantMode::Symmetric, sym.group_size = 64;
  CHECK(v5_registers(choose_hopper(sym), 4));
  // Up to 32 chunks other rules decide.
  CHECK(staged(choose_hopper(g128_problem(28672, 4096, 1, 3))) != "1,8,1,4,1,2+xs");
}

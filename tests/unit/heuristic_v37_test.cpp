// Heuristic v37 (docs/perf-notes.md, sixty-first session): v36's first rule (4 warps along K where the
// 4-warp register blocks fit in one wave) for every format that reaches v5's registers config, with the
// wave its registers allow (wq::four_warp_register_blocks_per_sm); and the registers themselves, from
// real compiles, so that a template change that outgrows the rule's count fails here.
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "jit/context.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "support/test_support.hpp"
#include "unit/heuristic_helpers.hpp"
#include "unit/unit_helpers.hpp"

using lowbit::DequantMode;
using lowbit::DType;
using lowbit::WqGemmConfig;
using lowbit::WqGemmProblem;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::staged;
using lowbit::test::v5_registers;

namespace {

WqGemmProblem format(DType act, DequantMode mode, int group, int bits, DType accum = DType::F32) {
  WqGemmProblem p = g128_problem(24576, 8192, 1, bits);
  p.act = act, p.out = act, p.mode = mode, p.group_size = group, p.accum = accum;
  return p;
}

// Every format the rule could see: both activations, the four modes, groups 32-256 and per channel,
// 3/4/8-bit weights, and fp16 accumulation (fp16 activations).
std::vector<WqGemmProblem> formats() {
  std::vector<WqGemmProblem> all;
  for (DType act : {DType::F16, DType::BF16})
    for (DType accum : {DType::F32, DType::F16})
      for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric,
                               DequantMode::SubFloatZeroThenScale, DequantMode::ScaleThenAddZero})
        for (int group : {32, 64, 128, 256, 0})
          for (int bits : {3, 4, 8})
            if (act == DType::F16 || accum == DType::F32)
              all.push_back(format(act, mode, group, bits, accum));
  return all;
}
}  // namespace

TEST_CASE("choose_config v37: every 3/4/8-bit format takes 4 warps along K within its wave",
          "[config][heuristic]") {
  const int sms = 132;
  for (int64_t m : {1, 2, 4, 8}) {
    for (WqGemmProblem p : formats()) {
      p.m = m;
      const int64_t blocks_per_sm = lowbit::wq::four_warp_register_blocks_per_sm(p, lowbit::m_bucket(m));
      INFO(p.str() << ": " << blocks_per_sm << " blocks a SM");
      // Past the wave 3-bit weights at one row stage 8 tiles a warp (v40, heuristic_v39_test.cpp), 4-bit
      // float zeros at 1-8 rows 4 tiles in 4 warps (v49, heuristic_v49_test.cpp).
      auto past_wave = [&](const WqGemmConfig& c) {
        if (m == 1 && p.bits == 3) return staged(c) == "1,8,1,4,1,2+xs";
        if (p.bits == 4 && p.mode == DequantMode::SubFloatZeroThenScale) return staged(c) == "1,4,1,4,1,2+xs";
        return v5_registers(c, 2);
      };
      if (blocks_per_sm == 0) {
        // Unmeasured (groups of 256 with bf16 or float zeros): v5's 2 warps.
        p.n = 24576;
        CHECK(past_wave(choose_hopper(p)));
        continue;
      }
      // From 2 rows the rules before stage 8-bit layers up to 5 blocks a SM: the rule acts at one row.
      if (p.bits == 8 && m > 1) continue;
      // The last layer of 4-column-tile blocks that fits in one wave takes 4 warps; one more block, 2
      // (v36's 3-warp rule aside: fp16 4-bit g128 integer zeros from 2 rows).
      const bool v36_three = p.bits == 4 && p.group_size == 128 && p.mode == DequantMode::SubZeroThenScale &&
                             p.accum == DType::F32 && p.act == DType::F16 && m > 1;
      p.n = blocks_per_sm * sms * 32;
      CHECK(v5_registers(choose_hopper(p), 4));
      p.n += 32;
      CHECK((v36_three ? v5_registers(choose_hopper(p), 3) : past_wave(choose_hopper(p))));
      // Up to 32 chunks other rules decide (v27 stages those layers).
      p.n = 24576, p.k = 4096;
      CHECK(!v5_registers(choose_hopper(p), 4));
      p.k = 8192;
      // sm_90a only, and not in deterministic mode.
      CHECK(!v5_registers(lowbit::choose_config(p, lowbit::test::kSm80, sms), 4));
      p.deterministic = true;
      CHECK(!v5_registers(choose_hopper(p), 4));
    }
  }
  // The counts measured: 8-bit up to 5 blocks a SM, v36's format 7 (bf16 from 2 rows 6), the rest 6.
  using lowbit::wq::four_warp_register_blocks_per_sm;
  CHECK(four_warp_register_blocks_per_sm(format(DType::F16, DequantMode::SubZeroThenScale, 128, 8), 1) == 5);
  CHECK(four_warp_register_blocks_per_sm(format(DType::F16, DequantMode::SubZeroThenScale, 128, 4), 8) == 7);
  CHECK(four_warp_register_blocks_per_sm(format(DType::BF16, DequantMode::SubZeroThenScale, 128, 4), 1) == 7);
  CHECK(four_warp_register_blocks_per_sm(format(DType::BF16, DequantMode::SubZeroThenScale, 128, 4), 2) == 6);
  CHECK(four_warp_register_blocks_per_sm(format(DType::F16, DequantMode::Symmetric, 128, 3), 4) == 6);
  // 4-bit g128 with integer or no zeros at one row: 7 in either dtype and accumulation; symmetric from 2
  // rows 6.
  CHECK(four_warp_register_blocks_per_sm(format(DType::F16, DequantMode::Symmetric, 128, 4), 1) == 7);
  CHECK(four_warp_register_blocks_per_sm(format(DType::BF16, DequantMode::Symmetric, 128, 4), 1) == 7);
  CHECK(four_warp_register_blocks_per_sm(format(DType::F16, DequantMode::Symmetric, 128, 4), 2) == 6);
  CHECK(four_warp_register_blocks_per_sm(
            format(DType::F16, DequantMode::SubZeroThenScale, 128, 4, DType::F16), 1) == 7);
  CHECK(four_warp_register_blocks_per_sm(
            format(DType::F16, DequantMode::SubZeroThenScale, 128, 4, DType::F16), 2) == 6);
  CHECK(four_warp_register_blocks_per_sm(format(DType::F16, DequantMode::ScaleThenAddZero, 128, 4), 1) == 6);
  CHECK(four_warp_register_blocks_per_sm(format(DType::BF16, DequantMode::ScaleThenAddZero, 256, 4), 1) == 0);
  CHECK(four_warp_register_blocks_per_sm(format(DType::F16, DequantMode::SubFloatZeroThenScale, 256, 4), 1) ==
        0);
  CHECK(four_warp_register_blocks_per_sm(format(DType::F16, DequantMode::ScaleThenAddZero, 256, 4), 1) == 6);
  CHECK(four_warp_register_blocks_per_sm(g128_problem(24576, 8192, 1, 2), 1) == 0);
  // v38: every other 3/4-bit format at up to 72 registers, 7 (per channel from 2 rows; 3-bit fp16 symmetric
  // g64 from 2 rows; fp16 accumulation), 73-80 6 (bf16 g64 integer zeros at every bucket: 7 until the
  // seventy-fifth session's dequantization, which takes it to 76-78).
  for (int64_t bucket : {1, 2, 8})
    CHECK(four_warp_register_blocks_per_sm(format(DType::BF16, DequantMode::SubZeroThenScale, 64, 4),
                                           bucket) == 6);
  CHECK(four_warp_register_blocks_per_sm(format(DType::BF16, DequantMode::SubZeroThenScale, 64, 3), 2) == 7);
  CHECK(four_warp_register_blocks_per_sm(format(DType::F16, DequantMode::SubZeroThenScale, 0, 4), 1) == 6);
  CHECK(four_warp_register_blocks_per_sm(format(DType::F16, DequantMode::SubZeroThenScale, 0, 4), 2) == 7);
  CHECK(four_warp_register_blocks_per_sm(format(DType::F16, DequantMode::Symmetric, 64, 3), 4) == 7);
  CHECK(four_warp_register_blocks_per_sm(format(DType::F16, DequantMode::Symmetric, 64, 4, DType::F16), 8) ==
        7);
  CHECK(four_warp_register_blocks_per_sm(format(DType::F16, DequantMode::SubZeroThenScale, 64, 4), 1) == 6);
  CHECK(four_warp_register_blocks_per_sm(format(DType::BF16, DequantMode::SubFloatZeroThenScale, 64, 4), 2) ==
        6);
}

TEST_CASE("v37's blocks per SM fit the registers ptxas gives each format's 4-warp register config",
          "[config][heuristic][nvrtc]") {
  // 65536 registers a SM, allocated 8 a thread at a time, for blocks of 128 threads; shared memory:
  // 228 KiB a SM, 1 KiB of it reserved per block.
  lowbit::test::TempDir dir;
  lowbit::Runtime rt(lowbit::test::offline_options("sm_90a", dir.path));
  auto& ctx = rt.context();
  WqGemmConfig c = lowbit::wq::base_config(1, 4, 4, 2);
  std::vector<lowbit::jit::KernelSpec> specs;
  std::vector<std::pair<WqGemmProblem, int64_t>> cases;
  for (int64_t bucket : {1, 2, 4, 8}) {
    for (WqGemmProblem p : formats()) {
      p.m = bucket;
      const int64_t blocks = lowbit::wq::four_warp_register_blocks_per_sm(p, bucket);
      if (blocks == 0 || !lowbit::can_implement(p, c, rt.arch())) continue;
      specs.push_back(lowbit::wq::kernel_spec(p, c, bucket, false));
      cases.emplace_back(p, blocks);
    }
  }
  REQUIRE(cases.size() >= 600);
  const auto errors = ctx.compile_all(specs);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& [p, blocks] = cases[i];
    INFO(p.str() << " bucket " << lowbit::m_bucket(p.m) << ": the rule counts " << blocks << " blocks a SM");
    REQUIRE(!errors[i]);
    const std::string log = ctx.compile(specs[i])->log;
    std::smatch m;
    REQUIRE(std::regex_search(log, m, std::regex(R"(Used (\d+) registers)")));
    const int64_t regs = std::stol(m[1]);
    INFO(regs << " registers, log: " << log);
    CHECK((regs + 7) / 8 * 8 * 128 * blocks <= 65536);
    // The table the count comes from (3/4-bit) holds at least what ptxas gives: after a template change,
    // copy the new counts into src/kernels/wq_gemm_registers.cpp.
    if (p.bits != 8) CHECK(lowbit::wq::four_warp_register_config_registers(p, lowbit::m_bucket(p.m)) >= regs);
    CHECK(static_cast<int64_t>(lowbit::wq::smem_bytes(p, c, rt.arch()) + 1024) * blocks <= 228 * 1024);
  }
}

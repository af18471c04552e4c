// Heuristic v65 (docs/perf-notes.md, seventy-eighth session): 4-bit at 9-16 rows on two bands of wide layers,
// where the shipped file's bench had the heuristic over 1.15× the served config.
// v65a: bf16 between v32's exceptions (3-4 blocks of 16 tiles a SM) from 32 chunks: (1,8,1,4,1,2).
// v65b: 2.75-3 blocks of 12 tiles a SM where v9's (1,4,1,4) stood: (1,6,2,2,1,2), both dtypes.
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
using lowbit::test::other_formats;
using lowbit::test::staged;
using lowbit::test::with_act;

namespace {
const std::string kV65a = "1,8,1,4,1,2+xs", kV65b = "1,6,2,2,1,2+xs";
}  // namespace

TEST_CASE("choose_config v65a: bf16 4-bit at 9-16 rows, 3-4 blocks of 16 tiles a SM, 4 warps along K",
          "[config][heuristic]") {
  // The benched layers (51200-65536 columns: 400-512 blocks of 16 tiles on 132 SMs), and the band's edges:
  // 50688 columns are 396 blocks (v32's 2 warps along K), 67584 are 528 (in), 67592 are 529 (v32's 6 tiles).
  for (auto [n, k] : {std::pair<int64_t, int64_t>{51200, 5120},
                      {57344, 8192},
                      {65536, 5120},
                      {53248, 6144},
                      {61440, 4096},
                      {67584, 4096},
                      {50696, 4096}})
    for (int64_t m : {9, 12, 16}) {
      INFO(n << "x" << k << " " << m);
      CHECK(staged(choose_bf16_hopper(n, k, m)) == kV65a);
      WqGemmProblem sym = with_act(g128_problem(n, k, m), DType::BF16);
      sym.mode = DequantMode::Symmetric;
      CHECK(staged(choose_hopper(sym)) == kV65a);
    }
  CHECK(staged(choose_bf16_hopper(50688, 4096, 16)) == "1,8,2,2,1,2+xs");
  CHECK(staged(choose_bf16_hopper(67592, 4096, 16)) == "1,6,1,2,1,2+xs");
  // Under 32 chunks v31's pair sharing stays; fp16 keeps v28's 3 stages; 3-bit, other formats, 8 rows (the
  // few-row rules) and sm_80 are not v65a's (3-bit has v44's own (1,8,1,4,1,2) there).
  CHECK(staged(choose_bf16_hopper(57344, 3968, 16)) == "1,8,2,1,1,2+xs");
  CHECK(staged(choose_hopper(57344, 8192, 16)) == "1,8,2,1,1,3+xs");
  CHECK(staged(choose_bf16_hopper(57344, 8192, 8)) != kV65a);
  for (const WqGemmProblem& o : other_formats(with_act(g128_problem(57344, 8192, 16), DType::BF16))) {
    if (o.accum == DType::F16) continue;  // fp16 accumulation takes fp16 activations
    INFO(o.group_size << " " << static_cast<int>(o.mode) << " " << o.deterministic);
    CHECK(staged(choose_hopper(o)) != kV65a);
  }
  CHECK(staged(lowbit::choose_config(with_act(g128_problem(57344, 8192, 16), DType::BF16), kSm80, 132)) !=
        kV65a);
}

TEST_CASE(
    "choose_config v65b: 4-bit at 9-16 rows, 2.75-3 blocks of 12 tiles a SM: 6 tiles x 2 side by side "
    "x 2 along K",
    "[config][heuristic]") {
  // The benched layers (363-395 blocks of 12 tiles on 132 SMs) in both dtypes and GPTQ symmetric, and the
  // edges: 34760 columns are 363 blocks (2.75 a SM, in), 34752 are 362 (out); 38016 are 396 (in), 38024 397.
  for (auto [n, k] : {std::pair<int64_t, int64_t>{37888, 3584},
                      {36864, 4096},
                      {35840, 5120},
                      {37888, 8192},
                      {34816, 3584},
                      {34760, 4096},
                      {38016, 4096}})
    for (int64_t m : {9, 16})
      for (DType act : {DType::F16, DType::BF16}) {
        INFO(n << "x" << k << " " << m << " " << static_cast<int>(act));
        WqGemmProblem p = with_act(g128_problem(n, k, m), act);
        CHECK(staged(choose_hopper(p)) == kV65b);
        p.mode = DequantMode::Symmetric;
        CHECK(staged(choose_hopper(p)) == kV65b);
      }
  CHECK(staged(choose_hopper(34752, 4096, 16)) == "1,4,1,4,1,2+xs");
  CHECK(staged(choose_hopper(38024, 4096, 16)) == "1,4,1,4,1,2+xs");
  // 28672×4096 (2.26 a SM, where it lost 1.11-1.21×) and under 28 chunks keep v9's; 2-, 3- and 8-bit, other
  // formats, 8 rows and sm_80 are not v65b's.
  CHECK(staged(choose_hopper(28672, 4096, 16)) == "1,4,1,4,1,2+xs");
  CHECK(staged(choose_hopper(37888, 3456, 16)) != kV65b);  // 27 chunks
  for (int bits : {2, 3, 8}) CHECK(staged(choose_hopper(37888, 3584, 16, bits)) != kV65b);
  CHECK(staged(choose_hopper(37888, 3584, 8)) != kV65b);
  for (const WqGemmProblem& o : other_formats(g128_problem(37888, 3584, 16))) {
    INFO(o.group_size << " " << static_cast<int>(o.mode) << " " << o.deterministic);
    CHECK(staged(choose_hopper(o)) != kV65b);
  }
  CHECK(staged(lowbit::choose_config(g128_problem(37888, 3584, 16), kSm80, 132)) != kV65b);
  // The SMs scale it: on 114 SMs 32768 columns (342 blocks: 3.0 a SM) take it, 37888 (395: 3.5) not.
  CHECK(staged(lowbit::choose_config(g128_problem(32768, 4096, 16), lowbit::Arch::parse("sm_90a"), 114)) ==
        kV65b);
  CHECK(staged(lowbit::choose_config(g128_problem(37888, 4096, 16), lowbit::Arch::parse("sm_90a"), 114)) !=
        kV65b);
}

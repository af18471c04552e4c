// Heuristic v35 (docs/perf-notes.md, fifty-second session): bf16 on the widest layers at 2-8 rows, fitted to
// benches of both GPUs (51200-73728 columns).
#include <cstdint>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::WqGemmProblem;
using lowbit::test::choose_bf16_hopper;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::staged;

namespace {
constexpr const char* kSix = "1,6,1,4,1,2+xs";      // six tiles × 4 warps along K
constexpr const char* kSixteen = "1,8,2,1,1,3+xs";  // 8 tiles × 2 warps side by side, 3 stages
// What v34 kept there: 8 tiles × 2 warps along K, activations in registers.
bool registers(const lowbit::WqGemmConfig& c) {
  return !c.x_shared && c.n_tiles == 8 && c.warps_n == 1 && c.warps_k == 2 && c.stages == 2;
}
}  // namespace

TEST_CASE("choose_config v35: bf16 on the widest layers at 2-8 rows leaves the registers",
          "[config][heuristic]") {
  for (int64_t m : {2, 3, 4, 8}) {
    INFO("M = " << m);
    // Six tiles where they take a tenth or more off the busiest SM: 51200×5120 (54 tiles against 64),
    // 73728×4608 (72 against 80: exactly a tenth), 3-bit too.
    CHECK(staged(choose_bf16_hopper(51200, 5120, m)) == kSix);
    CHECK(staged(choose_bf16_hopper(73728, 4608, m)) == kSix);
    CHECK(staged(choose_bf16_hopper(51200, 5120, m, 3)) == kSix);
    // Else 16-tile blocks: 65536×5120 (66 against 64), 57344×5120 (60 against 64), and over 48 chunks
    // (57344×8192, 51200×6272; 51200×6144, 48 chunks, keeps six).
    CHECK(staged(choose_bf16_hopper(65536, 5120, m)) == kSixteen);
    CHECK(staged(choose_bf16_hopper(57344, 5120, m)) == kSixteen);
    CHECK(staged(choose_bf16_hopper(57344, 8192, m)) == kSixteen);
    CHECK(staged(choose_bf16_hopper(51200, 6272, m)) == kSixteen);
    CHECK(staged(choose_bf16_hopper(51200, 6144, m)) == kSix);
    // Bounds: over 12 blocks of 4 tiles per SM (from 50689 columns) in, up to 5 blocks of 16 per SM (84480)
    // in, 84488 out. Below, the registers' 4 tiles × 2 warps along K stay (37888×5120; 50688×5120 at 2-4
    // rows; 8 rows there has v33's rule).
    CHECK(choose_bf16_hopper(50696, 5120, m).x_shared);
    CHECK(staged(choose_bf16_hopper(84480, 5120, m)) == kSixteen);
    CHECK(registers(choose_bf16_hopper(84488, 5120, m)));
    CHECK_FALSE(choose_bf16_hopper(37888, 5120, m).x_shared);
    if (m < 8) CHECK_FALSE(choose_bf16_hopper(50688, 5120, m).x_shared);
    // f16 keeps the registers (its tunes had them within 1.06×). 2- and 8-bit weights are not this rule's:
    // at 40 chunks other rules stage them in other configs, and 8-bit ones under 32 chunks at 2-4 rows
    // keep the registers.
    CHECK(registers(choose_hopper(65536, 5120, m)));
    CHECK(staged(choose_bf16_hopper(65536, 5120, m, 8)) != kSixteen);
    CHECK(staged(choose_bf16_hopper(51200, 5120, m, 2)) != kSix);
    if (m < 8) CHECK(registers(choose_bf16_hopper(65536, 2048, m, 8)));
    // sm_90a only.
    WqGemmProblem p = g128_problem(65536, 5120, m);
    p.act = lowbit::DType::BF16, p.out = lowbit::DType::BF16;
    CHECK_FALSE(lowbit::choose_config(p, kSm80, 132).x_shared);
    // Deterministic mode stages nothing.
    p.deterministic = true;
    CHECK_FALSE(choose_hopper(p).x_shared);
  }
  // One row keeps the registers; up to 32 chunks v27 had staged them already (8 tiles × 2 warps along K).
  CHECK(registers(choose_bf16_hopper(65536, 5120, 1)));
  CHECK(staged(choose_bf16_hopper(51200, 4096, 4)) == "1,8,1,2,1,2+xs");
  // At 8 rows up to 3 blocks of 16 tiles per SM v33's (1,8,2,2,1,2) staged stays.
  CHECK(staged(choose_bf16_hopper(50688, 5120, 8)) == "1,8,2,2,1,2+xs");
}

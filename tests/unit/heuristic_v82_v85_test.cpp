// Heuristics v82-v85 (docs/perf-notes.md, eighty-third session): narrow layers of 1/2-bit weights at 128 rows
// over half and up to 2 tiles a SM (v82), of 1/2/3-bit weights at 64 rows over 1 and up to 2 (v83; v85 sends
// 1/2-bit ones on over 64 chunks to wgmma), and of 1/2/8-bit weights at 32 rows under one wave of 2-tile
// blocks (v84).
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
using lowbit::test::other_formats;
using lowbit::test::staged;
using lowbit::test::wgmma_shape;
using lowbit::test::with_act;

namespace {
using Layer = std::pair<int64_t, int64_t>;
}

TEST_CASE("choose_config v82: 1/2-bit weights at 128 rows over half and up to 2 tiles a SM",
          "[config][heuristic]") {
  for (DType act : {DType::F16, DType::BF16})
    for (int bits : {1, 2}) {
      INFO(static_cast<int>(act) << " w" << bits);
      auto choice = [&](int64_t n, int64_t k) {
        return choose_hopper(with_act(g128_problem(n, k, 128, bits), act));
      };
      // Up to one tile a SM (67-132 tiles: 536-1056 columns), and over 1.5 tiles a SM: (1,8,1,4,1,3).
      for (auto [n, k] : {Layer{536, 4096},
                          {768, 4096},
                          {1056, 4096},
                          {1600, 4096},
                          {1792, 4096},
                          {1920, 3072},
                          {2112, 3584}})
        CHECK(staged(choice(n, k)) == "1,8,1,4,1,3+xs");
      // Over one tile a SM and up to 1.5, while (1,4,1,4,1,3)'s blocks make one wave: v77's block. 1584
      // columns (1.5 tiles a SM) make 400 blocks: one wave of 1-bit's (4 a SM by shared memory), two of
      // 2-bit's (3 a SM, 396).
      for (auto [n, k] : {Layer{1064, 4096}, {1088, 5120}, {1280, 4096}, {1536, 2048}, {1560, 4096}})
        CHECK(staged(choice(n, k)) == "1,4,1,4,1,3+xs");
      CHECK(staged(choice(1584, 4096)) == (bits == 1 ? "1,4,1,4,1,3+xs" : "1,8,1,4,1,3+xs"));
      // Half a tile a SM is v72's (528 columns, 4 stages in 1-bit); over 2 v79's pair (2120); v24's wgmma
      // stays (1152×8192).
      CHECK(staged(choice(528, 4096)) == (bits == 1 ? "1,4,1,8,1,4+xs" : "1,4,1,8,1,3+xs"));
      CHECK(wgmma_shape(choice(2120, 3584)) == "4,2,8,1 sk2");
      CHECK(choice(1152, 8192).wgmma);
    }
  // 3/4-bit weights keep v77 and v81; 8-bit its rules.
  CHECK(staged(choose_hopper(768, 4096, 128, 3)) == "1,4,1,4,1,3+xs");
  CHECK(staged(choose_hopper(1920, 3072, 128, 4)) == "2,4,2,4,1,3+xs");
  CHECK(staged(choose_hopper(1920, 3072, 128, 8)) == "2,4,2,2,1,3+xs");
  // Per channel, groups of 64 and 256, float zeros: v77's block in its band in every format; (1,8,1,4,1,3)
  // only where not every weight is dequantized before the MMA (not g64 or float zeros). Not fp16
  // accumulation or deterministic mode.
  for (const WqGemmProblem& p : other_formats(g128_problem(1280, 4096, 128, 2))) {
    INFO(p.str());
    CHECK((staged(choose_hopper(p)) == "1,4,1,4,1,3+xs") == (p.accum != DType::F16 && !p.deterministic));
  }
  for (const WqGemmProblem& p : other_formats(g128_problem(1920, 3072, 128, 2))) {
    INFO(p.str());
    const bool scale_after = p.group_size != 64 && p.mode != DequantMode::SubFloatZeroThenScale &&
                             p.accum != DType::F16 && !p.deterministic;
    CHECK((staged(choose_hopper(p)) == "1,8,1,4,1,3+xs") == scale_after);
  }
}

TEST_CASE("choose_config v83: 1/2/3-bit weights at 64 rows over 1 and up to 2 tiles a SM",
          "[config][heuristic]") {
  for (DType act : {DType::F16, DType::BF16})
    for (int bits : {1, 2, 3}) {
      INFO(static_cast<int>(act) << " w" << bits);
      auto choice = [&](int64_t n, int64_t k) {
        return choose_hopper(with_act(g128_problem(n, k, 64, bits), act));
      };
      // 133-264 tiles (1064-2112 columns); 2048×2048 was v27's (1,4,1,4,1,3) until v83.
      for (auto [n, k] :
           {Layer{1064, 4096}, {1280, 4096}, {1536, 2048}, {1920, 3072}, {2048, 2048}, {2112, 2048}})
        CHECK(staged(choice(n, k)) == "1,8,1,8,1,3+xs");
      CHECK(staged(choice(1056, 4096)) != "1,8,1,8,1,3+xs");
      CHECK(staged(choice(2120, 2048)) != "1,8,1,8,1,3+xs");
    }
  // 1152×8192 (64 chunks): the rules gave 2-bit weights the per-warp block, now v83's; 3-bit keeps v24's
  // wgmma.
  CHECK(staged(choose_hopper(1152, 8192, 64, 2)) == "1,8,1,8,1,3+xs");
  CHECK(choose_hopper(1152, 8192, 64, 3).wgmma);
  // 4-bit weights keep v80's block.
  CHECK(staged(choose_hopper(1280, 4096, 64)) == "2,4,1,4,1,4+xs");
  // 4 stages where every weight is dequantized before the MMA (g64, float zeros): in 2-bit; not 3-bit (its 4
  // stages would take 240 KB of shared memory). Not per channel, fp16 accumulation or deterministic mode.
  for (int bits : {2, 3})
    for (const WqGemmProblem& p : other_formats(g128_problem(1280, 4096, 64, bits))) {
      INFO(p.str());
      const bool every_weight = p.group_size == 64 || p.mode == DequantMode::SubFloatZeroThenScale;
      const bool v83 = p.group_size != 0 && p.accum != DType::F16 && !p.deterministic;
      const char* expected = !v83           ? ""
                             : every_weight ? (bits == 2 ? "1,8,1,8,1,4+xs" : "")
                                            : "1,8,1,8,1,3+xs";
      if (*expected)
        CHECK(staged(choose_hopper(p)) == expected);
      else
        CHECK(staged(choose_hopper(p)).rfind("1,8,1,8", 0) != 0);
    }
}

TEST_CASE("choose_config v84: 1/2/8-bit weights at 32 rows under one wave of 2-tile blocks",
          "[config][heuristic]") {
  for (DType act : {DType::F16, DType::BF16})
    for (int bits : {1, 2, 8}) {
      INFO(static_cast<int>(act) << " w" << bits);
      auto choice = [&](int64_t n, int64_t k) {
        return choose_hopper(with_act(g128_problem(n, k, 32, bits), act));
      };
      // Up to 1040 columns (2 row blocks × 65 blocks of 2 tiles = 130 under 132 SMs), under 64 chunks.
      for (auto [n, k] : {Layer{640, 4096}, {896, 4864}, {1024, 2560}, {1040, 7936}})
        CHECK(staged(choice(n, k)) == "1,2,1,8,1,3+xs");
      CHECK(choice(1048, 4096).n_tiles == 4);  // 2 × 66 blocks: not under the SMs
      CHECK(choice(768, 8192).n_tiles == 4);   // 64 chunks
      CHECK(choice(512, 4096).split_k == 2);   // v72's tiny layers
    }
  // Every group and mode (as v27 in 3/4-bit); not fp16 accumulation (unmeasured) or deterministic mode,
  // which keep (1,4,1,8,1,2) and registers; not on sm_80.
  for (int bits : {1, 2, 8}) {
    for (const WqGemmProblem& p : other_formats(g128_problem(768, 4096, 32, bits))) {
      INFO(p.str());
      if (p.deterministic) continue;
      CHECK(staged(choose_hopper(p)) == (p.accum == DType::F16 ? "1,4,1,8,1,2+xs" : "1,2,1,8,1,3+xs"));
    }
    CHECK(lowbit::choose_config(g128_problem(768, 4096, 32, bits), lowbit::test::kSm80, 132).n_tiles == 4);
  }
}

TEST_CASE("choose_config v85: 1/2-bit weights at 64 rows over 1 and up to 2 tiles a SM on over 64 chunks",
          "[config][heuristic]") {
  for (DType act : {DType::F16, DType::BF16})
    for (int bits : {1, 2}) {
      INFO(static_cast<int>(act) << " w" << bits);
      auto choice = [&](int64_t n, int64_t k) {
        return choose_hopper(with_act(g128_problem(n, k, 64, bits), act));
      };
      // v24's few-block stream K over 128-column blocks, without the image.
      for (auto [n, k] : {Layer{1064, 8320}, {1280, 11008}, {1280, 14336}, {1792, 18944}, {2112, 11008}})
        CHECK(wgmma_shape(choice(n, k)) == "4,2,8,1 sK");
      // 64 chunks stay v83's; one tile a SM and under, and over 2, are not this rule's.
      CHECK(staged(choice(2048, 8192)) == "1,8,1,8,1,3+xs");
      CHECK(staged(choice(1024, 14336)) == "1,4,1,4,1,3+xs");
      CHECK(wgmma_shape(choice(1056, 14336)) != "4,2,8,1 sK");  // 132 tiles: one a SM
      CHECK(wgmma_shape(choice(1064, 14336)) == "4,2,8,1 sK");
      CHECK(wgmma_shape(choice(2120, 11008)) != "4,2,8,1 sK");
    }
  // Every group and mode; not fp16 accumulation or deterministic mode (no wgmma).
  for (const WqGemmProblem& p : other_formats(g128_problem(1280, 14336, 64, 2))) {
    INFO(p.str());
    CHECK((wgmma_shape(choose_hopper(p)) == "4,2,8,1 sK") == (p.accum != DType::F16 && !p.deterministic));
  }
}

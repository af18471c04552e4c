// Heuristic v61 (docs/perf-notes.md, seventy-fourth session): bf16 8-bit weights at 17-32 rows over 2 up to 6
// tiles per SM run one 32-row block; and the lookup's nearest-bucket step cuts a one-row entry's stages where
// its eightfold activation stages at 2 rows would add a wave (wq::keep_one_wave).
#include <cstdint>
#include <string>

#include "jit/context.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "support/test_support.hpp"
#include "tune/tuning_db.hpp"
#include "unit/heuristic_helpers.hpp"
#include "unit/unit_helpers.hpp"

using lowbit::DequantMode;
using lowbit::DType;
using lowbit::WqGemmConfig;
using lowbit::WqGemmProblem;
using lowbit::test::choose_bf16_hopper;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::staged;

TEST_CASE("choose_config v61: bf16 8-bit weights at 32 rows, 2-6 tiles per SM: one 32-row block",
          "[config][heuristic]") {
  // 4608-6144 columns (4.4-5.8 tiles per SM), K of 16-32 chunks; M 17-32 share the bucket. Up to one such
  // block a SM (2304-4224 columns, by K) v63 runs 8 warps along K (heuristic_v63_test.cpp). From 64 chunks,
  // 2-5 tiles per SM take wgmma stream K where its blocks fill under 0.7 of a wave (v25/v56's narrow_32):
  // 5120×11008 does.
  CHECK(choose_bf16_hopper(5120, 11008, 32, 8).wgmma);
  for (int64_t n : {4608, 5120, 6144})
    for (int64_t k : {2048, 4096})
      for (int64_t m : {17, 32}) {
        INFO(n << "x" << k << " " << m);
        CHECK(staged(choose_bf16_hopper(n, k, m, 8)) == "2,4,1,4,1,2+xs");
      }
  // Symmetric and per-channel weights too (their zero and scale come after the MMA, as g128's).
  WqGemmProblem p = g128_problem(6144, 4096, 32, 8);
  p.act = p.out = DType::BF16;
  for (auto [mode, group] :
       {std::pair{DequantMode::Symmetric, 128}, std::pair{DequantMode::SubZeroThenScale, 0}}) {
    p.mode = mode, p.group_size = group;
    INFO(p.str());
    CHECK(staged(choose_hopper(p)) == "2,4,1,4,1,2+xs");
  }
  // Not up to 2 tiles per SM (2048 columns: 1.24x in the bench), nor 4-bit, nor at 16 rows, nor where every
  // weight is dequantized before the MMA, nor off sm_90a. fp16 since v62 (its 32-row warps fold the zero in),
  // and at 64 rows v62's own rule gives 4096² the same block (heuristic_v62_test.cpp).
  CHECK(staged(choose_bf16_hopper(2048, 8192, 32, 8)) != "2,4,1,4,1,2+xs");
  CHECK(choose_bf16_hopper(2112, 4096, 32, 8).m_tiles == 1);                 // 264 tiles: exactly 2 a SM
  CHECK(staged(choose_bf16_hopper(2176, 4096, 32, 8)) == "2,4,1,4,1,2+xs");  // 272: just over
  CHECK(staged(choose_hopper(6144, 4096, 32, 8)) == "2,4,1,4,1,2+xs");
  CHECK(choose_bf16_hopper(4096, 4096, 32, 4).m_tiles == 1);
  CHECK(choose_bf16_hopper(4096, 4096, 16, 8).m_tiles == 1);
  CHECK(staged(choose_bf16_hopper(4096, 4096, 64, 8)) == "2,4,1,4,1,2+xs");
  p.mode = DequantMode::SubFloatZeroThenScale, p.group_size = 128;
  CHECK(staged(choose_hopper(p)) != "2,4,1,4,1,2+xs");
  p.mode = DequantMode::SubZeroThenScale, p.group_size = 64;
  CHECK(staged(choose_hopper(p)) != "2,4,1,4,1,2+xs");
  p.group_size = 128;
  CHECK(lowbit::choose_config(p, kSm80, 108).m_tiles == 1);
  // Up to exactly 6 tiles per SM (6336 columns) v61; over 6 v56's 32-row block of 8 tiles stays (6400-7168
  // columns: 6.06-6.8 tiles per SM).
  CHECK(staged(choose_bf16_hopper(6336, 4096, 32, 8)) == "2,4,1,4,1,2+xs");
  CHECK(staged(choose_bf16_hopper(6400, 4096, 32, 8)) == "2,8,1,4,1,3+xs");
  CHECK(staged(choose_bf16_hopper(6656, 4096, 32, 8)) == "2,8,1,4,1,3+xs");
  CHECK(staged(choose_bf16_hopper(7168, 8192, 32, 8)) == "2,8,1,4,1,3+xs");
}

namespace {
lowbit::RuntimeOptions hopper_options(const std::string& dir) {
  lowbit::RuntimeOptions o = lowbit::test::offline_options("sm_90a", dir);
  o.sm_count = 132, o.no_tuning_db = false, o.tuning_dir = dir;
  return o;
}
nlohmann::json entry(int n_tiles, int warps_k, int stages) {
  return {{"config",
           {{"m_tiles", 1},
            {"n_tiles", n_tiles},
            {"warps_n", 1},
            {"warps_k", warps_k},
            {"split_k", 1},
            {"stages", stages},
            {"x_shared", true}}},
          {"us", 1.0}};
}
}  // namespace

TEST_CASE("the nearest-bucket step keeps a one-row entry's blocks in one wave at 2 rows",
          "[config][tuning]") {
  lowbit::test::TempDir dir;
  WqGemmProblem p = g128_problem(4096, 4096, 1);
  p.act = p.out = DType::BF16;
  WqGemmProblem wide = g128_problem(57344, 8192, 1);
  WqGemmProblem six = g128_problem(6144, 4096, 1);
  six.act = six.out = DType::BF16;
  lowbit::tune::TuningDb db;
  db.meta.arch = "sm_90a", db.meta.device = "NVIDIA H200", db.meta.sm_count = 132;
  // The H200 file's one-row entries of the seventy-fourth session's bench: 256 blocks of 16 warps (86 KB a
  // block at one row, 2 a SM; 200 KB at 2 rows, 1 a SM); 384 of 8 warps (43 KB, 4 a SM by registers at one
  // row; 100 KB at 2 rows); 1792 of 8 warps (five waves at one row, seven at 2).
  db.put("wq_gemm", lowbit::wq::tuning_key(p, 1), entry(2, 16, 4));
  db.put("wq_gemm", lowbit::wq::tuning_key(six, 1), entry(2, 8, 4));
  db.put("wq_gemm", lowbit::wq::tuning_key(wide, 1), entry(4, 8, 3));
  db.put("wq_gemm", lowbit::wq::tuning_key(p, 16), entry(4, 8, 4));
  // 80 blocks whose 4 stages at 2 rows need 264 KB: over shared memory (the H200 file's symmetric one-row
  // entry).
  WqGemmProblem narrow = g128_problem(2560, 8192, 1);
  narrow.mode = DequantMode::Symmetric;
  db.put("wq_gemm", lowbit::wq::tuning_key(narrow, 1), entry(4, 16, 4));
  db.save(dir.path + "/h200.json");
  lowbit::Runtime rt(hopper_options(dir.path));
  auto choose = [&](const WqGemmProblem& q, int64_t bucket) {
    return lowbit::wq::choose(rt.context(), q, bucket, {});
  };
  // Its own bucket: the entry as tuned.
  CHECK(staged(choose(p, 1).config) == "1,2,1,16,1,4+xs");
  // 2 rows: 4 stages → 2 (one block a SM at 3 stages, 150 KB); 6144: 4 → 3 (three a SM: 396 places, 384
  // blocks).
  const auto two = choose(p, 2);
  INFO(two.source);
  CHECK(staged(two.config) == "1,2,1,16,1,2+xs");
  CHECK(lowbit::test::contains(two.source, "nearest M bucket"));
  CHECK(lowbit::test::contains(two.source, "stages 4 -> 2 (one wave)"));
  CHECK(staged(choose(six, 2).config) == "1,2,1,8,1,3+xs");
  // An entry whose stages no longer fit at 2 rows is cut before the checks, so it still serves (without the
  // cut the bucket went to the heuristic, with a warning).
  const auto fits = choose(narrow, 2);
  INFO(fits.source);
  CHECK(staged(fits.config) == "1,4,1,16,1,3+xs");
  CHECK(lowbit::test::contains(fits.source, "nearest M bucket"));
  // An entry of more than one wave at its own bucket keeps its stages (57344×8192 lost 1.02x with the cut).
  CHECK(staged(choose(wide, 2).config) == "1,4,1,8,1,3+xs");
  // Other pairs of buckets keep the entry's stages (8 rows from the 16-row entry; measured from one row to 2
  // only).
  CHECK(staged(choose(p, 8).config) == "1,4,1,8,1,4+xs");
  // The function itself: only from one row to 2 rows; wgmma configs are left alone.
  const lowbit::Arch hopper = lowbit::Arch::parse("sm_90a");
  WqGemmProblem p2 = p;
  p2.m = 2;
  const WqGemmConfig c{1, 2, 1, 16, 1, 4, true};
  CHECK(lowbit::wq::keep_one_wave(p2, c, 2, hopper, 132) == c);
  CHECK(lowbit::wq::keep_one_wave(p2, c, 1, hopper, 132).stages == 2);
  WqGemmProblem p8 = p;
  p8.m = 8;
  CHECK(lowbit::wq::keep_one_wave(p8, c, 16, hopper, 132) == c);
  CHECK(lowbit::wq::keep_one_wave(p8, c, 1, hopper, 132) == c);
  WqGemmProblem p4 = p;
  p4.m = 4;
  CHECK(lowbit::wq::keep_one_wave(p4, c, 2, hopper, 132) == c);
  // Where no stage count takes one wave at 2 rows the entry's stays (8-bit: 113 KB a block at one row, 2 a
  // SM; at 2 rows 199 KB at 3 stages and 133 KB at 2, one a SM either way, 256 blocks).
  WqGemmProblem w8 = p2;
  w8.bits = 8;
  const WqGemmConfig c3{1, 2, 1, 16, 1, 3, true};
  CHECK(lowbit::wq::keep_one_wave(w8, c3, 1, hopper, 132) == c3);
  // Blocks count every K piece and every warp side by side: a K split in 2 doubles them (512, one wave only
  // at 2 stages, 4 a SM), two warps along N halve them (128, one a SM at 4 stages: one wave, nothing cut).
  CHECK(lowbit::wq::keep_one_wave(p2, WqGemmConfig{1, 2, 1, 8, 2, 4, true}, 1, hopper, 132).stages == 2);
  const WqGemmConfig side_by_side{1, 2, 2, 8, 1, 4, true};
  CHECK(lowbit::wq::keep_one_wave(p2, side_by_side, 1, hopper, 132) == side_by_side);
  // Each block also holds 1 KiB: 1344 one-tile blocks of 20736 B at 2 rows fit 10 a SM (11 without it), 1320
  // places, so 4 stages make a second wave and 3 (15552 B, 14 a SM) do not.
  WqGemmProblem many = g128_problem(10752, 4096, 2);
  CHECK(lowbit::wq::keep_one_wave(many, WqGemmConfig{1, 1, 1, 2, 1, 4, true}, 1, hopper, 132).stages == 3);
  // With twice the SMs the 2-row blocks fit one wave at 4 stages.
  CHECK(lowbit::wq::keep_one_wave(p2, c, 1, hopper, 264).stages == 4);
  WqGemmConfig w = choose_hopper(4096, 4096, 128);
  REQUIRE(w.wgmma);
  CHECK(lowbit::wq::keep_one_wave(p2, w, 1, hopper, 132) == w);
  // An entry its own bucket refuses (no warps along K) is left to the checks, which hand the bucket to the
  // heuristic, as before the cut.
  const WqGemmConfig broken{1, 2, 1, 0, 1, 4, true};
  CHECK(lowbit::wq::keep_one_wave(p2, broken, 1, hopper, 132) == broken);
}

TEST_CASE("a malformed one-row entry at 2 rows hands the bucket to the heuristic", "[config][tuning]") {
  lowbit::test::TempDir dir;
  WqGemmProblem p = g128_problem(4352, 4096, 1);
  lowbit::tune::TuningDb db;
  db.meta.arch = "sm_90a", db.meta.device = "NVIDIA H200", db.meta.sm_count = 132;
  db.put("wq_gemm", lowbit::wq::tuning_key(p, 1), entry(2, 0, 4));
  db.save(dir.path + "/h200.json");
  lowbit::Runtime rt(hopper_options(dir.path));
  const auto two = lowbit::wq::choose(rt.context(), p, 2, {});
  INFO(two.source);
  CHECK(lowbit::test::contains(two.source, "heuristic"));
}

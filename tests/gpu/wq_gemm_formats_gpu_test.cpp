// wq_gemm formats on the GPU against the CPU reference: every bits × group × mode × dtype at small
// sizes, real and tensor-parallel shapes for the new bit widths, act-order, and deterministic
// split-K (bitwise equal across runs and across M buckets).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "gpu/gpu_fixture.hpp"
#include "jit/driver.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "ref/half.hpp"
#include "support/catch.hpp"

using namespace lowbit;
using namespace lowbit::test;

namespace {

WqGemmProblem make_problem(int64_t n, int64_t k, int bits, int group, DequantMode mode, DType act,
                           int64_t max_m) {
  WqGemmProblem p;
  p.m = max_m, p.n = n, p.k = k, p.bits = bits, p.group_size = group, p.mode = mode, p.act = act, p.out = act;
  return p;
}

WqGemmPlanOptions forced(int mt, int nt, int wn, int wk, int sk, bool x_shared = false, bool wgmma = false,
                         bool stream_k = false, bool x_image = false) {
  WqGemmPlanOptions o;
  o.config = WqGemmConfig{mt, nt, wn, wk, sk, wgmma ? 4 : 3, x_shared, wgmma, stream_k, x_image};
  return o;
}
bool has_wgmma() {
  return wq::has_wgmma(gpu_runtime().arch());
}
// For the cases of a rule's wgmma config: says so, visibly, off sm_90a.
bool skipped_without_wgmma(const char* rule) {
  if (has_wgmma()) return false;
  WARN("skipped: " << rule << "'s config is Hopper's warpgroup MMA (sm_90a)");
  return true;
}

const DequantMode kModes[] = {DequantMode::SubZeroThenScale, DequantMode::Symmetric,
                              DequantMode::SubFloatZeroThenScale, DequantMode::ScaleThenAddZero};

// Raw output bytes of rows [0, m).
std::vector<unsigned char> raw_y(const DeviceLayer& L, int64_t m) {
  std::vector<unsigned char> out(static_cast<std::size_t>(m * L.problem.n) * dtype_bytes(L.problem.out));
  L.y_dev.download(out.data(), out.size());
  return out;
}

// Every problem at every M of `ms` through one forced config (no bias).
void check_forced(const std::vector<WqGemmProblem>& problems, const std::vector<int64_t>& ms,
                  const WqGemmPlanOptions& options) {
  const auto plans = build_plans(problems, ms, std::vector<WqGemmPlanOptions>(problems.size(), options));
  for (std::size_t i = 0; i < problems.size(); ++i) {
    auto L = make_layer(problems[i], false);
    for (int64_t m : ms) run_and_check(*L, *plans[i], m, false);
  }
}

}  // namespace

TEST_CASE("wq_gemm every bits x group x mode x dtype (small, odd N)", "[gpu]") {
  std::vector<WqGemmProblem> problems;
  std::vector<bool> biased;
  for (int bits : {1, 2, 3, 4, 8})
    for (int group : {32, 64, 128, 256, 0})
      for (DequantMode mode : kModes)
        for (DType act : {DType::F16, DType::BF16}) {
          WqGemmProblem p = make_problem(264, 1024, bits, group, mode, act, 17);
          if (group == 128 && bits % 2 == 1) p.out = DType::F32;  // f32 output for a slice of the space
          problems.push_back(p);
          biased.push_back(group == 64);
        }
  const auto plans = build_plans(problems, {17});
  // The same problems again, split along K (the forced config fits every problem above).
  std::vector<WqGemmProblem> split_problems;
  for (const auto& p : problems)
    if (p.group_size == 128 || p.group_size == 32) split_problems.push_back(p);
  const auto split_plans = build_plans(
      split_problems, {17}, std::vector<WqGemmPlanOptions>(split_problems.size(), forced(1, 2, 2, 2, 3)));
  // And with block-shared activations: 1 × 2 tiles per warp (swapped operands at M = 1, scale after
  // the MMA where the mode allows), and 2 × 8 (every weight dequantized before it).
  const auto shared_small =
      build_plans(split_problems, {17},
                  std::vector<WqGemmPlanOptions>(split_problems.size(), forced(1, 2, 2, 2, 3, true)));
  const auto shared_wide =
      build_plans(split_problems, {17},
                  std::vector<WqGemmPlanOptions>(split_problems.size(), forced(2, 8, 2, 1, 1, true)));
  // And staged per warp (one warp along N), split.
  const auto staged_per_warp =
      build_plans(split_problems, {17},
                  std::vector<WqGemmPlanOptions>(split_problems.size(), forced(1, 4, 1, 2, 3, true)));
  // And on sm_90a through warpgroup MMA: 16 rows × 128 columns per block (two warpgroups; 17 rows:
  // two row blocks), K split in two.
  const auto warpgroup =
      has_wgmma()
          ? build_plans(problems, {17},
                        std::vector<WqGemmPlanOptions>(problems.size(), forced(1, 2, 8, 1, 2, false, true)))
          : decltype(plans){};
  // And stream K: 64 rows × 128 columns per block, tiles shared among blocks, the activations from an
  // image.
  const auto warpgroup_stream_k =
      has_wgmma() ? build_plans(problems, {17},
                                std::vector<WqGemmPlanOptions>(
                                    problems.size(), forced(4, 2, 8, 1, 1, false, true, true, true)))
                  : decltype(plans){};
  std::size_t s = 0;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    auto L = make_layer(problems[i], biased[i]);
    for (int64_t m : {1, 5, 17}) run_and_check(*L, *plans[i], m, biased[i]);
    if (!warpgroup.empty())
      for (int64_t m : {1, 5, 17}) run_and_check(*L, *warpgroup[i], m, biased[i]);
    if (!warpgroup_stream_k.empty())
      for (int64_t m : {1, 17}) run_and_check(*L, *warpgroup_stream_k[i], m, biased[i]);
    if (problems[i].group_size == 128 || problems[i].group_size == 32) {
      for (int64_t m : {1, 17}) {
        run_and_check(*L, *split_plans[s], m, biased[i]);
        run_and_check(*L, *shared_small[s], m, biased[i]);
        run_and_check(*L, *shared_wide[s], m, biased[i]);
        run_and_check(*L, *staged_per_warp[s], m, biased[i]);
      }
      ++s;
    }
  }
}

// The zero after the MMA with swapped operands reads each pair under the base of its position in the
// word (dequant.cuh, InPlace) and takes Σ base·x from the upper rows of the Σx MMA: every width and
// dtype, the integer modes, groups of one and of two chunks (K = 1280: an odd chunk count, so a
// group of 256 ends half way), 4, 6, 8 and 16 tiles per warp (N = 264: a last block with missing tiles;
// 16 tiles scale after the MMA up to 8 rows, and before it from 16 rows), at one row, at 3 (an 8-row
// slice) and at 17 (two 16-row blocks, both 8-row halves); and with the sums from the pre-pass (x_sums).
TEST_CASE("wq_gemm zero after the MMA with in-place bases: every width and dtype, groups 128 and 256",
          "[gpu]") {
  std::vector<WqGemmProblem> problems;
  for (int bits : {1, 2, 3, 4, 8})
    for (int group : {128, 256})
      for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric})
        for (DType act : {DType::F16, DType::BF16})
          problems.push_back(make_problem(264, 1280, bits, group, mode, act, 17));
  const std::vector<int64_t> ms = {1, 3, 17};
  const auto four =
      build_plans(problems, ms, std::vector<WqGemmPlanOptions>(problems.size(), forced(1, 4, 1, 2, 1, true)));
  const auto six =
      build_plans(problems, ms, std::vector<WqGemmPlanOptions>(problems.size(), forced(1, 6, 1, 2, 1, true)));
  const auto eight =
      build_plans(problems, ms, std::vector<WqGemmPlanOptions>(problems.size(), forced(1, 8, 1, 2, 1, true)));
  const auto sixteen = build_plans(
      problems, ms, std::vector<WqGemmPlanOptions>(problems.size(), forced(1, 16, 1, 2, 1, true)));
  // The sums from the pre-pass (x_sums) instead of the Σ MMAs, where the format can take the zero
  // after the MMA (every one but bf16 8-bit; 4-bit only so): 8 tiles, and 4 tiles split in two
  // along K.
  std::vector<std::size_t> summed;
  std::vector<WqGemmProblem> sum_problems;
  std::vector<WqGemmPlanOptions> sum_options, sum_split_options;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    WqGemmPlanOptions o = forced(1, 8, 1, 2, 1, true), split = forced(1, 4, 1, 2, 2, true);
    o.config->x_sums = split.config->x_sums = true;
    if (!lowbit::can_implement(problems[i], *o.config, gpu_runtime().arch())) continue;
    summed.push_back(i);
    sum_problems.push_back(problems[i]);
    sum_options.push_back(o);
    sum_split_options.push_back(split);
  }
  REQUIRE(summed.size() == problems.size() / 10 * 9);  // every width and dtype but bf16 8-bit
  const auto sums = build_plans(sum_problems, ms, sum_options);
  const auto sums_split = build_plans(sum_problems, ms, sum_split_options);
  for (std::size_t i = 0, s = 0; i < problems.size(); ++i) {
    auto L = make_layer(problems[i], false);
    const bool with_sums = s < summed.size() && summed[s] == i;
    for (int64_t m : ms) {
      run_and_check(*L, *four[i], m, false);
      run_and_check(*L, *six[i], m, false);
      run_and_check(*L, *eight[i], m, false);
      run_and_check(*L, *sixteen[i], m, false);
      if (with_sums) {
        run_and_check(*L, *sums[s], m, false);
        run_and_check(*L, *sums_split[s], m, false);
      }
    }
    s += with_sums ? 1 : 0;
  }
}

TEST_CASE("wq_gemm 8-bit at 32- and 64-row warps: the zero folded in, or after the MMA with x_sums",
          "[gpu]") {
  // fp16 8-bit folds the zero in before the MMA where a warp holds 32 rows or more (wq_gemm.cuh,
  // kFoldEightBit) and takes it after the MMA with 16-row warps and with x_sums on swapped operands; bf16
  // always folds. Swapped (block-shared activations, even n_tiles: v62's (2,4,1,4,1,2) and v63's
  // (2,4,1,8,1,2) among them) and unswapped (activations per warp, or an odd n_tiles), with and without
  // x_sums. Rows past 16 and 32 (17, 40) leave the upper slices partly empty; 264 columns end in a partial
  // block.
  std::vector<WqGemmProblem> problems;
  for (int group : {128, 256, 0})
    for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric})
      for (DType act : {DType::F16, DType::BF16})
        problems.push_back(make_problem(264, 1280, 8, group, mode, act, 64));
  const std::vector<int64_t> ms = {17, 40, 64};
  const std::size_t n = problems.size();
  const auto two = build_plans(problems, ms, std::vector<WqGemmPlanOptions>(n, forced(2, 4, 1, 2, 1, true)));
  const auto four = build_plans(problems, ms, std::vector<WqGemmPlanOptions>(n, forced(4, 2, 1, 2, 1, true)));
  const auto split =
      build_plans(problems, ms, std::vector<WqGemmPlanOptions>(n, forced(2, 4, 1, 2, 2, true)));
  WqGemmPlanOptions v62 = forced(2, 4, 1, 4, 1, true);
  v62.config->stages = 2;
  const auto staged2 = build_plans(problems, ms, std::vector<WqGemmPlanOptions>(n, v62));
  // v63's 8 warps along K (K = 1280: 10 chunks, so some warps take one and some two; below, K = 4352 gives
  // each warp 4-5 steps through its 2 stages, so every stage is refilled).
  WqGemmPlanOptions v63 = forced(2, 4, 1, 8, 1, true);
  v63.config->stages = 2;
  const auto eight_warps = build_plans(problems, ms, std::vector<WqGemmPlanOptions>(n, v63));
  const auto unswapped = build_plans(problems, ms, std::vector<WqGemmPlanOptions>(n, forced(2, 4, 1, 4, 1)));
  const auto odd = build_plans(problems, ms, std::vector<WqGemmPlanOptions>(n, forced(2, 1, 1, 4, 1)));
  std::vector<std::size_t> summed;
  std::vector<WqGemmProblem> sum_problems;
  std::vector<WqGemmPlanOptions> sum_options, sum_unswapped_options;
  for (std::size_t i = 0; i < n; ++i) {
    WqGemmPlanOptions o = forced(2, 4, 1, 2, 1, true), u = forced(2, 4, 1, 4, 1);
    o.config->x_sums = u.config->x_sums = true;
    if (!lowbit::can_implement(problems[i], *o.config, gpu_runtime().arch())) continue;
    REQUIRE(lowbit::can_implement(problems[i], *u.config, gpu_runtime().arch()));
    summed.push_back(i);
    sum_problems.push_back(problems[i]);
    sum_options.push_back(o);
    sum_unswapped_options.push_back(u);
  }
  REQUIRE(summed.size() == 4);  // fp16, groups 128 and 256 (bf16 8-bit and per-channel scales take no sums)
  const auto sums = build_plans(sum_problems, ms, sum_options);
  const auto sums_unswapped = build_plans(sum_problems, ms, sum_unswapped_options);
  for (std::size_t i = 0, s = 0; i < n; ++i) {
    auto L = make_layer(problems[i], false);
    const bool with_sums = s < summed.size() && summed[s] == i;
    for (int64_t m : ms) {
      run_and_check(*L, *two[i], m, false);
      run_and_check(*L, *four[i], m, false);
      run_and_check(*L, *split[i], m, false);
      run_and_check(*L, *staged2[i], m, false);
      run_and_check(*L, *eight_warps[i], m, false);
      run_and_check(*L, *unswapped[i], m, false);
      run_and_check(*L, *odd[i], m, false);
      if (with_sums) {
        run_and_check(*L, *sums[s], m, false);
        run_and_check(*L, *sums_unswapped[s], m, false);
      }
    }
    s += with_sums ? 1 : 0;
  }
  std::vector<WqGemmProblem> deep;
  for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric})
    for (DType act : {DType::F16, DType::BF16})
      deep.push_back(make_problem(264, 4352, 8, 128, mode, act, 32));
  check_forced(deep, {17, 32}, v63);
}

TEST_CASE("wq_gemm 16 tiles × 8 warps along K (heuristic v64): 4-bit, both dtypes, groups 128 and 256",
          "[gpu]") {
  // v64's (1,16,1,8,1,2) staged: 264 columns end in a block of one tile; K = 1280 leaves some of the 8 warps
  // one chunk and some two (a group of 256 ends half way), K = 4352 four or five.
  std::vector<WqGemmProblem> problems;
  for (int64_t k : {1280, 4352})
    for (int group : {128, 256})
      for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric})
        for (DType act : {DType::F16, DType::BF16})
          problems.push_back(make_problem(264, k, 4, group, mode, act, 8));
  const std::vector<int64_t> ms = {1, 2, 3, 4, 8};
  WqGemmPlanOptions v64 = forced(1, 16, 1, 8, 1, true);
  v64.config->stages = 2;
  check_forced(problems, ms, v64);
}

TEST_CASE(
    "wq_gemm heuristic v65 and v66 16-row blocks: (1,6,2,2,1,2), (1,8,1,4,1,2), (1,2,1,4,4,3) and "
    "(1,4,1,4,4,2), 4-bit, both dtypes",
    "[gpu]") {
  // v65b's 12-tile blocks of 2 warps side by side: 264 columns end in a block of 9 tiles (the second warp 3),
  // 200 in one of 1; v65a's 8 × 4 warps along K (tails of 1 tile at both widths). K = 1408 (11 chunks) gives
  // some warps along K one chunk more than others in both blocks (1280: in v65a's 4 warps only), 4352 refills
  // every stage. v66's K splits in 4 (a cluster on sm_90) of 2 and 4 tiles × 4 warps along K: 10, 11 and 34
  // chunks leave pieces of 2-3 and 8-9 chunks, so some warps along K have none in a piece. Rows 9-16 (bucket
  // 16), a row block cut short at 9 and 13.
  std::vector<WqGemmProblem> problems;
  for (int64_t n : {200, 264})
    for (int64_t k : {1280, 1408, 4352})
      for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric})
        for (DType act : {DType::F16, DType::BF16})
          problems.push_back(make_problem(n, k, 4, 128, mode, act, 16));
  const std::vector<int64_t> ms = {9, 13, 16};
  WqGemmPlanOptions v65b = forced(1, 6, 2, 2, 1, true), v65a = forced(1, 8, 1, 4, 1, true);
  WqGemmPlanOptions v66_two = forced(1, 2, 1, 4, 4, true), v66_four = forced(1, 4, 1, 4, 4, true);
  v65b.config->stages = v65a.config->stages = v66_four.config->stages = 2;  // v66_two: 3
  for (const WqGemmPlanOptions& o : {v65b, v65a, v66_two, v66_four}) {
    INFO(o.config->str());
    check_forced(problems, ms, o);
  }
}

TEST_CASE("wq_gemm heuristic v68: (1,4,1,4,4,2) at 1-16 rows, 2/3/4-bit, both dtypes", "[gpu]") {
  // v68's K split in 4 (a cluster on sm_90) of 4 tiles × 4 warps along K in every kernel it serves (the
  // one-row kernel, 8-row tiles, 16-row tiles): 264 columns end in a block of 1 tile; K = 1408 (11 chunks)
  // leaves pieces of 2-3 chunks, so some warps along K have none, 4352 (34) pieces of 8-9. Rows 1, 2, 5, 8,
  // 13 and 16 (buckets 1, 2, 8 and 16; 5 and 13 cut a tile short).
  std::vector<WqGemmProblem> problems;
  for (int64_t k : {1408, 4352})
    for (int bits : {2, 3, 4})
      for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric})
        for (DType act : {DType::F16, DType::BF16})
          problems.push_back(make_problem(264, k, bits, 128, mode, act, 16));
  WqGemmPlanOptions v68 = forced(1, 4, 1, 4, 4, true);
  v68.config->stages = 2;
  check_forced(problems, {1, 2, 5, 8, 13, 16}, v68);
}

TEST_CASE("wq_gemm heuristic v71: (1,6,1,8,1,2) at 17-32 rows, 1/2-bit, both dtypes", "[gpu]") {
  // v71's 6 tiles × 8 warps along K in the 32-row bucket (two row blocks of 16): 264 columns end in a block
  // of 3 tiles; K = 1408 (11 chunks) leaves some of the 8 warps without a chunk, 4352 (34) gives them 4-5.
  // Rows 17 (the second row block holds one row), 24 and 32.
  std::vector<WqGemmProblem> problems;
  for (int64_t k : {1408, 4352})
    for (int bits : {1, 2})
      for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric})
        for (DType act : {DType::F16, DType::BF16})
          problems.push_back(make_problem(264, k, bits, 128, mode, act, 32));
  WqGemmPlanOptions v71 = forced(1, 6, 1, 8, 1, true);
  v71.config->stages = 2;
  check_forced(problems, {17, 24, 32}, v71);
}

TEST_CASE("wq_gemm heuristic v72: tiny layers' 16-row blocks, 8 warps along K, K split in clusters",
          "[gpu]") {
  // v72's blocks: one 16-row tile of 2 tiles (4 from 65 rows), 8 warps along K, K in up to 8 pieces that meet
  // in a cluster (sm_90). 136 columns (17 tiles) end in a block of one tile; K = 4352 (34
  // chunks) in 7 pieces leaves pieces of 4-5 chunks and some of the 8 warps without one. 2/4/8-bit, both
  // modes and dtypes; rows 1, 5 and 16 (2 stages), 17, 40 and 64 (split 3, 3 stages), 65 and 128 (4 tiles,
  // split 2).
  std::vector<WqGemmProblem> problems;
  for (int bits : {2, 4, 8})
    for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric})
      for (DType act : {DType::F16, DType::BF16})
        problems.push_back(make_problem(136, 4352, bits, 128, mode, act, 128));
  WqGemmPlanOptions few = forced(1, 2, 1, 8, 7, true), mid = forced(1, 2, 1, 8, 3, true),
                    wide = forced(1, 4, 1, 8, 2, true);
  few.config->stages = 2;
  check_forced(problems, {1, 5, 16}, few);
  check_forced(problems, {17, 40, 64}, mid);
  check_forced(problems, {65, 128}, wide);
  // The most pieces, 8 (a full cluster), at 1-16 rows: K = 8320 (65 chunks) in pieces of 8-9 chunks.
  std::vector<WqGemmProblem> deep;
  for (int bits : {2, 4, 8})
    for (DType act : {DType::F16, DType::BF16})
      deep.push_back(make_problem(136, 8320, bits, 128, DequantMode::SubZeroThenScale, act, 16));
  WqGemmPlanOptions eight = forced(1, 2, 1, 8, 8, true);
  eight.config->stages = 2;
  check_forced(deep, {1, 9, 16}, eight);
}

TEST_CASE("wq_gemm heuristic v72 in every format, v78: tiny layers' K splits with small groups and zeros",
          "[gpu]") {
  // v72's blocks (as above) where every weight is dequantized before the MMA or the scale comes per column:
  // groups of 32 and 64 with integer zeros, HQQ's float zeros and q·s + z in groups of 64, per channel, and
  // groups of 256 (one group over two chunks, so a K piece may start inside a group). 136 columns, K = 4352
  // (34 chunks) in 7 pieces of 4-5 chunks; 2/4-bit, both dtypes; rows 1 and 16, 40, 128; act-order below.
  std::vector<WqGemmProblem> problems;
  for (int bits : {2, 4})
    for (DType act : {DType::F16, DType::BF16}) {
      problems.push_back(make_problem(136, 4352, bits, 32, DequantMode::SubZeroThenScale, act, 128));
      problems.push_back(make_problem(136, 4352, bits, 64, DequantMode::SubFloatZeroThenScale, act, 128));
      problems.push_back(make_problem(136, 4352, bits, 64, DequantMode::ScaleThenAddZero, act, 128));
      problems.push_back(make_problem(136, 4352, bits, 0, DequantMode::SubZeroThenScale, act, 128));
      problems.push_back(make_problem(136, 4352, bits, 256, DequantMode::Symmetric, act, 128));
    }
  // Act-order checkpoints (GPTQ's g_idx, a random permutation here) take the same blocks behind their
  // permutation pre-kernel: 4-bit integer zeros and 8-bit float zeros in groups of 128.
  for (DType act : {DType::F16, DType::BF16})
    for (int bits : {4, 8}) {
      WqGemmProblem p = make_problem(
          136, 4352, bits, 128,
          bits == 8 ? DequantMode::SubFloatZeroThenScale : DequantMode::SubZeroThenScale, act, 128);
      p.act_order = true;
      problems.push_back(p);
    }
  WqGemmPlanOptions few = forced(1, 2, 1, 8, 7, true), mid = forced(1, 2, 1, 8, 3, true),
                    wide = forced(1, 4, 1, 8, 2, true);
  few.config->stages = 2;
  check_forced(problems, {1, 16}, few);
  check_forced(problems, {40}, mid);
  check_forced(problems, {128}, wide);
  // v78's blocks as the heuristic picks them (tests/unit/heuristic_v72_v78_test.cpp): 4 warps along K, K =
  // 2432 (19 chunks) in 4 pieces of 5, 5, 5 and 4 chunks (1-2 a warp), K = 3072 (24) in 6 of 4 (one a warp).
  // Rows 9 and 16; integer zeros in groups of 128 and 64, float zeros in groups of 64, both dtypes.
  for (int64_t k : {2432, 3072}) {
    std::vector<WqGemmProblem> short_k;
    for (DType act : {DType::F16, DType::BF16}) {
      short_k.push_back(make_problem(136, k, 4, 128, DequantMode::SubZeroThenScale, act, 16));
      short_k.push_back(make_problem(136, k, 2, 64, DequantMode::SubZeroThenScale, act, 16));
      short_k.push_back(make_problem(136, k, 4, 64, DequantMode::SubFloatZeroThenScale, act, 16));
    }
    WqGemmPlanOptions v78 = forced(1, 2, 1, 4, k == 2432 ? 4 : 6, true);
    v78.config->stages = 2;
    check_forced(short_k, {9, 16}, v78);
  }
  // 1-bit weights at 65-128 rows: v72's wide block with 4 stages (integer zeros and symmetric, both dtypes).
  std::vector<WqGemmProblem> one_bit;
  for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric})
    for (DType act : {DType::F16, DType::BF16})
      one_bit.push_back(make_problem(136, 4352, 1, 128, mode, act, 128));
  WqGemmPlanOptions deep = forced(1, 4, 1, 8, 2, true);
  deep.config->stages = 4;
  check_forced(one_bit, {65, 128}, deep);
}

TEST_CASE("wq_gemm heuristic v76 and v77 outside g128: narrow layers' per-warp blocks", "[gpu]") {
  // v76's block at 33-64 rows (4 tiles × 8 warps along K) and v77's at 65-128 (4 tiles × 4 warps along K),
  // both staged per warp, K unsplit, on a narrow layer (1032 columns: 129 tiles, under one a SM; the last
  // block holds one). v76 where every weight is dequantized before the MMA (4-bit g32 integer zeros, 3-bit
  // HQQ g64, 4-bit q·s + z g64) and per channel; v77 where the scale comes after it (4-bit g256 symmetric,
  // 3-bit per channel). K = 2432 (19 chunks) gives the 8 warps along K 2-3 chunks each.
  std::vector<WqGemmProblem> v76_problems, v77_problems;
  for (DType act : {DType::F16, DType::BF16}) {
    v76_problems.push_back(make_problem(1032, 2432, 4, 32, DequantMode::SubZeroThenScale, act, 64));
    v76_problems.push_back(make_problem(1032, 2432, 3, 64, DequantMode::SubFloatZeroThenScale, act, 64));
    v76_problems.push_back(make_problem(1032, 2432, 4, 64, DequantMode::ScaleThenAddZero, act, 64));
    v76_problems.push_back(make_problem(1032, 2432, 4, 0, DequantMode::SubZeroThenScale, act, 64));
    v77_problems.push_back(make_problem(1032, 2560, 4, 256, DequantMode::Symmetric, act, 128));
    v77_problems.push_back(make_problem(1032, 2432, 3, 0, DequantMode::SubZeroThenScale, act, 128));
  }
  check_forced(v76_problems, {33, 64}, forced(1, 4, 1, 8, 1, true));
  check_forced(v77_problems, {65, 128}, forced(1, 4, 1, 4, 1, true));
}

TEST_CASE("wq_gemm heuristic v79-v81: narrow layers at 64 and 128 rows, over 1 and 1.5 tiles a SM", "[gpu]") {
  // v80's block at 33-64 rows: 32-row warps of 4 tiles, 4 warps along K, staged per warp, 4 stages. v81's at
  // 65-128: block-shared (2,4,2,4), 3 stages. 1032 columns (129 tiles) end in a block of one tile; K = 2432
  // (19 chunks: the 4 warps along K take 4-5; g256's 2560, 20 chunks, 5 each). 4-bit integer zeros in groups
  // of 128 and 64, HQQ g64, 8-bit g128 and per channel (v80); 3-bit g128, 4-bit g256 symmetric and HQQ g64
  // (v81); both dtypes.
  std::vector<WqGemmProblem> v80_problems, v81_problems;
  for (DType act : {DType::F16, DType::BF16}) {
    v80_problems.push_back(make_problem(1032, 2432, 4, 128, DequantMode::SubZeroThenScale, act, 64));
    v80_problems.push_back(make_problem(1032, 2432, 4, 64, DequantMode::SubZeroThenScale, act, 64));
    v80_problems.push_back(make_problem(1032, 2432, 4, 64, DequantMode::SubFloatZeroThenScale, act, 64));
    v80_problems.push_back(make_problem(1032, 2432, 8, 128, DequantMode::SubZeroThenScale, act, 64));
    v80_problems.push_back(make_problem(1032, 2432, 8, 0, DequantMode::SubZeroThenScale, act, 64));
    v81_problems.push_back(make_problem(1032, 2432, 3, 128, DequantMode::SubZeroThenScale, act, 128));
    v81_problems.push_back(make_problem(1032, 2560, 4, 256, DequantMode::Symmetric, act, 128));
    v81_problems.push_back(make_problem(1032, 2432, 4, 64, DequantMode::SubFloatZeroThenScale, act, 128));
  }
  WqGemmPlanOptions v80 = forced(2, 4, 1, 4, 1, true), v81 = forced(2, 4, 2, 4, 1, true);
  v80.config->stages = 4;
  check_forced(v80_problems, {33, 50, 64}, v80);
  check_forced(v81_problems, {65, 128}, v81);
  if (skipped_without_wgmma("v79")) return;
  // v79's block: two MMA warpgroups of one m64 tile and 2 tiles a warp (128 columns, 64 rows), K in 2 pieces
  // that meet in a cluster, 3 stages, no image. 1032 columns end in a block of one tile; K = 2176 (17 chunks:
  // pieces of 9 and 8). 4-bit g128 and HQQ g64, 3- and 2-bit g128, 8-bit symmetric per channel, 1-bit HQQ
  // g64; rows 65, 100 and 128.
  std::vector<WqGemmProblem> v79_problems;
  for (DType act : {DType::F16, DType::BF16}) {
    v79_problems.push_back(make_problem(1032, 2176, 4, 128, DequantMode::SubZeroThenScale, act, 128));
    v79_problems.push_back(make_problem(1032, 2176, 4, 64, DequantMode::SubFloatZeroThenScale, act, 128));
    v79_problems.push_back(make_problem(1032, 2176, 3, 128, DequantMode::SubZeroThenScale, act, 128));
    v79_problems.push_back(make_problem(1032, 2176, 2, 128, DequantMode::SubZeroThenScale, act, 128));
    v79_problems.push_back(make_problem(1032, 2176, 8, 0, DequantMode::Symmetric, act, 128));
    v79_problems.push_back(make_problem(1032, 2176, 1, 64, DequantMode::SubFloatZeroThenScale, act, 128));
  }
  WqGemmPlanOptions v79 = forced(4, 2, 8, 1, 2, false, true);
  v79.config->stages = 3;
  check_forced(v79_problems, {65, 100, 128}, v79);
}

TEST_CASE("wq_gemm heuristic v82-v85: narrow layers of 1/2/3/8-bit weights at 32, 64 and 128 rows", "[gpu]") {
  // v82's blocks at 65-128 rows: (1,8,1,4,1,3) and v77's (1,4,1,4,1,3), staged per warp. v83's at 33-64:
  // (1,8,1,8), 3 stages or 4. 1032 columns (129 tiles) end in a block of one tile; K = 2432 (19 chunks: 4
  // warps along K take 4-5, 8 take 2-3). 1/2-bit integer zeros in groups of 128, 2-bit per channel and
  // symmetric g256 (v82's (1,8,1,4)); 1/2-bit HQQ g64 and 2-bit g32 (v82's (1,4,1,4), every weight
  // dequantized first); 1/2/3-bit g128 and 2-bit symmetric (v83, 3 stages); 2-bit g64, HQQ g64 and 1-bit g32
  // (4 stages); both dtypes.
  std::vector<WqGemmProblem> wide, wave, v83_3, v83_4;
  for (DType act : {DType::F16, DType::BF16}) {
    for (int bits : {1, 2}) {
      wide.push_back(make_problem(1032, 2432, bits, 128, DequantMode::SubZeroThenScale, act, 128));
      wave.push_back(make_problem(1032, 2432, bits, 64, DequantMode::SubFloatZeroThenScale, act, 128));
    }
    for (int bits : {1, 2, 3})
      v83_3.push_back(make_problem(1032, 2432, bits, 128, DequantMode::SubZeroThenScale, act, 64));
    wide.push_back(make_problem(1032, 2432, 2, 0, DequantMode::SubZeroThenScale, act, 128));
    wide.push_back(make_problem(1032, 2560, 2, 256, DequantMode::Symmetric, act, 128));
    wave.push_back(make_problem(1032, 2432, 2, 32, DequantMode::SubZeroThenScale, act, 128));
    v83_3.push_back(make_problem(1032, 2432, 2, 128, DequantMode::Symmetric, act, 64));
    v83_4.push_back(make_problem(1032, 2432, 2, 64, DequantMode::SubZeroThenScale, act, 64));
    v83_4.push_back(make_problem(1032, 2432, 2, 64, DequantMode::SubFloatZeroThenScale, act, 64));
    v83_4.push_back(make_problem(1032, 2432, 1, 32, DequantMode::SubZeroThenScale, act, 64));
  }
  check_forced(wide, {65, 100, 128}, forced(1, 8, 1, 4, 1, true));
  check_forced(wave, {65, 128}, forced(1, 4, 1, 4, 1, true));
  check_forced(v83_3, {33, 50, 64}, forced(1, 8, 1, 8, 1, true));
  WqGemmPlanOptions four_stages = forced(1, 8, 1, 8, 1, true);
  four_stages.config->stages = 4;
  check_forced(v83_4, {33, 64}, four_stages);
  // v84's block at 17-32 rows: 2 tiles × 8 warps along K, staged per warp, 3 stages; 1/2/8-bit g128, 2-bit
  // HQQ g64 and 8-bit per channel, K = 2432 (19 chunks: 8 warps take 2-3). 1032 columns end in a block of one
  // tile.
  std::vector<WqGemmProblem> v84_problems;
  for (DType act : {DType::F16, DType::BF16}) {
    for (int bits : {1, 2, 8})
      v84_problems.push_back(make_problem(1032, 2432, bits, 128, DequantMode::SubZeroThenScale, act, 32));
    v84_problems.push_back(make_problem(1032, 2432, 2, 64, DequantMode::SubFloatZeroThenScale, act, 32));
    v84_problems.push_back(make_problem(1032, 2432, 8, 0, DequantMode::SubZeroThenScale, act, 32));
  }
  check_forced(v84_problems, {17, 24, 32}, forced(1, 2, 1, 8, 1, true));
  if (skipped_without_wgmma("v85")) return;
  // v85's block at 33-64 rows: two MMA warpgroups of one m64 tile and 2 tiles a warp (128 columns), stream K
  // over K = 8320 (65 chunks, v85's least), 3 stages, no image; 1032 columns end in a block of one tile.
  // 1/2-bit g128, 2-bit g64, HQQ g64 and per channel, both dtypes.
  std::vector<WqGemmProblem> v85_problems;
  for (DType act : {DType::F16, DType::BF16}) {
    for (int bits : {1, 2})
      v85_problems.push_back(make_problem(1032, 8320, bits, 128, DequantMode::SubZeroThenScale, act, 64));
    v85_problems.push_back(make_problem(1032, 8320, 2, 64, DequantMode::SubZeroThenScale, act, 64));
    v85_problems.push_back(make_problem(1032, 8320, 2, 64, DequantMode::SubFloatZeroThenScale, act, 64));
    v85_problems.push_back(make_problem(1032, 8320, 2, 0, DequantMode::SubZeroThenScale, act, 64));
  }
  WqGemmPlanOptions v85 = forced(4, 2, 8, 1, 1, false, true, true);
  v85.config->stages = 3;
  check_forced(v85_problems, {33, 50, 64}, v85);
}

TEST_CASE("wq_gemm heuristic v73: 1/2-bit wgmma 32-row blocks on short K, no image", "[gpu]") {
  if (skipped_without_wgmma("v73")) return;
  // v73's block: two MMA warpgroups of 4 tiles a warp (256 columns, 32 rows), K unsplit (K = 1024: 8 chunks
  // for 3 stages), no image. 264 columns end in a block of one tile; rows 17, 24 and 32. Integer zeros in
  // groups of 128, float zeros (HQQ) in groups of 64, both dtypes, 1- and 2-bit.
  std::vector<WqGemmProblem> problems;
  for (int bits : {1, 2})
    for (DType act : {DType::F16, DType::BF16}) {
      problems.push_back(make_problem(264, 1024, bits, 128, DequantMode::SubZeroThenScale, act, 32));
      problems.push_back(make_problem(264, 1024, bits, 64, DequantMode::SubFloatZeroThenScale, act, 32));
    }
  WqGemmPlanOptions v73 = forced(2, 4, 8, 1, 1, false, true);
  v73.config->stages = 3;
  check_forced(problems, {17, 24, 32}, v73);
}

TEST_CASE("wq_gemm heuristic v74: 8-bit block-shared (2,4,2,2) with 2 stages at 17-32 rows", "[gpu]") {
  // v74's block: 32 rows, 4 tiles × 2 warps side by side × 2 along K, 2 stages. 264 columns end in a block of
  // one tile; K = 1408 (11 chunks: the two warps along K take 6 and 5).
  std::vector<WqGemmProblem> problems;
  for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric})
    for (DType act : {DType::F16, DType::BF16})
      problems.push_back(make_problem(264, 1408, 8, 128, mode, act, 32));
  WqGemmPlanOptions v74 = forced(2, 4, 2, 2, 1, true);
  v74.config->stages = 2;
  check_forced(problems, {17, 25, 32}, v74);
}

TEST_CASE("wq_gemm heuristic v75: wgmma 64-row blocks at 65-128 rows on K of 2-4 chunks", "[gpu]") {
  if (skipped_without_wgmma("v75")) return;
  // v75's block: two MMA warpgroups of one m64 tile (128 columns, 64 rows), K unsplit, 4 stages (more than
  // the chunks: K = 256 has 2), no image. 264 columns end in a block of one tile; rows 65 (the second row
  // block holds one row), 100 and 128; 3/4-bit, both modes and dtypes.
  std::vector<WqGemmProblem> problems;
  for (int64_t k : {256, 384, 512})
    for (int bits : {3, 4})
      for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric})
        for (DType act : {DType::F16, DType::BF16})
          problems.push_back(make_problem(264, k, bits, 128, mode, act, 128));
  check_forced(problems, {65, 100, 128}, forced(4, 2, 8, 1, 1, false, true));
}

TEST_CASE("wq_gemm model and tensor-parallel shapes for 2/3/8-bit and float zeros", "[gpu]") {
  struct Case {
    int64_t n, k;
    int bits, group;
    DequantMode mode;
    DType act;
  };
  const Case cases[] = {
      {4096, 4096, 2, 128, DequantMode::SubZeroThenScale, DType::F16},
      {4096, 4096, 8, 128, DequantMode::Symmetric, DType::BF16},
      {1792, 5504, 3, 64, DequantMode::SubFloatZeroThenScale, DType::F16},   // 14336/8 × 11008/2
      {5504, 4096, 8, 64, DequantMode::SubFloatZeroThenScale, DType::BF16},  // 11008/2
      {4000, 4160, 4, 64, DequantMode::ScaleThenAddZero, DType::F16},        // K not a multiple of 128
      {1792, 5504, 1, 128, DequantMode::SubZeroThenScale, DType::BF16},
  };
  const std::vector<int64_t> ms = {1, 3, 16, 64, 130};
  std::vector<WqGemmProblem> problems;
  for (const Case& c : cases) problems.push_back(make_problem(c.n, c.k, c.bits, c.group, c.mode, c.act, 130));
  const auto plans = build_plans(problems, ms);
  for (std::size_t i = 0; i < problems.size(); ++i) {
    auto L = make_layer(problems[i], true);
    for (int64_t m : ms) run_and_check(*L, *plans[i], m, true);
  }
}

TEST_CASE("wq_gemm fp16 accumulation: every bits x group x mode, each decomposition, model shapes", "[gpu]") {
  std::vector<WqGemmProblem> small;
  for (int bits : {1, 2, 3, 4, 8})
    for (int group : {32, 128, 0})
      for (DequantMode mode : kModes) {
        WqGemmProblem p = make_problem(264, 1024, bits, group, mode, DType::F16, 17);
        p.accum = DType::F16;
        if (bits == 3) p.out = DType::F32;
        small.push_back(p);
      }
  const std::size_t n_small = small.size();
  // The library's choice; split along K; swapped operands with block-shared activations (M = 1);
  // staged per warp, split; 2 x 8 tiles of block-shared activations.
  const auto chosen = build_plans(small, {17});
  std::vector<std::vector<std::unique_ptr<WqGemmPlan>>> forced_plans;
  for (const WqGemmPlanOptions& o : {forced(1, 2, 2, 2, 3), forced(1, 2, 2, 2, 3, true),
                                     forced(1, 4, 1, 2, 3, true), forced(2, 8, 2, 1, 1, true)})
    forced_plans.push_back(build_plans(small, {17}, std::vector<WqGemmPlanOptions>(n_small, o)));
  for (std::size_t i = 0; i < n_small; ++i) {
    auto L = make_layer(small[i], small[i].group_size == 32);
    for (int64_t m : {1, 5, 17}) run_and_check(*L, *chosen[i], m, small[i].group_size == 32);
    for (const auto& plans : forced_plans)
      for (int64_t m : {1, 17}) run_and_check(*L, *plans[i], m, small[i].group_size == 32);
  }
  // Model and tensor-parallel shapes at every decomposition's M (no wgmma at 64 and 130 rows).
  const std::vector<int64_t> ms = {1, 3, 16, 64, 130};
  std::vector<WqGemmProblem> shapes = {
      make_problem(4096, 4096, 4, 128, DequantMode::SubZeroThenScale, DType::F16, 130),
      make_problem(1792, 5504, 4, 128, DequantMode::Symmetric, DType::F16, 130),
      make_problem(4000, 4160, 8, 64, DequantMode::SubZeroThenScale, DType::F16, 130)};
  for (auto& p : shapes) p.accum = DType::F16;
  const auto plans = build_plans(shapes, ms);
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    auto L = make_layer(shapes[i], true);
    for (int64_t m : ms) {
      CHECK_FALSE(plans[i]->config_for(m).wgmma);
      run_and_check(*L, *plans[i], m, true);
    }
  }
}

// Crafted so that only per-chunk fp16 sums pass: every weight (15 − 8)·32 = 224 and every
// activation 1, so each 128-k chunk sums to 28672 (its two chains of 4 MMA steps to 14336 each,
// exact in fp16) and the whole K of 16384 to 3670016. Any one warp's share of K, in any config
// here (up to 8 warps along K × a split of 3: 5 chunks or more), sums past fp16's 65504: a kernel
// that keeps fp16 sums beyond a chunk returns inf (run_and_check requires finite outputs) or a
// saturated value, and one that drops or repeats a chunk misses the exact value.
TEST_CASE("wq_gemm fp16 accumulation sums each 128-k chunk in fp16 and the chunks in fp32", "[gpu]") {
  WqGemmProblem p = make_problem(72, 16384, 4, 128, DequantMode::Symmetric, DType::F16, 16);
  p.accum = DType::F16;
  p.out = DType::F32;
  auto L = make_layer(p, false, [](RandomLayer& w, std::vector<uint16_t>& x) {
    std::fill(w.q.begin(), w.q.end(), uint8_t{15});
    std::fill(w.scales.begin(), w.scales.end(), ref::float_to_f16(32.f));
    std::fill(x.begin(), x.end(), ref::float_to_f16(1.f));
  });
  std::vector<std::unique_ptr<WqGemmPlan>> plans = build_plans({p}, {1, 16});
  for (const WqGemmPlanOptions& o :
       {forced(1, 2, 2, 2, 3), forced(1, 4, 1, 2, 3, true), forced(1, 8, 1, 8, 1, true)})
    plans.push_back(std::move(build_plans({p}, {1, 16}, {o})[0]));
  for (const auto& plan : plans)
    for (int64_t m : {1, 16}) {
      INFO("config " << plan->config_for(m).str() << ", M = " << m);
      run_and_check(*L, *plan, m, false);
      const std::vector<double> y = download_y(*L, m);
      CHECK(std::all_of(y.begin(), y.end(), [](double v) { return v == 224.0 * 16384; }));
    }
}

TEST_CASE("wq_gemm act-order: weights packed through a random g_idx", "[gpu]") {
  std::vector<WqGemmProblem> problems;
  std::vector<WqGemmPlanOptions> options;
  for (int bits : {4, 2, 8})
    for (DType act : {DType::F16, DType::BF16})
      for (int variant = 0; variant < 3; ++variant) {  // the library's choice, split along K, wgmma
        if (variant == 2 && (bits != 4 || !has_wgmma())) continue;  // (stream K, activations from an image)
        WqGemmProblem p = make_problem(
            bits == 4 ? 4096 : 1032, 4096, bits, bits == 2 ? 64 : 128,
            bits == 8 ? DequantMode::SubFloatZeroThenScale : DequantMode::SubZeroThenScale, act, 130);
        p.act_order = true;
        problems.push_back(p);
        options.push_back(variant == 0   ? WqGemmPlanOptions{}
                          : variant == 1 ? forced(1, 4, 1, 2, 4)
                                         : forced(4, 2, 8, 1, 1, false, true, true, true));
      }
  const std::vector<int64_t> ms = {1, 3, 16, 64, 130};
  const auto plans = build_plans(problems, ms, options);
  for (std::size_t i = 0; i < problems.size(); ++i) {
    auto L = make_layer(problems[i], false);
    for (int64_t m : ms) run_and_check(*L, *plans[i], m, false);
  }
}

TEST_CASE("wq_gemm deterministic: bitwise equal across 20 runs and across M buckets", "[gpu]") {
  // 512 × 8192 leaves most SMs idle, so the library splits K; forced splits check 3 more shapes (on
  // sm_90 splits of up to 8 pieces meet in a cluster, so the 12-way one keeps the workspace's slices
  // tested there).
  // The last three are wide enough (on 132 SMs) for one-row K orders of 8, 4 and 2 warps along K, whose
  // deterministic blocks from 32 rows (heuristic v55) differ in shape, staging and warps side by side.
  struct Case {
    int64_t n, k;
    int bits;
    DType act;
    std::optional<WqGemmConfig> config;
    bool library_splits;  // the library's own choice splits K at M = 1 (checked, else the case tests less)
    bool no_tuning_file = false;
  };
  const Case cases[] = {{512, 8192, 4, DType::F16, std::nullopt, true},
                        {520, 4096, 2, DType::BF16, std::nullopt, false},
                        {1032, 2048, 8, DType::F16, WqGemmConfig{1, 4, 1, 2, 5, 3}, false},
                        {1032, 2048, 4, DType::F16, WqGemmConfig{2, 8, 2, 2, 3, 3, true}, false},
                        {1032, 2048, 4, DType::BF16, WqGemmConfig{1, 4, 1, 2, 12, 3}, false},
                        {8200, 1152, 4, DType::F16, std::nullopt, false, true},
                        {12296, 1024, 8, DType::BF16, std::nullopt, false, true},
                        {17416, 256, 3, DType::F16, std::nullopt, false, true}};
  const std::vector<int64_t> ms = {1, 3, 16, 64, 130};
  for (const Case& c : cases) {
    WqGemmProblem p = make_problem(c.n, c.k, c.bits, 128, DequantMode::SubZeroThenScale, c.act, 130);
    p.deterministic = true;
    WqGemmPlanOptions o;
    o.config = c.config;
    // The heuristic's choice (no tuning file: a shipped entry for a nearby layer may not split).
    static Runtime heuristic_rt([] {
      RuntimeOptions ro;
      ro.no_tuning_db = true;
      return ro;
    }());
    WqGemmPlan plan(c.library_splits || c.no_tuning_file ? heuristic_rt : gpu_runtime(), p, ms, o);
    if (c.library_splits) REQUIRE(plan.config_for(1).split_k > 1);
    for (int64_t m : ms) {
      INFO(m << ": " << plan.config_for(m).str());
      CHECK(plan.config_for(m).split_k == plan.config_for(1).split_k);
      CHECK(plan.config_for(m).warps_k == plan.config_for(1).warps_k);
    }
    auto L = make_layer(p, true);
    run_and_check(*L, plan, 130, true);
    const auto first = raw_y(*L, 130);
    for (int rep = 0; rep < 20; ++rep) {
      L->y_dev.fill_bytes(0xff);
      plan.run(L->args(true), 130, nullptr);
      LOWBIT_CU_CHECK(jit::driver().cuCtxSynchronize());
      INFO("run " << rep);
      REQUIRE(raw_y(*L, 130) == first);
    }
    // Row r of an M-row call must equal row r of the 130-row call, for every bucket.
    const std::size_t row_bytes = static_cast<std::size_t>(p.n) * dtype_bytes(p.out);
    for (int64_t m : ms) {
      run_and_check(*L, plan, m, true);
      const auto y = raw_y(*L, m);
      INFO("m = " << m << " " << plan.config_for(m).str());
      REQUIRE(std::memcmp(y.data(), first.data(), static_cast<std::size_t>(m) * row_bytes) == 0);
    }
  }
}

// Each M bucket's plan lays the workspace out for its own rows, and an act-order call leaves its
// permuted activations in it: they must never lie where another bucket's call expects zero split-K
// counters or sums.
TEST_CASE("wq_gemm act-order through the functional API: calls of different M share one workspace", "[gpu]") {
  WqGemmProblem p = make_problem(256, 8192, 4, 128, DequantMode::SubZeroThenScale, DType::F16, 64);
  p.act_order = true;
  auto L = make_layer(p, false);
  const std::vector<int64_t> ms = {64, 1, 16, 64, 2, 1, 16};
  bool splits = false;  // some bucket's config must keep sums in the workspace, or this cannot fail
  for (int64_t m : {1, 2, 16, 64}) {
    WqGemmProblem pm = p;
    pm.m = m;
    const WqGemmConfig c = WqGemmPlan(gpu_runtime(), pm, {m}).config_for(m);
    splits = splits || c.split_k > 1 || c.stream_k;
  }
  REQUIRE(splits);
  jit::DeviceBuffer ws(workspace_bytes(p));  // sized for the largest M, reused by every call
  ws.fill_bytes(0);
  for (int64_t m : ms) {
    WqGemmProblem pm = p;
    pm.m = m;
    WqGemmArgs a = L->args(false);
    a.workspace = ws.get();
    L->y_dev.fill_bytes(0xff);
    wq_gemm(gpu_runtime(), pm, a, nullptr);
    LOWBIT_CU_CHECK(jit::driver().cuCtxSynchronize());
    INFO("m = " << m);
    REQUIRE(relative_error(*L, download_y(*L, m), m) <= tolerance(p));
  }
}

TEST_CASE("wq_gemm act-order and zero-point arguments are checked before launch", "[gpu]") {
  WqGemmProblem p = make_problem(512, 1024, 4, 128, DequantMode::SubFloatZeroThenScale, DType::F16, 4);
  p.act_order = true;
  auto L = make_layer(p, false);
  WqGemmPlan plan(gpu_runtime(), p, {4});
  auto expect_error = [&](const WqGemmArgs& a, const std::string& needle) {
    require_refused(*L, plan, a, 4, needle, 4);
  };
  WqGemmArgs a = L->args(false);
  a.w.perm = nullptr;
  expect_error(a, "args.w.perm is null");
  a = L->args(false);
  a.w.zeros = static_cast<const char*>(a.w.zeros) + 8;  // float zeros need 16 bytes
  expect_error(a, "16-byte aligned");
  run_and_check(*L, plan, 4, false);

  // Without a workspace for the permuted activations: refused, nothing written.
  WqGemmPlanOptions no_ws;
  no_ws.allocate_workspace = false;
  WqGemmPlan bare(gpu_runtime(), p, {4}, no_ws);
  REQUIRE(bare.workspace_bytes() > 0);
  require_refused(*L, bare, L->args(false), 4, "act-order", 4);
  // The functional API with workspace_bytes(problem), twice (the workspace is reused).
  jit::DeviceBuffer ws(workspace_bytes(p));
  ws.fill_bytes(0);
  for (int rep = 0; rep < 2; ++rep) {
    WqGemmArgs fa = L->args(false);
    fa.workspace = ws.get();
    L->y_dev.fill_bytes(0xff);
    wq_gemm(gpu_runtime(), p, fa, nullptr);
    LOWBIT_CU_CHECK(jit::driver().cuCtxSynchronize());
    REQUIRE(relative_error(*L, download_y(*L, 4), 4) <= tolerance(p));
  }

  WqGemmProblem plain = p;
  plain.act_order = false;
  WqGemmPlan plain_plan(gpu_runtime(), plain, {4});
  bool threw = false;
  try {
    plain_plan.run(L->args(false), 4, nullptr);
  } catch (const Error& e) {
    threw = std::string(e.what()).find("act_order is false") != std::string::npos;
  }
  REQUIRE(threw);
}

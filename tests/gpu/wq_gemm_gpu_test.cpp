// wq_gemm on the GPU against the CPU reference: fresh random data, odd shapes, both
// decompositions, outputs poisoned before every launch.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>

#include "gpu/gpu_fixture.hpp"
#include "jit/driver.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "ref/half.hpp"
#include "ref/wq_gemm_ref.hpp"
#include "support/catch.hpp"
#include "tune/timer.hpp"

using namespace lowbit;
using namespace lowbit::test;

namespace {

const std::vector<int64_t> kMs = {1, 2, 3, 7, 16, 33, 64, 130};

WqGemmProblem problem(int64_t n, int64_t k, int group = 128, int64_t max_m = 130) {
  WqGemmProblem p;
  p.m = max_m, p.n = n, p.k = k, p.group_size = group;
  return p;
}

WqGemmConfig config(int mt, int nt, int wn, int wk, int sk, int stages = 4, bool x_shared = false) {
  WqGemmConfig c;
  c.m_tiles = mt, c.n_tiles = nt, c.warps_n = wn, c.warps_k = wk, c.split_k = sk, c.stages = stages;
  c.x_shared = x_shared;
  return c;
}
// A warpgroup-MMA config (sm_90a): 16·mt rows × 8·nt·wn columns per block.
WqGemmConfig wgmma_config(int mt, int nt, int wn, int sk, int stages) {
  WqGemmConfig c = config(mt, nt, wn, 1, sk, stages);
  c.wgmma = true;
  return c;
}
// ... with stream K: as many blocks as fit share the steps; tiles split between blocks.
WqGemmConfig stream_k_config(int mt, int nt, int wn, int stages) {
  WqGemmConfig c = wgmma_config(mt, nt, wn, 1, stages);
  c.stream_k = true;
  return c;
}
// ... with the activations from an image arranged first (one more launch per call).
WqGemmConfig with_image(WqGemmConfig c) {
  c.x_image = true;
  return c;
}
bool has_wgmma() {
  return wq::has_wgmma(gpu_runtime().arch());
}
// For the test cases that exercise only the wgmma kernel: says so, visibly, off sm_90a.
bool skipped_without_wgmma() {
  if (has_wgmma()) return false;
  WARN("skipped: wgmma needs sm_90a");
  return true;
}

// Every M of kMs through thirteen plans: the library's choice, data-parallel, split-K (three warps
// along K: a count that is not a power of 2), four with block-shared activations (warps stepping
// through K in pairs, split; 4 × 8 tiles per warp, which dequantizes before the MMA with one
// accumulator chain; one row tile, which swaps operands; four warps side by side under a barrier of
// their own), four with per-warp staged activations
// (one warp along N: split; 12 warps along K, whose chunks and final sums split unevenly; 16 tiles,
// split, which scale after the MMA up to 8 rows; 6 tiles, split as the H200 file runs them on narrow
// layers, whose 48-column blocks end inside every layer's last block but 6144-wide ones), a
// twelve-way K split (past a cluster: its pieces add through the workspace on every GPU; the splits
// above meet in a cluster on sm_90) and an eight-way one with one warp along K (a cluster on sm_90,
// its last piece idle on the odd layer); on sm_90a seven more with warpgroup MMA (N = 16 rows,
// split, 2 stages; 64 rows, two warpgroups; 32 rows, two warpgroups of two m64 tiles; 128 rows,
// split, 6 stages; stream K at 64 rows × 256 columns and 128 rows × 128 columns, whose tiles are
// split among up to a dozen blocks on the small layers, and whose steps cross row blocks; the
// 128-row split one and the 64-row stream-K one with their activations from an image; a four-way
// split at 64 rows, whose pieces add in the workspace's scratch).
void sweep(int64_t n, int64_t k, int group = 128) {
  auto L = make_layer(problem(n, k, group), /*with_bias=*/false);
  Runtime& rt = gpu_runtime();
  const int split = static_cast<int>(std::min<int64_t>(3, (k + 127) / 128));
  const int split4 =
      static_cast<int>(std::min<int64_t>(4, (k + 127) / 128));  // past a cluster where K allows
  WqGemmPlan chosen(rt, L->problem, kMs);
  const int split12 = static_cast<int>(std::min<int64_t>(12, (k + 127) / 128));
  const int split8 = static_cast<int>(std::min<int64_t>(8, (k + 127) / 128));
  WqGemmPlanOptions dp, sk, xs_split, xs_wide, xs_swap, xs_group4, xs_warp, xs_warp12, xs_warp16, xs_warp6,
      sk12, sk8;
  dp.config = config(2, 4, 1, 4, 1);
  sk.config = config(1, 2, 2, 3, split);
  xs_split.config = config(2, 4, 2, 2, split, 3, true);
  xs_wide.config = config(4, 8, 4, 1, 1, 2, true);
  xs_swap.config = config(1, 4, 2, 4, split, 2, true);
  // Four warps side by side stage each chunk's activations under a 128-thread barrier of their own.
  xs_group4.config = config(1, 4, 4, 2, split, 2, true);
  xs_warp.config = config(1, 4, 1, 4, split, 3, true);
  xs_warp12.config = config(1, 8, 1, 12, 1, 2, true);
  // 16 tiles per warp need one scale row per lane and chunk: groups of 64 or more.
  xs_warp16.config = config(1, group == 32 ? 8 : 16, 1, 4, split, 2, true);
  xs_warp6.config = config(1, 6, 1, 8, split, 2, true);
  sk12.config = config(1, 2, 1, 2, split12, 3, true);
  // One warp along K (its accumulators go to the cluster's rank 0 as they are), up to 8 pieces: on
  // 4000×4160 (33 chunks of 5 per piece) the last piece has no chunk.
  sk8.config = config(1, 4, 2, 1, split8, 3, true);
  std::vector<WqGemmPlan> plans;
  plans.emplace_back(rt, L->problem, kMs);
  for (const auto* o : {&dp, &sk, &xs_split, &xs_wide, &xs_swap, &xs_group4, &xs_warp, &xs_warp12, &xs_warp16,
                        &xs_warp6, &sk12, &sk8})
    plans.emplace_back(rt, L->problem, kMs, *o);
  if (has_wgmma()) {
    for (const WqGemmConfig& c :
         {wgmma_config(1, 2, 4, split, 2), wgmma_config(4, 2, 8, 1, 5), wgmma_config(2, 4, 8, 1, 4),
          with_image(wgmma_config(8, 2, 4, split, 6)), with_image(stream_k_config(4, 4, 8, 3)),
          stream_k_config(8, 2, 8, 3), wgmma_config(4, 2, 8, split4, 4)}) {
      WqGemmPlanOptions o;
      o.config = c;
      plans.emplace_back(rt, L->problem, kMs, o);
    }
  }
  for (int64_t m : kMs)
    for (const auto& plan : plans) {
      INFO(plan.config_for(m).str());
      run_and_check(*L, plan, m, false);
    }
}

}  // namespace

TEST_CASE("wq_gemm 4096x4096 all M, both decompositions", "[gpu][sweep]") {
  sweep(4096, 4096);
}
TEST_CASE("wq_gemm 8192x8192 all M, both decompositions", "[gpu][sweep]") {
  sweep(8192, 8192);
}
TEST_CASE("wq_gemm odd 4000x4160 (K not a multiple of 128), group 32", "[gpu][sweep]") {
  sweep(4000, 4160, 32);
}
TEST_CASE("wq_gemm 11008x4096", "[gpu][sweep]") {
  sweep(11008, 4096);
}
TEST_CASE("wq_gemm small N, long K: the library's own choice splits K", "[gpu][sweep]") {
  WqGemmProblem p = problem(512, 8192);
  p.m = 1;
  REQUIRE(choose_config(p, gpu_runtime().arch(), gpu_runtime().sm_count()).split_k >
          1);  // else this tests nothing new
  sweep(512, 8192);
}
TEST_CASE("wq_gemm tiny odd N 20x256 and N 8x128", "[gpu][sweep]") {
  sweep(20, 256);
  sweep(8, 128);
}

namespace {
// Every group size, both modes, act-dtype or fp32 outputs, bias or not, through eight plans; one test
// case per activation dtype (each compiles about a hundred kernels; the GPU suite runs in shards).
void groups_modes_bias(DType act) {
  Runtime& rt = gpu_runtime();
  for (int group : {32, 64, 128, 256, 0})
    for (bool f32_out : {false, true})
      for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric}) {
        WqGemmProblem p = problem(264, 1024, group, 17);
        p.act = act;
        p.out = f32_out ? DType::F32 : act;
        p.mode = mode;
        const bool bias = group != 64;
        auto L = make_layer(p, bias);
        WqGemmPlanOptions sk, xs, xw, xw1, xw6, wg, wgs;
        sk.config = config(1, 1, 2, 2, 2);
        xs.config = config(2, 8, 2, 2, 2, 3, true);   // 16 tiles: dequantized before the MMA
        xw.config = config(2, 2, 1, 2, 2, 3, true);   // per-warp staged activations, 2 row tiles
        xw1.config = config(1, 2, 1, 2, 2, 3, true);  // ... 1 row tile, swapped operands
        xw6.config = config(1, 6, 1, 2, 2, 3, true);  // ... 6 tiles (33 tiles: a partial last block)
        wg.config = has_wgmma() ? with_image(wgmma_config(1, 4, 4, 2, 4)) : sk.config;
        wgs.config = has_wgmma() ? stream_k_config(1, 4, 4, 3) : sk.config;
        WqGemmPlan chosen(rt, p, {1, 17}), split(rt, p, {17}, sk), shared(rt, p, {17}, xs),
            per_warp(rt, p, {17}, xw), per_warp_swapped(rt, p, {8, 17}, xw1), per_warp6(rt, p, {17}, xw6),
            warpgroup(rt, p, {17}, wg), warpgroup_stream_k(rt, p, {17}, wgs);
        for (int64_t m : {1, 5, 17}) {
          run_and_check(*L, chosen, m, bias);
          run_and_check(*L, split, m, bias);
          run_and_check(*L, shared, m, bias);
          run_and_check(*L, per_warp, m, bias);
          run_and_check(*L, per_warp_swapped, m, bias);
          run_and_check(*L, per_warp6, m, bias);
          run_and_check(*L, warpgroup, m, bias);
          run_and_check(*L, warpgroup_stream_k, m, bias);
        }
        run_and_check(*L, per_warp_swapped, 8, bias);  // every row of the 8-row stage copied
      }
}
}  // namespace

TEST_CASE("wq_gemm groups, modes, outputs, bias: f16 activations", "[gpu]") {
  groups_modes_bias(DType::F16);
}
TEST_CASE("wq_gemm groups, modes, outputs, bias: bf16 activations", "[gpu]") {
  groups_modes_bias(DType::BF16);
}

namespace {
// New random weights and activations for the same problem, uploaded into the layer's buffers (so
// plans and captured graphs that hold those pointers see them), with their reference.
void refill_layer(DeviceLayer& L) {
  auto fresh = make_layer(L.problem, false);
  L.x_dev.upload(fresh->x.data(), fresh->x.size() * 2);
  L.qweight.upload(fresh->packed.qweight.data(), fresh->packed.qweight.size() * 4);
  L.scales.upload(fresh->packed.scales.data(), fresh->packed.scales.size() * 2);
  L.zeros.upload(fresh->packed.zeros.data(), fresh->packed.zeros.size());
  if (L.perm.bytes()) L.perm.upload(fresh->packed.perm.data(), fresh->packed.perm.size() * 4);  // act-order
  L.ref = fresh->ref;
}
// Sets an environment variable for its lifetime.
struct ScopedEnv {
  const char* name;
  ScopedEnv(const char* n, const char* value) : name(n) { ::setenv(n, value, 1); }
  ~ScopedEnv() { ::unsetenv(name); }
};

// The same plan built with LOWBIT_NO_PDL=1 (read at plan build): its kernels after a pre-kernel
// (image, sums, permutation) launch after it instead of overlapping it.
std::unique_ptr<WqGemmPlan> plan_without_pdl(Runtime& rt, const WqGemmProblem& p,
                                             const std::vector<int64_t>& ms, const WqGemmPlanOptions& o) {
  ScopedEnv serial("LOWBIT_NO_PDL", "1");
  return std::make_unique<WqGemmPlan>(rt, p, ms, o);
}

// New weights and activations, then `overlapped` and `serial` at M = m: each checked against the
// reference, and bit for bit the same (configs without a K split).
void require_same_as_serial(DeviceLayer& L, const WqGemmPlan& overlapped, const WqGemmPlan& serial,
                            int64_t m) {
  refill_layer(L);
  run_and_check(L, overlapped, m, false);
  const std::vector<double> y_overlapped = download_y(L, m);
  run_and_check(L, serial, m, false);
  REQUIRE(download_y(L, m) == y_overlapped);
}

// Captures plan.run at M = m once, then replays it with new weights and activations written into
// the same buffers each time, checking each replay's output (poisoned first).
void check_graph_replay(DeviceLayer& L, const WqGemmPlan& plan, int64_t m) {
  const jit::Driver& d = jit::driver();
  tune::ScopedStream stream;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  LOWBIT_CU_CHECK(d.cuStreamBeginCapture(stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  plan.run(L.args(false), m, stream.get());
  LOWBIT_CU_CHECK(d.cuStreamEndCapture(stream.get(), &graph));
  LOWBIT_CU_CHECK(d.cuGraphInstantiateWithFlags(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    refill_layer(L);  // new weights and x with their reference
    L.y_dev.fill_bytes(0xff);
    LOWBIT_CU_CHECK(d.cuGraphLaunch(exec, stream.get()));
    stream.synchronize();
    const double err = relative_error(L, download_y(L, m), m);
    CAPTURE(replay, err);
    REQUIRE(err <= tolerance(L.problem));
  }
  d.cuGraphExecDestroy(exec);
  d.cuGraphDestroy(graph);
}

void check_clean_workspace(const WqGemmConfig& config) {
  INFO(config.str());
  Runtime& rt = gpu_runtime();
  auto L = make_layer(problem(1032, 2048, 128, 40), false);
  WqGemmPlanOptions sk;
  sk.config = config;
  WqGemmPlan plan(rt, L->problem, {40}, sk);
  for (int i = 0; i < 5; ++i) run_and_check(*L, plan, 40, false);
  check_graph_replay(*L, plan, 40);
}
}  // namespace

TEST_CASE("wq_gemm split-K leaves its workspace clean: repeated calls and graph replay", "[gpu]") {
  check_clean_workspace(config(1, 4, 1, 2, 12));  // through the workspace on every GPU
  check_clean_workspace(config(1, 4, 1, 2, 5));   // on sm_90 a cluster: no workspace at all
}
TEST_CASE("wq_gemm stream K leaves its workspace clean: repeated calls and graph replay", "[gpu]") {
  // 9 column blocks × 16 chunks for 132 blocks: every tile is summed by a dozen or more blocks.
  if (skipped_without_wgmma()) return;
  check_clean_workspace(stream_k_config(4, 2, 8, 3));
}

TEST_CASE("wq_gemm x_image: repeated calls and graph replay with new activations", "[gpu]") {
  // The image is rewritten by every call (a replay must not see the previous activations).
  if (skipped_without_wgmma()) return;
  check_clean_workspace(with_image(stream_k_config(4, 2, 8, 3)));
  check_clean_workspace(with_image(wgmma_config(8, 2, 8, 2, 3)));
}

TEST_CASE("wq_gemm x_image: the GEMM overlapping the image kernel gives the results of one launched after it",
          "[gpu]") {
  // By default the GEMM starts while the image kernel runs (programmatic dependent launch) and waits
  // for it before it reads the image; LOWBIT_NO_PDL=1 (read at plan build) launches it after. With no
  // K split both are bit for bit the same computation. Several calls, each with new activations, so
  // a GEMM that read the image early would see the previous call's.
  if (skipped_without_wgmma()) return;
  Runtime& rt = gpu_runtime();
  auto L = make_layer(problem(1032, 2048, 128, 40), false);
  for (const WqGemmConfig& c :
       {with_image(wgmma_config(4, 2, 8, 1, 3)), with_image(wgmma_config(8, 2, 8, 1, 3))}) {
    INFO(c.str());
    WqGemmPlanOptions o;
    o.config = c;
    WqGemmPlan overlapped(rt, L->problem, {40}, o);
    const std::unique_ptr<WqGemmPlan> after = plan_without_pdl(rt, L->problem, {40}, o);
    for (int call = 0; call < 3; ++call) {
      CAPTURE(call);
      require_same_as_serial(*L, overlapped, *after, 40);
    }
  }
}

TEST_CASE("wq_gemm x_image: a plan without its own workspace runs the config without the image", "[gpu]") {
  // It owns no buffer, so one plan may serve several streams (the functional API's plans).
  if (skipped_without_wgmma()) return;
  Runtime& rt = gpu_runtime();
  auto L = make_layer(problem(1032, 2048, 128, 40), false);
  WqGemmPlanOptions o;
  o.config = with_image(wgmma_config(4, 2, 8, 1, 3));  // no K split: no workspace needed
  o.allocate_workspace = false;
  WqGemmPlan plan(rt, L->problem, {40}, o);
  CHECK_FALSE(plan.config_for(40).x_image);
  run_and_check(*L, plan, 40, false);
  o.allocate_workspace = true;
  WqGemmPlan with(rt, L->problem, {40}, o);
  CHECK(with.config_for(40).x_image);
  run_and_check(*L, with, 40, false);
}

TEST_CASE(
    "wq_gemm x_sums: overlapped sums equal serial ones, graph replay with new activations, no buffer "
    "without a workspace",
    "[gpu]") {
  // The GEMM starts while the sums kernel runs (programmatic dependent launch) and waits for it
  // before its first chunk's sums; LOWBIT_NO_PDL=1 launches it after: the same computation, bit for
  // bit (no K split). Each call has new activations, so sums read early would be the previous call's.
  Runtime& rt = gpu_runtime();
  for (auto [bits, act] : {std::pair{2, DType::F16}, {4, DType::BF16}, {4, DType::F16}}) {
    WqGemmProblem p = problem(1032, 2048, 128, 17);
    p.bits = bits, p.act = p.out = act;
    auto L = make_layer(p, false);
    WqGemmConfig c = config(1, 8, 1, 4, 1, 3, true);
    c.x_sums = true;
    INFO(p.str() << " " << c.str());
    WqGemmPlanOptions o;
    o.config = c;
    WqGemmPlan overlapped(rt, p, {1, 17}, o);
    REQUIRE(overlapped.config_for(17).x_sums);
    const std::unique_ptr<WqGemmPlan> after = plan_without_pdl(rt, p, {1, 17}, o);
    for (int call = 0; call < 3; ++call)
      for (int64_t m : {1, 16, 17}) {
        CAPTURE(call, m);
        require_same_as_serial(*L, overlapped, *after, m);
      }
    check_graph_replay(*L, overlapped, 17);  // captured once, replayed with new activations
    // Activations in registers from 16 rows: no swapped operands there, so the kernel keeps its Σ
    // MMAs (the flag changes nothing but the pre-pass it waits for); up to 8 rows it reads the sums.
    WqGemmConfig in_registers = config(1, 8, 1, 4, 1, 3, false);
    in_registers.x_sums = true;
    WqGemmPlanOptions r;
    r.config = in_registers;
    WqGemmPlan registers(rt, p, {1, 17}, r);
    for (int64_t m : {1, 3, 17}) run_and_check(*L, registers, m, false);
    // A plan without buffers of its own (the functional API's) runs the config without the sums.
    o.allocate_workspace = false;
    WqGemmPlan bare(rt, p, {17}, o);
    CHECK_FALSE(bare.config_for(17).x_sums);
    run_and_check(*L, bare, 17, false);
  }
}

TEST_CASE("wq_gemm wgmma: a cluster K split needs no workspace; a four-way split does", "[gpu]") {
  // Two- and three-way splits add their pieces in the cluster's shared memory: the plan asks for no
  // workspace and runs with none (args.workspace null, the plan owning none). Four-way splits still
  // add through the workspace, so the same call is refused before anything is written.
  if (skipped_without_wgmma()) return;
  Runtime& rt = gpu_runtime();
  auto L = make_layer(problem(1032, 2048, 128, 65), false);
  WqGemmPlanOptions o;
  o.allocate_workspace = false;
  for (int split : {2, 3}) {
    o.config = with_image(wgmma_config(4, 2, 8, split, 3));  // (the image is dropped: no buffers)
    WqGemmPlan plan(rt, L->problem, {65}, o);
    INFO(plan.config_for(65).str());
    REQUIRE(plan.workspace_bytes() == 0);
    for (int64_t m : {1, 64, 65}) run_and_check(*L, plan, m, false);
  }
  o.config = wgmma_config(4, 2, 8, 4, 3);
  WqGemmPlan four(rt, L->problem, {65}, o);
  REQUIRE(four.workspace_bytes() > 0);
  require_refused(*L, four, L->args(false), 65, "args.workspace is null", 65);
}

TEST_CASE("wq_gemm wgmma: zero, tiny and large scales", "[gpu]") {
  // Whole groups of scales set to 0 at random, the others drawn or moved by 2^-7 or 2^5; one column
  // has every scale zero and must read exactly 0 (fp16 and bf16 outputs: bf16 keeps fp32's
  // exponent, so a scheme that only makes a zero-scale chunk tiny fails here; one that divides by a
  // scale gives inf or NaN). Data parallel, a cluster split and stream K; groups of 128 and 256
  // (one scale per chunk or per two), zero points and symmetric.
  if (skipped_without_wgmma()) return;
  const std::vector<WqGemmConfig> configs = {
      wgmma_config(4, 2, 8, 1, 3), with_image(wgmma_config(8, 2, 8, 2, 3)), stream_k_config(4, 2, 8, 3)};
  std::vector<WqGemmProblem> problems;  // each layer's problem once per config
  std::vector<WqGemmPlanOptions> options;
  for (DType act : {DType::F16, DType::BF16})
    for (int group : {128, 256})
      for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric})
        for (const WqGemmConfig& c : configs) {
          WqGemmProblem p = problem(1032, 2048, group, 65);
          p.act = p.out = act;
          p.mode = mode;
          problems.push_back(p);
          options.emplace_back().config = c;
        }
  const auto plans = build_plans(problems, {65}, options);
  const int64_t dead_column = 77;  // every scale of it zero
  for (std::size_t i = 0; i < problems.size(); i += configs.size()) {
    const WqGemmProblem& p = problems[i];
    auto L = make_layer(p, false, [&](RandomLayer& w, std::vector<uint16_t>&) {
      std::uniform_int_distribution<int> pick(0, 5);
      auto bits_of = [&](float f) {
        return p.act == DType::BF16 ? ref::float_to_bf16(f) : ref::float_to_f16(f);
      };
      auto value_of = [&](uint16_t h) {
        return p.act == DType::BF16 ? ref::bf16_to_float(h) : ref::f16_to_float(h);
      };
      const int64_t groups = p.k / p.group_size;
      for (int64_t gi = 0; gi < groups; ++gi) {
        const int kind = pick(gpu_rng());  // per group row: 0 zero, 1 tiny, 2 large, else as drawn
        for (int64_t n = 0; n < p.n; ++n) {
          uint16_t& s = w.scales[gi * p.n + n];
          const float v = value_of(s);
          s = n == dead_column || kind == 0 ? bits_of(0.f)
              : kind == 1                   ? bits_of(v * 0x1p-7f)
              : kind == 2                   ? bits_of(v * 0x1p+5f)
                                            : s;
        }
      }
    });
    for (std::size_t j = i; j < i + configs.size(); ++j) {
      const WqGemmPlan& plan = *plans[j];
      INFO(plan.config_for(65).str() << " " << to_string(p.act) << " group " << p.group_size << " mode "
                                     << static_cast<int>(p.mode));
      for (int64_t m : {1, 64, 65}) {
        run_and_check(*L, plan, m, false);
        const std::vector<double> y = download_y(*L, m);
        for (int64_t r = 0; r < m; ++r) REQUIRE(y[r * p.n + dead_column] == 0.0);
      }
    }
  }
}

TEST_CASE("wq_gemm plans sharing one workspace: a stream-K plan leaves it zero for a split-K plan", "[gpu]") {
  // A stream-K plan's scratch (and a wgmma four-way split's, which adds in the same slots) lies where
  // another plan may keep its counters; each call must leave the workspace zero (a review's repro:
  // the split-K plan then left its outputs unwritten). The mma.sync split has 12 pieces: up to 8
  // would meet in a cluster on sm_90 and leave the workspace alone.
  if (skipped_without_wgmma()) return;
  Runtime& rt = gpu_runtime();
  auto L = make_layer(problem(16384, 2048, 128, 128), false);
  WqGemmPlanOptions sk, split, wgmma_split;
  sk.config = stream_k_config(8, 2, 8, 3);
  split.config = config(1, 4, 1, 2, 12);
  wgmma_split.config = wgmma_config(4, 2, 8, 4, 3);
  sk.allocate_workspace = split.allocate_workspace = wgmma_split.allocate_workspace = false;
  WqGemmPlan stream_plan(rt, L->problem, {128}, sk), split_plan(rt, L->problem, {16}, split),
      wgmma_split_plan(rt, L->problem, {128}, wgmma_split);
  jit::DeviceBuffer ws(workspace_bytes(L->problem));
  ws.fill_bytes(0);
  WqGemmArgs a = L->args(false);
  a.workspace = ws.get();
  auto check = [&](const WqGemmPlan& plan, int64_t m) {
    INFO(plan.config_for(m).str() << " m=" << m);
    L->y_dev.fill_bytes(0xff);  // NaN: an unwritten output fails
    plan.run(a, m, nullptr);
    LOWBIT_CU_CHECK(jit::driver().cuCtxSynchronize());
    const auto y = download_y(*L, m);
    REQUIRE(std::all_of(y.begin(), y.end(), [](double v) { return std::isfinite(v); }));
    REQUIRE(relative_error(*L, y, m) <= tolerance(L->problem));
  };
  for (int round = 0; round < 2; ++round) {
    check(split_plan, 16);
    check(stream_plan, 16);
    check(wgmma_split_plan, 65);
    check(stream_plan, 128);
    check(wgmma_split_plan, 128);
  }
  check(split_plan, 16);
}

TEST_CASE("wq_gemm functional API", "[gpu]") {
  Runtime& rt = gpu_runtime();
  auto L = make_layer(problem(4096, 4096, 128, 3), true);
  jit::DeviceBuffer ws(workspace_bytes(L->problem));
  ws.fill_bytes(0);
  WqGemmArgs a = L->args(true);
  a.workspace = ws.get();
  for (int rep = 0; rep < 2; ++rep) {
    L->y_dev.fill_bytes(0xff);
    wq_gemm(rt, L->problem, a, nullptr);
    LOWBIT_CU_CHECK(jit::driver().cuCtxSynchronize());
    const double err = relative_error(*L, download_y(*L, 3), 3);
    REQUIRE(err <= tolerance(L->problem));
  }
  // Chained (its own plan): three calls back to back, then one more after the output is poisoned.
  WqGemmCallOptions chained;
  chained.overlap_previous = true;
  for (int rep = 0; rep < 3; ++rep) wq_gemm(rt, L->problem, a, nullptr, chained);
  L->y_dev.fill_bytes(0xff);
  wq_gemm(rt, L->problem, a, nullptr, chained);
  LOWBIT_CU_CHECK(jit::driver().cuCtxSynchronize());
  REQUIRE(relative_error(*L, download_y(*L, 3), 3) <= tolerance(L->problem));
}

TEST_CASE("wq_gemm bad arguments fail before launch and write nothing", "[gpu]") {
  Runtime& rt = gpu_runtime();
  auto L = make_layer(problem(512, 2048, 128, 4), false);
  WqGemmPlanOptions sk;
  sk.config = config(1, 4, 1, 2, 12);  // past a cluster's 8 pieces: through the workspace on every GPU
  sk.allocate_workspace = false;
  WqGemmPlan plan(rt, L->problem, {4}, sk);
  auto expect_error = [&](const WqGemmArgs& a, int64_t m, const std::string& needle) {
    require_refused(*L, plan, a, m, needle, 4);
  };
  jit::DeviceBuffer ws(workspace_bytes(L->problem));
  ws.fill_bytes(0);
  WqGemmArgs good = L->args(false);
  good.workspace = ws.get();
  WqGemmArgs a = good;
  a.x = nullptr;
  expect_error(a, 4, "args.x is null");
  a = good;
  a.x = static_cast<const char*>(good.x) + 2;
  expect_error(a, 4, "16-byte aligned");
  a = good;
  a.w.zeros = nullptr;
  expect_error(a, 4, "zeros");
  a = good;
  a.workspace = nullptr;
  expect_error(a, 4, "workspace");
  expect_error(good, 0, "m = 0");
  expect_error(good, 5, "m = 5");
  // And the good call still works.
  L->y_dev.fill_bytes(0xff);
  plan.run(good, 4, nullptr);
  LOWBIT_CU_CHECK(jit::driver().cuCtxSynchronize());
  REQUIRE(relative_error(*L, download_y(*L, 4), 4) <= tolerance(L->problem));
}

TEST_CASE("wq_gemm x_shared: shared memory follows the bucket, not the plan problem's M", "[gpu]") {
  // The tuner builds plans from a problem with m = 1 for every bucket; an x_shared kernel of bucket
  // 16 stages 16 rows where bucket 1 stages 8, so its shared memory must come from the bucket.
  Runtime& rt = gpu_runtime();
  auto L = make_layer(problem(1024, 2048, 128, 16), false);
  WqGemmProblem one_row = L->problem;
  one_row.m = 1;
  WqGemmPlanOptions xs;
  xs.config = config(1, 4, 2, 1, 2, 2, true);
  WqGemmPlan plan(rt, one_row, {1, 16}, xs);
  for (int64_t m : {1, 9, 16}) run_and_check(*L, plan, m, false);
}

TEST_CASE("wq_gemm wgmma: a K split with no chunks of its own still counts in", "[gpu]") {
  // K = 640 is 5 chunks; 4 splits of 2 chunks leave the last split none: its producer and MMA
  // warpgroups meet at no step barrier but still pass the epilogue's, and its block still arrives.
  if (skipped_without_wgmma()) return;
  Runtime& rt = gpu_runtime();
  auto L = make_layer(problem(1032, 640, 128, 65), true);
  WqGemmPlanOptions o;
  o.config = wgmma_config(4, 2, 8, 4, 3);
  WqGemmPlan plan(rt, L->problem, {65}, o);
  for (int64_t m : {1, 64, 65}) run_and_check(*L, plan, m, true);
}

namespace {
// Runs layer a, then layer b on a's output (b's x is a's y on the device), both plans chained, back to
// back on one stream `repeats` times without a synchronization in between.
void run_chain(const DeviceLayer& a, const WqGemmPlan& pa, const DeviceLayer& b, const WqGemmPlan& pb,
               int64_t m, int repeats, CUstream stream) {
  WqGemmArgs bargs = b.args(false);
  bargs.x = a.y_dev.get();
  for (int i = 0; i < repeats; ++i) {
    pa.run(a.args(false), m, stream);
    pb.run(bargs, m, stream);
  }
}
// Whether every GEMM kernel of the plan (of M bucket `bucket` only, if given) is the chained one (its
// name ends in "ch"; the pre-kernels of x_sums and act-order are the same kernels chained or not).
bool runs_chained(const WqGemmPlan& plan, int64_t bucket = 0) {
  for (const KernelRecord& r : plan.records())
    if (r.name.rfind("wq_gemm_w", 0) == 0 && (bucket == 0 || r.m_bucket == bucket) &&
        (r.name.size() < 2 || r.name.compare(r.name.size() - 2, 2, "ch") != 0))
      return false;
  return true;
}
}  // namespace

TEST_CASE(
    "wq_gemm chained calls (overlap_previous): a layer on the previous layer's output, repeated, "
    "in a graph",
    "[gpu]") {
  // A chained call starts while the one before it runs and waits for it only before it reads x or
  // writes: so layer b, whose x is layer a's y, must see a's whole output, a's next call must not
  // overwrite y while b still reads it, and b's K split must leave its workspace clean for the next.
  Runtime& rt = gpu_runtime();
  const bool chains = rt.arch().sm() >= 90;
  if (!chains) WARN("sm_90 is needed for chained launches: the plans below launch as usual");
  tune::ScopedStream stream;
  const std::vector<int64_t> ms = {1, 16};
  // a: no K split, so its output is the same bits every call (b's reference is computed from it);
  // a2: the same problem with other weights and activations, run into a's y after b.
  auto a = make_layer(problem(1024, 2048, 128, 16), false);
  auto a2 = make_layer(a->problem, false);
  WqGemmPlanOptions oa, ob, ob_split, ob_regs, ob_block, ob_sums, chosen;
  oa.config = config(1, 2, 1, 8, 1, 2, true);
  ob.config = config(1, 4, 1, 4, 1, 3, true);
  ob_split.config = config(1, 4, 1, 2, 5, 2, true);  // split K: atomics and counters in the workspace
  ob_regs.config = config(1, 4, 1, 4, 1, 3);         // activations in registers, not staged
  ob_block.config = config(1, 2, 2, 1, 1, 3, true);  // staged by the block (one warp along K)
  ob_sums.config = config(1, 4, 1, 4, 1, 3, true);   // the sums pre-kernel first
  ob_sums.config->x_sums = true;
  for (auto* o : {&oa, &ob, &ob_split, &ob_regs, &ob_block, &ob_sums, &chosen}) o->overlap_previous = true;
  WqGemmPlan pa(rt, a->problem, ms, oa);
  CHECK(runs_chained(pa) == chains);
  // The plan's own choice (with wq::chained_stages), chained, on its own.
  WqGemmPlan pchosen(rt, a->problem, ms, chosen);
  for (int64_t m : ms) run_and_check(*a, pchosen, m, false);
  for (int64_t m : ms) {
    // a's output at this m, then b's layer with that output as its activations (and reference).
    run_and_check(*a, pa, m, false);
    std::vector<uint16_t> ya(static_cast<std::size_t>(m * a->problem.n));
    a->y_dev.download(ya.data(), ya.size() * 2);
    auto with_ya = [&](RandomLayer&, std::vector<uint16_t>& x) { std::copy(ya.begin(), ya.end(), x.begin()); };
    // b plain, and b on act-order weights (the permutation pre-kernel first).
    auto b_plain = make_layer(problem(520, a->problem.n, 128, 16), false, with_ya);
    WqGemmProblem ordered = b_plain->problem;
    ordered.act_order = true;
    auto b_ordered = make_layer(ordered, false, with_ya);
    std::vector<std::pair<const DeviceLayer*, const WqGemmPlanOptions*>> cases;
    for (const auto* o : {&ob, &ob_split, &ob_regs, &ob_block, &ob_sums})
      cases.emplace_back(b_plain.get(), o);
    for (const auto* o : {&ob, &ob_sums}) cases.emplace_back(b_ordered.get(), o);
    for (const auto& [b, o] : cases) {
      WqGemmPlan pb(rt, b->problem, ms, *o);
      INFO("m = " << m << ", b: " << pb.config_for(m).str() << (b->problem.act_order ? ", act-order" : ""));
      CHECK(runs_chained(pb) == chains);
      CHECK(runs_chained(pb, 1) == chains);
      // One pair, then a2 into a's y: b must read a's finished output (not the poison a's y held
      // before a ran), and a2 must not overwrite it while b still reads.
      WqGemmArgs a2_into_a = a2->args(false);
      a2_into_a.y = a->y_dev.get();
      a->y_dev.fill_bytes(0xff);  // poisoned: an unwritten element cannot pass
      b->y_dev.fill_bytes(0xff);
      run_chain(*a, pa, *b, pb, m, 1, stream.get());
      pa.run(a2_into_a, m, stream.get());
      stream.synchronize();
      check_y(*b, m);
      const std::vector<double> y_a2 = download_y(*a, m);
      CAPTURE(relative_error(*a2, y_a2, m));
      REQUIRE(relative_error(*a2, y_a2, m) <= tolerance(a2->problem));
      // Back to back, four pairs.
      a->y_dev.fill_bytes(0xff);
      b->y_dev.fill_bytes(0xff);
      run_chain(*a, pa, *b, pb, m, 4, stream.get());
      stream.synchronize();
      check_y(*a, m);
      check_y(*b, m);
      // The same pair captured once and replayed: programmatic edges in a graph.
      const jit::Driver& d = jit::driver();
      CUgraph graph = nullptr;
      CUgraphExec exec = nullptr;
      LOWBIT_CU_CHECK(d.cuStreamBeginCapture(stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
      run_chain(*a, pa, *b, pb, m, 2, stream.get());
      LOWBIT_CU_CHECK(d.cuStreamEndCapture(stream.get(), &graph));
      LOWBIT_CU_CHECK(d.cuGraphInstantiateWithFlags(&exec, graph, 0));
      for (int replay = 0; replay < 3; ++replay) {
        a->y_dev.fill_bytes(0xff);
        b->y_dev.fill_bytes(0xff);
        LOWBIT_CU_CHECK(d.cuGraphLaunch(exec, stream.get()));
        stream.synchronize();
        CAPTURE(replay);
        check_y(*a, m);
        check_y(*b, m);
      }
      d.cuGraphExecDestroy(exec);
      d.cuGraphDestroy(graph);
    }
  }
  // A bucket that does not chain (the wgmma kernel, here with its image pre-kernel) launches as usual
  // in a chained plan.
  if (has_wgmma()) {
    WqGemmPlanOptions o;
    o.config = with_image(wgmma_config(4, 2, 8, 1, 3));
    o.overlap_previous = true;
    WqGemmPlan plan(rt, a->problem, {16}, o);
    CHECK_FALSE(runs_chained(plan));
    run_and_check(*a, plan, 16, false);
  }
}

TEST_CASE(
    "wq_gemm act-order: the GEMM overlapping the permutation gives the results of one launched after it",
    "[gpu]") {
  // On sm_90 an act-order call's kernels after the permutation (the GEMM, and the sums pre-kernel of an
  // x_sums config) start while it runs and wait for it before they read the permuted activations;
  // LOWBIT_NO_PDL=1 launches them after it. No K split, so both are bit for bit the same computation.
  // Each call has new weights, permutation and activations: a kernel that read early would see the
  // previous call's permuted activations.
  Runtime& rt = gpu_runtime();
  WqGemmProblem p = problem(1032, 2048, 128, 16);
  p.act_order = true;
  auto L = make_layer(p, false);
  WqGemmPlanOptions staged, sums;
  staged.config = config(1, 2, 1, 8, 1, 2, true);
  sums.config = config(1, 4, 1, 4, 1, 3, true);
  sums.config->x_sums = true;
  for (const WqGemmPlanOptions* o : {&staged, &sums}) {
    INFO(o->config->str());
    WqGemmPlan overlapped(rt, p, {1, 16}, *o);
    CHECK(runs_chained(overlapped) == (rt.arch().sm() >= 90));  // the kernel that waits for its predecessor
    const std::unique_ptr<WqGemmPlan> after = plan_without_pdl(rt, p, {1, 16}, *o);
    for (int64_t m : {1, 16})
      for (int call = 0; call < 3; ++call) {
        CAPTURE(m, call);
        require_same_as_serial(*L, overlapped, *after, m);
      }
    check_graph_replay(*L, overlapped, 16);
  }
  // An x_image bucket (wgmma): the permutation writes the image, gathering from global memory up to
  // 16 rows and from a row in shared memory above. K = 2080 (groups of 32) ends inside a chunk.
  // The same bits as with LOWBIT_NO_PDL (no K split); replays with new weights, permutation and
  // activations each time.
  if (has_wgmma()) {
    WqGemmProblem odd = problem(1032, 2080, 32, 64);
    odd.act_order = true;
    auto O = make_layer(odd, false);
    WqGemmPlanOptions o;
    o.config = with_image(wgmma_config(4, 2, 8, 1, 3));
    WqGemmPlan plan(rt, odd, {1, 64}, o);
    const std::unique_ptr<WqGemmPlan> after = plan_without_pdl(rt, odd, {1, 64}, o);
    for (int64_t m : {1, 5, 16, 17, 40}) {
      CAPTURE(m);
      require_same_as_serial(*O, plan, *after, m);
    }
    check_graph_replay(*O, plan, 16);
    check_graph_replay(*O, plan, 40);
  }
}

TEST_CASE("wq_gemm act-order: the permutation past a row in shared memory, and into 128-row images",
          "[gpu]") {
  // K = 24704 is past the rows the permutation copies into shared memory (kRowInShared,
  // templates/wq_permute_x.cuh): it gathers from global memory, into the workspace and into an image.
  // Then K = 4096 into 128-row images, M rising and falling within the bucket (the last row block
  // partly filled), and a graph replay with new weights, permutation and activations.
  Runtime& rt = gpu_runtime();
  WqGemmProblem wide = problem(264, 24704, 128, 130);
  wide.act_order = true;
  auto W = make_layer(wide, false);
  WqGemmPlan library(rt, wide, {1, 16, 64});
  for (int64_t m : {1, 16, 64}) run_and_check(*W, library, m, false);
  WqGemmPlanOptions staged;  // an mma.sync config at 64 rows: the permutation into the workspace
  staged.config = config(1, 4, 1, 2, 4);
  WqGemmPlan mma(rt, wide, {64}, staged);
  run_and_check(*W, mma, 64, false);
  if (!has_wgmma()) return;
  WqGemmPlanOptions image;
  image.config = with_image(wgmma_config(4, 2, 8, 1, 3));
  WqGemmPlan imaged(rt, wide, {1, 64}, image);
  for (int64_t m : {64, 3}) run_and_check(*W, imaged, m, false);
  WqGemmProblem tall = problem(1032, 4096, 128, 130);
  tall.act_order = true;
  auto T = make_layer(tall, false);
  WqGemmPlanOptions rows128;
  rows128.config = with_image(wgmma_config(8, 2, 8, 1, 3));
  WqGemmPlan plan(rt, tall, {130}, rows128);
  for (int64_t m : {130, 128, 97, 130}) run_and_check(*T, plan, m, false);
  check_graph_replay(*T, plan, 130);
}

TEST_CASE("wq_gemm act-order: perm entries outside [0, K) read as zero activations", "[gpu]") {
  // A perm that pack() never makes (pack_on_device leaves −1 in the slots of a g_idx it cannot place;
  // a caller's buffer may hold anything): the permutation reads such positions as zero instead of
  // reading outside the row. Every path: into the workspace and into an image, gathering from global
  // memory (up to 16 rows) and from a row in shared memory (above).
  Runtime& rt = gpu_runtime();
  WqGemmProblem p = problem(264, 2048, 128, 64);
  p.act_order = true;
  auto L = make_layer(p, false);
  std::vector<int32_t> perm = L->packed.perm;
  std::vector<uint16_t> x = L->x;  // the reference's activations: the spoiled positions' features zero
  const int32_t bad[] = {-1, static_cast<int32_t>(p.k), static_cast<int32_t>(p.k) + 7,
                         std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  for (int64_t i = 0; i < 40; ++i) {
    const std::size_t j = static_cast<std::size_t>((97 * i + 13) % p.k);  // 40 distinct positions
    for (int64_t m = 0; m < p.m; ++m) x[static_cast<std::size_t>(m * p.k + perm[j])] = 0;
    perm[j] = bad[i % 5];
  }
  L->perm.upload(perm.data(), perm.size() * 4);
  L->ref = ref::wq_gemm_reference(p, L->packed, x.data(), nullptr);
  WqGemmPlan library(rt, p, {1, 16, 64});
  for (int64_t m : {1, 16, 64}) run_and_check(*L, library, m, false);
  WqGemmPlanOptions staged;  // mma.sync at 64 rows: into the workspace from a row in shared memory
  staged.config = config(1, 4, 1, 2, 4);
  WqGemmPlan mma(rt, p, {64}, staged);
  for (int64_t m : {64, 3}) run_and_check(*L, mma, m, false);
  if (!has_wgmma()) return;
  WqGemmPlanOptions image;
  image.config = with_image(wgmma_config(4, 2, 8, 1, 3));
  WqGemmPlan imaged(rt, p, {1, 64}, image);
  for (int64_t m : {5, 40}) run_and_check(*L, imaged, m, false);
}

TEST_CASE("wq_gemm act-order at 64/128 rows: the library's plan takes an image config on sm_90a", "[gpu]") {
  // 4096² at 64 rows: plain layers run mma.sync there, act-order ones 128-column wgmma blocks with K in
  // four pieces, the permutation writing the image (wq::act_order_image_config); M within the bucket
  // and a graph replay with new weights, permutation and activations.
  Runtime& rt = gpu_runtime();
  WqGemmProblem p = problem(4096, 4096, 128, 64);
  p.act_order = true;
  auto L = make_layer(p, false);
  WqGemmPlan plan(rt, p, {16, 64});
  INFO(plan.config_for(64).str());
  CHECK(plan.config_for(64).x_image == has_wgmma());
  bool by_rule = false;  // the rule chose it (the tuning entry and the heuristic run mma.sync there)
  for (const KernelRecord& r : plan.records())
    by_rule |= r.m_bucket == 64 && r.config_source.find("act-order:") != std::string::npos;
  CHECK(by_rule == has_wgmma());
  for (int64_t m : {64, 17, 40, 64}) run_and_check(*L, plan, m, false);
  check_graph_replay(*L, plan, 64);
  // The functional API's plans own no buffers, so no image: the plain layer's choice, through the
  // permutation into the workspace.
  jit::DeviceBuffer ws(workspace_bytes(p));
  ws.fill_bytes(0);
  WqGemmArgs a = L->args(false);
  a.workspace = ws.get();
  for (int64_t m : {64, 33}) {
    CAPTURE(m);
    WqGemmProblem pm = p;
    pm.m = m;
    L->y_dev.fill_bytes(0xff);
    wq_gemm(rt, pm, a, nullptr);
    LOWBIT_CU_CHECK(jit::driver().cuCtxSynchronize());
    check_y(*L, m);
  }
}

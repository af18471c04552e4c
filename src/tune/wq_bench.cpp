#include "tune/wq_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "jit/context.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/pack.hpp"
#include "ref/half.hpp"
#include "ref/wq_gemm_ref.hpp"
#include "tune/timer.hpp"

namespace lowbit::tune {

std::vector<std::pair<int64_t, int64_t>> standard_wq_shapes() {
  return {{4096, 4096}, {8192, 8192}, {16384, 16384}, {28672, 4096}, {4096, 14336}, {6144, 4096}};
}

namespace {

uint16_t to_bits(float v, DType t) {
  return t == DType::BF16 ? ref::float_to_bf16(v) : ref::float_to_f16(v);
}
double from_bits(uint16_t h, DType t) {
  return t == DType::BF16 ? ref::bf16_to_float(h) : ref::f16_to_float(h);
}

// Random weights directly in the packed layout (every value uniform), so a 16384² layer is
// generated in a moment; the reference reads them back through PackedWeights. Act-order problems
// get a random permutation of K that keeps each group's features together after sorting.
PackedWeights random_packed(const WqGemmProblem& p, std::mt19937_64& rng) {
  const wq::Layout l = wq::layout(p);
  PackedWeights w;
  w.n = p.n, w.k = p.k, w.n_pad = l.n_pad, w.k_pad = l.k_pad, w.groups_pad = l.groups_pad;
  w.bits = p.bits, w.group_size = p.group_size, w.mode = p.mode;
  w.qweight.resize(l.qweight_bytes / 4);
  for (auto& v : w.qweight) v = static_cast<uint32_t>(rng());
  std::uniform_real_distribution<float> sd(0.5f, 1.5f);
  const float base = 1.0f / std::sqrt(static_cast<float>(p.k)) / 4.0f;
  w.scales.resize(l.scales_bytes / 2);
  for (auto& v : w.scales) v = to_bits(base * sd(rng), p.act);
  if (has_int_zeros(p.mode)) {
    w.zeros.resize(l.zeros_bytes);
    for (auto& v : w.zeros) v = static_cast<uint8_t>(rng() & ((1u << p.bits) - 1));
  }
  if (has_float_zeros(p.mode)) {
    // HQQ-like zeros: around the middle of the range for (q − z)·s, around −mid·s for q·s + z.
    w.float_zeros.resize(l.zeros_bytes / 2);
    std::uniform_real_distribution<float> zd(0.f, static_cast<float>((1 << p.bits) - 1));
    for (std::size_t i = 0; i < w.float_zeros.size(); ++i) {
      const float z = zd(rng);
      w.float_zeros[i] = to_bits(p.mode == DequantMode::ScaleThenAddZero
                                     ? -z * static_cast<float>(from_bits(w.scales[i], p.act))
                                     : z,
                                 p.act);
    }
  }
  if (p.act_order) {
    w.perm.resize(static_cast<std::size_t>(p.k));
    for (int64_t i = 0; i < p.k; ++i) w.perm[i] = static_cast<int32_t>(i);
    std::shuffle(w.perm.begin(), w.perm.end(), rng);
  }
  return w;
}

std::size_t align256(std::size_t x) {
  return (x + 255) / 256 * 256;
}

}  // namespace

WqBenchSetup::WqBenchSetup(Runtime& rt, const WqGemmProblem& base, int64_t max_m)
    : ctx_(rt.context()), base_(base), rng_(std::random_device{}()) {
  LOWBIT_CHECK(max_m >= 1, "bench: max M = {}: must be ≥ 1", max_m);
  ctx_.make_current();
  // Weights: C copies, each one region [qweight | scales | zeros | room for x], so the stream
  // ceiling can read exactly a call's input bytes from the same rotating regions.
  w_ = random_packed(base, rng_);
  off_s_ = align256(w_.qweight.size() * 4);
  off_z_ = off_s_ + align256(w_.scales.size() * 2);
  const std::size_t zero_bytes = w_.zeros.size() + w_.float_zeros.size() * 2;
  const std::size_t weight_bytes = off_z_ + align256(zero_bytes);
  const std::size_t x_bytes_max = static_cast<std::size_t>(max_m) * base.k * dtype_bytes(base.act);
  copies_ = static_cast<int>(
      std::max<int64_t>(1, (4 * ctx_.device().l2_bytes + static_cast<int64_t>(w_.bytes()) - 1) /
                               static_cast<int64_t>(w_.bytes())));
  for (int c = 0; c < copies_; ++c) {
    // Room for x and the act-order permutation too: the ceiling copies a call's whole input.
    regions_.emplace_back(weight_bytes + align256(x_bytes_max) + align256(w_.perm.size() * 4));
    regions_.back().upload(w_.qweight.data(), w_.qweight.size() * 4, 0);
    regions_.back().upload(w_.scales.data(), w_.scales.size() * 2, off_s_);
    if (!w_.zeros.empty()) regions_.back().upload(w_.zeros.data(), w_.zeros.size(), off_z_);
    if (!w_.float_zeros.empty())
      regions_.back().upload(w_.float_zeros.data(), w_.float_zeros.size() * 2, off_z_);
  }
  if (!w_.perm.empty()) perm_dev_ = jit::DeviceBuffer::from(w_.perm);
  x_.resize(static_cast<std::size_t>(max_m * base.k));
  std::uniform_real_distribution<float> xd(-1.f, 1.f);
  for (auto& v : x_) v = to_bits(xd(rng_), base.act);
  x_dev_ = jit::DeviceBuffer::from(x_);
  y_dev_ = jit::DeviceBuffer(static_cast<std::size_t>(max_m) * base.n * dtype_bytes(base.out));
}

WqGemmArgs WqBenchSetup::args(int copy) const {
  const CUdeviceptr b = regions_[static_cast<std::size_t>(copy % copies_)].ptr();
  WqGemmArgs a;
  a.x = x_dev_.get();
  a.y = y_dev_.get();
  a.w.qweight = reinterpret_cast<const void*>(b);
  a.w.scales = reinterpret_cast<const void*>(b + off_s_);
  a.w.zeros = has_int_zeros(base_.mode) || has_float_zeros(base_.mode)
                  ? reinterpret_cast<const void*>(b + off_z_)
                  : nullptr;
  a.w.perm = w_.perm.empty() ? nullptr : static_cast<const int32_t*>(perm_dev_.get());
  return a;
}

double WqBenchSetup::check(const WqGemmPlan& plan, int64_t m, Stream stream) {
  y_dev_.fill_bytes(0xff);  // NaN in f16/bf16/f32: an unwritten element cannot pass
  plan.run(args(0), m, stream);
  LOWBIT_CU_CHECK(jit::driver().cuStreamSynchronize(stream));
  const std::size_t out_elems = static_cast<std::size_t>(m * base_.n);
  std::vector<double> y(out_elems);
  if (base_.out == DType::F32) {
    std::vector<float> yf(out_elems);
    y_dev_.download(yf.data(), out_elems * 4);
    for (std::size_t i = 0; i < out_elems; ++i) y[i] = yf[i];
  } else {
    std::vector<uint16_t> yh(out_elems);
    y_dev_.download(yh.data(), out_elems * 2);
    for (std::size_t i = 0; i < out_elems; ++i) y[i] = from_bits(yh[i], base_.out);
  }
  for (std::size_t i = 0; i < out_elems; ++i)
    LOWBIT_CHECK(std::isfinite(y[i]), "y[{}][{}] is not finite (unwritten?)", i / base_.n, i % base_.n);
  // Every row, 64 columns (first, last, 62 random) against the float64 reference.
  std::vector<int64_t> cols{0, base_.n - 1};
  for (int i = 0; i < 62; ++i) cols.push_back(static_cast<int64_t>(rng_() % static_cast<uint64_t>(base_.n)));
  WqGemmProblem pm = base_;
  pm.m = m;
  const auto ref = ref::wq_gemm_reference(pm, w_, x_.data(), nullptr, cols);
  double num = 0, den = 0;
  for (int64_t mi = 0; mi < m; ++mi)
    for (std::size_t ci = 0; ci < cols.size(); ++ci) {
      const double r = ref[mi * cols.size() + ci], v = y[mi * base_.n + cols[ci]];
      num += (v - r) * (v - r);
      den += r * r;
    }
  const double rel = std::sqrt(num / std::max(den, 1e-300));
  const double tol = base_.out == DType::F32 ? 2e-3 : (base_.out == DType::BF16 ? 1e-2 : 3e-3);
  LOWBIT_CHECK(rel <= tol, "relative error {:.2e} over tolerance {:.0e}", rel, tol);
  return rel;
}

double WqBenchSetup::time_us(const WqGemmPlan& plan, int64_t m, int rounds, int replays) {
  return time_in_graph(
             ctx_, [&](Stream s, int i) { plan.run(args(i), m, s); }, copies_ * rounds, replays)
      .median_us_per_call;
}

double WqBenchSetup::stream_us(int64_t m, int rounds, bool chain) {
  std::vector<const jit::DeviceBuffer*> regions;
  for (const auto& r : regions_) regions.push_back(&r);
  const std::size_t out_bytes = static_cast<std::size_t>(m) * base_.n * dtype_bytes(base_.out);
  WqGemmProblem pm = base_;
  pm.m = m;
  const std::size_t in_bytes = wq::traffic_bytes(pm) - out_bytes;
  return stream_ceiling_us(ctx_, regions, in_bytes / 16 * 16, y_dev_, out_bytes / 16 * 16, rounds, chain);
}

std::vector<WqBenchRow> bench_wq_gemm(Runtime& rt, const Ceilings& ceil, const WqGemmProblem& base,
                                      const WqBenchOptions& opt) {
  LOWBIT_CHECK(!opt.ms.empty(), "bench: no M values given (e.g. --m 1,16,64)");
  LOWBIT_CHECK(opt.replays >= 1 && opt.rounds >= 1, "bench: replays = {}, rounds = {}: each must be ≥ 1",
               opt.replays, opt.rounds);
  WqBenchSetup setup(rt, base, *std::max_element(opt.ms.begin(), opt.ms.end()));
  WqGemmPlanOptions po;
  po.config = opt.config;
  po.overlap_previous = opt.chain;
  const auto plan_start = std::chrono::steady_clock::now();
  WqGemmPlan plan(rt, base, opt.ms, po);
  const double plan_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - plan_start).count();
  ScopedStream stream;
  const double launch_us = empty_launch_us(rt.context());

  std::vector<WqBenchRow> rows;
  for (int64_t m : opt.ms) {
    WqBenchRow row;
    row.problem = base;
    row.problem.m = m;
    row.config = plan.config_for(m).str();
    row.copies = setup.copies();
    row.plan_ms = plan_ms;
    row.launch_us = launch_us;
    for (const auto& rec : plan.records())
      row.plan_sources +=
          std::string(row.plan_sources.empty() ? "" : ",") + std::string(to_string(rec.source));
    for (const auto& rec : plan.records())
      if (rec.m_bucket == m_bucket(m)) row.config_source = rec.config_source;
    row.bytes = wq::traffic_bytes(row.problem);
    row.flops = 2.0 * static_cast<double>(m) * base.n * base.k;
    try {
      row.rel_err = setup.check(plan, m, stream.get());          // 1. correctness first
      row.us = setup.time_us(plan, m, opt.rounds, opt.replays);  // 2. graph replay, rotating copies
      row.stream_us = setup.stream_us(m, opt.rounds, opt.chain);  // 3. same bytes, same rotation
      row.tc_us = row.flops / (ceil.mma_tflops * 1e6);
      row.floor_us = std::max(static_cast<double>(row.bytes) / (ceil.read_gbs * 1e3), row.tc_us);
      const int host_calls = 200;  // 4. host cost of plan.run
      const WqGemmArgs a = setup.args(0);
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < host_calls; ++i) plan.run(a, m, stream.get());
      const auto t1 = std::chrono::steady_clock::now();
      stream.synchronize();
      row.host_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / host_calls;
      row.heuristic_us = row.us;
      WqGemmConfig heuristic = choose_config(row.problem, rt.arch(), rt.sm_count());
      // Act-order: what a plan without a tuning file runs (the image rule of wq::choose).
      WqGemmProblem bucket_problem = row.problem;
      bucket_problem.m = m_bucket(m);
      if (auto image = wq::act_order_image_config(bucket_problem, heuristic, rt.arch(), rt.sm_count(),
                                                  {true, opt.chain}))
        heuristic = *image;
      // A plan may run its choice with fewer stages in the chained kernel (wq::config_as_run): like with
      // like.
      heuristic = wq::config_as_run(row.problem, heuristic, rt.arch(), opt.chain);
      if (!opt.config && opt.compare_heuristic &&
          !(heuristic == plan.config_for(m))) {  // 5. tuned vs heuristic
        WqGemmPlanOptions ho;
        ho.config = heuristic;
        ho.overlap_previous = opt.chain;
        WqGemmPlan hp(rt, base, {m}, ho);
        setup.check(hp, m, stream.get());
        row.heuristic_us = setup.time_us(hp, m, opt.rounds, opt.replays);
      }
      row.ok = true;
    } catch (const Error& e) {
      row.ok = false;
      row.error = e.message();
      try {
        stream.synchronize();
      } catch (const Error&) {
      }
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace lowbit::tune

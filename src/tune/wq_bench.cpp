#include "tune/wq_bench.hpp"

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

uint16_t to_bits(float v, DType t) { return t == DType::BF16 ? ref::float_to_bf16(v) : ref::float_to_f16(v); }
double from_bits(uint16_t h, DType t) { return t == DType::BF16 ? ref::bf16_to_float(h) : ref::f16_to_float(h); }

// Random weights directly in the packed layout (every nibble uniform), so a 16384² layer is
// generated in a moment; the reference reads them back through PackedWeights.
PackedWeights random_packed(const WqGemmProblem& p, std::mt19937_64& rng) {
  const wq::Layout l = wq::layout(p);
  PackedWeights w;
  w.n = p.n, w.k = p.k, w.n_pad = l.n_pad, w.k_pad = l.k_pad, w.groups_pad = l.groups_pad;
  w.bits = p.bits, w.group_size = p.group_size;
  w.qweight.resize(l.qweight_bytes / 4);
  for (auto& v : w.qweight) v = static_cast<uint32_t>(rng());
  std::uniform_real_distribution<float> sd(0.5f, 1.5f);
  const float base = 1.0f / std::sqrt(static_cast<float>(p.k)) / 4.0f;
  w.scales.resize(l.scales_bytes / 2);
  for (auto& v : w.scales) v = to_bits(base * sd(rng), p.act);
  if (p.mode == DequantMode::SubZeroThenScale) {
    w.zeros.resize(l.zeros_bytes);
    for (auto& v : w.zeros) v = static_cast<uint8_t>(rng() & 0xf);
  }
  return w;
}

std::size_t align256(std::size_t x) { return (x + 255) / 256 * 256; }

}  // namespace

std::vector<WqBenchRow> bench_wq_gemm(Runtime& rt, const Ceilings& ceil, const WqGemmProblem& base,
                                      const WqBenchOptions& opt) {
  jit::Context& ctx = rt.context();
  LOWBIT_CHECK(!opt.ms.empty(), "bench: no M values given (e.g. --m 1,16,64)");
  LOWBIT_CHECK(opt.replays >= 1 && opt.rounds >= 1, "bench: replays = {}, rounds = {}: each must be ≥ 1",
               opt.replays, opt.rounds);
  std::mt19937_64 rng(std::random_device{}());
  const int64_t max_m = *std::max_element(opt.ms.begin(), opt.ms.end());

  // Weights: C copies, each one region [qweight | scales | zeros | room for x], so the stream
  // ceiling can read exactly a call's input bytes from the same rotating regions.
  const PackedWeights w = random_packed(base, rng);
  const std::size_t off_s = align256(w.qweight.size() * 4);
  const std::size_t off_z = off_s + align256(w.scales.size() * 2);
  const std::size_t weight_bytes = off_z + align256(w.zeros.size());
  const std::size_t x_bytes_max = static_cast<std::size_t>(max_m) * base.k * dtype_bytes(base.act);
  const int copies = static_cast<int>(
      std::max<int64_t>(1, (4 * ctx.device().l2_bytes + static_cast<int64_t>(w.bytes()) - 1) / static_cast<int64_t>(w.bytes())));
  std::vector<jit::DeviceBuffer> regions;
  std::vector<const jit::DeviceBuffer*> region_ptrs;
  for (int c = 0; c < copies; ++c) {
    regions.emplace_back(weight_bytes + align256(x_bytes_max));
    regions.back().upload(w.qweight.data(), w.qweight.size() * 4, 0);
    regions.back().upload(w.scales.data(), w.scales.size() * 2, off_s);
    if (!w.zeros.empty()) regions.back().upload(w.zeros.data(), w.zeros.size(), off_z);
  }
  for (auto& r : regions) region_ptrs.push_back(&r);
  auto weights_of = [&](int c) {
    const CUdeviceptr b = regions[static_cast<std::size_t>(c)].ptr();
    WqWeights ww;
    ww.qweight = reinterpret_cast<const void*>(b);
    ww.scales = reinterpret_cast<const void*>(b + off_s);
    ww.zeros = w.zeros.empty() ? nullptr : reinterpret_cast<const void*>(b + off_z);
    return ww;
  };

  std::vector<uint16_t> x(static_cast<std::size_t>(max_m * base.k));
  std::uniform_real_distribution<float> xd(-1.f, 1.f);
  for (auto& v : x) v = to_bits(xd(rng), base.act);
  jit::DeviceBuffer x_dev = jit::DeviceBuffer::from(x);
  jit::DeviceBuffer y_dev(static_cast<std::size_t>(max_m) * base.n * dtype_bytes(base.out));

  WqGemmPlanOptions po;
  po.config = opt.config;
  const auto plan_start = std::chrono::steady_clock::now();
  WqGemmPlan plan(rt, base, opt.ms, po);
  const double plan_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - plan_start).count();
  ScopedStream stream;

  std::vector<WqBenchRow> rows;
  for (int64_t m : opt.ms) {
    WqBenchRow row;
    row.problem = base;
    row.problem.m = m;
    row.config = plan.config_for(m).str();
    row.copies = copies;
    row.plan_ms = plan_ms;
    for (const auto& rec : plan.records()) row.plan_sources += std::string(row.plan_sources.empty() ? "" : ",") +
                                                                std::string(to_string(rec.source));
    row.bytes = wq::traffic_bytes(row.problem);
    row.flops = 2.0 * static_cast<double>(m) * base.n * base.k;
    WqGemmArgs a;
    a.x = x_dev.get();
    a.y = y_dev.get();
    try {
      // 1. Correctness: poison y, run once, compare against the CPU reference.
      y_dev.fill_bytes(0xff);  // NaN in f16/bf16/f32
      a.w = weights_of(0);
      plan.run(a, m, stream.get());
      stream.synchronize();
      const std::size_t out_elems = static_cast<std::size_t>(m * base.n);
      std::vector<double> y(out_elems);
      if (base.out == DType::F32) {
        std::vector<float> yf(out_elems);
        y_dev.download(yf.data(), out_elems * 4);
        for (std::size_t i = 0; i < out_elems; ++i) y[i] = yf[i];
      } else {
        std::vector<uint16_t> yh(out_elems);
        y_dev.download(yh.data(), out_elems * 2);
        for (std::size_t i = 0; i < out_elems; ++i) y[i] = from_bits(yh[i], base.out);
      }
      for (std::size_t i = 0; i < out_elems; ++i)
        LOWBIT_CHECK(std::isfinite(y[i]), "y[{}][{}] is not finite (unwritten?)", i / base.n, i % base.n);
      std::vector<int64_t> cols{0, base.n - 1};
      for (int i = 0; i < 62; ++i) cols.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(base.n)));
      const auto ref = ref::wq_gemm_reference(row.problem, w, x.data(), nullptr, cols);
      double num = 0, den = 0;
      for (int64_t mi = 0; mi < m; ++mi)
        for (std::size_t ci = 0; ci < cols.size(); ++ci) {
          const double r = ref[mi * cols.size() + ci], v = y[mi * base.n + cols[ci]];
          num += (v - r) * (v - r);
          den += r * r;
        }
      row.rel_err = std::sqrt(num / std::max(den, 1e-300));
      const double tol = base.out == DType::F32 ? 2e-3 : (base.out == DType::BF16 ? 1e-2 : 3e-3);
      LOWBIT_CHECK(row.rel_err <= tol, "relative error {:.2e} over tolerance {:.0e}", row.rel_err, tol);

      // 2. Time per call: one graph of rounds × copies calls over rotating weight copies.
      row.us = time_in_graph(
                   ctx,
                   [&](Stream s, int i) {
                     WqGemmArgs ai = a;
                     ai.w = weights_of(i % copies);
                     plan.run(ai, m, s);
                   },
                   copies * opt.rounds, opt.replays)
                   .median_us_per_call;
      // 3. Stream ceiling of the same bytes, same rotation, same run.
      const std::size_t in_bytes = row.bytes - static_cast<std::size_t>(m) * base.n * dtype_bytes(base.out);
      row.stream_us = stream_ceiling_us(ctx, region_ptrs, in_bytes / 16 * 16, y_dev,
                                        static_cast<std::size_t>(m) * base.n * dtype_bytes(base.out) / 16 * 16,
                                        opt.rounds);
      row.tc_us = row.flops / (ceil.mma_tflops * 1e6);
      row.floor_us = std::max(static_cast<double>(row.bytes) / (ceil.read_gbs * 1e3), row.tc_us);
      // 4. Host cost of one plan.run (enqueue only).
      const int host_calls = 200;
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < host_calls; ++i) plan.run(a, m, stream.get());
      const auto t1 = std::chrono::steady_clock::now();
      stream.synchronize();
      row.host_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / host_calls;
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

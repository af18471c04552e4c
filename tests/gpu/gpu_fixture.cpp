#include "gpu/gpu_fixture.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <numeric>
#include <thread>

#include "ref/half.hpp"
#include "ref/wq_gemm_ref.hpp"
#include "support/catch.hpp"

namespace lowbit::test {

Runtime& gpu_runtime() {
  static Runtime rt(RuntimeOptions{});
  return rt;
}

std::mt19937_64& gpu_rng() {
  static std::mt19937_64 rng = [] {
    const uint64_t seed = fresh_seed();
    std::printf("gpu tests: random seed %llu\n", static_cast<unsigned long long>(seed));
    return std::mt19937_64(seed);
  }();
  return rng;
}

std::unique_ptr<DeviceLayer> make_layer(const WqGemmProblem& p, bool with_bias, const CraftLayer& craft) {
  gpu_runtime();  // the runtime makes the device's context current before anything is allocated
  auto L = std::make_unique<DeviceLayer>();
  L->problem = p;
  RandomLayer r = random_layer(p.n, p.k, p.bits, p.group_size, p.act, gpu_rng());
  L->x = random_activations(p.m * p.k, p.act, gpu_rng());
  if (craft) craft(r, L->x);
  UnpackedWeightsView v;
  v.q = r.q.data(), v.scales = r.scales.data(), v.n = p.n, v.k = p.k, v.bits = p.bits,
  v.group_size = p.group_size;
  v.mode = p.mode;
  v.zeros = has_int_zeros(p.mode) ? r.zeros.data() : nullptr;
  std::vector<uint16_t> float_zeros;
  if (has_float_zeros(p.mode)) {
    std::uniform_real_distribution<float> zd(0.f, static_cast<float>((1 << p.bits) - 1));
    auto bits_of = [&](float f) {
      return p.act == DType::BF16 ? ref::float_to_bf16(f) : ref::float_to_f16(f);
    };
    auto value_of = [&](uint16_t h) {
      return p.act == DType::BF16 ? ref::bf16_to_float(h) : ref::f16_to_float(h);
    };
    for (uint16_t s : r.scales)
      float_zeros.push_back(p.mode == DequantMode::ScaleThenAddZero ? bits_of(-zd(gpu_rng()) * value_of(s))
                                                                    : bits_of(zd(gpu_rng())));
    v.float_zeros = float_zeros.data();
  }
  std::vector<int32_t> g_idx;
  if (p.act_order) {  // every group keeps group_size features, scattered over K
    g_idx.resize(static_cast<std::size_t>(p.k));
    for (int64_t i = 0; i < p.k; ++i) g_idx[i] = static_cast<int32_t>(i / p.group_size);
    std::shuffle(g_idx.begin(), g_idx.end(), gpu_rng());
    v.g_idx = g_idx.data();
  }
  L->packed = pack(v);
  REQUIRE(L->packed.act_order() == p.act_order);
  L->bias = random_activations(p.n, p.act, gpu_rng());
  L->qweight = jit::DeviceBuffer::from(L->packed.qweight);
  L->scales = jit::DeviceBuffer::from(L->packed.scales);
  if (!L->packed.zeros.empty()) L->zeros = jit::DeviceBuffer::from(L->packed.zeros);
  if (!L->packed.float_zeros.empty()) L->zeros = jit::DeviceBuffer::from(L->packed.float_zeros);
  if (L->packed.act_order()) L->perm = jit::DeviceBuffer::from(L->packed.perm);
  L->x_dev = jit::DeviceBuffer::from(L->x);
  L->bias_dev = jit::DeviceBuffer::from(L->bias);
  L->y_dev = jit::DeviceBuffer(static_cast<std::size_t>(p.m * p.n) * dtype_bytes(p.out));
  L->ref = ref::wq_gemm_reference(p, L->packed, L->x.data(), with_bias ? L->bias.data() : nullptr);
  return L;
}

WqGemmArgs DeviceLayer::args(bool with_bias) const {
  WqGemmArgs a;
  a.x = x_dev.get();
  a.w.qweight = qweight.get();
  a.w.scales = scales.get();
  a.w.zeros = zeros.bytes() ? zeros.get() : nullptr;
  a.w.perm = perm.bytes() ? static_cast<const int32_t*>(perm.get()) : nullptr;
  a.bias = with_bias ? bias_dev.get() : nullptr;
  a.y = y_dev.get();
  return a;
}

std::vector<std::unique_ptr<WqGemmPlan>> build_plans(const std::vector<WqGemmProblem>& problems,
                                                     const std::vector<int64_t>& m_values,
                                                     const std::vector<WqGemmPlanOptions>& options) {
  Runtime& rt = gpu_runtime();
  std::vector<std::unique_ptr<WqGemmPlan>> plans(problems.size());
  std::vector<std::exception_ptr> errors(problems.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < problems.size();) {
      try {
        plans[i] = std::make_unique<WqGemmPlan>(rt, problems[i], m_values,
                                                options.empty() ? WqGemmPlanOptions{} : options[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  const unsigned n = std::max(1u, std::min<unsigned>(16, std::thread::hardware_concurrency()));
  for (unsigned t = 0; t < n; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return plans;
}

std::vector<double> download_y(const DeviceLayer& L, int64_t m) {
  const std::size_t count = static_cast<std::size_t>(m * L.problem.n);
  std::vector<double> y(count);
  if (L.problem.out == DType::F32) {
    std::vector<float> f(count);
    L.y_dev.download(f.data(), count * 4);
    for (std::size_t i = 0; i < count; ++i) y[i] = f[i];
  } else {
    std::vector<uint16_t> h(count);
    L.y_dev.download(h.data(), count * 2);
    for (std::size_t i = 0; i < count; ++i)
      y[i] = L.problem.out == DType::BF16 ? ref::bf16_to_float(h[i]) : ref::f16_to_float(h[i]);
  }
  return y;
}

double tolerance(const WqGemmProblem& p) {
  // Output rounding dominates (2^-11 for f16, 2^-8 for bf16); the 16-bit dequantized weights add a
  // little that grows slowly with K.
  // (q − z)·s with a float z rounds twice per weight (q − z, then ·s): half again as much.
  // fp16 accumulation rounds each 128-k chunk's sums in fp16 (8 MMA steps in two chains). Measured
  // at the standard shapes: 3.7-5.1e-4 in all against 1.5-2.4e-4; the margin here is generous (it
  // does not tell per-chunk from whole-K fp16 sums, which a crafted-data test would).
  const double k_term =
      1e-4 * std::sqrt(static_cast<double>(p.k) / 4096.0) + (p.accum == DType::F16 ? 2e-3 : 0);
  const double modes = p.mode == DequantMode::SubFloatZeroThenScale ? 1.5 : 1.0;
  if (p.out == DType::F32) return (p.act == DType::BF16 ? 5e-3 : 1e-3) * modes + k_term;
  if (p.out == DType::BF16) return 1e-2 * modes + k_term;
  return 2e-3 * modes + k_term;
}

double relative_error(const DeviceLayer& L, const std::vector<double>& y, int64_t m) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < m * L.problem.n; ++i) {
    num += (y[i] - L.ref[i]) * (y[i] - L.ref[i]);
    den += L.ref[i] * L.ref[i];
  }
  return std::sqrt(num / den);
}

void require_refused(const DeviceLayer& L, const WqGemmPlan& plan, const WqGemmArgs& a, int64_t m,
                     const std::string& needle, int64_t rows_checked) {
  L.y_dev.fill_bytes(0xff);
  bool threw = false;
  try {
    plan.run(a, m, nullptr);
  } catch (const Error& e) {
    threw = true;
    INFO(e.what());
    CHECK(std::string(e.what()).find(needle) != std::string::npos);
  }
  INFO("expected an error containing: " << needle);
  REQUIRE(threw);
  LOWBIT_CU_CHECK(jit::driver().cuCtxSynchronize());
  for (double v : download_y(L, rows_checked)) REQUIRE(std::isnan(v));  // nothing written
}

double run_and_check(const DeviceLayer& L, const WqGemmPlan& plan, int64_t m, bool with_bias) {
  L.y_dev.fill_bytes(0xff);  // NaN everywhere: an unwritten element cannot pass
  plan.run(L.args(with_bias), m, nullptr);
  LOWBIT_CU_CHECK(jit::driver().cuCtxSynchronize());
  INFO(plan.config_for(m).str());
  return check_y(L, m);
}

double check_y(const DeviceLayer& L, int64_t m) {
  const auto y = download_y(L, m);
  int64_t bad = 0;
  for (double v : y) bad += std::isfinite(v) ? 0 : 1;
  INFO(L.problem.str() << " m=" << m);
  REQUIRE(bad == 0);
  const double err = relative_error(L, y, m);
  CAPTURE(err, tolerance(L.problem));
  REQUIRE(err <= tolerance(L.problem));
  return err;
}

}  // namespace lowbit::test

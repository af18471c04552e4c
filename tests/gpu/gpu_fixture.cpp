#include "gpu/gpu_fixture.hpp"

#include <cmath>
#include <cstdio>

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

std::unique_ptr<DeviceLayer> make_layer(const WqGemmProblem& p, bool with_bias) {
  gpu_runtime();  // the runtime makes the device's context current before anything is allocated
  auto L = std::make_unique<DeviceLayer>();
  L->problem = p;
  RandomLayer r = random_layer(p.n, p.k, p.bits, p.group_size, p.act, gpu_rng());
  UnpackedWeightsView v;
  v.q = r.q.data(), v.scales = r.scales.data(), v.n = p.n, v.k = p.k, v.bits = p.bits, v.group_size = p.group_size;
  v.zeros = p.mode == DequantMode::SubZeroThenScale ? r.zeros.data() : nullptr;
  L->packed = pack(v);
  L->x = random_activations(p.m * p.k, p.act, gpu_rng());
  L->bias = random_activations(p.n, p.act, gpu_rng());
  L->qweight = jit::DeviceBuffer::from(L->packed.qweight);
  L->scales = jit::DeviceBuffer::from(L->packed.scales);
  if (!L->packed.zeros.empty()) L->zeros = jit::DeviceBuffer::from(L->packed.zeros);
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
  a.bias = with_bias ? bias_dev.get() : nullptr;
  a.y = y_dev.get();
  return a;
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
  const double k_term = 1e-4 * std::sqrt(static_cast<double>(p.k) / 4096.0);
  if (p.out == DType::F32) return (p.act == DType::BF16 ? 5e-3 : 1e-3) + k_term;
  if (p.out == DType::BF16) return 1e-2 + k_term;
  return 2e-3 + k_term;
}

double relative_error(const DeviceLayer& L, const std::vector<double>& y, int64_t m) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < m * L.problem.n; ++i) {
    num += (y[i] - L.ref[i]) * (y[i] - L.ref[i]);
    den += L.ref[i] * L.ref[i];
  }
  return std::sqrt(num / den);
}

double run_and_check(const DeviceLayer& L, const WqGemmPlan& plan, int64_t m, bool with_bias) {
  L.y_dev.fill_bytes(0xff);  // NaN everywhere: an unwritten element cannot pass
  plan.run(L.args(with_bias), m, nullptr);
  LOWBIT_CU_CHECK(jit::driver().cuCtxSynchronize());
  const auto y = download_y(L, m);
  int64_t bad = 0;
  for (double v : y) bad += std::isfinite(v) ? 0 : 1;
  INFO(L.problem.str() << " m=" << m << " " << plan.config_for(m).str());
  REQUIRE(bad == 0);
  const double err = relative_error(L, y, m);
  CAPTURE(err, tolerance(L.problem));
  REQUIRE(err <= tolerance(L.problem));
  return err;
}

}  // namespace lowbit::test

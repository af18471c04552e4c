#include "ref/wq_gemm_ref.hpp"

#include <algorithm>
#include <thread>

#include "ref/half.hpp"

namespace lowbit::ref {
namespace {
double to_double(uint16_t h, DType t) {
  return t == DType::BF16 ? bf16_to_float(h) : f16_to_float(h);
}
}  // namespace

double dequantize(DequantMode mode, int bits, int q, int z_int, double z_float, double scale) {
  switch (mode) {
    case DequantMode::SubZeroThenScale:
      return (q - z_int) * scale;
    case DequantMode::Symmetric:
      return (q - (1 << (bits - 1))) * scale;
    case DequantMode::SubFloatZeroThenScale:
      return (q - z_float) * scale;
    case DequantMode::ScaleThenAddZero:
      return q * scale + z_float;
  }
  return 0;
}

std::vector<double> wq_gemm_reference(const WqGemmProblem& p, const PackedWeights& w, const uint16_t* x,
                                      const uint16_t* bias, const std::vector<int64_t>& cols_in,
                                      unsigned threads) {
  std::vector<int64_t> cols = cols_in;
  if (cols.empty()) {
    cols.resize(static_cast<std::size_t>(p.n));
    for (int64_t i = 0; i < p.n; ++i) cols[i] = i;
  }
  const int64_t M = p.m, K = p.k, C = static_cast<int64_t>(cols.size());
  std::vector<double> xd(static_cast<std::size_t>(M * K));
  for (int64_t i = 0; i < M * K; ++i) xd[i] = to_double(x[i], p.act);
  std::vector<double> y(static_cast<std::size_t>(M * C));
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  auto work = [&](int64_t c_begin, int64_t c_end) {
    std::vector<double> wcol(static_cast<std::size_t>(K));
    for (int64_t ci = c_begin; ci < c_end; ++ci) {
      const int64_t n = cols[ci];
      // Packed position j holds input feature source_k(j); wcol is indexed by input feature.
      for (int64_t j = 0; j < K; ++j) {
        const double s = to_double(w.scale_at(n, j), p.act);
        const bool fz = has_float_zeros(w.mode);
        wcol[w.source_k(j)] = dequantize(w.mode, w.bits, w.q_at(n, j), fz ? 0 : w.zero_at(n, j),
                                         fz ? to_double(w.float_zero_at(n, j), p.act) : 0.0, s);
      }
      const double b = bias ? to_double(bias[n], p.act) : 0.0;
      for (int64_t m = 0; m < M; ++m) {
        double acc = 0;
        const double* xr = &xd[m * K];
        for (int64_t k = 0; k < K; ++k) acc += xr[k] * wcol[k];
        y[m * C + ci] = acc + b;
      }
    }
  };
  const int64_t per = (C + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < threads && static_cast<int64_t>(i) * per < C; ++i)
    pool.emplace_back(work, i * per, std::min<int64_t>(C, (i + 1) * per));
  for (auto& th : pool) th.join();
  return y;
}

std::vector<double> wq_gemm_naive(const WqGemmProblem& p, const uint8_t* q, const uint8_t* zeros,
                                  const uint16_t* scales, const uint16_t* x, const uint16_t* bias,
                                  const uint16_t* float_zeros, const int32_t* g_idx) {
  std::vector<double> y(static_cast<std::size_t>(p.m * p.n));
  for (int64_t m = 0; m < p.m; ++m)
    for (int64_t n = 0; n < p.n; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < p.k; ++k) {
        const int64_t g = g_idx ? g_idx[k] : p.group_size == 0 ? 0 : k / p.group_size;
        const double wv = dequantize(p.mode, p.bits, q[n * p.k + k], zeros ? zeros[g * p.n + n] : 0,
                                     float_zeros ? to_double(float_zeros[g * p.n + n], p.act) : 0.0,
                                     to_double(scales[g * p.n + n], p.act));
        acc += to_double(x[m * p.k + k], p.act) * wv;
      }
      y[m * p.n + n] = acc + (bias ? to_double(bias[n], p.act) : 0.0);
    }
  return y;
}

}  // namespace lowbit::ref

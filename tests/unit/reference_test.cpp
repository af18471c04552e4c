// The CPU reference (packed weights, threaded) against the naive loop over unpacked integers, and a
// few outputs computed by hand.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "lowbit/lowbit.hpp"
#include "ref/wq_gemm_ref.hpp"
#include "support/catch.hpp"
#include "support/test_support.hpp"

namespace {

using lowbit::DequantMode;
using lowbit::DType;
using lowbit::WqGemmProblem;

lowbit::PackedWeights pack_layer(const lowbit::test::RandomLayer& L, bool with_zeros) {
  lowbit::UnpackedWeightsView v;
  v.q = L.q.data();
  v.zeros = with_zeros ? L.zeros.data() : nullptr;
  v.scales = L.scales.data();
  v.n = L.n, v.k = L.k, v.bits = L.bits, v.group_size = L.group_size;
  return lowbit::pack(v);
}

// Largest |a − b| / max(1, |b|); the inputs must have the same size.
double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(a[i] - b[i]) / std::max(1.0, std::fabs(b[i])));
  return worst;
}

}  // namespace

TEST_CASE("wq_gemm_reference agrees with the naive loop at odd shapes", "[reference]") {
  const uint64_t seed = lowbit::test::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  int cases = 0;
  for (int64_t m : {1, 3, 7})
    for (int64_t n : {8, 40})
      for (int64_t k : {128, 160, 384})
        for (int group : {32, 128, 0})
          for (DType act : {DType::F16, DType::BF16})
            for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric})
              for (bool with_bias : {false, true}) {
                WqGemmProblem p;
                p.m = m, p.n = n, p.k = k, p.group_size = group, p.act = act, p.out = act, p.mode = mode;
                if (!lowbit::can_implement(p)) continue;  // K = 160 with G = 128
                INFO(p.str() << " bias=" << with_bias);
                const bool zeros = mode == DequantMode::SubZeroThenScale;
                const auto L = lowbit::test::random_layer(n, k, 4, group, act, rng);
                const auto x = lowbit::test::random_activations(m * k, act, rng);
                const auto bias = lowbit::test::random_activations(n, act, rng);
                const auto P = pack_layer(L, zeros);
                const uint16_t* b = with_bias ? bias.data() : nullptr;
                const auto ref = lowbit::ref::wq_gemm_reference(p, P, x.data(), b, {}, 2);
                const auto naive = lowbit::ref::wq_gemm_naive(p, L.q.data(), zeros ? L.zeros.data() : nullptr,
                                                              L.scales.data(), x.data(), b);
                REQUIRE(ref.size() == static_cast<std::size_t>(m * n));
                REQUIRE(naive.size() == ref.size());
                CHECK(max_rel_diff(ref, naive) <= 1e-12);
                // The outputs are not degenerate (a reference returning zeros would agree with nothing).
                double norm = 0;
                for (double v : naive) norm += v * v;
                CHECK(norm > 0);
                ++cases;
              }
  CHECK(cases == 3 * 2 * (3 + 2 + 3) * 2 * 2 * 2);  // K=160 skips G=128
}

TEST_CASE("wq_gemm_reference: column subsets and thread counts give the same numbers", "[reference]") {
  std::mt19937_64 rng(lowbit::test::fresh_seed());
  WqGemmProblem p;
  p.m = 3, p.n = 40, p.k = 384, p.group_size = 64;
  const auto L = lowbit::test::random_layer(p.n, p.k, 4, p.group_size, p.act, rng);
  const auto x = lowbit::test::random_activations(p.m * p.k, p.act, rng);
  const auto P = pack_layer(L, true);
  const auto all1 = lowbit::ref::wq_gemm_reference(p, P, x.data(), nullptr, {}, 1);
  const auto all3 = lowbit::ref::wq_gemm_reference(p, P, x.data(), nullptr, {}, 3);
  CHECK(all1 == all3);
  const std::vector<int64_t> cols = {39, 0, 17, 8};
  const auto some = lowbit::ref::wq_gemm_reference(p, P, x.data(), nullptr, cols, 2);
  REQUIRE(some.size() == static_cast<std::size_t>(p.m) * cols.size());
  for (int64_t m = 0; m < p.m; ++m)
    for (std::size_t c = 0; c < cols.size(); ++c) {
      CAPTURE(m, cols[c]);
      CHECK(some[m * cols.size() + c] == all1[m * p.n + cols[c]]);
    }
}

TEST_CASE("wq_gemm_reference and wq_gemm_naive on hand-computed inputs", "[reference]") {
  // M = 1, N = 8, K = 128, one group: every weight is (q − z)·s.
  WqGemmProblem p;
  p.m = 1, p.n = 8, p.k = 128, p.group_size = 128;
  std::vector<uint8_t> q(8 * 128, 9), zeros(8, 8);
  std::vector<uint16_t> scales(8, 0x3C00);  // f16 1.0
  std::vector<uint16_t> x(128, 0x3C00);     // f16 1.0
  std::vector<uint16_t> bias(8, 0x4000);    // f16 2.0

  auto run_both = [&](const WqGemmProblem& pr, const uint16_t* b, bool with_zeros) {
    lowbit::UnpackedWeightsView v;
    v.q = q.data(), v.zeros = with_zeros ? zeros.data() : nullptr, v.scales = scales.data();
    v.n = pr.n, v.k = pr.k, v.group_size = pr.group_size;
    const auto P = lowbit::pack(v);
    auto ref = lowbit::ref::wq_gemm_reference(pr, P, x.data(), b);
    auto naive = lowbit::ref::wq_gemm_naive(pr, q.data(), with_zeros ? zeros.data() : nullptr, scales.data(),
                                            x.data(), b);
    return std::make_pair(ref, naive);
  };

  SECTION("(9 − 8)·1 summed over 128 ones is 128") {
    const auto [ref, naive] = run_both(p, nullptr, true);
    REQUIRE(ref.size() == 8);
    REQUIRE(naive.size() == 8);
    for (int i = 0; i < 8; ++i) {
      CHECK(ref[i] == 128.0);
      CHECK(naive[i] == 128.0);
    }
  }
  SECTION("with a bias of 2") {
    const auto [ref, naive] = run_both(p, bias.data(), true);
    for (int i = 0; i < 8; ++i) {
      CHECK(ref[i] == 130.0);
      CHECK(naive[i] == 130.0);
    }
  }
  SECTION("Symmetric mode subtracts 2^(bits−1) = 8") {
    WqGemmProblem ps = p;
    ps.mode = DequantMode::Symmetric;
    const auto [ref, naive] = run_both(ps, nullptr, false);
    for (int i = 0; i < 8; ++i) {
      CHECK(ref[i] == 128.0);
      CHECK(naive[i] == 128.0);
    }
  }
  SECTION("the sign is (q − z), scaled by s, per column") {
    // column n: q = n, z = 8, s = 0.5 (0x3800); x row 0 = 1.0, so y[n] = 128·(n − 8)·0.5 = 64·(n − 8).
    for (int n = 0; n < 8; ++n)
      std::fill(q.begin() + n * 128, q.begin() + (n + 1) * 128, static_cast<uint8_t>(n));
    std::fill(scales.begin(), scales.end(), 0x3800);
    const auto [ref, naive] = run_both(p, nullptr, true);
    for (int n = 0; n < 8; ++n) {
      CAPTURE(n);
      CHECK(ref[n] == 64.0 * (n - 8));
      CHECK(naive[n] == 64.0 * (n - 8));
    }
  }
  SECTION("bf16 inputs and a second row of 2s") {
    WqGemmProblem pb = p;
    pb.m = 2, pb.act = DType::BF16, pb.out = DType::BF16;
    std::fill(scales.begin(), scales.end(), 0x3F80);  // bf16 1.0
    x.assign(256, 0x3F80);
    std::fill(x.begin() + 128, x.end(), 0x4000);  // bf16 2.0
    std::vector<uint16_t> bias_bf16(8, 0x3F00);   // bf16 0.5
    const auto [ref, naive] = run_both(pb, bias_bf16.data(), true);
    REQUIRE(ref.size() == 16);
    for (int n = 0; n < 8; ++n) {
      CHECK(ref[n] == 128.5);
      CHECK(ref[8 + n] == 256.5);
      CHECK(naive[n] == 128.5);
      CHECK(naive[8 + n] == 256.5);
    }
  }
}

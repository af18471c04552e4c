// lowbit::pack: GPTQ and plain unpacked weights → lowbit's layout, exact round trips, padding,
// the documented tile layout, and bad input.
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "support/test_support.hpp"
#include "unit/unit_helpers.hpp"

namespace {

using lowbit::GptqWeightsView;
using lowbit::GptqZeros;
using lowbit::PackedWeights;
using lowbit::UnpackedWeightsView;
using lowbit::test::gptq_checkpoint;
using lowbit::test::GptqCheckpoint;
using lowbit::test::RandomLayer;

struct Shape {
  int64_t n, k;
  int group;
};

// The shapes of the brief: K = 4160 and K = 200 are not multiples of 128 (K padding), N = 20 is not a
// multiple of 8 (N padding; only without qzeros, which need N % 8 == 0).
const Shape kShapes[] = {{8, 128, 128},   {24, 256, 32}, {40, 384, 64}, {16, 512, 256},
                         {136, 4160, 32}, {72, 1024, 0}, {20, 200, 0}};

int64_t groups_of(int64_t k, int group) {
  return group == 0 ? 1 : k / group;
}

GptqWeightsView gptq_view(const RandomLayer& L, const GptqCheckpoint& g, GptqZeros format) {
  GptqWeightsView v;
  v.qweight = g.qweight.data();
  v.qzeros = g.qzeros.empty() ? nullptr : g.qzeros.data();
  v.scales = L.scales.data();
  v.n = L.n, v.k = L.k, v.bits = 4, v.group_size = L.group_size;
  v.zeros_format = format;
  return v;
}

UnpackedWeightsView unpacked_view(const RandomLayer& L, bool with_zeros) {
  UnpackedWeightsView v;
  v.q = L.q.data();
  v.zeros = with_zeros ? L.zeros.data() : nullptr;
  v.scales = L.scales.data();
  v.n = L.n, v.k = L.k, v.bits = 4, v.group_size = L.group_size;
  return v;
}

// The qweight vector as include/lowbit/pack.hpp documents it, written independently of the library:
// word ((chunk·(n_pad/8) + tile)·32 + lane)·4 + p, lane = 4·(n%8) + t, k = 128·chunk + 32·t + 8·p + e,
// element e at nibble (e/2) + 4·(e%2).
std::vector<uint32_t> documented_qweight(const RandomLayer& L, int64_t n_pad, int64_t k_pad) {
  std::vector<uint32_t> w(static_cast<std::size_t>(n_pad * k_pad / 8), 0u);
  const int64_t chunks = k_pad / 128;
  for (int64_t tile = 0; tile < n_pad / 8; ++tile)
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int lane = 0; lane < 32; ++lane)
        for (int p = 0; p < 4; ++p)
          for (int e = 0; e < 8; ++e) {
            const int64_t n = 8 * tile + lane / 4;
            const int64_t k = 128 * chunk + 32 * (lane % 4) + 8 * p + e;
            if (n >= L.n || k >= L.k) continue;  // padding stays zero
            const int nibble = e / 2 + 4 * (e % 2);
            w[static_cast<std::size_t>(((chunk * (n_pad / 8) + tile) * 32 + lane) * 4 + p)] |=
                static_cast<uint32_t>(L.q[n * L.k + k]) << (4 * nibble);
          }
  return w;
}

// Compares a packed result with the layer it came from; returns the first difference, or "".
std::string first_difference(const PackedWeights& P, const RandomLayer& L, bool with_zeros) {
  const int64_t groups = groups_of(L.k, L.group_size);
  for (int64_t n = 0; n < L.n; ++n)
    for (int64_t k = 0; k < L.k; ++k) {
      const int64_t g = L.group_size == 0 ? 0 : k / L.group_size;
      const int want_q = L.q[n * L.k + k];
      if (P.q_at(n, k) != want_q)
        return "q_at(" + std::to_string(n) + ", " + std::to_string(k) +
               ") = " + std::to_string(P.q_at(n, k)) + ", want " + std::to_string(want_q);
      const int want_z = with_zeros ? L.zeros[g * L.n + n] : 8;
      if (P.zero_at(n, k) != want_z)
        return "zero_at(" + std::to_string(n) + ", " + std::to_string(k) +
               ") = " + std::to_string(P.zero_at(n, k)) + ", want " + std::to_string(want_z);
      if (P.scale_at(n, k) != L.scales[g * L.n + n])
        return "scale_at(" + std::to_string(n) + ", " + std::to_string(k) +
               ") = " + std::to_string(P.scale_at(n, k)) + ", want " + std::to_string(L.scales[g * L.n + n]);
    }
  // Padding: q of every padded (n, k) position reads back 0; scales and zeros rows/columns past the
  // real ones are 0.
  for (int64_t n = 0; n < P.n_pad; ++n)
    for (int64_t k = 0; k < P.k_pad; ++k)
      if ((n >= L.n || k >= L.k) && P.q_at(n, k) != 0)
        return "padded q_at(" + std::to_string(n) + ", " + std::to_string(k) +
               ") = " + std::to_string(P.q_at(n, k));
  for (int64_t g = 0; g < P.groups_pad; ++g)
    for (int64_t n = 0; n < P.n_pad; ++n) {
      if (g < groups && n < L.n) continue;
      const std::size_t i = static_cast<std::size_t>(g * P.n_pad + n);
      if (P.scales[i] != 0) return "padded scales[" + std::to_string(g) + "][" + std::to_string(n) + "] != 0";
      if (with_zeros && P.zeros[i] != 0)
        return "padded zeros[" + std::to_string(g) + "][" + std::to_string(n) + "] != 0";
    }
  return "";
}

void check_sizes(const PackedWeights& P, const RandomLayer& L, bool with_zeros) {
  const int64_t n_pad = (L.n + 7) / 8 * 8, k_pad = (L.k + 127) / 128 * 128;
  const int64_t groups_pad = L.group_size == 0 ? 1 : k_pad / L.group_size;
  CHECK(P.n == L.n);
  CHECK(P.k == L.k);
  CHECK(P.bits == 4);
  CHECK(P.group_size == L.group_size);
  CHECK(P.n_pad == n_pad);
  CHECK(P.k_pad == k_pad);
  CHECK(P.groups_pad == groups_pad);
  CHECK(P.qweight.size() == static_cast<std::size_t>(n_pad * k_pad / 8));
  CHECK(P.scales.size() == static_cast<std::size_t>(groups_pad * n_pad));
  CHECK(P.zeros.size() == (with_zeros ? static_cast<std::size_t>(groups_pad * n_pad) : 0u));
  // The kernel side's idea of the layout (wq::layout) must match what pack() produces.
  lowbit::WqGemmProblem p;
  p.n = L.n, p.k = L.k, p.group_size = L.group_size;
  p.mode = with_zeros ? lowbit::DequantMode::SubZeroThenScale : lowbit::DequantMode::Symmetric;
  const lowbit::wq::Layout l = lowbit::wq::layout(p);
  CHECK(l.n_pad == P.n_pad);
  CHECK(l.k_pad == P.k_pad);
  CHECK(l.groups_pad == P.groups_pad);
  CHECK(l.qweight_bytes == P.qweight.size() * 4);
  CHECK(l.scales_bytes == P.scales.size() * 2);
  CHECK(l.zeros_bytes == P.zeros.size());
  CHECK(P.bytes() == l.qweight_bytes + l.scales_bytes + l.zeros_bytes);
}

}  // namespace

TEST_CASE("pack(GPTQ) round-trips q, zeros and scales exactly", "[pack]") {
  const uint64_t seed = lowbit::test::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const Shape& s : kShapes) {
    for (GptqZeros format : {GptqZeros::StoredMinusOne, GptqZeros::Exact}) {
      for (bool with_zeros : {true, false}) {
        if (with_zeros && s.n % 8 != 0) continue;  // GPTQ qzeros need N % 8 == 0 (tested below)
        if (!with_zeros && format == GptqZeros::Exact) continue;  // format is irrelevant without qzeros
        INFO("N=" << s.n << " K=" << s.k << " G=" << s.group << " zeros=" << with_zeros
                  << " format=" << (format == GptqZeros::Exact ? "Exact" : "StoredMinusOne"));
        const lowbit::DType act = s.k % 256 == 0 ? lowbit::DType::BF16 : lowbit::DType::F16;
        RandomLayer L = lowbit::test::random_layer(s.n, s.k, 4, s.group, act, rng);
        // v1 stores z − 1 in 4 bits, so z = 0 has no encoding there; Exact keeps the full 0..15.
        if (format == GptqZeros::StoredMinusOne)
          for (auto& z : L.zeros)
            if (z == 0) z = 1;
        const GptqCheckpoint g = gptq_checkpoint(L, format, with_zeros);
        const GptqWeightsView view = gptq_view(L, g, format);

        const PackedWeights P = lowbit::pack(view);
        check_sizes(P, L, with_zeros);
        CHECK(first_difference(P, L, with_zeros) == "");
        CHECK(P.qweight == documented_qweight(L, P.n_pad, P.k_pad));
        // documented_qweight writes layout 2 (chunk-major): the version must name what pack wrote.
        CHECK(P.layout_version == 2);
        CHECK(lowbit::kPackedLayoutVersion == 2);

        // unpack_gptq gives back the integers.
        std::vector<uint8_t> q(L.q.size(), 0xff), z(L.zeros.size(), 0xff);
        lowbit::unpack_gptq(view, q.data(), with_zeros ? z.data() : nullptr);
        CHECK(q == L.q);
        if (with_zeros) CHECK(z == L.zeros);

        // The plain path packs the same bytes.
        const PackedWeights U = lowbit::pack(unpacked_view(L, with_zeros));
        CHECK(U.qweight == P.qweight);
        CHECK(U.scales == P.scales);
        CHECK(U.zeros == P.zeros);
        CHECK(U.n_pad == P.n_pad);
        CHECK(U.k_pad == P.k_pad);
        CHECK(U.groups_pad == P.groups_pad);
      }
    }
  }
}

TEST_CASE("pack: zeros formats read the same checkpoint differently", "[pack]") {
  // One qzeros word holding 3 for every column: StoredMinusOne means z = 4, Exact means z = 3.
  const int64_t N = 8, K = 128;
  std::vector<int32_t> qweight(static_cast<std::size_t>(K / 8 * N), 0);
  std::vector<int32_t> qzeros(1, 0x33333333);
  std::vector<uint16_t> scales(N, 0x3C00);
  GptqWeightsView v;
  v.qweight = qweight.data(), v.qzeros = qzeros.data(), v.scales = scales.data();
  v.n = N, v.k = K, v.group_size = 128;
  v.zeros_format = GptqZeros::StoredMinusOne;
  const PackedWeights a = lowbit::pack(v);
  v.zeros_format = GptqZeros::Exact;
  const PackedWeights b = lowbit::pack(v);
  for (int64_t n = 0; n < N; ++n) {
    CHECK(a.zero_at(n, 0) == 4);
    CHECK(b.zero_at(n, K - 1) == 3);
  }
}

TEST_CASE("pack: symmetric weights have no zeros and read back 2^(bits-1)", "[pack]") {
  std::mt19937_64 rng(lowbit::test::fresh_seed());
  const RandomLayer L = lowbit::test::random_layer(16, 256, 4, 64, lowbit::DType::F16, rng);
  const PackedWeights P = lowbit::pack(unpacked_view(L, false));
  CHECK(P.zeros.empty());
  CHECK(P.zero_at(0, 0) == 8);
  CHECK(P.zero_at(15, 255) == 8);
}

TEST_CASE("pack rejects bad input with a message naming the problem", "[pack]") {
  std::mt19937_64 rng(lowbit::test::fresh_seed());
  RandomLayer L = lowbit::test::random_layer(16, 128, 4, 128, lowbit::DType::F16, rng);

  SECTION("a q value of 16 does not fit in 4 bits") {
    L.q[5 * 128 + 17] = 16;
    const std::string msg = lowbit::test::error_of([&] { (void)lowbit::pack(unpacked_view(L, true)); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "does not fit"));
    CHECK(lowbit::test::contains(msg, "q[5][17] = 16"));
  }
  SECTION("a zero point of 16 does not fit in 4 bits") {
    L.zeros[3] = 16;
    const std::string msg = lowbit::test::error_of([&] { (void)lowbit::pack(unpacked_view(L, true)); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "does not fit"));
  }
  SECTION("GPTQ qzeros need N to be a multiple of 8") {
    RandomLayer L20 = lowbit::test::random_layer(20, 128, 4, 128, lowbit::DType::F16, rng);
    const GptqCheckpoint g = gptq_checkpoint(L20, GptqZeros::Exact, false);
    std::vector<int32_t> qzeros(3, 0);  // what a writer would round up to; still not a valid layout
    GptqWeightsView v = gptq_view(L20, g, GptqZeros::Exact);
    v.qzeros = qzeros.data();
    const std::string msg = lowbit::test::error_of([&] { (void)lowbit::pack(v); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "multiple of 8"));
    CHECK(lowbit::test::contains(msg, "n = 20"));
  }
  SECTION("null scales") {
    const GptqCheckpoint g = gptq_checkpoint(L, GptqZeros::Exact, true);
    GptqWeightsView v = gptq_view(L, g, GptqZeros::Exact);
    v.scales = nullptr;
    std::string msg = lowbit::test::error_of([&] { (void)lowbit::pack(v); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "scales is null"));
    UnpackedWeightsView u = unpacked_view(L, true);
    u.scales = nullptr;
    msg = lowbit::test::error_of([&] { (void)lowbit::pack(u); });
    CHECK(lowbit::test::contains(msg, "scales is null"));
  }
  SECTION("null qweight / q") {
    GptqWeightsView v = gptq_view(L, gptq_checkpoint(L, GptqZeros::Exact, true), GptqZeros::Exact);
    v.qweight = nullptr;
    std::string msg = lowbit::test::error_of([&] { (void)lowbit::pack(v); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "qweight is null"));
    UnpackedWeightsView u = unpacked_view(L, true);
    u.q = nullptr;
    msg = lowbit::test::error_of([&] { (void)lowbit::pack(u); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "pack(unpacked)"));
    CHECK(lowbit::test::contains(msg, "pack(unpacked): q is null"));
  }
  SECTION("StoredMinusOne cannot encode z = 16") {
    const GptqCheckpoint g = gptq_checkpoint(L, GptqZeros::Exact, true);
    GptqCheckpoint bad = g;
    bad.qzeros[0] = static_cast<int32_t>(0x0000000fu);  // column 0 stores 15 → z = 16
    GptqWeightsView v = gptq_view(L, bad, GptqZeros::StoredMinusOne);
    const std::string msg = lowbit::test::error_of([&] { (void)lowbit::pack(v); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "z = 16"));
  }
  SECTION("a shape the kernel cannot run") {
    UnpackedWeightsView u = unpacked_view(L, true);
    u.k = 100;  // not a multiple of 8
    std::string msg = lowbit::test::error_of([&] { (void)lowbit::pack(u); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "k = 100"));
    u = unpacked_view(L, true);
    u.group_size = 48;
    msg = lowbit::test::error_of([&] { (void)lowbit::pack(u); });
    CHECK(lowbit::test::contains(msg, "group_size = 48"));
    for (int bits : {5, 6, 0}) {
      u = unpacked_view(L, true);
      u.bits = bits;
      msg = lowbit::test::error_of([&] { (void)lowbit::pack(u); });
      INFO(msg);
      CHECK(lowbit::test::contains(msg, "pack(unpacked)"));
      CHECK(lowbit::test::contains(msg, "bits = " + std::to_string(bits)));
    }
  }
  SECTION("GPTQ packs 2, 3, 4 and 8 bits: other widths are refused by name") {
    const GptqCheckpoint g = gptq_checkpoint(L, GptqZeros::Exact, true);
    GptqWeightsView v = gptq_view(L, g, GptqZeros::Exact);
    v.bits = 1;
    const std::string msg = lowbit::test::error_of([&] { (void)lowbit::pack(v); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "pack(gptq)"));
    CHECK(lowbit::test::contains(msg, "bits = 1"));
    std::vector<uint8_t> q(L.q.size()), z(L.zeros.size());
    const std::string msg2 = lowbit::test::error_of([&] { lowbit::unpack_gptq(v, q.data(), z.data()); });
    CHECK(lowbit::test::contains(msg2, "bits = 1"));
  }
  SECTION("the AutoAWQ GEMM layout is 4-bit only") {
    std::vector<int32_t> qweight(static_cast<std::size_t>(L.k * L.n / 8), 0);
    lowbit::AwqWeightsView a;
    a.qweight = qweight.data(), a.scales = L.scales.data(), a.n = L.n, a.k = L.k, a.group_size = 128;
    for (int bits : {2, 3, 8}) {
      a.bits = bits;
      const std::string msg = lowbit::test::error_of([&] { (void)lowbit::pack(a); });
      INFO(msg);
      CHECK(lowbit::test::contains(msg, "pack(awq)"));
      CHECK(lowbit::test::contains(msg, "bits = " + std::to_string(bits)));
      CHECK(lowbit::test::contains(msg, "4-bit only"));
    }
  }
}

TEST_CASE("pack(AWQ): the interleaved column order round-trips exactly", "[pack]") {
  std::mt19937_64 rng(lowbit::test::fresh_seed());
  for (auto [n, k, group] :
       {std::tuple<int64_t, int64_t, int>{8, 128, 128}, {40, 384, 64}, {136, 4160, 32}, {72, 1024, 0}}) {
    const auto layer = lowbit::test::random_layer(n, k, 4, group, lowbit::DType::F16, rng);
    const int64_t groups = group == 0 ? 1 : k / group;
    // Build the AutoAWQ tensors independently: output column 8c + j goes to nibble ORDER⁻¹[j], i.e.
    // nibble i holds column 8c + ORDER[i] with ORDER = {0, 2, 4, 6, 1, 3, 5, 7}.
    const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    std::vector<int32_t> qweight(static_cast<std::size_t>(k * n / 8)),
        qzeros(static_cast<std::size_t>(groups * n / 8));
    for (int64_t r = 0; r < k; ++r)
      for (int64_t c = 0; c < n / 8; ++c) {
        uint32_t w = 0;
        for (int i = 0; i < 8; ++i)
          w |= static_cast<uint32_t>(layer.q[(8 * c + order[i]) * k + r]) << (4 * i);
        qweight[r * (n / 8) + c] = static_cast<int32_t>(w);
      }
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t c = 0; c < n / 8; ++c) {
        uint32_t w = 0;
        for (int i = 0; i < 8; ++i)
          w |= static_cast<uint32_t>(layer.zeros[g * n + 8 * c + order[i]]) << (4 * i);
        qzeros[g * (n / 8) + c] = static_cast<int32_t>(w);
      }
    lowbit::AwqWeightsView awq;
    awq.qweight = qweight.data(), awq.qzeros = qzeros.data(), awq.scales = layer.scales.data();
    awq.n = n, awq.k = k, awq.group_size = group;
    const lowbit::PackedWeights packed = lowbit::pack(awq);
    lowbit::UnpackedWeightsView plain;
    plain.q = layer.q.data(), plain.zeros = layer.zeros.data(), plain.scales = layer.scales.data();
    plain.n = n, plain.k = k, plain.group_size = group;
    const lowbit::PackedWeights expected = lowbit::pack(plain);
    INFO("n=" << n << " k=" << k << " group=" << group);
    CHECK(packed.qweight == expected.qweight);
    CHECK(packed.zeros == expected.zeros);
    CHECK(packed.scales == expected.scales);
    int64_t mismatches = 0;
    for (int64_t row = 0; row < n; ++row)
      for (int64_t col = 0; col < k; ++col) mismatches += packed.q_at(row, col) != layer.q[row * k + col];
    CHECK(mismatches == 0);
  }
  lowbit::AwqWeightsView odd;
  std::vector<int32_t> w(16);
  std::vector<uint16_t> s(12);
  odd.qweight = w.data(), odd.scales = s.data(), odd.n = 12, odd.k = 128;
  bool threw = false;
  try {
    lowbit::pack(odd);
  } catch (const lowbit::Error& e) {
    threw = std::string(e.what()).find("multiple of 8") != std::string::npos;
  }
  CHECK(threw);
}

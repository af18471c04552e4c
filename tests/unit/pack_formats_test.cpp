// lowbit::pack for every width (bits 1, 2, 3, 4, 8) and every dequant mode: exact round trips with
// padding, the documented bit layout rebuilt independently from include/lowbit/pack.hpp, GPTQ 2- and
// 8-bit checkpoints, HQQ, act-order (g_idx → perm), the CPU reference on all of it, and bad input.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/lowbit.hpp"
#include "ref/half.hpp"
#include "ref/wq_gemm_ref.hpp"
#include "support/catch.hpp"
#include "support/test_support.hpp"
#include "unit/unit_helpers.hpp"

namespace {

using lowbit::DequantMode;
using lowbit::DType;
using lowbit::GptqWeightsView;
using lowbit::GptqZeros;
using lowbit::PackedWeights;
using lowbit::UnpackedWeightsView;
using lowbit::test::gptq_checkpoint;
using lowbit::test::GptqCheckpoint;
using lowbit::test::RandomLayer;

const int kBits[] = {1, 2, 3, 4, 8};
const DequantMode kModes[] = {DequantMode::SubZeroThenScale, DequantMode::Symmetric,
                              DequantMode::SubFloatZeroThenScale, DequantMode::ScaleThenAddZero};

int64_t groups_of(int64_t k, int group) {
  return group == 0 ? 1 : k / group;
}
int64_t round_up(int64_t a, int64_t b) {
  return (a + b - 1) / b * b;
}

uint16_t to_act(float v, DType act) {
  return act == DType::BF16 ? lowbit::ref::float_to_bf16(v) : lowbit::ref::float_to_f16(v);
}

// A random layer with both kinds of zero points: integer zeros (RandomLayer::zeros) and float zeros.
struct Layer {
  RandomLayer L;
  std::vector<uint16_t> float_zeros;  // [groups, N], act dtype bits, never 0 (so padding is told apart)
};

Layer random_layer(int64_t n, int64_t k, int bits, int group, DType act, std::mt19937_64& rng) {
  Layer X;
  X.L = lowbit::test::random_layer(n, k, bits, group, act, rng);
  std::uniform_real_distribution<float> d(0.25f, static_cast<float>(1 << bits) - 0.25f);
  std::bernoulli_distribution negative(0.3);
  X.float_zeros.resize(X.L.scales.size());
  for (auto& z : X.float_zeros) z = to_act(negative(rng) ? -d(rng) : d(rng), act);
  return X;
}

// The view that packs X in `mode`; the mode is named only when `name_mode` (otherwise it follows from
// the pointers) or when it must be (ScaleThenAddZero).
UnpackedWeightsView view_of(const Layer& X, DequantMode mode, bool name_mode = true) {
  UnpackedWeightsView v;
  v.q = X.L.q.data();
  v.scales = X.L.scales.data();
  v.n = X.L.n, v.k = X.L.k, v.bits = X.L.bits, v.group_size = X.L.group_size;
  if (lowbit::has_int_zeros(mode)) v.zeros = X.L.zeros.data();
  if (lowbit::has_float_zeros(mode)) v.float_zeros = X.float_zeros.data();
  if (name_mode || mode == DequantMode::ScaleThenAddZero) v.mode = mode;
  return v;
}

// lowbit's qweight as the comment in include/lowbit/pack.hpp describes it, written from that text
// (whole values placed by shifts, not through lowbit::lane_bit): tile = 8 columns × 128 k; lane
// (g = lane/4, t = lane%4) holds column 8·tile + g, k = 128·chunk + 32·t + e; the lane's b words are
// stored as [b/V][32 lanes][V]; pair j = e/2 goes to word j/(16/b), bit b·(j%(16/b)) (+16 for odd e),
// and for b = 3 pairs 0..14 to word j/5, bit 3·(j%5) (+16), pair 15 bit-sliced into bits 15/31 of words 0..2.
std::vector<uint32_t> documented_qweight(const uint8_t* q, int64_t n, int64_t k, int bits) {
  const int64_t n_pad = round_up(n, 8), k_pad = round_up(k, 128), chunks = k_pad / 128;
  const int V = (bits == 4 || bits == 8) ? 4 : bits == 2 ? 2 : 1;
  std::vector<uint32_t> out(static_cast<std::size_t>(n_pad * k_pad / 32 * bits), 0u);
  for (int64_t tile = 0; tile < n_pad / 8; ++tile)
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int lane = 0; lane < 32; ++lane) {
        uint32_t words[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        const int64_t col = 8 * tile + lane / 4;
        for (int e = 0; e < 32; ++e) {
          const int64_t kk = 128 * chunk + 32 * (lane % 4) + e;
          if (col >= n || kk >= k) continue;  // padding stays zero
          const uint32_t v = q[col * k + kk];
          const int j = e / 2, high = 16 * (e % 2);
          if (bits == 3 && j == 15) {
            for (int i = 0; i < 3; ++i) words[i] |= ((v >> i) & 1u) << (15 + high);
          } else if (bits == 3) {
            words[j / 5] |= v << (3 * (j % 5) + high);
          } else {
            const int per = 16 / bits;
            words[j / per] |= v << (bits * (j % per) + high);
          }
        }
        const int64_t base = (chunk * (n_pad / 8) + tile) * 32 * bits;
        for (int w = 0; w < bits; ++w)
          out[static_cast<std::size_t>(base + (static_cast<int64_t>(w / V) * 32 + lane) * V + w % V)] =
              words[w];
      }
  return out;
}

// Sizes, mode and the kernel side's idea of the layout (wq::layout) against a packed result.
void check_sizes(const PackedWeights& P, int64_t n, int64_t k, int bits, int group, DequantMode mode) {
  const int64_t n_pad = round_up(n, 8), k_pad = round_up(k, 128);
  const int64_t groups_pad = group == 0 ? 1 : k_pad / group;
  const std::size_t meta = static_cast<std::size_t>(groups_pad * n_pad);
  CHECK(P.n == n);
  CHECK(P.k == k);
  CHECK(P.bits == bits);
  CHECK(P.group_size == group);
  CHECK(P.mode == mode);
  CHECK(P.n_pad == n_pad);
  CHECK(P.k_pad == k_pad);
  CHECK(P.groups_pad == groups_pad);
  CHECK(P.qweight.size() == static_cast<std::size_t>(n_pad * k_pad / 32 * bits));
  CHECK(P.scales.size() == meta);
  CHECK(P.zeros.size() == (lowbit::has_int_zeros(mode) ? meta : 0u));
  CHECK(P.float_zeros.size() == (lowbit::has_float_zeros(mode) ? meta : 0u));
  lowbit::WqGemmProblem p;
  P.apply_to(p);
  CHECK(p.n == n);
  CHECK(p.k == k);
  CHECK(p.bits == bits);
  CHECK(p.group_size == group);
  CHECK(p.mode == mode);
  CHECK(p.act_order == !P.perm.empty());
  const lowbit::wq::Layout l = lowbit::wq::layout(p);
  CHECK(l.n_pad == P.n_pad);
  CHECK(l.k_pad == P.k_pad);
  CHECK(l.groups_pad == P.groups_pad);
  CHECK(l.qweight_bytes == P.qweight.size() * 4);
  CHECK(l.scales_bytes == P.scales.size() * 2);
  CHECK(l.zeros_bytes == P.zeros.size() + P.float_zeros.size() * 2);
  CHECK(l.perm_bytes == P.perm.size() * 4);
  CHECK(P.bytes() == l.qweight_bytes + l.scales_bytes + l.zeros_bytes + l.perm_bytes);
}

// "what(a, b) = got, want want" (built only on a failure).
std::string mismatch(const char* what, int64_t a, int64_t b, int64_t got, int64_t want) {
  std::ostringstream o;
  o << what << "(" << a << ", " << b << ") = " << got << ", want " << want;
  return o.str();
}

// Reads every value back through q_at / zero_at / float_zero_at / scale_at and checks the padding;
// returns the first difference, or "".
std::string first_difference(const PackedWeights& P, const Layer& X, DequantMode mode) {
  const RandomLayer& L = X.L;
  const int64_t groups = groups_of(L.k, L.group_size);
  for (int64_t n = 0; n < L.n; ++n)
    for (int64_t k = 0; k < L.k; ++k) {
      const int64_t g = L.group_size == 0 ? 0 : k / L.group_size;
      const std::size_t m = static_cast<std::size_t>(g * L.n + n);
      if (P.q_at(n, k) != L.q[static_cast<std::size_t>(n * L.k + k)])
        return mismatch("q_at", n, k, P.q_at(n, k), L.q[static_cast<std::size_t>(n * L.k + k)]);
      if (P.scale_at(n, k) != L.scales[m]) return mismatch("scale_at", n, k, P.scale_at(n, k), L.scales[m]);
      if (mode == DequantMode::SubZeroThenScale && P.zero_at(n, k) != L.zeros[m])
        return mismatch("zero_at", n, k, P.zero_at(n, k), L.zeros[m]);
      if (mode == DequantMode::Symmetric && P.zero_at(n, k) != (1 << (L.bits - 1)))
        return mismatch("symmetric zero_at", n, k, P.zero_at(n, k), 1 << (L.bits - 1));
      if (lowbit::has_float_zeros(mode) && P.float_zero_at(n, k) != X.float_zeros[m])
        return mismatch("float_zero_at", n, k, P.float_zero_at(n, k), X.float_zeros[m]);
    }
  for (int64_t n = 0; n < P.n_pad; ++n)
    for (int64_t k = 0; k < P.k_pad; ++k)
      if ((n >= L.n || k >= L.k) && P.q_at(n, k) != 0) return mismatch("padded q_at", n, k, P.q_at(n, k), 0);
  for (int64_t g = 0; g < P.groups_pad; ++g)
    for (int64_t n = 0; n < P.n_pad; ++n) {
      if (g < groups && n < L.n) continue;
      const std::size_t i = static_cast<std::size_t>(g * P.n_pad + n);
      if (P.scales[i] != 0) return mismatch("padded scales", g, n, P.scales[i], 0);
      if (!P.zeros.empty() && P.zeros[i] != 0) return mismatch("padded zeros", g, n, P.zeros[i], 0);
      if (!P.float_zeros.empty() && P.float_zeros[i] != 0)
        return mismatch("padded float_zeros", g, n, P.float_zeros[i], 0);
    }
  return "";
}

GptqWeightsView gptq_view(const RandomLayer& L, const GptqCheckpoint& c, GptqZeros format) {
  GptqWeightsView v;
  v.qweight = c.qweight.data();
  v.qzeros = c.qzeros.empty() ? nullptr : c.qzeros.data();
  v.scales = L.scales.data();
  v.n = L.n, v.k = L.k, v.bits = L.bits, v.group_size = L.group_size;
  v.zeros_format = format;
  return v;
}

// An act-order g_idx: exactly group_size input features per group, in a random order.
std::vector<int32_t> shuffled_g_idx(int64_t k, int group, std::mt19937_64& rng) {
  std::vector<int32_t> g(static_cast<std::size_t>(k));
  for (int64_t i = 0; i < k; ++i) g[static_cast<std::size_t>(i)] = static_cast<int32_t>(i / group);
  std::shuffle(g.begin(), g.end(), rng);
  return g;
}

// Largest |a − b| / max(1, |b|).
double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(a[i] - b[i]) / std::max(1.0, std::fabs(b[i])));
  return worst;
}

struct Shape {
  int64_t n, k;
  int group;
};

// One odd shape per group size: N is never a multiple of 8; K is not a multiple of 128 wherever the
// group size allows it (K must be a multiple of G, so G = 128 and 256 cannot pad K).
const Shape kOddShapes[] = {{20, 160, 32}, {12, 320, 64}, {44, 384, 128}, {28, 512, 256}, {13, 200, 0}};

}  // namespace

TEST_CASE("pack(unpacked): every width, group size and mode round-trips exactly with zero padding",
          "[pack][formats]") {
  const uint64_t seed = lowbit::test::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  int cases = 0;
  for (int bits : kBits)
    for (const Shape& s : kOddShapes) {
      const DType act = (bits + s.group / 32) % 2 ? DType::BF16 : DType::F16;
      const Layer X = random_layer(s.n, s.k, bits, s.group, act, rng);
      const std::vector<uint32_t> documented = documented_qweight(X.L.q.data(), s.n, s.k, bits);
      for (DequantMode mode : kModes)
        for (bool name_mode : {true, false}) {
          INFO("bits=" << bits << " N=" << s.n << " K=" << s.k << " G=" << s.group
                       << " mode=" << lowbit::to_string(mode) << " named=" << name_mode);
          const PackedWeights P = lowbit::pack(view_of(X, mode, name_mode));
          check_sizes(P, s.n, s.k, bits, s.group, mode);
          CHECK(P.perm.empty());
          CHECK_FALSE(P.act_order());
          CHECK(first_difference(P, X, mode) == "");
          CHECK(P.qweight == documented);
          ++cases;
        }
    }
  CHECK(cases == 5 * 5 * 4 * 2);
}

TEST_CASE("pack: the qweight words of one tile are laid out as pack.hpp documents", "[pack][formats]") {
  const uint64_t seed = lowbit::test::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  SECTION("random values: one tile; one tile, two chunks; three tiles, three chunks") {
    for (int bits : kBits)
      for (auto [n, k] : {std::pair<int64_t, int64_t>{8, 128}, {8, 256}, {24, 384}}) {
        INFO("bits=" << bits << " N=" << n << " K=" << k);
        const Layer X = random_layer(n, k, bits, 0, DType::F16, rng);
        const PackedWeights P = lowbit::pack(view_of(X, DequantMode::Symmetric));
        CHECK(P.qweight == documented_qweight(X.L.q.data(), n, k, bits));
        CHECK(P.qweight.size() ==
              static_cast<std::size_t>(n / 8 * k / 128 * 32 * bits));  // 128·b bytes per tile
      }
  }
  // Single values at hand-computed words (N = 8, K = 128: one tile, 32·b words).
  auto pack_sparse = [](int bits, const std::vector<std::tuple<int, int, int>>& values) {
    std::vector<uint8_t> q(8 * 128, 0);
    for (const auto& [n, k, v] : values) q[static_cast<std::size_t>(n * 128 + k)] = static_cast<uint8_t>(v);
    std::vector<uint16_t> scales(8, 0x3C00);
    UnpackedWeightsView u;
    u.q = q.data(), u.scales = scales.data(), u.n = 8, u.k = 128, u.bits = bits, u.group_size = 0;
    return lowbit::pack(u).qweight;
  };
  auto expect_words = [](const std::vector<uint32_t>& got, int bits,
                         const std::vector<std::pair<int, uint32_t>>& want) {
    REQUIRE(got.size() == static_cast<std::size_t>(32 * bits));
    std::vector<uint32_t> expected(got.size(), 0u);
    for (const auto& [i, w] : want) expected[static_cast<std::size_t>(i)] = w;
    for (std::size_t i = 0; i < got.size(); ++i) {
      CAPTURE(bits, i, got[i], expected[i]);
      CHECK(got[i] == expected[i]);
    }
  };
  SECTION("bits = 1: q[2][77] = 1 → lane 10, e = 13: word 0 bit 16 + 6") {
    expect_words(pack_sparse(1, {{2, 77, 1}}), 1, {{10, 1u << 22}});
  }
  SECTION("bits = 2 (V = 2): q[5][100] = 3, q[5][127] = 2 → lane 23, words at 46 and 47") {
    expect_words(pack_sparse(2, {{5, 100, 3}, {5, 127, 2}}), 2, {{46, 3u << 4}, {47, 2u << 30}});
  }
  SECTION("bits = 3 (V = 1): pair 15 of lane 0 bit-sliced into bits 15 / 31 of words 0, 1, 2") {
    // q[0][30] = 5 = 0b101, q[0][31] = 6 = 0b110; q[0][11] = 7 is pair 5 → word 1, bit 0 + 16.
    expect_words(pack_sparse(3, {{0, 30, 5}, {0, 31, 6}, {0, 11, 7}}), 3,
                 {{0, 1u << 15}, {32, (7u << 16) | (1u << 31)}, {64, (1u << 15) | (1u << 31)}});
    // Lane 13 (column 3, t = 1): q[3][32 + 29] = 6 is pair 14, odd → word 2, bit 12 + 16 → index 2·32 + 13.
    expect_words(pack_sparse(3, {{3, 61, 6}}), 3, {{77, 6u << 28}});
  }
  SECTION("bits = 4 (V = 4): q[7][33] = 0xA, q[7][63] = 0x5 → lane 29, words 116 and 119") {
    expect_words(pack_sparse(4, {{7, 33, 0xA}, {7, 63, 0x5}}), 4, {{116, 0xAu << 16}, {119, 0x5u << 28}});
  }
  SECTION(
      "bits = 8 (V = 4, two groups of 32 lanes): q[1][96] = 0x81, q[1][126] = 0xC3 → lane 7, words 28 and "
      "159") {
    expect_words(pack_sparse(8, {{1, 96, 0x81}, {1, 126, 0xC3}}), 8, {{28, 0x81u}, {159, 0xC3u << 8}});
  }
}

TEST_CASE("lane_bit: a bijection onto the lane's b words that matches the documented placement",
          "[pack][formats]") {
  for (int bits : kBits) {
    std::set<std::pair<int, int>> seen;
    for (int e = 0; e < 32; ++e)
      for (int b = 0; b < bits; ++b) {
        const lowbit::LaneBit lb = lowbit::lane_bit(bits, e, b);
        CAPTURE(bits, e, b, lb.word, lb.shift);
        CHECK(lb.word >= 0);
        CHECK(lb.word < bits);
        CHECK(lb.shift >= 0);
        CHECK(lb.shift < 32);
        seen.insert({lb.word, lb.shift});
        // The value 2^b at lane 0, element e, alone in one tile, lands on exactly that bit.
        std::vector<uint8_t> q(8 * 128, 0);
        q[static_cast<std::size_t>(e)] = static_cast<uint8_t>(1u << b);
        const std::vector<uint32_t> doc = documented_qweight(q.data(), 8, 128, bits);
        const int V = (bits == 4 || bits == 8) ? 4 : bits == 2 ? 2 : 1;
        CHECK(doc[static_cast<std::size_t>((lb.word / V) * 32 * V + lb.word % V)] == (1u << lb.shift));
      }
    CHECK(seen.size() == static_cast<std::size_t>(32 * bits));
  }
}

TEST_CASE("pack(GPTQ) 2- and 8-bit checkpoints round-trip exactly", "[pack][formats][gptq]") {
  const uint64_t seed = lowbit::test::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const Shape shapes[] = {{32, 384, 128}, {48, 256, 32}, {16, 1024, 0},
                          {20, 160, 32},  {64, 192, 64}, {12, 200, 0}};
  SECTION("random checkpoints, both zeros formats, with and without qzeros") {
    int cases = 0;
    for (int bits : {2, 8})
      for (const Shape& s : shapes)
        for (GptqZeros format : {GptqZeros::StoredMinusOne, GptqZeros::Exact})
          for (bool with_zeros : {true, false}) {
            const int per = 32 / bits;
            if (s.k % per != 0) continue;                // GPTQ packs 32/bits k per int32 (tested below)
            if (with_zeros && s.n % per != 0) continue;  // and 32/bits columns of qzeros per int32
            if (!with_zeros && format == GptqZeros::Exact) continue;
            INFO("bits=" << bits << " N=" << s.n << " K=" << s.k << " G=" << s.group
                         << " zeros=" << with_zeros
                         << " format=" << (format == GptqZeros::Exact ? "Exact" : "StoredMinusOne"));
            Layer X = random_layer(s.n, s.k, bits, s.group, DType::F16, rng);
            // v1 stores z − 1 in `bits` bits: z = 0 has no encoding there.
            if (format == GptqZeros::StoredMinusOne)
              for (auto& z : X.L.zeros)
                if (z == 0) z = 1;
            const GptqCheckpoint c = gptq_checkpoint(X.L, format, with_zeros);
            const GptqWeightsView v = gptq_view(X.L, c, format);
            const DequantMode mode = with_zeros ? DequantMode::SubZeroThenScale : DequantMode::Symmetric;
            const PackedWeights P = lowbit::pack(v);
            check_sizes(P, s.n, s.k, bits, s.group, mode);
            CHECK(first_difference(P, X, mode) == "");
            CHECK(P.qweight == documented_qweight(X.L.q.data(), s.n, s.k, bits));
            std::vector<uint8_t> q(X.L.q.size(), 0xff), z(X.L.zeros.size(), 0xff);
            lowbit::unpack_gptq(v, q.data(), with_zeros ? z.data() : nullptr);
            CHECK(q == X.L.q);
            if (with_zeros) CHECK(z == X.L.zeros);
            const PackedWeights U = lowbit::pack(view_of(X, mode));
            CHECK(U.qweight == P.qweight);
            CHECK(U.scales == P.scales);
            CHECK(U.zeros == P.zeros);
            ++cases;
          }
    CHECK(cases == 13 + 18);
  }

  SECTION("the extreme zero points of each format") {
    for (int bits : {2, 8}) {
      const int per = 32 / bits, top = (1 << bits) - 1;
      Layer X = random_layer(32, 128, bits, 64, DType::F16, rng);
      for (std::size_t i = 0; i < X.L.zeros.size(); ++i) X.L.zeros[i] = static_cast<uint8_t>(i % 2 ? top : 1);
      for (GptqZeros format : {GptqZeros::StoredMinusOne, GptqZeros::Exact}) {
        const GptqCheckpoint c = gptq_checkpoint(X.L, format, true);
        const PackedWeights P = lowbit::pack(gptq_view(X.L, c, format));
        CAPTURE(bits, per);
        CHECK(P.zeros == lowbit::pack(view_of(X, DequantMode::SubZeroThenScale)).zeros);
      }
      // StoredMinusOne: a stored all-ones field means z = 2^bits, which does not fit.
      GptqCheckpoint c = gptq_checkpoint(X.L, GptqZeros::Exact, true);
      c.qzeros[0] = static_cast<int32_t>(static_cast<uint32_t>(c.qzeros[0]) | static_cast<uint32_t>(top));
      const std::string msg =
          lowbit::test::error_of([&] { (void)lowbit::pack(gptq_view(X.L, c, GptqZeros::StoredMinusOne)); });
      INFO(msg);
      CHECK(lowbit::test::contains(msg, "z = " + std::to_string(1 << bits)));
    }
  }
  SECTION("GPTQ shapes that its packing cannot hold, and 3 bits") {
    Layer X = random_layer(24, 200, 2, 0, DType::F16, rng);  // K = 200: not a multiple of 16
    GptqCheckpoint c;
    c.qweight.assign(static_cast<std::size_t>(13 * 24), 0);
    GptqWeightsView v = gptq_view(X.L, c, GptqZeros::Exact);
    std::string msg = lowbit::test::error_of([&] { (void)lowbit::pack(v); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "k = 200"));
    CHECK(lowbit::test::contains(msg, "multiple of 16"));
    Layer Y = random_layer(24, 256, 2, 128, DType::F16, rng);  // N = 24 with qzeros: not a multiple of 16
    GptqCheckpoint cy = gptq_checkpoint(Y.L, GptqZeros::Exact, false);
    std::vector<int32_t> qz(4, 0);
    GptqWeightsView vy = gptq_view(Y.L, cy, GptqZeros::Exact);
    vy.qzeros = qz.data();
    msg = lowbit::test::error_of([&] { (void)lowbit::pack(vy); });
    CHECK(lowbit::test::contains(msg, "n = 24"));
    CHECK(lowbit::test::contains(msg, "multiple of 16"));
    // 3 bits: 32 input features per 3 int32.
    Layer Z = random_layer(16, 144, 3, 0, DType::F16, rng);
    std::vector<int32_t> qw(static_cast<std::size_t>(144 * 3 / 32 * 16), 0);
    GptqWeightsView vz;
    vz.qweight = qw.data(), vz.scales = Z.L.scales.data(), vz.n = 16, vz.k = 144, vz.bits = 3,
    vz.group_size = 0;
    msg = lowbit::test::error_of([&] { (void)lowbit::pack(vz); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "pack(gptq)"));
    CHECK(lowbit::test::contains(msg, "k = 144"));
    CHECK(lowbit::test::contains(msg, "multiple of 32"));
    vz.bits = 5;
    msg = lowbit::test::error_of([&] { (void)lowbit::pack(vz); });
    CHECK(lowbit::test::contains(msg, "bits = 5"));
  }
}

TEST_CASE("pack(GPTQ) 3-bit checkpoints (values across words) round-trip exactly", "[pack][formats][gptq]") {
  const uint64_t seed = lowbit::test::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const Shape shapes[] = {{32, 384, 128}, {64, 256, 32}, {32, 1024, 0}, {96, 160, 32}, {40, 192, 64}};
  int cases = 0;
  for (const Shape& s : shapes)
    for (GptqZeros format : {GptqZeros::StoredMinusOne, GptqZeros::Exact})
      for (bool with_zeros : {true, false}) {
        if (with_zeros && s.n % 32 != 0) continue;  // qzeros pack 32 columns per 3 words
        if (!with_zeros && format == GptqZeros::Exact) continue;
        INFO("N=" << s.n << " K=" << s.k << " G=" << s.group << " zeros=" << with_zeros
                  << " format=" << (format == GptqZeros::Exact ? "Exact" : "StoredMinusOne"));
        Layer X = random_layer(s.n, s.k, 3, s.group, DType::F16, rng);
        if (format == GptqZeros::StoredMinusOne)
          for (auto& z : X.L.zeros)
            if (z == 0) z = 1;  // v1 stores z − 1: z = 0 has no encoding
        const GptqCheckpoint c = gptq_checkpoint(X.L, format, with_zeros);
        const GptqWeightsView v = gptq_view(X.L, c, format);
        const DequantMode mode = with_zeros ? DequantMode::SubZeroThenScale : DequantMode::Symmetric;
        std::vector<uint8_t> q(X.L.q.size(), 0xff), z(X.L.zeros.size(), 0xff);
        lowbit::unpack_gptq(v, q.data(), with_zeros ? z.data() : nullptr);
        CHECK(q == X.L.q);
        if (with_zeros) CHECK(z == X.L.zeros);
        const PackedWeights P = lowbit::pack(v);
        check_sizes(P, s.n, s.k, 3, s.group, mode);
        CHECK(first_difference(P, X, mode) == "");
        const PackedWeights U = lowbit::pack(view_of(X, mode));
        CHECK(U.qweight == P.qweight);
        CHECK(U.zeros == P.zeros);
        ++cases;
      }
  CHECK(cases == 8 + 5);
}

TEST_CASE("pack(HQQ): n-major scales and float zeros become [groups][N]; values round-trip exactly",
          "[pack][formats][hqq]") {
  const uint64_t seed = lowbit::test::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  SECTION("every width at odd shapes") {
    for (int bits : kBits)
      for (const Shape& s :
           {Shape{20, 160, 32}, Shape{36, 320, 64}, Shape{13, 384, 128}, Shape{12, 200, 0}}) {
        const DType act = bits % 2 ? DType::BF16 : DType::F16;
        INFO("bits=" << bits << " N=" << s.n << " K=" << s.k << " G=" << s.group);
        const Layer X = random_layer(s.n, s.k, bits, s.group, act, rng);
        const int64_t groups = groups_of(s.k, s.group);
        // HQQ keeps one row of groups per output channel: [N][K/G].
        std::vector<uint16_t> scales_nm(X.L.scales.size()), zeros_nm(X.float_zeros.size());
        for (int64_t g = 0; g < groups; ++g)
          for (int64_t n = 0; n < s.n; ++n) {
            scales_nm[static_cast<std::size_t>(n * groups + g)] = X.L.scales[g * s.n + n];
            zeros_nm[static_cast<std::size_t>(n * groups + g)] = X.float_zeros[g * s.n + n];
          }
        lowbit::HqqWeightsView h;
        h.w_q = X.L.q.data(), h.scales = scales_nm.data(), h.zeros = zeros_nm.data();
        h.n = s.n, h.k = s.k, h.bits = bits, h.group_size = s.group;
        const PackedWeights P = lowbit::pack(h);
        check_sizes(P, s.n, s.k, bits, s.group, DequantMode::SubFloatZeroThenScale);
        CHECK(P.zeros.empty());
        CHECK(P.perm.empty());
        CHECK(first_difference(P, X, DequantMode::SubFloatZeroThenScale) == "");
        int64_t transposed_mismatches = 0;
        for (int64_t g = 0; g < groups; ++g)
          for (int64_t n = 0; n < s.n; ++n) {
            transposed_mismatches += P.scales[g * P.n_pad + n] != scales_nm[n * groups + g];
            transposed_mismatches += P.float_zeros[g * P.n_pad + n] != zeros_nm[n * groups + g];
          }
        CHECK(transposed_mismatches == 0);
        const PackedWeights U = lowbit::pack(view_of(X, DequantMode::SubFloatZeroThenScale));
        CHECK(U.qweight == P.qweight);
        CHECK(U.scales == P.scales);
        CHECK(U.float_zeros == P.float_zeros);
        CHECK(P.qweight == documented_qweight(X.L.q.data(), s.n, s.k, bits));
      }
  }
  SECTION("bad HQQ input") {
    const Layer X = random_layer(16, 128, 4, 64, DType::F16, rng);
    lowbit::HqqWeightsView h;
    h.w_q = X.L.q.data(), h.scales = X.L.scales.data(), h.zeros = X.float_zeros.data();
    h.n = 16, h.k = 128, h.bits = 4, h.group_size = 64;
    lowbit::HqqWeightsView bad = h;
    bad.zeros = nullptr;
    std::string msg = lowbit::test::error_of([&] { (void)lowbit::pack(bad); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "pack(hqq)"));
    CHECK(lowbit::test::contains(msg, "zeros"));
    bad = h, bad.w_q = nullptr;
    msg = lowbit::test::error_of([&] { (void)lowbit::pack(bad); });
    CHECK(lowbit::test::contains(msg, "pack(hqq)"));
    CHECK(lowbit::test::contains(msg, "null"));
    bad = h, bad.bits = 2;  // the 4-bit values do not fit
    msg = lowbit::test::error_of([&] { (void)lowbit::pack(bad); });
    CHECK(lowbit::test::contains(msg, "does not fit in 2 bits"));
    bad = h, bad.group_size = 96;
    msg = lowbit::test::error_of([&] { (void)lowbit::pack(bad); });
    CHECK(lowbit::test::contains(msg, "group_size = 96"));
  }
}

TEST_CASE("pack with g_idx (act-order): perm sorts the input features by group",
          "[pack][formats][act_order]") {
  const uint64_t seed = lowbit::test::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  SECTION("a shuffled g_idx at every width and group size") {
    int cases = 0;
    for (int bits : kBits)
      for (const Shape& s : {Shape{20, 160, 32}, Shape{16, 384, 64}, Shape{12, 256, 128}, Shape{8, 512, 256}})
        for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::ScaleThenAddZero}) {
          INFO("bits=" << bits << " N=" << s.n << " K=" << s.k << " G=" << s.group
                       << " mode=" << lowbit::to_string(mode));
          const Layer X = random_layer(s.n, s.k, bits, s.group, DType::F16, rng);
          const std::vector<int32_t> g_idx = shuffled_g_idx(s.k, s.group, rng);
          // Scales and zeros stay indexed by group: [groups][N], as in the checkpoint.
          UnpackedWeightsView v = view_of(X, mode);
          v.g_idx = g_idx.data();
          const PackedWeights P = lowbit::pack(v);
          check_sizes(P, s.n, s.k, bits, s.group, mode);
          REQUIRE(P.perm.size() == static_cast<std::size_t>(s.k));
          CHECK(P.act_order());
          std::vector<int32_t> sorted = P.perm;
          std::sort(sorted.begin(), sorted.end());
          std::vector<int32_t> iota(static_cast<std::size_t>(s.k));
          std::iota(iota.begin(), iota.end(), 0);
          CHECK(sorted == iota);  // a permutation of 0..K-1
          int64_t bad_group = 0, bad_q = 0, bad_meta = 0;
          for (int64_t j = 0; j < s.k; ++j) {
            const int32_t src = P.perm[static_cast<std::size_t>(j)];
            CHECK(P.source_k(j) == src);
            bad_group += g_idx[static_cast<std::size_t>(src)] != j / s.group;
            const int64_t g = g_idx[static_cast<std::size_t>(src)];
            for (int64_t n = 0; n < s.n; ++n) {
              bad_q += P.q_at(n, j) != X.L.q[n * s.k + src];
              bad_meta += P.scale_at(n, j) != X.L.scales[g * s.n + n];
              if (lowbit::has_int_zeros(mode)) bad_meta += P.zero_at(n, j) != X.L.zeros[g * s.n + n];
              if (lowbit::has_float_zeros(mode))
                bad_meta += P.float_zero_at(n, j) != X.float_zeros[g * s.n + n];
            }
          }
          CHECK(bad_group == 0);
          CHECK(bad_q == 0);
          CHECK(bad_meta == 0);
          // The packed qweight is the documented layout of the permuted matrix q[n][perm[j]].
          std::vector<uint8_t> permuted(X.L.q.size());
          for (int64_t n = 0; n < s.n; ++n)
            for (int64_t j = 0; j < s.k; ++j)
              permuted[static_cast<std::size_t>(n * s.k + j)] =
                  X.L.q[n * s.k + P.perm[static_cast<std::size_t>(j)]];
          CHECK(P.qweight == documented_qweight(permuted.data(), s.n, s.k, bits));
          // Scales and zeros are not moved (groups keep their index).
          const PackedWeights plain = lowbit::pack(view_of(X, mode));
          CHECK(P.scales == plain.scales);
          CHECK(P.zeros == plain.zeros);
          CHECK(P.float_zeros == plain.float_zeros);
          ++cases;
        }
    CHECK(cases == 5 * 4 * 2);
  }

  SECTION("identity g_idx (k / G) needs no perm and packs as without g_idx") {
    const Layer X = random_layer(20, 160, 3, 32, DType::F16, rng);
    std::vector<int32_t> g_idx(160);
    for (int i = 0; i < 160; ++i) g_idx[static_cast<std::size_t>(i)] = i / 32;
    UnpackedWeightsView v = view_of(X, DequantMode::SubZeroThenScale);
    v.g_idx = g_idx.data();
    const PackedWeights P = lowbit::pack(v);
    CHECK(P.perm.empty());
    CHECK_FALSE(P.act_order());
    lowbit::WqGemmProblem p;
    p.act_order = true;
    P.apply_to(p);
    CHECK_FALSE(p.act_order);
    const PackedWeights plain = lowbit::pack(view_of(X, DequantMode::SubZeroThenScale));
    CHECK(P.qweight == plain.qweight);
    CHECK(P.bytes() == plain.bytes());
  }
  SECTION("a GPTQ checkpoint with g_idx packs as the unpacked view with the same g_idx") {
    for (int bits : {2, 4, 8}) {
      Layer X = random_layer(32, 256, bits, 64, DType::F16, rng);
      for (auto& z : X.L.zeros)
        if (z == 0) z = 1;
      const std::vector<int32_t> g_idx = shuffled_g_idx(256, 64, rng);
      const GptqCheckpoint c = gptq_checkpoint(X.L, GptqZeros::StoredMinusOne, true);
      GptqWeightsView gv = gptq_view(X.L, c, GptqZeros::StoredMinusOne);
      gv.g_idx = g_idx.data();
      UnpackedWeightsView uv = view_of(X, DequantMode::SubZeroThenScale);
      uv.g_idx = g_idx.data();
      const PackedWeights G = lowbit::pack(gv), U = lowbit::pack(uv);
      CAPTURE(bits);
      CHECK(G.perm == U.perm);
      CHECK_FALSE(G.perm.empty());
      CHECK(G.qweight == U.qweight);
      CHECK(G.scales == U.scales);
      CHECK(G.zeros == U.zeros);
      lowbit::WqGemmProblem p;
      G.apply_to(p);
      CHECK(p.act_order);
    }
  }
  SECTION("a bad g_idx is refused by name") {
    const Layer X = random_layer(16, 256, 4, 64, DType::F16, rng);  // 4 groups
    const std::vector<int32_t> good = shuffled_g_idx(256, 64, rng);
    auto message = [&](const std::vector<int32_t>& g_idx, int group) {
      UnpackedWeightsView v = view_of(X, DequantMode::SubZeroThenScale);
      v.g_idx = g_idx.data();
      v.group_size = group;
      return lowbit::test::error_of([&] { (void)lowbit::pack(v); });
    };
    std::vector<int32_t> g = good;
    g[5] = 4;  // out of range: groups are 0..3
    std::string msg = message(g, 64);
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "g_idx[5] = 4"));
    g = good, g[7] = -1;
    msg = message(g, 64);
    CHECK(lowbit::test::contains(msg, "g_idx[7] = -1"));
    // One feature moved from its group to the next: both now have the wrong count.
    g = good;
    const auto it = std::find(g.begin(), g.end(), 2);
    *it = 3;
    msg = message(g, 64);
    CHECK(lowbit::test::contains(msg, "g_idx"));
    CHECK(lowbit::test::contains(msg, "group 2 has 63"));
    // Per-channel scales have no groups.
    msg = message(good, 0);
    CHECK(lowbit::test::contains(msg, "g_idx"));
    CHECK(lowbit::test::contains(msg, "group_size = 0"));
  }
}

TEST_CASE(
    "wq_gemm_reference on packed weights (every mode, act-order) equals the naive checkpoint-order loop",
    "[reference][formats]") {
  const uint64_t seed = lowbit::test::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  SECTION("random layers: 5 widths × 2 shapes × 4 modes × act-order on/off") {
    int cases = 0;
    for (int bits : kBits)
      for (const Shape& s : {Shape{20, 160, 32}, Shape{24, 384, 128}})
        for (DequantMode mode : kModes)
          for (bool act_order : {false, true}) {
            const DType act = (bits + cases) % 2 ? DType::BF16 : DType::F16;
            const Layer X = random_layer(s.n, s.k, bits, s.group, act, rng);
            const std::vector<int32_t> g_idx = shuffled_g_idx(s.k, s.group, rng);
            UnpackedWeightsView v = view_of(X, mode);
            if (act_order) v.g_idx = g_idx.data();
            const PackedWeights P = lowbit::pack(v);
            lowbit::WqGemmProblem p;
            p.m = 3, p.act = act, p.out = act;
            P.apply_to(p);
            INFO(p.str());
            REQUIRE(p.act_order == act_order);
            REQUIRE(p.mode == mode);
            const auto x = lowbit::test::random_activations(p.m * p.k, act, rng);
            const auto bias = lowbit::test::random_activations(p.n, act, rng);
            const uint16_t* b = cases % 3 == 0 ? bias.data() : nullptr;
            const auto ref = lowbit::ref::wq_gemm_reference(p, P, x.data(), b, {}, 2);
            const auto naive = lowbit::ref::wq_gemm_naive(
                p, X.L.q.data(), lowbit::has_int_zeros(mode) ? X.L.zeros.data() : nullptr, X.L.scales.data(),
                x.data(), b, lowbit::has_float_zeros(mode) ? X.float_zeros.data() : nullptr,
                act_order ? g_idx.data() : nullptr);
            REQUIRE(ref.size() == static_cast<std::size_t>(p.m * p.n));
            REQUIRE(naive.size() == ref.size());
            CHECK(max_rel_diff(ref, naive) <= 1e-9);
            double norm = 0;
            for (double y : naive) norm += y * y;
            CHECK(norm > 0);
            if (act_order) {
              // g_idx matters: the same integers grouped by k / G give other outputs.
              const auto plain = lowbit::ref::wq_gemm_naive(
                  p, X.L.q.data(), lowbit::has_int_zeros(mode) ? X.L.zeros.data() : nullptr,
                  X.L.scales.data(), x.data(), b,
                  lowbit::has_float_zeros(mode) ? X.float_zeros.data() : nullptr, nullptr);
              CHECK(max_rel_diff(plain, naive) > 1e-6);
            }
            ++cases;
          }
    CHECK(cases == 5 * 2 * 4 * 2);
  }

  SECTION("each mode by hand: q = 3, s = 0.5, z = 1 (integer) or 1.5 (float), x = 1, K = 128") {
    std::vector<uint8_t> q(8 * 128, 3), zeros(8, 1);
    std::vector<uint16_t> scales(8, 0x3800), float_zeros(8, 0x3E00), x(128, 0x3C00);  // 0.5, 1.5, 1.0
    const std::pair<DequantMode, double> expected[] = {
        {DequantMode::SubZeroThenScale, 128 * (3 - 1) * 0.5},  // 128
        {DequantMode::Symmetric, 128 * (3 - 2) * 0.5},         // bits = 2: z = 2 → 64
        {DequantMode::SubFloatZeroThenScale, 128 * (3 - 1.5) * 0.5},
        {DequantMode::ScaleThenAddZero, 128 * (3 * 0.5 + 1.5)},
    };
    for (const auto& [mode, want] : expected) {
      UnpackedWeightsView v;
      v.q = q.data(), v.scales = scales.data(), v.n = 8, v.k = 128, v.bits = 2, v.group_size = 128,
      v.mode = mode;
      if (lowbit::has_int_zeros(mode)) v.zeros = zeros.data();
      if (lowbit::has_float_zeros(mode)) v.float_zeros = float_zeros.data();
      const PackedWeights P = lowbit::pack(v);
      lowbit::WqGemmProblem p;
      P.apply_to(p);
      const auto ref = lowbit::ref::wq_gemm_reference(p, P, x.data(), nullptr);
      const auto naive = lowbit::ref::wq_gemm_naive(p, q.data(), v.zeros, scales.data(), x.data(), nullptr,
                                                    v.float_zeros, nullptr);
      INFO("mode=" << lowbit::to_string(mode) << " want=" << want);
      for (int n = 0; n < 8; ++n) {
        CHECK(ref[static_cast<std::size_t>(n)] == want);
        CHECK(naive[static_cast<std::size_t>(n)] == want);
      }
    }
  }
}

TEST_CASE("pack(unpacked) refuses inconsistent zeros and values outside the bit range", "[pack][formats]") {
  const uint64_t seed = lowbit::test::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  Layer X = random_layer(16, 256, 2, 64, DType::F16, rng);
  auto message = [](const UnpackedWeightsView& v) {
    return lowbit::test::error_of([&] { (void)lowbit::pack(v); });
  };

  SECTION("both zeros and float_zeros") {
    UnpackedWeightsView v = view_of(X, DequantMode::SubZeroThenScale, false);
    v.float_zeros = X.float_zeros.data();
    std::string msg = message(v);
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "both zeros and float_zeros"));
    v.mode = DequantMode::SubFloatZeroThenScale;  // naming a mode does not make it valid
    msg = message(v);
    CHECK(lowbit::test::contains(msg, "both zeros and float_zeros"));
  }
  SECTION("ScaleThenAddZero without float zeros") {
    UnpackedWeightsView v = view_of(X, DequantMode::Symmetric);
    v.mode = DequantMode::ScaleThenAddZero;
    std::string msg = message(v);
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "scale_then_add_zero"));
    CHECK(lowbit::test::contains(msg, "float zeros"));
    v.zeros = X.L.zeros.data();  // integer zeros are not float zeros
    msg = message(v);
    CHECK(lowbit::test::contains(msg, "scale_then_add_zero"));
  }
  SECTION("a named mode that contradicts the zeros given") {
    UnpackedWeightsView v = view_of(X, DequantMode::SubZeroThenScale);
    v.mode = DequantMode::Symmetric;
    std::string msg = message(v);
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "symmetric"));
    CHECK(lowbit::test::contains(msg, "integer zeros"));
    v = view_of(X, DequantMode::SubFloatZeroThenScale);
    v.mode = DequantMode::SubZeroThenScale;
    msg = message(v);
    CHECK(lowbit::test::contains(msg, "sub_zero_then_scale"));
    CHECK(lowbit::test::contains(msg, "float"));
    v = view_of(X, DequantMode::Symmetric);
    v.mode = DequantMode::SubFloatZeroThenScale;
    msg = message(v);
    CHECK(lowbit::test::contains(msg, "needs float zeros"));
  }
  SECTION("a zero point of 4 does not fit in 2 bits") {
    X.L.zeros[static_cast<std::size_t>(1 * 16 + 3)] = 4;
    const std::string msg = message(view_of(X, DequantMode::SubZeroThenScale));
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "zeros[1][3] = 4"));
    CHECK(lowbit::test::contains(msg, "does not fit in 2 bits"));
  }
  SECTION("q values over the range of 1, 2 and 3 bits") {
    for (int bits : {1, 2, 3}) {
      Layer Y = random_layer(8, 128, bits, 32, DType::F16, rng);
      Y.L.q[static_cast<std::size_t>(6 * 128 + 99)] = static_cast<uint8_t>(1 << bits);
      const std::string msg = message(view_of(Y, DequantMode::Symmetric));
      INFO(msg);
      CHECK(lowbit::test::contains(msg, "q[6][99] = " + std::to_string(1 << bits)));
      CHECK(lowbit::test::contains(msg, "does not fit in " + std::to_string(bits) + " bits"));
    }
  }
}

TEST_CASE("pack: element counts that do not match the shape are refused, naming the field",
          "[pack][formats]") {
  std::mt19937_64 rng(lowbit::test::fresh_seed());
  const Layer X = random_layer(32, 256, 4, 64, DType::F16, rng);  // groups = 4
  auto refused = [](const std::function<void()>& fn, const std::string& field, const std::string& rule) {
    const std::string msg = lowbit::test::error_of(fn);
    INFO(msg);
    CHECK(lowbit::test::contains(msg, field + " has "));
    CHECK(lowbit::test::contains(msg, rule));
  };
  SECTION("unpacked") {
    UnpackedWeightsView v = view_of(X, DequantMode::SubZeroThenScale);
    v.q_count = X.L.q.size(), v.zeros_count = X.L.zeros.size(), v.scales_count = X.L.scales.size();
    CHECK_NOTHROW(lowbit::pack(v));  // right counts pass
    UnpackedWeightsView bad = v;
    bad.q_count = X.L.q.size() - 1;
    refused([&] { (void)lowbit::pack(bad); }, "q", "N·K = 8192");
    bad = v;
    bad.scales_count = 3 * 32;
    refused([&] { (void)lowbit::pack(bad); }, "scales", "groups·N = 128");
    bad = v;
    bad.g_idx_count = 255;
    refused([&] { (void)lowbit::pack(bad); }, "g_idx", "K = 256");
  }
  SECTION("GPTQ") {
    const GptqCheckpoint c = gptq_checkpoint(X.L, GptqZeros::Exact, true);
    GptqWeightsView v = gptq_view(X.L, c, GptqZeros::Exact);
    v.qweight_count = c.qweight.size(), v.qzeros_count = c.qzeros.size(), v.scales_count = X.L.scales.size();
    CHECK_NOTHROW(lowbit::pack(v));
    GptqWeightsView bad = v;
    bad.qweight_count = c.qweight.size() / 2;  // e.g. a checkpoint of the wrong bit width
    refused([&] { (void)lowbit::pack(bad); }, "qweight", "K·bits/32 · N = 1024");
    bad = v;
    bad.qzeros_count = 1;
    refused([&] { (void)lowbit::pack(bad); }, "qzeros", "groups · N·bits/32 = 16");
  }
  SECTION("HQQ") {
    std::vector<uint16_t> s(X.L.scales.size()), z(X.float_zeros.size());
    lowbit::HqqWeightsView v;
    v.w_q = X.L.q.data(), v.scales = s.data(), v.zeros = z.data();
    v.n = 32, v.k = 256, v.bits = 4, v.group_size = 64;
    v.w_q_count = X.L.q.size(), v.scales_count = s.size(), v.zeros_count = z.size();
    CHECK_NOTHROW(lowbit::pack(v));
    v.zeros_count = z.size() + 1;
    refused([&] { (void)lowbit::pack(v); }, "zeros", "N·groups = 128");
  }
}

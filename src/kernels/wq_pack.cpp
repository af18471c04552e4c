// Checkpoint formats → lowbit's packed layout (documented in include/lowbit/pack.hpp).
//
// Every format goes through one canonical form (unpacked integers [N, K], zeros and scales
// [groups, N], an optional g_idx) and one packer, so the layout lives in one place.
#include <algorithm>
#include <numeric>

#include "common/check.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "kernels/wq_pack_checks.hpp"
#include "lowbit/pack.hpp"

namespace lowbit {

LaneBit lane_bit(int bits, int e, int bit) {
  if (bits == 3) {
    if (e >= 30) return {bit, 15 + 16 * (e - 30)};
    const int j = e / 2;
    return {j / 5, 3 * (j % 5) + 16 * (e % 2) + bit};
  }
  const int pairs_per_word = 16 / bits;
  const int j = e / 2;
  return {j / pairs_per_word, bits * (j % pairs_per_word) + 16 * (e % 2) + bit};
}

namespace {

int64_t round_up(int64_t a, int64_t b) {
  return (a + b - 1) / b * b;
}
int64_t groups_of(int64_t k, int group_size) {
  return group_size == 0 ? 1 : k / group_size;
}

// Position in qweight of word w (0..bits-1) of `lane` in tile-chunk (tile, chunk).
std::size_t word_index(const PackedWeights& P, int64_t tile, int64_t chunk, int lane, int w) {
  const int v = wq::vector_words(P.bits);
  const int64_t base = (chunk * (P.n_pad / 8) + tile) * 32 * P.bits;
  return static_cast<std::size_t>(base + (static_cast<int64_t>(w / v) * 32 + lane) * v + w % v);
}

// The 32 values of one lane → its `bits` words.
void encode_lane(int bits, const uint8_t (&vals)[32], uint32_t* words) {
  std::fill(words, words + bits, 0u);
  for (int e = 0; e < 32; ++e)
    for (int b = 0; b < bits; ++b)
      if ((vals[e] >> b) & 1) {
        const LaneBit lb = lane_bit(bits, e, b);
        words[lb.word] |= 1u << lb.shift;
      }
}

// The canonical form every format is converted to.
struct Canonical {
  const uint8_t* q = nullptr;             // [N, K]
  const uint8_t* zeros = nullptr;         // [groups, N]
  const uint16_t* float_zeros = nullptr;  // [groups, N]
  const uint16_t* scales = nullptr;       // [groups, N]
  const int32_t* g_idx = nullptr;         // [K] or null
  int64_t n = 0, k = 0;
  int bits = 4, group_size = 128;
  DequantMode mode = DequantMode::SubZeroThenScale;
};

void check_shape(int64_t n, int64_t k, int bits, int group_size, const char* what) {
  WqGemmProblem p;
  p.n = n, p.k = k, p.bits = bits, p.group_size = group_size;
  std::string why;
  LOWBIT_CHECK(can_implement(p, &why), "pack({}): {}", what, why);
}

// A caller-given element count (0 = unknown) must match what the shape implies.
void check_count(const std::string& who, const char* field, std::size_t given, int64_t expected,
                 const std::string& rule) {
  LOWBIT_CHECK(given == 0 || given == static_cast<std::size_t>(expected),
               "{}: {} has {} elements, must be {} = {}", who, field, given, rule, expected);
}

// Act-order: sort the input features by group (stable), so each group is contiguous in the packed
// order. Rejects a g_idx that does not assign exactly group_size features to each group.
std::vector<int32_t> perm_from_g_idx(const int32_t* g_idx, int64_t k, int group_size, const char* what) {
  LOWBIT_CHECK(group_size != 0,
               "pack({}): g_idx is set but group_size = 0 (per-channel scales have no groups)", what);
  const int64_t groups = k / group_size;
  std::vector<int64_t> count(static_cast<std::size_t>(groups), 0);
  for (int64_t i = 0; i < k; ++i) {
    LOWBIT_CHECK(g_idx[i] >= 0 && g_idx[i] < groups,
                 "pack({}): g_idx[{}] = {}: must be in [0, K/group_size = {})", what, i, g_idx[i], groups);
    ++count[static_cast<std::size_t>(g_idx[i])];
  }
  for (int64_t g = 0; g < groups; ++g)
    LOWBIT_CHECK(count[g] == group_size,
                 "pack({}): g_idx is not a permutation of groups: group {} has {} input features, must have "
                 "group_size = {}",
                 what, g, count[g], group_size);
  std::vector<int32_t> perm(static_cast<std::size_t>(k));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int32_t a, int32_t b) { return g_idx[a] < g_idx[b]; });
  bool identity = true;
  for (int64_t j = 0; j < k && identity; ++j) identity = perm[j] == j;
  if (identity) perm.clear();
  return perm;
}

PackedWeights pack_canonical(const Canonical& c, const char* what) {
  check_shape(c.n, c.k, c.bits, c.group_size, what);
  LOWBIT_CHECK(c.q != nullptr, "pack({}): {} is null", what, std::string_view(what) == "hqq" ? "w_q" : "q");
  LOWBIT_CHECK(c.scales != nullptr, "pack({}): scales is null", what);
  LOWBIT_CHECK(!has_int_zeros(c.mode) || c.zeros, "pack({}): mode = {} needs integer zeros", what,
               to_string(c.mode));
  LOWBIT_CHECK(!has_float_zeros(c.mode) || c.float_zeros, "pack({}): mode = {} needs float zeros", what,
               to_string(c.mode));
  PackedWeights P;
  P.n = c.n, P.k = c.k, P.bits = c.bits, P.group_size = c.group_size, P.mode = c.mode;
  P.n_pad = round_up(c.n, 8);
  P.k_pad = round_up(c.k, 128);
  P.groups_pad = c.group_size == 0 ? 1 : P.k_pad / c.group_size;
  if (c.g_idx) P.perm = perm_from_g_idx(c.g_idx, c.k, c.group_size, what);
  const int qmax = (1 << c.bits) - 1;
  P.qweight.assign(static_cast<std::size_t>(P.n_pad * P.k_pad / 32 * c.bits), 0u);
  const int64_t chunks = P.k_pad / 128;
  uint8_t vals[32];
  uint32_t words[8];
  for (int64_t n = 0; n < c.n; ++n) {
    const uint8_t* row = c.q + n * c.k;
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int t = 0; t < 4; ++t) {
        for (int e = 0; e < 32; ++e) {
          const int64_t j = chunk * 128 + 32 * t + e;
          vals[e] = 0;
          if (j >= c.k) continue;
          const int64_t src = P.source_k(j);
          vals[e] = row[src];
          LOWBIT_CHECK(vals[e] <= qmax, "pack({}): q[{}][{}] = {} does not fit in {} bits", what, n, src,
                       vals[e], c.bits);
        }
        encode_lane(c.bits, vals, words);
        const int lane = static_cast<int>(n % 8) * 4 + t;
        for (int w = 0; w < c.bits; ++w) P.qweight[word_index(P, n / 8, chunk, lane, w)] = words[w];
      }
  }
  const std::size_t meta = static_cast<std::size_t>(P.groups_pad * P.n_pad);
  P.scales.assign(meta, 0);
  if (has_int_zeros(c.mode)) P.zeros.assign(meta, 0);
  if (has_float_zeros(c.mode)) P.float_zeros.assign(meta, 0);
  for (int64_t g = 0; g < groups_of(c.k, c.group_size); ++g)
    for (int64_t n = 0; n < c.n; ++n) {
      P.scales[g * P.n_pad + n] = c.scales[g * c.n + n];
      if (has_int_zeros(c.mode)) {
        const uint8_t z = c.zeros[g * c.n + n];
        LOWBIT_CHECK(z <= qmax, "pack({}): zeros[{}][{}] = {} does not fit in {} bits", what, g, n, z,
                     c.bits);
        P.zeros[g * P.n_pad + n] = z;
      }
      if (has_float_zeros(c.mode)) P.float_zeros[g * P.n_pad + n] = c.float_zeros[g * c.n + n];
    }
  return P;
}

// GPTQ / AWQ integer checkpoints: unpack (exact), then the canonical packer.
template <class View, class Unpack>
PackedWeights pack_through_unpacked(const View& v, const char* format, const int32_t* g_idx, Unpack unpack) {
  check_shape(v.n, v.k, v.bits, v.group_size, format);
  LOWBIT_CHECK(v.scales != nullptr, "pack({}): scales is null", format);
  std::vector<uint8_t> q(static_cast<std::size_t>(v.n * v.k));
  std::vector<uint8_t> z;
  if (v.qzeros) z.resize(static_cast<std::size_t>(groups_of(v.k, v.group_size) * v.n));
  unpack(v, q.data(), v.qzeros ? z.data() : nullptr);
  Canonical c;
  c.q = q.data(), c.zeros = v.qzeros ? z.data() : nullptr, c.scales = v.scales, c.g_idx = g_idx;
  c.n = v.n, c.k = v.k, c.bits = v.bits, c.group_size = v.group_size;
  c.mode = v.qzeros ? DequantMode::SubZeroThenScale : DequantMode::Symmetric;
  return pack_canonical(c, format);
}

}  // namespace

void check_counts(const UnpackedWeightsView& v, const std::string& who) {
  const int64_t meta = groups_of(v.k, v.group_size) * v.n;
  check_count(who, "q", v.q_count, v.n * v.k, "N·K");
  check_count(who, "zeros", v.zeros_count, meta, "groups·N");
  check_count(who, "float_zeros", v.float_zeros_count, meta, "groups·N");
  check_count(who, "scales", v.scales_count, meta, "groups·N");
  check_count(who, "g_idx", v.g_idx_count, v.k, "K");
}

void check_counts(const GptqWeightsView& v, const std::string& who) {
  const int64_t groups = groups_of(v.k, v.group_size);
  check_count(who, "qweight", v.qweight_count, v.k * v.bits / 32 * v.n, "K·bits/32 · N");
  check_count(who, "qzeros", v.qzeros_count, groups * (v.n * v.bits / 32), "groups · N·bits/32");
  check_count(who, "scales", v.scales_count, groups * v.n, "groups·N");
  check_count(who, "g_idx", v.g_idx_count, v.k, "K");
}

void check_counts(const AwqWeightsView& v, const std::string& who) {
  const int64_t groups = groups_of(v.k, v.group_size);
  check_count(who, "qweight", v.qweight_count, v.k * (v.n / 8), "K · N/8");
  check_count(who, "qzeros", v.qzeros_count, groups * (v.n / 8), "groups · N/8");
  check_count(who, "scales", v.scales_count, groups * v.n, "groups·N");
}

void check_counts(const HqqWeightsView& v, const std::string& who) {
  const int64_t groups = groups_of(v.k, v.group_size);
  check_count(who, "w_q", v.w_q_count, v.n * v.k, "N·K");
  check_count(who, "scales", v.scales_count, v.n * groups, "N·groups");
  check_count(who, "zeros", v.zeros_count, v.n * groups, "N·groups");
}

void check_awq_packing(const AwqWeightsView& v, const std::string& who) {
  LOWBIT_CHECK(v.bits == 4, "{}: bits = {}: the AutoAWQ GEMM layout is 4-bit only", who, v.bits);
  LOWBIT_CHECK(v.n % 8 == 0, "{}: n = {}: AWQ packs 8 output columns per int32, so N must be a multiple of 8",
               who, v.n);
}

DequantMode unpacked_mode(const UnpackedWeightsView& v, const std::string& who) {
  const DequantMode mode = v.mode          ? *v.mode
                           : v.zeros       ? DequantMode::SubZeroThenScale
                           : v.float_zeros ? DequantMode::SubFloatZeroThenScale
                                           : DequantMode::Symmetric;
  LOWBIT_CHECK(!(v.zeros && v.float_zeros), "{}: both zeros and float_zeros are set; give one", who);
  LOWBIT_CHECK(has_int_zeros(mode) || !v.zeros, "{}: zeros is set but mode = {} takes no integer zeros", who,
               to_string(mode));
  LOWBIT_CHECK(has_float_zeros(mode) || !v.float_zeros,
               "{}: float_zeros is set but mode = {} takes no float zeros", who, to_string(mode));
  return mode;
}

int gptq_values_per_block(int bits) {
  return 32 / std::gcd(bits, 32);
}

void check_gptq_packing(const GptqWeightsView& v, const std::string& who, bool with_zeros) {
  LOWBIT_CHECK(v.bits == 2 || v.bits == 3 || v.bits == 4 || v.bits == 8,
               "{}: bits = {}: GPTQ packing is supported for 2, 3, 4 and 8 bits", who, v.bits);
  // A block of whole int32 words holds a whole number of values: 32/bits per word, or 32 values in
  // three words for 3 bits.
  const int per_block = gptq_values_per_block(v.bits), block_words = per_block * v.bits / 32;
  LOWBIT_CHECK(v.k % per_block == 0,
               "{}: k = {}: GPTQ packs {} input features per {} int32, so K must be a multiple of {}", who,
               v.k, per_block, block_words, per_block);
  LOWBIT_CHECK(!with_zeros || v.n % per_block == 0,
               "{}: n = {}: GPTQ qzeros pack {} columns per {} int32, so N must be a multiple of {}", who,
               v.n, per_block, block_words, per_block);
}

namespace {
// Value `index` of a GPTQ bitstream: value i at bits [bits·i, bits·i + bits), low bits first, word(w)
// the w-th int32 along the packed dimension; 3-bit values may straddle two words.
template <class Word>
uint32_t gptq_value(int bits, int64_t index, Word&& word) {
  const int64_t bit = index * bits;
  const int shift = static_cast<int>(bit % 32);
  uint32_t v = static_cast<uint32_t>(word(bit / 32)) >> shift;
  if (shift + bits > 32) v |= static_cast<uint32_t>(word(bit / 32 + 1)) << (32 - shift);
  return v & ((1u << bits) - 1);
}
}  // namespace

PackedWeights pack(const UnpackedWeightsView& v) {
  check_shape(v.n, v.k, v.bits, v.group_size, "unpacked");
  check_counts(v, "pack(unpacked)");
  Canonical c;
  c.q = v.q, c.zeros = v.zeros, c.float_zeros = v.float_zeros, c.scales = v.scales, c.g_idx = v.g_idx;
  c.n = v.n, c.k = v.k, c.bits = v.bits, c.group_size = v.group_size;
  c.mode = unpacked_mode(v, "pack(unpacked)");
  return pack_canonical(c, "unpacked");
}

PackedWeights pack(const HqqWeightsView& v) {
  check_shape(v.n, v.k, v.bits, v.group_size, "hqq");
  check_counts(v, "pack(hqq)");
  LOWBIT_CHECK(v.scales != nullptr && v.zeros != nullptr, "pack(hqq): scales and zeros must both be set");
  // HQQ keeps one row of groups per output channel; lowbit wants [groups, N].
  const int64_t groups = groups_of(v.k, v.group_size);
  std::vector<uint16_t> s(static_cast<std::size_t>(groups * v.n)), z(s.size());
  for (int64_t n = 0; n < v.n; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      s[g * v.n + n] = v.scales[n * groups + g];
      z[g * v.n + n] = v.zeros[n * groups + g];
    }
  Canonical c;
  c.q = v.w_q, c.float_zeros = z.data(), c.scales = s.data();
  c.n = v.n, c.k = v.k, c.bits = v.bits, c.group_size = v.group_size;
  c.mode = DequantMode::SubFloatZeroThenScale;
  return pack_canonical(c, "hqq");
}

void unpack_gptq(const GptqWeightsView& v, uint8_t* q_out, uint8_t* zeros_out) {
  check_shape(v.n, v.k, v.bits, v.group_size, "gptq");
  LOWBIT_CHECK(v.qweight != nullptr, "pack(gptq): qweight is null");
  check_gptq_packing(v, "pack(gptq)", v.qzeros && zeros_out);
  check_counts(v, "pack(gptq)");
  const uint32_t mask = (1u << v.bits) - 1;
  for (int64_t n = 0; n < v.n; ++n)
    for (int64_t k = 0; k < v.k; ++k)
      q_out[n * v.k + k] =
          static_cast<uint8_t>(gptq_value(v.bits, k, [&](int64_t row) { return v.qweight[row * v.n + n]; }));
  if (v.qzeros && zeros_out) {
    const int64_t groups = groups_of(v.k, v.group_size);
    const int offset = v.zeros_format == GptqZeros::StoredMinusOne ? 1 : 0;
    const int64_t row_words = v.n * v.bits / 32;
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t n = 0; n < v.n; ++n) {
        const int z =
            static_cast<int>(gptq_value(v.bits, n, [&](int64_t w) { return v.qzeros[g * row_words + w]; })) +
            offset;
        LOWBIT_CHECK(
            z <= static_cast<int>(mask),
            "pack(gptq): qzeros[{}][{}] = {} with zeros_format StoredMinusOne gives z = {}, over {} bits", g,
            n, z - offset, z, v.bits);
        zeros_out[g * v.n + n] = static_cast<uint8_t>(z);
      }
  }
}

void unpack_awq(const AwqWeightsView& v, uint8_t* q_out, uint8_t* zeros_out) {
  check_shape(v.n, v.k, v.bits, v.group_size, "awq");
  LOWBIT_CHECK(v.qweight != nullptr, "pack(awq): qweight is null");
  check_awq_packing(v, "pack(awq)");
  check_counts(v, "pack(awq)");
  // Column 8c + j sits at nibble kNibbleOf[j] of word c (AutoAWQ's interleaved order).
  static constexpr int kNibbleOf[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  const int64_t words = v.n / 8;
  auto nibble = [&](const int32_t* rows, int64_t row, int64_t col) {
    const uint32_t w = static_cast<uint32_t>(rows[row * words + col / 8]);
    return static_cast<uint8_t>((w >> (4 * kNibbleOf[col % 8])) & 0xf);
  };
  for (int64_t k = 0; k < v.k; ++k)
    for (int64_t n = 0; n < v.n; ++n) q_out[n * v.k + k] = nibble(v.qweight, k, n);
  if (v.qzeros && zeros_out) {
    const int64_t groups = groups_of(v.k, v.group_size);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t n = 0; n < v.n; ++n) zeros_out[g * v.n + n] = nibble(v.qzeros, g, n);
  }
}

PackedWeights pack(const GptqWeightsView& v) {
  return pack_through_unpacked(v, "gptq", v.g_idx, unpack_gptq);
}
PackedWeights pack(const AwqWeightsView& v) {
  return pack_through_unpacked(v, "awq", nullptr, unpack_awq);
}

void PackedWeights::apply_to(WqGemmProblem& p) const {
  p.n = n, p.k = k, p.bits = bits, p.group_size = group_size, p.mode = mode, p.act_order = act_order();
}

uint8_t PackedWeights::q_at(int64_t n_idx, int64_t j) const {
  const int64_t kc = j % 128;
  const int lane = static_cast<int>(n_idx % 8) * 4 + static_cast<int>(kc / 32);
  const int e = static_cast<int>(kc % 32);
  unsigned q = 0;
  for (int b = 0; b < bits; ++b) {
    const LaneBit lb = lane_bit(bits, e, b);
    q |= ((qweight[word_index(*this, n_idx / 8, j / 128, lane, lb.word)] >> lb.shift) & 1u) << b;
  }
  return static_cast<uint8_t>(q);
}

uint16_t PackedWeights::scale_at(int64_t n_idx, int64_t j) const {
  const int64_t g = group_size == 0 ? 0 : j / group_size;
  return scales[g * n_pad + n_idx];
}

uint8_t PackedWeights::zero_at(int64_t n_idx, int64_t j) const {
  if (zeros.empty()) return static_cast<uint8_t>(1 << (bits - 1));
  const int64_t g = group_size == 0 ? 0 : j / group_size;
  return zeros[g * n_pad + n_idx];
}

uint16_t PackedWeights::float_zero_at(int64_t n_idx, int64_t j) const {
  LOWBIT_CHECK(has_float_zeros(mode), "float_zero_at: mode = {} has no float zeros", to_string(mode));
  const int64_t g = group_size == 0 ? 0 : j / group_size;
  return float_zeros.at(static_cast<std::size_t>(g * n_pad + n_idx));
}

std::size_t PackedWeights::bytes() const {
  return qweight.size() * 4 + scales.size() * 2 + zeros.size() + float_zeros.size() * 2 + perm.size() * 4;
}

}  // namespace lowbit

// Checkpoint formats → lowbit's packed layout (documented in include/lowbit/pack.hpp).
#include <algorithm>

#include "common/check.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/pack.hpp"

namespace lowbit {
namespace {

int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// Where value (n, k) lives in the packed qweight: word index and bit shift.
struct Slot {
  std::size_t word;
  int shift;
};
Slot slot_of(int64_t k_pad, int64_t n, int64_t k) {
  const int64_t tile = n / 8, g = n % 8;
  const int64_t chunk = k / 128, kc = k % 128;
  const int64_t t = kc / 32, p = (kc % 32) / 8, e = kc % 8;
  const int64_t lane = g * 4 + t;
  const std::size_t word = static_cast<std::size_t>(((tile * (k_pad / 128) + chunk) * 32 + lane) * 4 + p);
  return {word, static_cast<int>(4 * (e / 2 + 4 * (e % 2)))};
}

int64_t groups_of(int64_t k, int group_size) { return group_size == 0 ? 1 : k / group_size; }

void check_common(int64_t n, int64_t k, int bits, int group_size, const char* what) {
  WqGemmProblem p;
  p.n = n, p.k = k, p.bits = bits, p.group_size = group_size;
  std::string why;
  LOWBIT_CHECK(can_implement(p, &why), "pack({}): {}", what, why);
}

}  // namespace

PackedWeights pack(const UnpackedWeightsView& v) {
  check_common(v.n, v.k, v.bits, v.group_size, "unpacked");
  LOWBIT_CHECK(v.q != nullptr, "pack(unpacked): q is null");
  LOWBIT_CHECK(v.scales != nullptr, "pack(unpacked): scales is null");
  PackedWeights P;
  P.n = v.n, P.k = v.k, P.bits = v.bits, P.group_size = v.group_size;
  P.n_pad = round_up(v.n, 8);
  P.k_pad = round_up(v.k, 128);
  P.groups_pad = v.group_size == 0 ? 1 : P.k_pad / v.group_size;
  const int64_t groups = groups_of(v.k, v.group_size);
  const int qmax = (1 << v.bits) - 1;
  P.qweight.assign(static_cast<std::size_t>(P.n_pad * P.k_pad / 8), 0u);
  for (int64_t n = 0; n < v.n; ++n)
    for (int64_t k = 0; k < v.k; ++k) {
      const uint8_t q = v.q[n * v.k + k];
      LOWBIT_CHECK(q <= qmax, "pack(unpacked): q[{}][{}] = {} does not fit in {} bits", n, k, q, v.bits);
      const Slot s = slot_of(P.k_pad, n, k);
      P.qweight[s.word] |= static_cast<uint32_t>(q) << s.shift;
    }
  P.scales.assign(static_cast<std::size_t>(P.groups_pad * P.n_pad), 0);
  if (v.zeros) P.zeros.assign(static_cast<std::size_t>(P.groups_pad * P.n_pad), 0);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t n = 0; n < v.n; ++n) {
      P.scales[g * P.n_pad + n] = v.scales[g * v.n + n];
      if (v.zeros) {
        const uint8_t z = v.zeros[g * v.n + n];
        LOWBIT_CHECK(z <= qmax, "pack(unpacked): zeros[{}][{}] = {} does not fit in {} bits", g, n, z, v.bits);
        P.zeros[g * P.n_pad + n] = z;
      }
    }
  return P;
}

void unpack_gptq(const GptqWeightsView& v, uint8_t* q_out, uint8_t* zeros_out) {
  check_common(v.n, v.k, v.bits, v.group_size, "gptq");
  LOWBIT_CHECK(v.qweight != nullptr, "pack(gptq): qweight is null");
  LOWBIT_CHECK(v.bits == 4, "pack(gptq): bits = {}: GPTQ 4-bit only in this version", v.bits);
  const int per_word = 32 / v.bits;
  const uint32_t mask = (1u << v.bits) - 1;
  for (int64_t k = 0; k < v.k; ++k)
    for (int64_t n = 0; n < v.n; ++n) {
      const uint32_t w = static_cast<uint32_t>(v.qweight[(k / per_word) * v.n + n]);
      q_out[n * v.k + k] = static_cast<uint8_t>((w >> (v.bits * (k % per_word))) & mask);
    }
  if (v.qzeros && zeros_out) {
    LOWBIT_CHECK(v.n % per_word == 0, "pack(gptq): n = {}: GPTQ qzeros pack {} columns per int32, so N must be a "
                 "multiple of {}", v.n, per_word, per_word);
    const int64_t groups = groups_of(v.k, v.group_size);
    const int offset = v.zeros_format == GptqZeros::StoredMinusOne ? 1 : 0;
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t n = 0; n < v.n; ++n) {
        const uint32_t w = static_cast<uint32_t>(v.qzeros[g * (v.n / per_word) + n / per_word]);
        const int z = static_cast<int>((w >> (v.bits * (n % per_word))) & mask) + offset;
        LOWBIT_CHECK(z <= static_cast<int>(mask),
                     "pack(gptq): qzeros[{}][{}] = {} with zeros_format StoredMinusOne gives z = {}, over {} bits",
                     g, n, z - offset, z, v.bits);
        zeros_out[g * v.n + n] = static_cast<uint8_t>(z);
      }
  }
}

void unpack_awq(const AwqWeightsView& v, uint8_t* q_out, uint8_t* zeros_out) {
  check_common(v.n, v.k, v.bits, v.group_size, "awq");
  LOWBIT_CHECK(v.qweight != nullptr, "pack(awq): qweight is null");
  LOWBIT_CHECK(v.bits == 4, "pack(awq): bits = {}: AWQ 4-bit only in this version", v.bits);
  LOWBIT_CHECK(v.n % 8 == 0, "pack(awq): n = {}: AWQ packs 8 output columns per int32, so N must be a multiple of 8",
               v.n);
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

namespace {
// Checkpoint formats go through plain integers: unpack (exact), then the one packer above.
template <class View, class Unpack>
PackedWeights pack_through_unpacked(const View& v, const char* format, Unpack unpack) {
  check_common(v.n, v.k, v.bits, v.group_size, format);
  LOWBIT_CHECK(v.scales != nullptr, "pack({}): scales is null", format);
  std::vector<uint8_t> q(static_cast<std::size_t>(v.n * v.k));
  std::vector<uint8_t> z;
  if (v.qzeros) z.resize(static_cast<std::size_t>(groups_of(v.k, v.group_size) * v.n));
  unpack(v, q.data(), v.qzeros ? z.data() : nullptr);
  UnpackedWeightsView u;
  u.q = q.data(), u.zeros = v.qzeros ? z.data() : nullptr, u.scales = v.scales;
  u.n = v.n, u.k = v.k, u.bits = v.bits, u.group_size = v.group_size;
  return pack(u);
}
}  // namespace

PackedWeights pack(const GptqWeightsView& v) { return pack_through_unpacked(v, "gptq", unpack_gptq); }
PackedWeights pack(const AwqWeightsView& v) { return pack_through_unpacked(v, "awq", unpack_awq); }

uint8_t PackedWeights::q_at(int64_t n_idx, int64_t k_idx) const {
  const Slot s = slot_of(k_pad, n_idx, k_idx);
  return static_cast<uint8_t>((qweight[s.word] >> s.shift) & 0xf);
}

uint16_t PackedWeights::scale_at(int64_t n_idx, int64_t k_idx) const {
  const int64_t g = group_size == 0 ? 0 : k_idx / group_size;
  return scales[g * n_pad + n_idx];
}

uint8_t PackedWeights::zero_at(int64_t n_idx, int64_t k_idx) const {
  if (zeros.empty()) return static_cast<uint8_t>(1 << (bits - 1));
  const int64_t g = group_size == 0 ? 0 : k_idx / group_size;
  return zeros[g * n_pad + n_idx];
}

std::size_t PackedWeights::bytes() const {
  return qweight.size() * 4 + scales.size() * 2 + zeros.size();
}

}  // namespace lowbit

#include "support/test_support.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "ref/half.hpp"

namespace lowbit::test {

uint64_t fresh_seed() {
  return static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count()) ^
         std::random_device{}();
}

static uint16_t to_bits(float v, DType act) {
  return act == DType::BF16 ? ref::float_to_bf16(v) : ref::float_to_f16(v);
}

RandomLayer random_layer(int64_t n, int64_t k, int bits, int group_size, DType act, std::mt19937_64& rng) {
  RandomLayer L;
  L.n = n, L.k = k, L.bits = bits, L.group_size = group_size;
  const int64_t groups = group_size == 0 ? 1 : k / group_size;
  std::uniform_int_distribution<int> qd(0, (1 << bits) - 1);
  L.q.resize(static_cast<std::size_t>(n * k));
  for (auto& v : L.q) v = static_cast<uint8_t>(qd(rng));
  L.zeros.resize(static_cast<std::size_t>(groups * n));
  for (auto& v : L.zeros) v = static_cast<uint8_t>(qd(rng));
  std::uniform_real_distribution<float> sd(0.5f, 1.5f);
  const float base = 1.0f / std::sqrt(static_cast<float>(k)) / 4.0f;
  L.scales.resize(static_cast<std::size_t>(groups * n));
  for (auto& v : L.scales) v = to_bits(base * sd(rng), act);
  return L;
}

namespace {
// AutoGPTQ's 3-bit packing as its loop writes it, for 32 values into 3 words: word 0 holds values
// 0-9 at 3j and the low 2 bits of value 10 at bit 30; word 1 the high bit of value 10 at bit 0,
// values 11-20 at 3j + 1 and the low bit of value 21 at bit 31; word 2 the high 2 bits of value 21
// at bit 0 and values 22-31 at 3j + 2.
void autogptq_pack3(const uint8_t* v, int32_t* w0, int32_t* w1, int32_t* w2) {
  uint32_t a = 0, b = 0, c = 0;
  for (int j = 0; j < 10; ++j) a |= static_cast<uint32_t>(v[j]) << (3 * j);
  a |= static_cast<uint32_t>(v[10]) << 30;
  b |= (static_cast<uint32_t>(v[10]) >> 2) & 1u;
  for (int j = 0; j < 10; ++j) b |= static_cast<uint32_t>(v[11 + j]) << (3 * j + 1);
  b |= static_cast<uint32_t>(v[21]) << 31;
  c |= (static_cast<uint32_t>(v[21]) >> 1) & 3u;
  for (int j = 0; j < 10; ++j) c |= static_cast<uint32_t>(v[22 + j]) << (3 * j + 2);
  *w0 = static_cast<int32_t>(a), *w1 = static_cast<int32_t>(b), *w2 = static_cast<int32_t>(c);
}

// A 3-bit GPTQ checkpoint of L: qweight [K·3/32][N] (32 k per 3 words down each column), qzeros
// [groups][N·3/32] (32 columns per 3 words along each row).
GptqCheckpoint gptq3_checkpoint(const RandomLayer& L, GptqZeros format, bool with_zeros) {
  GptqCheckpoint c;
  c.qweight.assign(static_cast<std::size_t>(L.k * 3 / 32 * L.n), 0);
  std::vector<uint8_t> block(32);
  for (int64_t n = 0; n < L.n; ++n)
    for (int64_t k0 = 0; k0 < L.k; k0 += 32) {
      for (int j = 0; j < 32; ++j) block[j] = L.q[n * L.k + k0 + j];
      const int64_t row = k0 / 32 * 3;
      autogptq_pack3(block.data(), &c.qweight[row * L.n + n], &c.qweight[(row + 1) * L.n + n],
                     &c.qweight[(row + 2) * L.n + n]);
    }
  if (with_zeros) {
    const int64_t groups = L.group_size == 0 ? 1 : L.k / L.group_size, row_words = L.n * 3 / 32;
    c.qzeros.assign(static_cast<std::size_t>(groups * row_words), 0);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t n0 = 0; n0 < L.n; n0 += 32) {
        for (int j = 0; j < 32; ++j) {
          const int z = L.zeros[g * L.n + n0 + j];
          block[j] = static_cast<uint8_t>((format == GptqZeros::StoredMinusOne ? z - 1 : z) & 7);
        }
        int32_t* w = &c.qzeros[g * row_words + n0 / 32 * 3];
        autogptq_pack3(block.data(), w, w + 1, w + 2);
      }
  }
  return c;
}
}  // namespace

GptqCheckpoint gptq_checkpoint(const RandomLayer& L, GptqZeros format, bool with_zeros) {
  if (L.bits == 3) return gptq3_checkpoint(L, format, with_zeros);
  const int per = 32 / L.bits;
  const uint32_t mask = (1u << L.bits) - 1;
  GptqCheckpoint c;
  std::vector<uint32_t> qw(static_cast<std::size_t>(L.k / per * L.n), 0u);
  for (int64_t k = 0; k < L.k; ++k)
    for (int64_t n = 0; n < L.n; ++n)
      qw[static_cast<std::size_t>((k / per) * L.n + n)] |= static_cast<uint32_t>(L.q[n * L.k + k])
                                                           << (L.bits * (k % per));
  for (uint32_t w : qw) c.qweight.push_back(static_cast<int32_t>(w));
  if (with_zeros) {
    const int64_t groups = L.group_size == 0 ? 1 : L.k / L.group_size;
    std::vector<uint32_t> qz(static_cast<std::size_t>(groups * (L.n / per)), 0u);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t n = 0; n < L.n; ++n) {
        const int z = L.zeros[g * L.n + n];
        const uint32_t stored = static_cast<uint32_t>(format == GptqZeros::StoredMinusOne ? z - 1 : z) & mask;
        qz[static_cast<std::size_t>(g * (L.n / per) + n / per)] |= stored << (L.bits * (n % per));
      }
    for (uint32_t w : qz) c.qzeros.push_back(static_cast<int32_t>(w));
  }
  return c;
}

std::vector<uint16_t> random_activations(int64_t count, DType act, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<uint16_t> x(static_cast<std::size_t>(count));
  for (auto& v : x) v = to_bits(d(rng), act);
  return x;
}

TempDir::TempDir() {
  std::mt19937_64 rng(fresh_seed());
  path = (std::filesystem::temp_directory_path() / ("lowbit-test-" + std::to_string(rng()))).string();
  std::filesystem::create_directories(path);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

}  // namespace lowbit::test

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

GptqCheckpoint gptq_checkpoint(const RandomLayer& L, GptqZeros format, bool with_zeros) {
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

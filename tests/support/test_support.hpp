// Helpers shared by the tests: random data, temp dirs, GPU presence.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "lowbit/lowbit.hpp"

namespace lowbit::test {

// A fresh random seed per run (printed by the test that uses it), so every run draws new data.
uint64_t fresh_seed();

struct RandomLayer {
  int64_t n = 0, k = 0;
  int bits = 4, group_size = 128;
  std::vector<uint8_t> q;        // [N, K]
  std::vector<uint8_t> zeros;    // [groups, N]
  std::vector<uint16_t> scales;  // [groups, N], act dtype bits
};
// Random integers, zeros and scales (scales ~ 1/sqrt(K) so outputs stay O(1)).
RandomLayer random_layer(int64_t n, int64_t k, int bits, int group_size, DType act, std::mt19937_64& rng);
// A GPTQ checkpoint written the way AutoGPTQ packs it: qweight [K·bits/32, N] with 32/bits values
// of consecutive k per int32, low bits first; qzeros [groups, N·bits/32] with 32/bits consecutive n
// per int32, holding z − 1 (v1, StoredMinusOne) or z (v2, Exact). bits 2, 4 or 8; 3 bits in AutoGPTQ's
// 3-bit packing (32 values per 3 int32, values 10 and 21 across two words).
struct GptqCheckpoint {
  std::vector<int32_t> qweight, qzeros;
};
GptqCheckpoint gptq_checkpoint(const RandomLayer& layer, GptqZeros format, bool with_zeros);
// Random activations in [-1, 1] as act-dtype bits.
std::vector<uint16_t> random_activations(int64_t count, DType act, std::mt19937_64& rng);

// A new empty directory under the system temp dir; removed by the destructor.
struct TempDir {
  TempDir();
  ~TempDir();
  std::string path;
};

}  // namespace lowbit::test

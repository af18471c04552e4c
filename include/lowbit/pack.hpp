// Weight preparation: checkpoint formats → lowbit's layout.
//
// lowbit's 4-bit layout (what the kernels read):
//   qweight: uint32[n_pad/8][k_pad/128][32 lanes][4 words]   (n_pad = N rounded up to 8,
//            k_pad = K rounded up to 128; padding holds zeros). The 512 bytes of one (8 columns,
//            128 k) tile are read by one warp with one 16-byte load per lane: lane (g = lane/4,
//            t = lane%4) holds output column 8·tile + g and k = 128·chunk + 32·t + 8·p + e in
//            word p (0..3), element e (0..7) at nibble (e/2) + 4·(e%2). That order lets the kernel
//            turn each word into four half2 MMA operands with one mask-or each.
//   scales:  act dtype [groups_pad][n_pad], groups_pad = k_pad / group_size (1 for per-channel).
//   zeros:   uint8 [groups_pad][n_pad], the integer zero point z of (q − z)·s.
#pragma once
#include <cstdint>
#include <vector>

#include "lowbit/wq_gemm.hpp"

namespace lowbit {

// GPTQ checkpoints store qzeros as z − 1 (the "v1" format of AutoGPTQ / HF); "v2" stores z.
enum class GptqZeros : uint8_t { StoredMinusOne, Exact };

// Host views of a GPTQ layer (all row-major, as in the checkpoint).
struct GptqWeightsView {
  const int32_t* qweight = nullptr;  // [K/8, N]: 8 values of consecutive k per int32, low nibble first
  const int32_t* qzeros = nullptr;   // [K/G, N/8]: 8 zeros of consecutive n per int32 (null: Symmetric)
  const uint16_t* scales = nullptr;  // [K/G, N] fp16/bf16 bits
  int64_t n = 0, k = 0;
  int bits = 4;
  int group_size = 128;  // 0 = per-channel
  GptqZeros zeros_format = GptqZeros::StoredMinusOne;
};

// Host views of an AWQ layer in the AutoAWQ "GEMM" layout: 8 values of consecutive output columns
// per int32, column 8c + j at nibble {0, 4, 1, 5, 2, 6, 3, 7}[j]; zero points used as is, (q − z)·s.
struct AwqWeightsView {
  const int32_t* qweight = nullptr;  // [K, N/8]
  const int32_t* qzeros = nullptr;   // [K/G, N/8]
  const uint16_t* scales = nullptr;  // [K/G, N] fp16/bf16 bits
  int64_t n = 0, k = 0;
  int bits = 4;
  int group_size = 128;  // 0 = per-channel
};

// Plain unpacked integers (one value per byte), for users who quantize themselves.
struct UnpackedWeightsView {
  const uint8_t* q = nullptr;        // [N, K] values in [0, 2^bits)
  const uint8_t* zeros = nullptr;    // [groups, N] (null: Symmetric)
  const uint16_t* scales = nullptr;  // [groups, N] fp16/bf16 bits
  int64_t n = 0, k = 0;
  int bits = 4;
  int group_size = 128;
};

// Weights in lowbit's layout, on the host; upload the three vectors as they are.
struct PackedWeights {
  int64_t n = 0, k = 0, n_pad = 0, k_pad = 0, groups_pad = 0;
  int bits = 4;
  int group_size = 128;
  std::vector<uint32_t> qweight;
  std::vector<uint16_t> scales;
  std::vector<uint8_t> zeros;  // empty for Symmetric

  // Reads back one value (for references and round-trip checks).
  uint8_t q_at(int64_t n_idx, int64_t k_idx) const;
  uint16_t scale_at(int64_t n_idx, int64_t k_idx) const;
  uint8_t zero_at(int64_t n_idx, int64_t k_idx) const;  // 2^(bits-1) for Symmetric
  std::size_t bytes() const;  // bytes the kernel reads
};

PackedWeights pack(const GptqWeightsView& gptq);
PackedWeights pack(const AwqWeightsView& awq);
PackedWeights pack(const UnpackedWeightsView& plain);

// The inverse of the GPTQ packing, for round-trip checks: writes the unpacked values back.
void unpack_gptq(const GptqWeightsView& gptq, uint8_t* q_out /*[N,K]*/, uint8_t* zeros_out /*[groups,N]*/);
void unpack_awq(const AwqWeightsView& awq, uint8_t* q_out /*[N,K]*/, uint8_t* zeros_out /*[groups,N]*/);

}  // namespace lowbit

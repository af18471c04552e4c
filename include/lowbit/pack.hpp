// Weight preparation: checkpoint formats → lowbit's layout.
//
// lowbit's layout (what the kernels read), for b = bits ∈ {1, 2, 3, 4, 8}:
//   qweight: uint32[k_pad/128][n_pad/8][b·32]   (n_pad = N rounded up to 8, k_pad = K rounded up to
//            128; padding holds zeros). One (8 columns, 128 k) tile is 128·b bytes, read by one warp;
//            the tiles of one 128-wide chunk of K lie side by side (chunk-major: all blocks step
//            through K together, so they read one narrow band of memory at a time; H100, 1-4.5 %
//            faster at 1 and 16 rows than tile-major):
//            lane (g = lane/4, t = lane%4) owns output column 8·tile + g and the 32 values
//            k = 128·chunk + 32·t + e (e = 0..31), held in b words of its own. The tile stores those
//            words as [b/V][32 lanes][V words], V = 4 for b = 4, 8 (one or two 16-byte loads per
//            lane), 2 for b = 2, 1 for b = 1, 3 — so every load instruction of a warp reads one
//            contiguous run.
//            Inside the lane's words, values go in pairs (e = 2j, 2j + 1) that land in the low and
//            high 16-bit halves of one register with one shift and one mask:
//              b = 1, 2, 4, 8: word j / (16/b), bit b·(j % (16/b)) for e = 2j, 16 bits higher for 2j + 1;
//              b = 3: pairs 0..14 in word j / 5 at bit 3·(j % 5) (+16 for the odd value); pair 15
//                     (e = 30, 31) has bit i of its two values at bits 15 and 31 of word i.
//   scales:  act dtype [groups_pad][n_pad], groups_pad = k_pad / group_size (1 for per-channel).
//   zeros:   uint8 [groups_pad][n_pad] integer zero points (SubZeroThenScale), or act dtype
//            [groups_pad][n_pad] float zero points (SubFloatZeroThenScale, ScaleThenAddZero).
//   perm:    int32 [K] (act-order checkpoints only): packed position j holds checkpoint input
//            feature perm[j]; the kernel reads activations x[:, perm[j]]. Empty when not needed.
// Every packer checks sizes, ranges and formats and throws lowbit::Error naming the field.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "lowbit/wq_gemm.hpp"

namespace lowbit {

// GPTQ checkpoints store qzeros as z − 1 (the "v1" format of AutoGPTQ / HF); "v2" stores z.
enum class GptqZeros : uint8_t { StoredMinusOne, Exact };

// Host views of a GPTQ layer (all row-major, as in the checkpoint). bits 2, 3, 4 or 8. Each column
// of qweight (and each row of qzeros) is a bitstream, low bits first: value i at bits
// [bits·i, bits·i + bits) — 32/bits values per int32, and for 3 bits 32 values per 3 int32 with
// values 10 and 21 of each 32 straddling two words (AutoGPTQ's 3-bit format). pack_on_device reads
// all four.
struct GptqWeightsView {
  // [K·bits/32, N]: consecutive k down each column (K a multiple of 32/bits; 32 for 3 bits)
  const int32_t* qweight = nullptr;
  const int32_t* qzeros =
      nullptr;  // [K/G, N·bits/32]: zeros of consecutive n along each row (null: Symmetric)
  const uint16_t* scales = nullptr;  // [K/G, N] fp16/bf16 bits
  const int32_t* g_idx = nullptr;    // [K] group of each input feature (act-order), or null
  int64_t n = 0, k = 0;
  int bits = 4;
  int group_size = 128;  // 0 = per-channel
  GptqZeros zeros_format = GptqZeros::StoredMinusOne;
  // Element counts of the arrays above when known (0 = not checked): pack() refuses a count that
  // does not match the shape, naming the field.
  std::size_t qweight_count = 0, qzeros_count = 0, scales_count = 0, g_idx_count = 0;
};

// Host views of an AWQ layer in the AutoAWQ "GEMM" layout (4-bit): 8 values of consecutive output
// columns per int32, column 8c + j at nibble {0, 4, 1, 5, 2, 6, 3, 7}[j]; zeros used as is, (q − z)·s.
struct AwqWeightsView {
  const int32_t* qweight = nullptr;  // [K, N/8]
  const int32_t* qzeros = nullptr;   // [K/G, N/8]
  const uint16_t* scales = nullptr;  // [K/G, N] fp16/bf16 bits
  int64_t n = 0, k = 0;
  int bits = 4;
  int group_size = 128;                                               // 0 = per-channel
  std::size_t qweight_count = 0, qzeros_count = 0, scales_count = 0;  // when known (0 = not checked)
};

// HQQ / GemLite: unpacked uint8 W_q [N, K] (HQQ's unpacked tensor, GemLite's input), scales and
// float zero points [N, K/G] (one row of groups per output channel), (q − z)·s.
struct HqqWeightsView {
  const uint8_t* w_q = nullptr;      // [N, K] values in [0, 2^bits)
  const uint16_t* scales = nullptr;  // [N, K/G] fp16/bf16 bits
  const uint16_t* zeros = nullptr;   // [N, K/G] fp16/bf16 bits
  int64_t n = 0, k = 0;
  int bits = 4;
  int group_size = 64;                                           // 0 = per-channel
  std::size_t w_q_count = 0, scales_count = 0, zeros_count = 0;  // when known (0 = not checked)
};

// Plain unpacked integers (one value per byte), for users who quantize themselves.
// The mode follows from the pointers unless given: zeros → SubZeroThenScale, float_zeros →
// SubFloatZeroThenScale, neither → Symmetric. ScaleThenAddZero must be named (it uses float_zeros).
struct UnpackedWeightsView {
  const uint8_t* q = nullptr;             // [N, K] values in [0, 2^bits)
  const uint8_t* zeros = nullptr;         // [groups, N] integer zero points, or null
  const uint16_t* float_zeros = nullptr;  // [groups, N] fp16/bf16 bits, or null
  const uint16_t* scales = nullptr;       // [groups, N] fp16/bf16 bits
  const int32_t* g_idx = nullptr;         // [K] group of each input feature (act-order), or null
  int64_t n = 0, k = 0;
  int bits = 4;
  int group_size = 128;
  std::optional<DequantMode> mode;
  // Element counts when known (0 = not checked).
  std::size_t q_count = 0, zeros_count = 0, float_zeros_count = 0, scales_count = 0, g_idx_count = 0;
};

// The version of the layout above; it changes whenever the layout does (1: tile-major qweight,
// [n_pad/8][k_pad/128][b·32], lowbit 0.1.0 until 2026-11-25; 2: chunk-major). The kernels read only
// the current one: weights packed once and stored must be stored with their version and re-packed
// when it differs.
inline constexpr int kPackedLayoutVersion = 2;

// Weights in lowbit's layout, on the host; upload the vectors as they are.
struct PackedWeights {
  int layout_version = kPackedLayoutVersion;  // of the vectors below (see kPackedLayoutVersion)
  int64_t n = 0, k = 0, n_pad = 0, k_pad = 0, groups_pad = 0;
  int bits = 4;
  int group_size = 128;
  DequantMode mode = DequantMode::SubZeroThenScale;
  std::vector<uint32_t> qweight;
  std::vector<uint16_t> scales;
  std::vector<uint8_t> zeros;         // SubZeroThenScale only
  std::vector<uint16_t> float_zeros;  // SubFloatZeroThenScale and ScaleThenAddZero only
  std::vector<int32_t> perm;          // act-order only (empty when the order is the identity)

  bool act_order() const { return !perm.empty(); }
  // The problem fields these weights fix (bits, group_size, mode, act_order, n, k).
  void apply_to(WqGemmProblem& problem) const;

  // Reads back one value at packed position (n_idx, j) (j = k_idx without act-order).
  uint8_t q_at(int64_t n_idx, int64_t j) const;
  uint16_t scale_at(int64_t n_idx, int64_t j) const;
  uint8_t zero_at(int64_t n_idx, int64_t j) const;  // integer modes; 2^(bits-1) for Symmetric
  uint16_t float_zero_at(int64_t n_idx, int64_t j) const;
  int64_t source_k(int64_t j) const { return perm.empty() ? j : perm[static_cast<std::size_t>(j)]; }
  std::size_t bytes() const;  // bytes the kernel reads
};

PackedWeights pack(const GptqWeightsView& gptq);
PackedWeights pack(const AwqWeightsView& awq);
PackedWeights pack(const HqqWeightsView& hqq);
PackedWeights pack(const UnpackedWeightsView& plain);

// The inverses of the checkpoint packings, for round-trip checks: write the unpacked values back.
void unpack_gptq(const GptqWeightsView& gptq, uint8_t* q_out /*[N,K]*/, uint8_t* zeros_out /*[groups,N]*/);
void unpack_awq(const AwqWeightsView& awq, uint8_t* q_out /*[N,K]*/, uint8_t* zeros_out /*[groups,N]*/);

// Where bit `bit` of value e (0..31) of a lane lives among its b words (see the layout above).
struct LaneBit {
  int word, shift;
};
LaneBit lane_bit(int bits, int e, int bit);

// Device-side packing: the same layout as pack(), byte for byte, computed by kernels on `stream`, for
// every format pack() reads (GPTQ at 2, 3, 4 and 8 bits). Inputs are device pointers in the checkpoint
// layouts above; outputs are device buffers of packed_sizes(...) bytes (16-byte aligned). No host
// round trip, no allocation.
// Shapes, bits and modes are checked on the host first (pack()'s rules); the values themselves are
// not (q and zeros out of range, v1 qzeros of 2^bits − 1, a g_idx that is not a permutation of
// groups): pack() reports those.
// Act-order (g_idx set, GPTQ and unpacked views): the permutation pack() computes (the stable sort
// of the input features by group) is written to out.perm (K int32, 16-byte aligned) first and the
// weights packed through it (out.perm must not overlap g_idx); the problem is then act_order, with
// args.w.perm = out.perm. Unlike pack(), which drops an identity permutation, out.perm is written
// whatever g_idx holds (telling needs a host round trip). A bad g_idx leaves slots of −1, which pack as 0 and
// read as 0.
struct PackedSizes {
  std::size_t qweight_bytes = 0, scales_bytes = 0, zeros_bytes = 0;
};
PackedSizes packed_sizes(const WqGemmProblem& problem);  // from n, k, bits, group_size, mode
struct DevicePackedWeights {
  void* qweight = nullptr;
  void* scales = nullptr;
  void* zeros = nullptr;    // null for Symmetric
  int32_t* perm = nullptr;  // [K], act-order views (g_idx set) only
};
void pack_on_device(Runtime& rt, const UnpackedWeightsView& device_view, const DevicePackedWeights& out,
                    Stream stream);
void pack_on_device(Runtime& rt, const GptqWeightsView& device_view, const DevicePackedWeights& out,
                    Stream stream);
void pack_on_device(Runtime& rt, const AwqWeightsView& device_view, const DevicePackedWeights& out,
                    Stream stream);
void pack_on_device(Runtime& rt, const HqqWeightsView& device_view, const DevicePackedWeights& out,
                    Stream stream);
// Compiles (no device needed) the device packer's kernels for `bits`: unpacked and HQQ, GPTQ for 2, 4
// and 8 bits, AWQ for 4, and the act-order permutation's; for caches built ahead (LOWBIT_NO_COMPILE
// deployments) and tests.
std::vector<KernelRecord> compile_pack_on_device(Runtime& rt, int bits);

}  // namespace lowbit

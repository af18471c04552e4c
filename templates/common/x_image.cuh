// The layout of a wgmma config's activation stages (WqGemmConfig::x_image), shared by the kernel that
// reads them (wq_gemm_wgmma.cuh) and the kernels that write an image of them before the launch
// (wq_x_image_kernel; wq_permute_x_kernel for act-order layers).
#pragma once
#include "common/types.cuh"

namespace lowbit::kern {

// One stage's activations: [2 halves of the chunk's 128 k][kTok rows][128 B]; 16-byte chunk q
// (0..15) of row n lies in half q / 8 at position (q % 8) ^ (n % 8) (wgmma's 128-byte swizzle), and
// chunk q = 4p + w holds word w of the row's 16-byte vectors (t, p) = k 128c + 32t + 8p .. +7,
// t = 0..3 (the packed K order: wq_gemm_wgmma.cuh).
template <int kTok>
__device__ __forceinline__ u32 x_chunk_offset(int n, int q) {
  return (q / 8) * kTok * 128 + n * 128 + ((q % 8) ^ (n % 8)) * 16;
}

// The image: [ceil(M / kTok) row blocks][chunks][kTok·256 B], each block of bytes exactly one stage's.
// Byte offset of row `row`'s 16-byte chunk q of chunk c.
template <int kK, int kTok>
__device__ __forceinline__ i64 x_image_offset(int row, int c, int q) {
  constexpr int kChunks = (kK + 127) / 128;
  return (static_cast<i64>(row / kTok) * kChunks + c) * (kTok * 256) + x_chunk_offset<kTok>(row % kTok, q);
}

}  // namespace lowbit::kern

// Kernels that measure what the hardware can do, for `lowbit bench` (shared/BENCHMARKS.md):
//   stream_kernel: reads `in_bytes` with 16-byte loads and writes `out_bytes` — the stream ceiling
//   of a case (one trivial kernel moving exactly the case's bytes) and, on a large buffer, the
//   device read bandwidth.
//   mma_peak_kernel: back-to-back m16n8k16 MMAs on registers — the tensor-core rate of the MMA path
//   the wq_gemm kernels use.
#pragma once
#include "common/mma.cuh"
#include "common/ptx.cuh"
#include "common/types.cuh"

namespace lowbit::kern {

template <int kUnroll>
__global__ void stream_kernel(const uint4* __restrict__ in, u64 in16, uint4* __restrict__ out, u64 out16,
                              u32 never) {
  const u64 stride = static_cast<u64>(gridDim.x) * blockDim.x;
  u64 i = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x;
  u32 acc = 0;
  for (; i + (kUnroll - 1) * stride < in16; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = ld_stream_v4(in + i + u * stride);  // all loads in flight first
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < in16; i += stride) {
    const uint4 v = ld_stream_v4(in + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  for (u64 j = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x; j < out16; j += stride)
    out[j] = make_uint4(acc, acc, acc, acc);
  if (acc == never && out16 == 0) out[0] = make_uint4(acc, 0, 0, 0);  // keeps the loads alive
}

__global__ void mma_peak_kernel(int iters, float* out, u32 seed) {
  const u32 a = seed ^ threadIdx.x, b = seed + threadIdx.x;
  float acc[4][4] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) mma_16816<false>(acc[j], a, b, a ^ 1u, b ^ 1u, a, b);  // 4 independent chains
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 4; ++j) s += acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
  if (s == 1234.5f) out[threadIdx.x] = s;
}

}  // namespace lowbit::kern

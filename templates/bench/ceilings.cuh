// Kernels that measure what the hardware can do, for `lowbit bench` (shared/BENCHMARKS.md):
//   stream_kernel: reads `in_bytes` with 16-byte loads and writes `out_bytes` — the stream ceiling
//   of a case (one trivial kernel moving exactly the case's bytes; the faster of two loop shapes)
//   and, on a large buffer, the device read bandwidth.
//   mma_peak_kernel: back-to-back m16n8k16 MMAs on registers — the tensor-core rate of the MMA path
//   the wq_gemm kernels use.
#pragma once
#include "common/grid_dependency.cuh"
#include "common/mma.cuh"
#include "common/ptx.cuh"
#include "common/types.cuh"

namespace lowbit::kern {

// kPredicated false: kUnroll loads per thread and step, all in flight, and the remainder one load at
// a time; true: every step with its kUnroll loads in flight, the last one's predicated. Neither is
// the faster at every size (H200: the second up to 21 % at 8-17 MB, where the first does all or
// most of its work one load at a time; the first up to 1.6 % at 35-134 MB), so the stream ceiling
// of a case is the faster of the two (docs/perf-notes.md, thirty-third session). kChain: timed like
// chained GEMM calls (`lowbit bench --chain`): the next launch may start at once, and the kernel
// waits for the previous one before its stores.
template <int kUnroll, bool kPredicated, bool kChain = false>
__global__ void stream_kernel(const uint4* __restrict__ in, u64 in16, uint4* __restrict__ out, u64 out16,
                              u32 never) {
  if constexpr (kChain) allow_dependent_launch();
  const u64 stride = static_cast<u64>(gridDim.x) * blockDim.x;
  u64 i = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x;
  u32 acc = 0;
  for (; kPredicated ? i < in16 : i + (kUnroll - 1) * stride < in16; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)  // all loads in flight first
      v[u] =
          !kPredicated || i + u * stride < in16 ? ld_stream_v4(in + i + u * stride) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < in16; i += stride) {  // kPredicated: never entered
    const uint4 v = ld_stream_v4(in + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if constexpr (kChain) wait_for_previous_grid();
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

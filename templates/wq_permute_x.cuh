// Act-order layers: the activations in the packed K order, xp[m][j] = x[m][perm[j]], so the GEMM reads
// them with 16-byte loads (a gather inside the GEMM cost twice its time). kTok == 0: into xp [M][K],
// row-major. kTok > 0 (the x_image buckets of wgmma configs with kTok rows per stage): the same values
// straight into the stage image of common/x_image.cuh, rows from M to the end of their row block and k
// past K zero (what wq_x_image_kernel writes from xp, in one kernel fewer).
//
// Thread i of block (bx, by) writes output vector v = bx · blockDim.x + i (8 values) of rows by,
// by + gridDim.y, ...: into xp, k = 8v .. 8v + 7; into the image, 16-byte chunk q = v % 16 of chunk
// c = v / 16, whose word t holds k = 128c + 32t + 8p + 2w and the next (q = 4p + w). Its 8 indices
// into perm are loaded once, before anything that waits for the previous kernel (a chained call's
// predecessor may not write perm: WqGemmPlanOptions::overlap_previous). With `in_shared` (the host's choice
// from 17 rows, where K fits: kK ≤ kRowInShared), each block first copies the whole row of x into shared
// memory with 16-byte loads, independent of the perm loads, and gathers there: 2-byte gathers from global
// memory cost an L1 wavefront each, which bound the kernel at 64/128 rows (H200, 4096×14336 at 128 rows:
// act-order 40.2 µs against 32.2 plain, 32.2 with the copy). Up to 16 rows the gathers are few, and the row
// copies (one per block) only add L2 traffic beside the GEMM's first weights (H200, 1/16 rows: 0-6 % slower;
// docs/perf-notes.md, thirty-seventh session).
#pragma once
#include "common/cp_async.cuh"
#include "common/grid_dependency.cuh"
#include "common/ptx.cuh"
#include "common/x_image.cuh"

namespace lowbit::kern {

constexpr int kRowInShared = 24576;  // x's row in shared memory: at most 48 KiB (no opt-in)

template <int kK, int kTok>
__global__ void __launch_bounds__(1024)
    wq_permute_x_kernel(const u16* __restrict__ x, const int* __restrict__ perm, void* __restrict__ out,
                        int M, int in_shared) {
  static_assert(kK % 8 == 0, "rows of x are whole 16-byte vectors");
  constexpr bool kImage = kTok > 0;
  constexpr int kChunks = (kK + 127) / 128;
  constexpr int kVectors = kImage ? kChunks * 16 : kK / 8;  // output vectors per row
  constexpr bool kShared = kK <= kRowInShared;
  // The next kernel (the GEMM, the sums) may start its weight copies now; it waits for this grid.
  allow_dependent_launch();
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  const bool active = v < kVectors;
  // Word t of the vector: source features src[2t], src[2t + 1] (−1: a k past K, zero). An index
  // outside the row (a perm not made by pack(): pack_on_device does not check g_idx) reads as zero
  // rather than outside the row.
  int src[8];
  auto in_row = [](int i) { return static_cast<unsigned>(i) < static_cast<unsigned>(kK); };
  int c = 0, q = 0;
  if constexpr (kImage) {
    c = v / 16, q = v % 16;
    const int p = q / 4, w = q % 4;
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int k = c * 128 + 32 * t + 8 * p + 2 * w;
      const int2 s = active && k < kK ? __ldg(reinterpret_cast<const int2*>(perm + k)) : make_int2(-1, -1);
      src[2 * t] = s.x, src[2 * t + 1] = s.y;
    }
  } else {
    const int4 s0 = active ? __ldg(reinterpret_cast<const int4*>(perm + 8 * v)) : make_int4(0, 0, 0, 0);
    const int4 s1 = active ? __ldg(reinterpret_cast<const int4*>(perm + 8 * v + 4)) : make_int4(0, 0, 0, 0);
    src[0] = s0.x, src[1] = s0.y, src[2] = s0.z, src[3] = s0.w;
    src[4] = s1.x, src[5] = s1.y, src[6] = s1.z, src[7] = s1.w;
  }
  // Chained calls: x and the output may be in use by the previous kernel until it ends.
  wait_for_previous_grid();
  const int rows = kImage ? (M + kTok - 1) / kTok * kTok : M;
  for (int m = blockIdx.y; m < rows; m += gridDim.y) {
    const u16* row = x + static_cast<i64>(m) * kK;
    u32 pair[4] = {0, 0, 0, 0};  // rows past M (image only) stay zero
    bool gathered = false;
    if constexpr (kShared) {
      // Dynamic: the host asks for kK·2 bytes with in_shared only, so a block that gathers from global
      // memory holds none (static memory here held 8-32 KiB per block beside the GEMM's early blocks
      // and cost 1/16-row calls up to 6 %, H200).
      extern __shared__ uint4 row_s[];
      // The same for the whole block: the barriers below are uniform.
      if (in_shared && m < M) {
        gathered = true;
        // cp.async: every copy in flight at once (a load into registers then a store would wait a
        // round trip per vector).
        for (int i = threadIdx.x; i < kK / 8; i += blockDim.x) cp_async_16(smem_addr(row_s + i), row + 8 * i);
        cp_async_commit();
        cp_async_wait<0>();
        __syncthreads();
        const u16* rs = reinterpret_cast<const u16*>(row_s);
#pragma unroll
        for (int t = 0; t < 4; ++t)
          pair[t] = (in_row(src[2 * t]) ? static_cast<u32>(rs[src[2 * t]]) : 0u) |
                    (in_row(src[2 * t + 1]) ? static_cast<u32>(rs[src[2 * t + 1]]) << 16 : 0u);
        __syncthreads();  // every gather done before the next row overwrites row_s
      }
    }
    if (!gathered && m < M && active) {
#pragma unroll
      for (int t = 0; t < 4; ++t)
        pair[t] = (in_row(src[2 * t]) ? static_cast<u32>(__ldg(row + src[2 * t])) : 0u) |
                  (in_row(src[2 * t + 1]) ? static_cast<u32>(__ldg(row + src[2 * t + 1])) << 16 : 0u);
    }
    if (!active) continue;
    const uint4 value = make_uint4(pair[0], pair[1], pair[2], pair[3]);
    if constexpr (kImage)
      *reinterpret_cast<uint4*>(static_cast<u8*>(out) + x_image_offset<kK, kTok>(m, c, q)) = value;
    else
      *reinterpret_cast<uint4*>(static_cast<u16*>(out) + static_cast<i64>(m) * kK + 8 * v) = value;
  }
}

}  // namespace lowbit::kern

// CPU reference for wq_gemm, from the dequantized weights, accumulated in float64.
#pragma once
#include <cstdint>
#include <vector>

#include "lowbit/pack.hpp"
#include "lowbit/wq_gemm.hpp"

namespace lowbit::ref {

// y[m][n] for m < problem.m and the listed columns (all columns when `cols` is empty), as double.
// x and bias are 16-bit bit patterns of problem.act. Uses up to `threads` threads (0 = hardware).
std::vector<double> wq_gemm_reference(const WqGemmProblem& problem, const PackedWeights& w, const uint16_t* x,
                                      const uint16_t* bias, const std::vector<int64_t>& cols = {},
                                      unsigned threads = 0);

// One weight of `mode` (z_int for SubZeroThenScale, z_float for the float-zero modes).
double dequantize(DequantMode mode, int bits, int q, int z_int, double z_float, double scale);

// A naive float64 loop over the unpacked integers in checkpoint order (no packed layout, no
// permutation involved), for checking the reference itself. problem.mode says which zeros are used.
std::vector<double> wq_gemm_naive(const WqGemmProblem& problem, const uint8_t* q /*[N,K]*/,
                                  const uint8_t* zeros /*[groups,N] or null*/,
                                  const uint16_t* scales /*[groups,N]*/, const uint16_t* x,
                                  const uint16_t* bias, const uint16_t* float_zeros = nullptr /*[groups,N]*/,
                                  const int32_t* g_idx = nullptr /*[K]*/);

}  // namespace lowbit::ref

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

// A naive float64 loop over the unpacked integers (no packed layout involved), for checking the
// reference itself.
std::vector<double> wq_gemm_naive(const WqGemmProblem& problem, const uint8_t* q /*[N,K]*/,
                                  const uint8_t* zeros /*[groups,N] or null*/, const uint16_t* scales /*[groups,N]*/,
                                  const uint16_t* x, const uint16_t* bias);

}  // namespace lowbit::ref

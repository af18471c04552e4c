// The registers ptxas gives v5's registers config with 4 warps along K (1,4,1,4,1,2: 4 tiles a warp, 2
// stages, no staged activations; heuristic v36-v38) in each 3/4-bit format, so that the heuristic knows how
// many of those blocks fit per SM without compiling them.
#include <array>

#include "kernels/wq_gemm_internal.hpp"

namespace lowbit::wq {

namespace {

// One format: registers a thread at one row and at 2-8 rows (the 8-row kernels: one bucket and two hold
// the same counts), per group size 32, 64, 128, 256 and per channel; 0 where none is counted (groups of 256
// with bf16 or float zeros: 82 in some, unmeasured). bf16 4-bit: the larger of the counts before and
// after the seventy-fifth session's dequantization (docs/perf-notes.md § 75.4), so that the heuristic's
// choices move only where the new counts no longer fit. ptxas of CUDA 13.0 for sm_90a, taken from
// tests/unit/heuristic_v37_test.cpp's compiles, which check that no format needs more than this.
struct FormatRegisters {
  int bits;
  DType act;
  DType accum;
  DequantMode mode;
  std::array<int, 5> one_row;
  std::array<int, 5> more_rows;
};

using enum DType;
using enum DequantMode;
constexpr FormatRegisters kRegisters[] = {
    {3, F16, F32, SubZeroThenScale, {77, 77, 80, 78, 64}, {77, 72, 78, 80, 64}},
    {3, F16, F32, Symmetric, {72, 72, 80, 76, 63}, {70, 72, 80, 80, 63}},
    {3, F16, F32, SubFloatZeroThenScale, {72, 72, 74, 0, 72}, {78, 72, 78, 0, 72}},
    {3, F16, F32, ScaleThenAddZero, {76, 76, 76, 80, 72}, {78, 72, 78, 76, 72}},
    {3, BF16, F32, SubZeroThenScale, {77, 77, 78, 0, 64}, {77, 72, 79, 0, 64}},
    {3, BF16, F32, Symmetric, {70, 70, 78, 0, 64}, {72, 70, 80, 0, 63}},
    {3, BF16, F32, SubFloatZeroThenScale, {74, 74, 75, 0, 70}, {77, 78, 77, 0, 70}},
    {3, BF16, F32, ScaleThenAddZero, {78, 76, 78, 0, 70}, {78, 72, 79, 0, 70}},
    {3, F16, F16, SubZeroThenScale, {71, 71, 64, 72, 64}, {72, 72, 71, 72, 72}},
    {3, F16, F16, Symmetric, {63, 63, 64, 64, 64}, {65, 64, 72, 72, 64}},
    {3, F16, F16, SubFloatZeroThenScale, {68, 68, 68, 0, 64}, {72, 71, 71, 0, 64}},
    {3, F16, F16, ScaleThenAddZero, {64, 64, 64, 69, 64}, {70, 70, 71, 72, 72}},
    {4, F16, F32, SubZeroThenScale, {79, 79, 68, 72, 76}, {77, 77, 72, 74, 72}},
    {4, F16, F32, Symmetric, {78, 78, 70, 72, 68}, {75, 74, 75, 76, 64}},
    {4, F16, F32, SubFloatZeroThenScale, {78, 78, 79, 0, 72}, {79, 78, 79, 0, 72}},
    {4, F16, F32, ScaleThenAddZero, {78, 78, 78, 80, 72}, {78, 78, 78, 78, 72}},
    {4, BF16, F32, SubZeroThenScale, {78, 78, 72, 0, 74}, {76, 76, 80, 0, 74}},
    {4, BF16, F32, Symmetric, {80, 80, 71, 0, 66}, {78, 78, 80, 0, 68}},
    {4, BF16, F32, SubFloatZeroThenScale, {78, 78, 78, 0, 74}, {78, 76, 78, 0, 72}},
    {4, BF16, F32, ScaleThenAddZero, {76, 76, 76, 0, 78}, {76, 74, 74, 0, 78}},
    {4, F16, F16, SubZeroThenScale, {72, 72, 72, 72, 67}, {72, 72, 76, 76, 70}},
    {4, F16, F16, Symmetric, {66, 66, 66, 66, 63}, {70, 70, 70, 70, 72}},
    {4, F16, F16, SubFloatZeroThenScale, {69, 69, 69, 0, 66}, {72, 72, 72, 0, 70}},
    {4, F16, F16, ScaleThenAddZero, {70, 70, 70, 72, 66}, {72, 72, 72, 74, 70}},
};

int group_index(int group_size) {
  switch (group_size) {
    case 32:
      return 0;
    case 64:
      return 1;
    case 128:
      return 2;
    case 256:
      return 3;
    case 0:
      return 4;
    default:
      return -1;
  }
}

}  // namespace

int four_warp_register_config_registers(const WqGemmProblem& p, int64_t bucket) {
  const int g = group_index(p.group_size);
  if (g < 0) return 0;
  for (const FormatRegisters& f : kRegisters)
    if (f.bits == p.bits && f.act == p.act && f.accum == p.accum && f.mode == p.mode)
      return bucket == 1 ? f.one_row[g] : f.more_rows[g];
  return 0;
}

}  // namespace lowbit::wq

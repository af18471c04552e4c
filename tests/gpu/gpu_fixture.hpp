// Shared state and checks for the GPU tests: one Runtime per process, layers uploaded to the device,
// and the comparison of a kernel's output against the CPU reference.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "jit/driver.hpp"
#include "lowbit/lowbit.hpp"
#include "support/test_support.hpp"

namespace lowbit::test {

Runtime& gpu_runtime();
std::mt19937_64& gpu_rng();  // seeded fresh per run; the seed is printed once

// A random layer, packed and uploaded, with its activations and a CPU reference for max_m rows.
struct DeviceLayer {
  WqGemmProblem problem;  // m = max_m
  PackedWeights packed;
  std::vector<uint16_t> x, bias;
  jit::DeviceBuffer qweight, scales, zeros, perm, x_dev, bias_dev, y_dev;
  std::vector<double> ref;  // [max_m, N]
  WqGemmArgs args(bool with_bias) const;
};
// problem.mode picks the zeros (integer, none, or float: HQQ-like for SubFloatZeroThenScale,
// −z·s for ScaleThenAddZero); problem.act_order packs through a random g_idx. `craft`, if given,
// may overwrite the random integers, scales and activations before they are packed and uploaded.
using CraftLayer = std::function<void(RandomLayer& weights, std::vector<uint16_t>& x)>;
std::unique_ptr<DeviceLayer> make_layer(const WqGemmProblem& problem, bool with_bias,
                                        const CraftLayer& craft = {});
// Builds plans on all cores at once (compiles dominate the GPU suite); same order as `problems`.
std::vector<std::unique_ptr<WqGemmPlan>> build_plans(const std::vector<WqGemmProblem>& problems,
                                                     const std::vector<int64_t>& m_values,
                                                     const std::vector<WqGemmPlanOptions>& options = {});

// Poisons y, runs, and checks rows [0, m): every element finite and ‖y − ref‖/‖ref‖ within the
// tolerance for the output dtype. Returns the relative error.
double run_and_check(const DeviceLayer& layer, const WqGemmPlan& plan, int64_t m, bool with_bias);
// The check of run_and_check on y as it is (the caller ran and synchronized).
double check_y(const DeviceLayer& layer, int64_t m);
// Downloads rows [0, m) of y as doubles.
std::vector<double> download_y(const DeviceLayer& layer, int64_t m);
double relative_error(const DeviceLayer& layer, const std::vector<double>& y, int64_t m);
double tolerance(const WqGemmProblem& p);
// Poisons y, runs, and requires a lowbit::Error whose message contains `needle` and that nothing
// was written to rows [0, rows_checked).
void require_refused(const DeviceLayer& layer, const WqGemmPlan& plan, const WqGemmArgs& args, int64_t m,
                     const std::string& needle, int64_t rows_checked);

}  // namespace lowbit::test

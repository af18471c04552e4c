// `lowbit bench wq_gemm`: correctness first, then time per call by the protocol of
// shared/BENCHMARKS.md next to the case's stream ceiling and floor.
#pragma once
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "jit/driver.hpp"
#include "lowbit/pack.hpp"
#include "lowbit/wq_gemm.hpp"
#include "tune/ceilings.hpp"

namespace lowbit::jit {
class Context;
}

namespace lowbit::tune {

// Random weights (rotating copies, ≥ 4 × L2 in all), activations and output of one layer, with the
// checks and timings the benchmark and the tuner share.
class WqBenchSetup {
 public:
  WqBenchSetup(Runtime& rt, const WqGemmProblem& base, int64_t max_m);
  WqGemmArgs args(int copy) const;  // weights of copy `copy % copies()`; no workspace (plans own theirs)
  // Poisons y, runs once, checks every element is written and 64 columns against the reference;
  // returns the relative error, throws Error over the tolerance.
  double check(const WqGemmPlan& plan, int64_t m, Stream stream);
  double time_us(const WqGemmPlan& plan, int64_t m, int rounds, int replays);  // median per call
  double stream_us(int64_t m, int rounds, bool chain = false);  // stream ceiling of one call's bytes
  int copies() const { return copies_; }

 private:
  jit::Context& ctx_;
  WqGemmProblem base_;
  std::mt19937_64 rng_;
  PackedWeights w_;
  std::size_t off_s_ = 0, off_z_ = 0;
  int copies_ = 1;
  std::vector<jit::DeviceBuffer> regions_;
  std::vector<uint16_t> x_;
  jit::DeviceBuffer x_dev_, y_dev_, perm_dev_;
};

struct WqBenchOptions {
  std::vector<int64_t> ms{1, 16, 64};
  std::optional<WqGemmConfig> config;  // default: the library's choice
  int replays = 30;
  int rounds = 4;  // graph = rounds × copies calls
  // Where the library's choice is not the heuristic's (a tuned entry), also time the heuristic's.
  bool compare_heuristic = true;
  // Chained calls (WqGemmPlanOptions::overlap_previous), the stream ceiling chained likewise: not the
  // shared/BENCHMARKS.md protocol, what back-to-back calls in an engine see.
  bool chain = false;
};

struct WqBenchRow {
  WqGemmProblem problem;
  std::string config;
  bool ok = false;
  std::string error;      // FAIL reason
  double rel_err = 0;     // ‖y − ref‖ / ‖ref‖ over the checked columns
  std::size_t bytes = 0;  // traffic of one call
  double flops = 0;
  double us = 0;              // median per call, graph replay, rotating weights
  double stream_us = 0;       // stream ceiling of the same bytes
  double floor_us = 0;        // max(bytes / read_bw, flops / mma rate)
  double tc_us = 0;           // flops / mma rate
  double host_us = 0;         // host cost of one plan.run() (enqueue only)
  double heuristic_us = 0;    // the heuristic's config, same protocol (= us when it was the choice)
  std::string config_source;  // "heuristic", "tuned (exact, <file>)", ...
  int copies = 0;
  double plan_ms = 0;        // building the plan (all its buckets): compile, disk hit or memory hit
  std::string plan_sources;  // where each bucket's kernel came from
  double launch_us = 0;      // empty launch in a graph, measured before the layer's first M (empty_launch_us)
  double pct_stream() const { return us > 0 ? 100.0 * std::max(stream_us, tc_us) / us : 0; }
  double pct_floor() const { return us > 0 ? 100.0 * floor_us / us : 0; }
  double gbs() const { return us > 0 ? static_cast<double>(bytes) / (us * 1e3) : 0; }
};

// Benchmarks one (N, K) layer at every M of the options. `base` gives bits/group/mode/dtypes.
std::vector<WqBenchRow> bench_wq_gemm(Runtime& rt, const Ceilings& ceilings, const WqGemmProblem& base,
                                      const WqBenchOptions& options);

// The standard W4A16 cases of shared/BENCHMARKS.md: (N, K) pairs.
std::vector<std::pair<int64_t, int64_t>> standard_wq_shapes();

}  // namespace lowbit::tune

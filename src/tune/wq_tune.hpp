// `lowbit tune wq_gemm`: for each layer and M bucket, time the heuristic's config and its
// neighbours (one field changed at a time, pruned by can_implement) by the benchmark protocol,
// check each against the reference before it may win, and merge the winner into a tuning file.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "lowbit/wq_gemm.hpp"
#include "tune/tuning_db.hpp"

namespace lowbit::tune {

struct WqTuneOptions {
  std::vector<int64_t> ms{1, 2, 4, 8, 16, 32, 64, 128};  // one entry per M bucket
  // Seconds of timing per layer (counted after its compiles), shared evenly by its M buckets; 0 = no
  // limit (the heuristic is always timed first).
  double budget_s = 0;
  int replays = 10;
  int rounds = 2;
  // After the candidate list: time the best config's untried one-field neighbours (wq_neighbours),
  // and again around each new best, at most this many times (0: the list only).
  int refine_rounds = 3;
  // Then the configs within kFinalistWithin of the best (at most kFinalists) are timed this many more
  // times each, in turns; the lowest median of those re-timings wins (0: the single timings decide).
  int final_rounds = 3;
};

// Each entry keeps up to kRunnersUp other configs within kRunnerUpWithin of the best, with times.
inline constexpr std::size_t kRunnersUp = 6;
inline constexpr double kRunnerUpWithin = 1.20;
inline constexpr std::size_t kFinalists = 4;
inline constexpr double kFinalistWithin = 1.05;

struct WqTuneResult {
  std::string key;
  WqGemmConfig best, heuristic;
  double best_us = 0, heuristic_us = 0;
  // What the library ran before this tune (wq::choose: a loaded tuning entry, else the heuristic's choice,
  // which in a deterministic problem may differ from `heuristic`), and its time in this tune (0: not
  // timed, out of budget or failed), so that a tune says what it gains over what it replaces, measured
  // in one process.
  WqGemmConfig served;
  std::string served_by;  // the lookup's source line ("tuned (similar format …)", "heuristic", …)
  double served_us = 0;
  int tried = 0, failed = 0;
  int refined = 0;    // neighbour rounds that moved the best (before the finalists are re-timed)
  int finalists = 0;  // configs re-timed at the end (0: one was clearly best, or final_rounds 0)
};

// Candidate configs for one M bucket: the heuristic first, then its one-field neighbours.
std::vector<WqGemmConfig> wq_candidates(const WqGemmProblem& problem_at_bucket, const Arch& arch,
                                        int sm_count);

// The configs one field away from `config` that can run `problem_at_bucket`: stages ± 1; n_tiles,
// m_tiles, split_k (not with stream K), and for mma.sync warps_k and warps_n, halved and doubled
// (warps_k also × 3/2, 2/3, 3/4 and 4/3 where whole);
// x_shared and x_sums (mma.sync) or x_image (wgmma) toggled.
std::vector<WqGemmConfig> wq_neighbours(const WqGemmProblem& problem_at_bucket, const WqGemmConfig& config,
                                        const Arch& arch);

// Throws lowbit::Error for a problem `lowbit tune` does not tune (act-order layers: their entry is the
// plain layer's).
void check_tunable(const WqGemmProblem& problem);

// Tunes one layer (all buckets of options.ms) and puts the winners into `db`.
std::vector<WqTuneResult> tune_wq_gemm(Runtime& rt, const WqGemmProblem& base, const WqTuneOptions& options,
                                       TuningDb& db,
                                       const std::function<void(const WqTuneResult&)>& on_result);

}  // namespace lowbit::tune

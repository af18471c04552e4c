// lowbit: the offline CLI (info, compile, inspect, bench, cache). Every reporting command takes --json.
#include <cstdio>

#include "cli.hpp"
#include "tune/wq_tune.hpp"

int main(int argc, char** argv) {
  using namespace lowbit::cli;
  CLI::App app{"lowbit: JIT runtime for low-bit GPU inference kernels"};
  app.require_subcommand(1);
  CommonFlags common;
  WqFlags wq;
  std::string family;  // every family-taking command validates it; wq_gemm is the only one so far

  auto* info = app.add_subcommand("info", "driver, device, NVRTC, cache and tuning files in use");
  add_common(info, common, true);

  auto* compile = app.add_subcommand("compile", "build kernels into the cache (no GPU needed with --arch)");
  compile->add_option("family", family, "kernel family: wq_gemm, or wq_pack (the device packers of --bits)")
      ->required()
      ->check(CLI::IsMember({"wq_gemm", "wq_pack"}));
  add_common(compile, common, true);
  add_wq(compile, wq);
  compile->add_option("--m-buckets,--m", wq.ms, "M values whose buckets to build, e.g. 1,16")
      ->default_val("1,16");
  compile->add_flag("--chain", wq.chain,
                    "also the chained kernels (WqGemmPlanOptions::overlap_previous, sm_90: their own cache "
                    "entries), which a chained plan would otherwise compile when it is built");

  auto* inspect = app.add_subcommand("inspect", "show a kernel's source, PTX or resource usage");
  inspect->add_option("family", family, "kernel family: wq_gemm")
      ->required()
      ->check(CLI::IsMember({"wq_gemm"}));
  add_common(inspect, common, true);
  add_wq(inspect, wq);
  inspect->add_option("--m", wq.ms, "M (picks the bucket)")->default_val("1");
  bool want_source = false, want_ptx = false, want_resources = false;
  inspect->add_flag("--source", want_source, "the generated instantiation source and the kernel template");
  inspect->add_flag("--ptx", want_ptx, "the PTX");
  inspect->add_flag("--resources", want_resources, "registers, shared memory, spills (ptxas)");
  bool want_explain = false;
  inspect->add_flag("--explain", want_explain,
                    "which step chose the config (tuning entry or heuristic) and why");
  inspect->add_flag("--chain", wq.chain,
                    "the chained kernel (WqGemmPlanOptions::overlap_previous, sm_90; act-order layers run it "
                    "in every call there)");

  auto* bench = app.add_subcommand("bench", "time kernels by the protocol of shared/BENCHMARKS.md");
  bench->add_option("family", family, "kernel family: wq_gemm")
      ->required()
      ->check(CLI::IsMember({"wq_gemm"}));
  add_common(bench, common, true);
  add_wq(bench, wq);
  bench->add_option("--m", wq.ms, "M values, e.g. 1,16,64")->default_val("1,16,64");
  int replays = 30;
  bench->add_option("--replays", replays, "graph replays per case (median)")->default_val(30);
  std::string save;
  bench->add_option("--save", save, "also write the --json report to this file");
  bench->add_flag("--chain", wq.chain,
                  "chained calls: each may start while the previous runs (programmatic dependent launch, "
                  "sm_90; WqGemmPlanOptions::overlap_previous), the stream ceiling chained likewise; not the "
                  "BENCHMARKS.md protocol");

  auto* tune = app.add_subcommand("tune", "tune configs on this GPU and merge them into a tuning file");
  tune->add_option("family", family, "kernel family: wq_gemm")->required()->check(CLI::IsMember({"wq_gemm"}));
  add_common(tune, common, true);
  add_wq(tune, wq);
  tune->add_option("--m", wq.ms, "M values (one entry per bucket)")->default_val("1,2,4,8,16,32,64,128");
  std::string db_path;
  double budget = 0;
  tune->add_option("--db", db_path, "tuning file to merge into (created if missing)")->required();
  tune->add_option("--budget", budget,
                   "seconds of timing per layer (its compiles come first, uncounted), shared evenly by its M "
                   "buckets (0 = try every candidate)")
      ->default_val(0);
  const lowbit::tune::WqTuneOptions tune_defaults;  // one source for the library's and the CLI's defaults
  int refine = tune_defaults.refine_rounds;
  tune->add_option("--refine", refine,
                   "rounds of timing the best config's untried one-field neighbours after the candidate list "
                   "(0 = the list only)")
      ->default_val(refine)
      ->check(CLI::Range(0, 10));
  int final_rounds = tune_defaults.final_rounds;
  tune->add_option("--final", final_rounds,
                   "more timings of each config within 5 % of the best (at most 4), in turns; the lowest "
                   "median wins (0 = one timing decides)")
      ->default_val(final_rounds)
      ->check(CLI::Range(0, 20));
  std::string devices;
  tune->add_option("--devices", devices,
                   "GPUs to tune on at once, e.g. 0,1,2,3 (one worker each; default --device)");
  bool resume = false;
  tune->add_flag("--resume", resume,
                 "tune only the M buckets --db lacks (to go on after an interrupted run)");

  auto* cache = app.add_subcommand("cache", "list, verify or prune the kernel cache");
  std::string action;
  cache->add_option("action", action, "ls | verify | prune")
      ->required()
      ->check(CLI::IsMember({"ls", "verify", "prune"}));
  bool prune_all = false;
  double older_than = -1;
  cache->add_flag("--all", prune_all, "prune: remove every entry, not only invalid ones");
  cache->add_option("--older-than-days", older_than, "prune: also remove entries older than this");
  add_common(cache, common, false);

  CLI11_PARSE(app, argc, argv);
  try {
    if (*info) return run_info(common);
    if (*compile) return run_compile(common, wq, family);
    if (*inspect) return run_inspect(common, wq, want_source, want_ptx, want_resources, want_explain);
    if (*bench) return run_bench(common, wq, replays, save);
    if (*tune) return run_tune(common, wq, db_path, budget, refine, final_rounds, devices, resume);
    if (*cache) return run_cache(common, action, prune_all, older_than);
  } catch (const lowbit::Error& e) {
    std::fprintf(stderr, "lowbit: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {  // e.g. a file system error while another process edits the cache
    std::fprintf(stderr, "lowbit: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

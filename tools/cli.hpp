// Shared pieces of the `lowbit` CLI: the wq_gemm problem flags, list parsing, model presets, output.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lowbit/lowbit.hpp"

namespace lowbit::cli {

struct CommonFlags {
  std::string arch;         // --arch
  std::string cache_dir;    // --cache-dir
  int device = 0;           // --device
  int sm_count = 0;         // --sm-count (offline builds)
  std::string device_name;  // --device-name (offline builds: whose tuning file wins)
  bool json = false;        // --json
};

struct WqFlags {
  int64_t n = 0, k = 0;
  int bits = 4;
  int group = 128;
  std::string act = "f16", out = "", accum = "f32";
  bool symmetric = false;   // --symmetric: same as --mode sym
  std::string mode = "zp";  // zp | sym | fz | sz
  bool act_order = false;
  bool deterministic = false;
  std::string ms;      // "1,16,64"
  std::string config;  // "m_tiles,n_tiles,warps_n,warps_k,split_k"
  std::string model;   // preset name
  std::string cases;   // "standard"
  std::string shapes;  // file of "N K" lines
  bool chain = false;  // --chain: chained calls (bench: timed so; compile: their kernels built too)
};

void add_common(CLI::App* app, CommonFlags& f, bool with_device);
void add_wq(CLI::App* app, WqFlags& f);

std::vector<int64_t> parse_int_list(const std::string& s, const char* flag);
std::optional<WqGemmConfig> parse_config(const std::string& s);

// The (N, K) layers the flags name: --n/--k, a --model preset, or --cases standard.
std::vector<std::pair<int64_t, int64_t>> wq_shapes(const WqFlags& f);
DequantMode parse_mode(const std::string& s);  // zp, sym, fz, sz
WqGemmProblem wq_problem(const WqFlags& f, int64_t n, int64_t k);
std::vector<std::string> model_names();

// A runtime for the flags: offline when there is no device, or when --arch names another arch.
Runtime make_runtime(const CommonFlags& f, bool need_device);
// Options for a runtime on GPU `device` (throws when there is no CUDA device).
RuntimeOptions device_runtime_options(const CommonFlags& f, int device);

void print_json(const nlohmann::json& j);

int run_info(const CommonFlags& f);
int run_compile(const CommonFlags& f, const WqFlags& w, const std::string& family);
int run_inspect(const CommonFlags& f, const WqFlags& w, bool source, bool ptx, bool resources, bool explain);
int run_bench(const CommonFlags& f, const WqFlags& w, int replays, const std::string& save);
int run_tune(const CommonFlags& f, const WqFlags& w, const std::string& db_path, double budget_s,
             int refine_rounds, int final_rounds, const std::string& devices, bool resume);
// "[#####.....] 12/48 problems, 30 s elapsed, ETA 90 s" (ETA "?" before the first result).
std::string progress_bar(std::size_t done, std::size_t total, double elapsed_s, int width);
int run_cache(const CommonFlags& f, const std::string& action, bool all, double older_than_days);

}  // namespace lowbit::cli

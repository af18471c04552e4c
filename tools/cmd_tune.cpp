// `lowbit tune`: layers are handed out to one worker per GPU (--devices), each with its own
// runtime; each result (one layer at one M bucket) is merged into the tuning file as soon as it is
// timed (atomically, under a lock), so an interrupted run loses at most one problem per worker, and
// --resume tunes only the buckets the file lacks. On a terminal a progress bar with an
// ETA is redrawn under the result lines; otherwise plain lines.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <mutex>
#include <string_view>
#include <thread>

#include "cli.hpp"
#include "common/check.hpp"
#include "jit/context.hpp"
#include "jit/embedded_templates.hpp"
#include "jit/kernel_spec.hpp"
#include "jit/nvrtc.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "tune/wq_tune.hpp"

namespace lowbit::cli {

std::string progress_bar(std::size_t done, std::size_t total, double elapsed_s, int width) {
  const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const int filled = static_cast<int>(frac * width + 0.5);
  std::string bar = "[" + std::string(static_cast<std::size_t>(filled), '#') +
                    std::string(static_cast<std::size_t>(width - filled), '.') + "]";
  const double eta = done ? elapsed_s / static_cast<double>(done) * static_cast<double>(total - done) : 0.0;
  return fmt::format("{} {}/{} problems, {:.0f} s elapsed, ETA {}", bar, done, total, elapsed_s,
                     done ? fmt::format("{:.0f} s", eta) : std::string("?"));
}

namespace {

tune::TuningMeta meta_of(Runtime& rt) {
  const DeviceInfo& d = rt.device();
  char date[16] = {};
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  return {d.name, rt.arch().str(), jit::lowbit_version(), jit::nvrtc_version(), jit::templates_digest(),
          date,   d.sm_count};
}

// ", served 42.04 (similar format <key>)": what the library ran before the tune where a tuning entry
// chose it (not for the heuristic's choice, which a deterministic problem may reshape, nor the safe
// default), with its time in this tune ("not timed" when the budget ran out first or it failed).
std::string served_note(const tune::WqTuneResult& r) {
  constexpr std::string_view kTuned = "tuned (";
  if (!r.served_by.starts_with(kTuned)) return "";
  // "tuned (similar format <key>, <file>)…" → "similar format <key>" (keys hold no ", "; paths may)
  const std::size_t from = kTuned.size();
  const std::size_t to = r.served_by.find(", ", from);
  const std::string by = r.served_by.substr(from, to == std::string::npos ? std::string::npos : to - from);
  if (r.served_us <= 0) return fmt::format(", served not timed or failed ({})", by);
  return fmt::format(", served {:.2f} ({})", r.served_us, by);
}

}  // namespace

int run_tune(const CommonFlags& f, const WqFlags& w, const std::string& db_path, double budget_s,
             int refine_rounds, int final_rounds, const std::string& devices_list, bool resume) {
  LOWBIT_CHECK(!db_path.empty(), "--db is required: the tuning file to merge results into");
  std::vector<int64_t> devices =
      devices_list.empty() ? std::vector<int64_t>{f.device} : parse_int_list(devices_list, "--devices");
  tune::WqTuneOptions opt;
  opt.ms = parse_int_list(w.ms, "--m");
  // A problem is a layer at one M bucket: --m 3,4 is one problem (bucket 4), counted once.
  for (int64_t& m : opt.ms) m = m_bucket(m);
  std::sort(opt.ms.begin(), opt.ms.end());
  opt.ms.erase(std::unique(opt.ms.begin(), opt.ms.end()), opt.ms.end());
  opt.budget_s = budget_s;
  opt.refine_rounds = refine_rounds;
  opt.final_rounds = final_rounds;
  const auto shapes = wq_shapes(w);
  // Work: a layer and the M values of it still to tune (one tuning call per layer, so its
  // candidates compile together and its weights are made once).
  struct Work {
    WqGemmProblem problem;
    std::vector<int64_t> ms;
  };
  std::vector<Work> work;
  for (const auto& [n, k] : shapes) {
    work.push_back({wq_problem(w, n, k), opt.ms});  // bad flags fail before any GPU work
    tune::check_tunable(work.back().problem);
  }

  // One runtime per device, made here so a missing device fails before anything is tuned. The
  // file takes the first device's meta; every device must be the same GPU model.
  std::vector<std::unique_ptr<Runtime>> runtimes;
  for (int64_t d : devices) {
    runtimes.push_back(std::make_unique<Runtime>(device_runtime_options(f, static_cast<int>(d))));
    LOWBIT_CHECK(runtimes.back()->device().name == runtimes.front()->device().name,
                 "--devices: device {} is a {}, device {} a {}: one tuning file describes one GPU model", d,
                 runtimes.back()->device().name, devices.front(), runtimes.front()->device().name);
  }
  const tune::TuningMeta meta = meta_of(*runtimes.front());
  if (resume) {  // the M buckets the file already has (exact entries) are done
    std::vector<std::string> warnings;
    const tune::TuningDb have = tune::TuningDb::load(db_path, runtimes.front()->arch(), &warnings);
    for (Work& wk : work)
      std::erase_if(wk.ms, [&](int64_t m) {
        const auto hit = have.lookup("wq_gemm", wq::tuning_key(wk.problem, m));  // m is a bucket
        return hit && hit->step == "exact";
      });
    std::erase_if(work, [](const Work& wk) { return wk.ms.empty(); });
  }
  std::size_t total = 0;  // problems: layers × their M buckets
  for (const Work& wk : work) total += wk.ms.size();
  if (resume && !f.json)
    std::printf("--resume: %zu layer(s) left to tune, %zu problem(s)\n", work.size(), total);

  const bool tty = ::isatty(1) && !f.json;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::mutex mu;  // output, results, the file
  std::size_t done = 0;
  int failures = 0;
  nlohmann::json all = nlohmann::json::array();
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> errors(runtimes.size());

  auto worker = [&](std::size_t wi) {
    try {
      Runtime& rt = *runtimes[wi];
      for (std::size_t i; (i = next++) < work.size();) {
        tune::WqTuneOptions layer_opt = opt;
        layer_opt.ms = work[i].ms;
        tune::TuningDb db;
        db.meta = meta;
        tune::tune_wq_gemm(rt, work[i].problem, layer_opt, db, [&](const tune::WqTuneResult& r) {
          std::lock_guard<std::mutex> lock(mu);
          ++done;
          failures += r.best_us >= 1e300 ? 1 : 0;
          db.save(db_path);  // this result (and the layer's earlier ones), merged with the others'
          all.push_back({{"key", r.key},
                         {"device", devices[wi]},
                         {"best", wq::to_json(r.best)},
                         {"best_us", r.best_us},
                         {"heuristic_us", r.heuristic_us},
                         {"served", wq::to_json(r.served)},
                         {"served_by", r.served_by},
                         {"served_us", r.served_us},
                         {"tried", r.tried},
                         {"failed", r.failed},
                         {"refined", r.refined},
                         {"finalists", r.finalists}});
          if (f.json) return;
          std::printf("%s%-36s best %8.2f us (heuristic %8.2f%s, %2d tried, %d failed%s%s)  %s%s\n",
                      tty ? "\r\033[K" : "", r.key.c_str(), r.best_us, r.heuristic_us, served_note(r).c_str(),
                      r.tried, r.failed,
                      r.refined ? fmt::format(", {} by neighbours", r.refined).c_str() : "",
                      r.finalists ? fmt::format(", median of {} finalists", r.finalists).c_str() : "",
                      r.best.str().c_str(),
                      devices.size() > 1 ? fmt::format("  [device {}]", devices[wi]).c_str() : "");
          if (tty)
            std::printf("%s", progress_bar(done, total, elapsed(), 30).c_str());
          else
            std::printf("%s; saved %s\n", progress_bar(done, total, elapsed(), 20).c_str(), db_path.c_str());
          std::fflush(stdout);
        });
      }
    } catch (...) {
      errors[wi] = std::current_exception();
      next = work.size();  // the others stop after their current layer
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t wi = 1; wi < runtimes.size(); ++wi) pool.emplace_back(worker, wi);
  worker(0);
  for (auto& t : pool) t.join();
  if (tty)
    std::printf("\r\033[K%s; saved %s\n", progress_bar(done, total, elapsed(), 30).c_str(), db_path.c_str());
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  if (f.json) print_json({{"db", db_path}, {"device", meta.device}, {"devices", devices}, {"results", all}});
  return failures ? 1 : 0;
}

}  // namespace lowbit::cli

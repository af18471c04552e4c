#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "cli.hpp"
#include "common/check.hpp"
#include "jit/context.hpp"
#include "jit/embedded_templates.hpp"
#include "jit/kernel_spec.hpp"
#include "jit/nvrtc.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "tune/wq_tune.hpp"

namespace lowbit::cli {

int run_tune(const CommonFlags& f, const WqFlags& w, const std::string& db_path, double budget_s) {
  LOWBIT_CHECK(!db_path.empty(), "--db is required: the tuning file to merge results into");
  Runtime rt = make_runtime(f, true);
  const DeviceInfo& d = rt.device();
  tune::TuningDb db;
  char date[16] = {};
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  db.meta = {d.name, rt.arch().str(), jit::lowbit_version(), jit::nvrtc_version(), jit::templates_digest(),
             date,   d.sm_count};
  tune::WqTuneOptions opt;
  opt.ms = parse_int_list(w.ms, "--m");
  opt.budget_s = budget_s;
  const auto shapes = wq_shapes(w);
  const bool tty = ::isatty(1);
  const auto start = std::chrono::steady_clock::now();
  nlohmann::json all = nlohmann::json::array();
  int failures = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const WqGemmProblem p = wq_problem(w, shapes[i].first, shapes[i].second);
    tune::tune_wq_gemm(rt, p, opt, db, [&](const tune::WqTuneResult& r) {
      failures += r.best_us >= 1e300 ? 1 : 0;
      all.push_back({{"key", r.key},
                     {"best", wq::to_json(r.best)},
                     {"best_us", r.best_us},
                     {"heuristic_us", r.heuristic_us},
                     {"tried", r.tried},
                     {"failed", r.failed}});
      if (f.json) return;
      std::printf("%s%-36s best %8.2f us (heuristic %8.2f, %2d tried, %d failed)  %s\n", tty ? "\r" : "",
                  r.key.c_str(), r.best_us, r.heuristic_us, r.tried, r.failed, r.best.str().c_str());
      std::fflush(stdout);
    });
    db.save(db_path);  // after every layer: an interrupted run loses at most one layer
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!f.json)
      std::printf("[%zu/%zu layers] %.0f s elapsed, ETA %.0f s; saved %s\n", i + 1, shapes.size(), el,
                  el / static_cast<double>(i + 1) * static_cast<double>(shapes.size() - i - 1),
                  db_path.c_str());
  }
  if (f.json) print_json({{"db", db_path}, {"device", d.name}, {"results", all}});
  return failures ? 1 : 0;
}

}  // namespace lowbit::cli

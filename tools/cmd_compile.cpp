#include <chrono>
#include <cstdio>

#include "cli.hpp"

namespace lowbit::cli {

int run_compile(const CommonFlags& f, const WqFlags& w, const std::string& family) {
  Runtime rt = make_runtime(f, false);
  // wq_gemm: the kernels of the layers and M buckets given; wq_pack: the device packers of --bits.
  std::vector<std::vector<KernelRecord>> batches;
  const auto start = std::chrono::steady_clock::now();
  if (family == "wq_pack") {
    batches.push_back(compile_pack_on_device(rt, w.bits));
  } else {
    const auto ms = parse_int_list(w.ms, "--m-buckets");
    const auto config = parse_config(w.config);
    std::vector<WqGemmProblem> layers;
    for (auto [n, k] : wq_shapes(w)) layers.push_back(wq_problem(w, n, k));
    batches.push_back(compile_wq_gemm_layers(rt, layers, ms, config, w.chain));
  }
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json rows = nlohmann::json::array();
  if (!f.json)
    std::printf("%-62s %5s %-7s %-13s %9s  %s\n", "kernel", "m<=", "arch", "result", "ms", "config");
  double total_ms = 0;
  for (const auto& batch : batches) {
    for (const KernelRecord& r : batch) {
      total_ms += r.total_ms;
      rows.push_back({{"name", r.name},
                      {"m_bucket", r.m_bucket},
                      {"arch", r.arch},
                      {"result", to_string(r.source)},
                      {"ms", r.total_ms},
                      {"compile_ms", r.compile_ms},
                      {"digest", r.digest},
                      {"config", r.config},
                      {"config_source", r.config_source}});
      if (!f.json)
        std::printf("%-62s %5lld %-7s %-13s %9.1f  %s\n", r.name.c_str(), static_cast<long long>(r.m_bucket),
                    r.arch.c_str(), std::string(to_string(r.source)).c_str(), r.total_ms, r.config.c_str());
    }
  }
  if (f.json) {
    print_json(
        {{"arch", rt.arch().str()}, {"cache_dir", rt.cache_dir()}, {"wall_ms", wall_ms}, {"kernels", rows}});
  } else {
    // The kernels compile in parallel: the per-kernel times add up to more than the wall time.
    std::printf("%zu kernel(s) for %s in %.1f ms (%.1f ms summed over kernels); cache: %s\n", rows.size(),
                rt.arch().str().c_str(), wall_ms, total_ms,
                rt.cache_dir().empty() ? "(memory only)" : rt.cache_dir().c_str());
  }
  return 0;
}

}  // namespace lowbit::cli

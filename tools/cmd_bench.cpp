#include <cstdio>
#include <fstream>

#include "cli.hpp"
#include "common/check.hpp"
#include "jit/context.hpp"
#include "jit/nvrtc.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "tune/wq_bench.hpp"

namespace lowbit::cli {

int run_bench(const CommonFlags& f, const WqFlags& w, int replays, const std::string& save) {
  const bool chain = w.chain;
  Runtime rt = make_runtime(f, true);
  const DeviceInfo& d = rt.device();
  const tune::Ceilings ceil = tune::measure_ceilings(rt.context());
  tune::WqBenchOptions opt;
  opt.ms = parse_int_list(w.ms, "--m");
  opt.config = parse_config(w.config);
  opt.replays = replays;
  opt.chain = chain;
  nlohmann::json j = {
      {"device", d.name},
      {"arch", d.arch.str()},
      {"sm_count", d.sm_count},
      {"l2_bytes", d.l2_bytes},
      {"clock_khz", d.clock_khz},
      {"mem_clock_khz", d.mem_clock_khz},
      {"driver_version", d.driver_version},
      {"nvrtc", jit::nvrtc_version()},
      {"lowbit", jit::lowbit_version()},
      {"ceilings",
       {{"read_gbs", ceil.read_gbs}, {"mma_tflops", ceil.mma_tflops}, {"graph_launch_us", ceil.empty_us}}},
      {"chain", chain}};
  if (!f.json) {
    std::printf("device   %s (%s, %d SMs, L2 %lld MiB), driver %d, NVRTC %s, lowbit %s\n", d.name.c_str(),
                d.arch.str().c_str(), d.sm_count, static_cast<long long>(d.l2_bytes >> 20), d.driver_version,
                jit::nvrtc_version().c_str(), jit::lowbit_version().c_str());
    std::printf("ceilings read %.0f GB/s, mma.sync f16 %.0f TFLOP/s, empty launch in a graph %.2f us\n",
                ceil.read_gbs, ceil.mma_tflops, ceil.empty_us);
    if (chain)
      std::printf(
          "chained: consecutive calls (and the stream ceiling's) overlap by programmatic dependent launch "
          "(not the BENCHMARKS.md protocol)\n");
    std::printf("%-24s %4s %-40s %8s %8s %8s %8s %7s %7s %6s %6s %8s %s\n", "case", "M", "config", "rel.err",
                "us", "stream", "floor", "%strm", "%floor", "GB/s", "host", "heur.us", "chosen by");
  }
  nlohmann::json cases = nlohmann::json::array();
  int failures = 0;
  for (auto [n, k] : wq_shapes(w)) {
    const WqGemmProblem p = wq_problem(w, n, k);
    const std::string label =
        fmt::format("w{}g{}{}{} {}{} {}x{}", p.bits, p.group_size, wq::mode_tag(p.mode),
                    p.act_order ? "ao" : "", to_string(p.act), p.accum == DType::F16 ? "a16" : "", n, k);
    const auto rows = tune::bench_wq_gemm(rt, ceil, p, opt);
    if (!f.json && !rows.empty())
      std::printf("# %s: plan built in %.1f ms (%s); empty launch in a graph %.2f us before it\n",
                  label.c_str(), rows.front().plan_ms, rows.front().plan_sources.c_str(),
                  rows.front().launch_us);
    for (const auto& r : rows) {
      failures += r.ok ? 0 : 1;
      cases.push_back({{"case", label},
                       {"n", n},
                       {"k", k},
                       {"m", r.problem.m},
                       {"bits", p.bits},
                       {"group", p.group_size},
                       {"act", to_string(p.act)},
                       {"accum", to_string(p.accum)},
                       {"config", r.config},
                       {"ok", r.ok},
                       {"error", r.error},
                       {"rel_err", r.rel_err},
                       {"us", r.us},
                       {"stream_us", r.stream_us},
                       {"floor_us", r.floor_us},
                       {"tc_us", r.tc_us},
                       {"pct_stream", r.pct_stream()},
                       {"pct_floor", r.pct_floor()},
                       {"gbs", r.gbs()},
                       {"bytes", r.bytes},
                       {"host_us", r.host_us},
                       {"copies", r.copies},
                       {"plan_ms", r.plan_ms},
                       {"plan_sources", r.plan_sources},
                       {"graph_launch_us", r.launch_us},
                       {"heuristic_us", r.heuristic_us},
                       {"config_source", r.config_source}});
      if (f.json) continue;
      if (!r.ok) {
        std::printf("%-24s %4lld %-40s FAIL: %s\n", label.c_str(), static_cast<long long>(r.problem.m),
                    r.config.c_str(), r.error.c_str());
      } else {
        std::printf("%-24s %4lld %-40s %8.1e %8.2f %8.2f %8.2f %7.1f %7.1f %6.0f %6.2f %8.2f %s\n",
                    label.c_str(), static_cast<long long>(r.problem.m), r.config.c_str(), r.rel_err, r.us,
                    r.stream_us, r.floor_us, r.pct_stream(), r.pct_floor(), r.gbs(), r.host_us,
                    r.heuristic_us, r.config_source.substr(0, r.config_source.find(" (")).c_str());
      }
      std::fflush(stdout);
    }
  }
  j["cases"] = cases;
  if (f.json) print_json(j);
  if (!save.empty()) {
    std::ofstream(save) << j.dump(2) << "\n";
  }
  return failures ? 1 : 0;
}

}  // namespace lowbit::cli

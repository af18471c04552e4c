#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "cli.hpp"
#include "common/check.hpp"
#include "jit/context.hpp"
#include "jit/embedded_templates.hpp"
#include "jit/nvrtc.hpp"
#include "kernels/wq_gemm_internal.hpp"

namespace lowbit::cli {

int run_inspect(const CommonFlags& f, const WqFlags& w, bool source, bool ptx, bool resources, bool explain) {
  Runtime rt = make_runtime(f, false);
  const auto ms = parse_int_list(w.ms, "--m");
  LOWBIT_CHECK(ms.size() == 1, "--m = '{}': inspect takes one M", w.ms);
  const auto shapes = wq_shapes(w);
  LOWBIT_CHECK(shapes.size() == 1, "inspect takes one layer: give --n and --k");
  WqGemmProblem p = wq_problem(w, shapes[0].first, shapes[0].second);
  p.m = ms[0];
  const wq::Choice choice =
      wq::choose(rt.context(), p, m_bucket(p.m), parse_config(w.config), {true, w.chain});
  const WqGemmConfig& config = choice.config;
  std::string why;
  LOWBIT_CHECK(can_implement(p, config, rt.arch(), &why), "{}", why);
  // The kernel a plan would run: the chained one for --chain (with a plan's stages, unless forced) and
  // for act-order layers on sm_90.
  const WqGemmConfig run_config =
      w.config.empty() ? wq::config_as_run(p, config, rt.arch(), w.chain) : config;
  const std::string chosen_by = choice.source + wq::stages_note(config, run_config);
  const jit::KernelSpec spec =
      wq::kernel_spec(p, run_config, m_bucket(p.m), wq::uses_chained_kernel(p, config, rt.arch(), w.chain));
  if (!source && !ptx && !resources && !explain) resources = true;
  nlohmann::json j = {{"name", spec.name},          {"arch", rt.arch().str()},
                      {"config", run_config.str()}, {"problem", p.str()},
                      {"config_source", chosen_by}, {"tuning_key", wq::tuning_key(p, m_bucket(p.m)).str()},
                      {"k_split", wq::k_split_path(run_config, rt.arch())}};
  if (explain) {
    // What the choice costs a plan build: the whole chain (tuning lookup, validation, heuristic).
    const int reps = 2000;
    std::vector<double> us(5);
    for (double& u : us) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < reps; ++i)
        (void)wq::choose(rt.context(), p, m_bucket(p.m), parse_config(w.config), {true, w.chain});
      u = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
    }
    std::sort(us.begin(), us.end());
    j["choose_us"] = us[2];
    if (!f.json)
      std::printf(
          "%s\n  M bucket %lld, tuning key %s\n  %s\n  K pieces meet: %s\n  chosen by: %s\n  choosing took %.2f "
          "us (median of 5 x %d)\n",
          p.str().c_str(), static_cast<long long>(m_bucket(p.m)), j["tuning_key"].get<std::string>().c_str(),
          run_config.str().c_str(), wq::k_split_path(run_config, rt.arch()), chosen_by.c_str(), us[2], reps);
  }
  if (source) {
    std::string templ;
    for (const auto& t : jit::embedded_templates())
      if (std::string(t.name) == "wq_gemm.cuh") templ = std::string(t.bytes);
    j["source"] = spec.source;
    j["template"] = templ;
    if (!f.json)
      std::printf("// ---- instantiation source ----\n%s\n// ---- wq_gemm.cuh ----\n%s\n",
                  spec.source.c_str(), templ.c_str());
  }
  if (ptx) {
    auto r = jit::nvrtc_compile({spec.source, spec.name_expression, rt.arch(), jit::CompileOutput::Ptx});
    j["ptx"] = r.binary;
    if (!f.json) std::printf("%s\n", r.binary.c_str());
  }
  if (resources) {
    // A fresh compile: its ptxas -v log holds registers, shared memory, stack and spills.
    auto r = jit::nvrtc_compile({spec.source, spec.name_expression, rt.arch(), jit::CompileOutput::Cubin});
    auto grab = [&](const char* pattern) { return jit::ptxas_log_number(r.log, pattern); };
    nlohmann::json res = {{"registers", grab(R"(Used (\d+) registers)")},
                          {"shared_bytes", grab(R"((\d+) bytes smem)")},
                          {"stack_bytes", grab(R"((\d+) bytes stack frame)")},
                          {"spill_store_bytes", grab(R"((\d+) bytes spill stores)")},
                          {"spill_load_bytes", grab(R"((\d+) bytes spill loads)")},
                          {"dynamic_shared_bytes", wq::smem_bytes(p, run_config, rt.arch())},
                          {"compile_ms", r.compile_ms},
                          {"ptxas_log", r.log}};
    if (!rt.offline()) {
      const auto& k = rt.context().load(spec);
      res["driver_registers"] = k.num_regs;
      res["driver_local_bytes"] = k.local_bytes;
      res["driver_static_smem"] = k.static_smem;
    }
    j["resources"] = res;
    if (!f.json)
      std::printf(
          "%s (%s)\n  %s\n  registers %ld, static shared %ld B, dynamic shared %zu B, stack %ld B, spill "
          "stores %ld B, "
          "spill loads %ld B\n",
          spec.name.c_str(), rt.arch().str().c_str(), run_config.str().c_str(), res["registers"].get<long>(),
          std::max(0L, res["shared_bytes"].get<long>()), wq::smem_bytes(p, run_config, rt.arch()),
          res["stack_bytes"].get<long>(), res["spill_store_bytes"].get<long>(),
          res["spill_load_bytes"].get<long>());
  }
  if (f.json) print_json(j);
  return 0;
}

}  // namespace lowbit::cli

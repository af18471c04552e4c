#include <cstdio>

#include "cli.hpp"
#include "common/env.hpp"
#include "jit/context.hpp"
#include "jit/disk_cache.hpp"
#include "jit/embedded_templates.hpp"
#include "jit/kernel_spec.hpp"
#include "jit/nvrtc.hpp"

namespace lowbit::cli {

int run_info(const CommonFlags& f) {
  nlohmann::json j;
  std::string why;
  const bool have = cuda_device_available(&why);
  j["driver"] = have ? nlohmann::json("loaded") : nlohmann::json("unavailable: " + why);
  j["nvrtc"] = jit::nvrtc_version();
  j["lowbit"] = jit::lowbit_version();
  j["templates_digest"] = jit::templates_digest();
  j["tuning_files"] = nlohmann::json::array();
  if (have) {
    RuntimeOptions o;
    o.device = f.device;
    o.cache_dir = f.cache_dir;
    Runtime rt(o);
    j["tuning_files"] = rt.context().tuning().files;
    j["tuning_entries"] = rt.context().tuning().size();
    const DeviceInfo& d = rt.device();
    j["device"] = {{"ordinal", d.ordinal},
                   {"name", d.name},
                   {"arch", d.arch.str()},
                   {"sm_count", d.sm_count},
                   {"l2_bytes", d.l2_bytes},
                   {"smem_optin_per_block", d.smem_optin_per_block},
                   {"clock_khz", d.clock_khz},
                   {"mem_clock_khz", d.mem_clock_khz},
                   {"mem_bus_bits", d.mem_bus_bits},
                   {"total_mem_bytes", d.total_mem_bytes},
                   {"driver_version", d.driver_version}};
  }
  const bool disk_off = env_flag("LOWBIT_NO_DISK_CACHE");
  jit::DiskCache disk(disk_off ? std::string() : jit::default_cache_root(f.cache_dir));
  const auto entries = disk.list();
  j["cache"] = {{"dir", disk.enabled() ? disk.root() : std::string("(off)")},
                {"entries", entries.size()},
                {"bytes", disk.total_bytes()}};
  nlohmann::json env = nlohmann::json::object();
  for (const char* name :
       {"LOWBIT_CACHE_DIR", "LOWBIT_NO_DISK_CACHE", "LOWBIT_NO_COMPILE", "LOWBIT_DUMP_SOURCE",
        "LOWBIT_PRINT_CONFIGS", "LOWBIT_TUNING_DB", "LOWBIT_NO_TUNING_DB", "LOWBIT_NO_PDL"})
    if (auto v = env_string(name)) env[name] = *v;
  j["env"] = env;
  if (f.json) {
    print_json(j);
    return 0;
  }
  std::printf("lowbit %s  (templates %s)\n", j["lowbit"].get<std::string>().c_str(),
              j["templates_digest"].get<std::string>().substr(0, 12).c_str());
  std::printf("NVRTC    %s\n", j["nvrtc"].get<std::string>().c_str());
  std::printf("driver   %s\n", j["driver"].get<std::string>().c_str());
  if (j.contains("device")) {
    const auto& d = j["device"];
    std::printf("device   %d: %s, %s, %d SMs, L2 %.0f MiB, %.1f GiB, smem/block %d KiB, SM clock %d MHz\n",
                d["ordinal"].get<int>(), d["name"].get<std::string>().c_str(),
                d["arch"].get<std::string>().c_str(), d["sm_count"].get<int>(),
                d["l2_bytes"].get<double>() / (1 << 20), d["total_mem_bytes"].get<double>() / (1 << 30),
                d["smem_optin_per_block"].get<int>() / 1024, d["clock_khz"].get<int>() / 1000);
  }
  std::printf("cache    %s  (%zu entries, %.1f MiB)\n", j["cache"]["dir"].get<std::string>().c_str(),
              entries.size(), j["cache"]["bytes"].get<double>() / (1 << 20));
  if (j["tuning_files"].empty())
    std::printf("tuning   no file for this device (configs come from the built-in heuristic)\n");
  for (const auto& file : j["tuning_files"]) std::printf("tuning   %s\n", file.get<std::string>().c_str());
  for (auto& [k, v] : env.items()) std::printf("env      %s=%s\n", k.c_str(), v.get<std::string>().c_str());
  return 0;
}

}  // namespace lowbit::cli

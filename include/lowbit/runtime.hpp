// lowbit::Runtime: one per device (or one offline, for an arch with no device). It owns the
// compiler, the module cache (memory + disk) and the tuning database. Thread-safe: requests for
// the same kernel from several threads share one compile.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lowbit/types.hpp"

namespace lowbit {

struct DeviceInfo {
  int ordinal = -1;
  std::string name;
  Arch arch;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int smem_optin_per_block = 0;  // bytes a block may use after opting in
  int smem_per_sm = 0;           // bytes of shared memory per SM, shared by its resident blocks
  int clock_khz = 0;             // SM clock
  int mem_clock_khz = 0;
  int mem_bus_bits = 0;
  int64_t total_mem_bytes = 0;
  int driver_version = 0;  // e.g. 13000
};

struct RuntimeOptions {
  // Device ordinal to run on. -1 = offline: no driver is touched; only compiling for `arch` works.
  int device = 0;
  // Target arch. Empty = the device's own (sm_90 devices get sm_90a). Required when offline.
  std::string arch;
  // Cache directory; empty = $LOWBIT_CACHE_DIR, else $XDG_CACHE_HOME/lowbit, else ~/.cache/lowbit.
  std::string cache_dir;
  // Disable the disk cache (also $LOWBIT_NO_DISK_CACHE=1).
  bool no_disk_cache = false;
  // Never compile: a cache miss is an Error naming the kernel (also $LOWBIT_NO_COMPILE=1).
  bool no_compile = false;
  // Offline only: the SM count of the GPU to build for. Configs (and so cache keys) depend on it;
  // 0 = a typical part of the arch (sm_80: 108, sm_86: 84, sm_89: 142, sm_90: 132, sm_100: 148,
  // sm_120: 170). A cache built ahead must use the deployment GPU's count to be found there.
  int sm_count = 0;
  // Offline only: the name of the GPU to build for, as the driver reports it ("NVIDIA H100 80GB
  // HBM3"); its shipped tuning file wins over the other files of the same arch. Empty: the files
  // are laid over each other in name order.
  std::string device_name;
  // Tuning database directory holding one <gpu>.json per device; empty = the installed one (or the
  // source tree's tuning_db/). $LOWBIT_TUNING_DB names a user file laid over it.
  std::string tuning_dir;
  bool no_tuning_db = false;  // heuristics only (also LOWBIT_NO_TUNING_DB=1)
};

// What happened when one kernel was asked for; returned by compile-ahead calls and the CLI.
struct KernelRecord {
  std::string name;    // procedural kernel name, e.g. wq_gemm_w4g128zp_f16_n4096k4096_mt1nt4wn1wk4sk4
  std::string digest;  // 32 hex digits of the cache key
  std::string arch;    // sm_90a
  enum class Source { Compiled, DiskCache, MemoryCache } source = Source::Compiled;
  double compile_ms = 0;      // NVRTC time when compiled here (0 for hits)
  double total_ms = 0;        // wall time of the whole request
  std::string config;         // Config(...) as text
  std::string config_source;  // how it was chosen: forced, tuned (exact / nearest M bucket, file), heuristic
  int64_t m_bucket = 0;       // the M bucket it serves (largest M), for families bucketed by M
};
std::string_view to_string(KernelRecord::Source);

namespace jit {
class Context;  // internal
}

class Runtime {
 public:
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  bool offline() const;
  const Arch& arch() const;
  // Device properties; throws Error when offline.
  const DeviceInfo& device() const;
  std::string cache_dir() const;  // empty when the disk cache is off
  int sm_count() const;           // the device's, or the offline option's
  std::string nvrtc_version() const;

  jit::Context& context();  // internal: used by the families and the tools

 private:
  std::unique_ptr<jit::Context> ctx_;
};

// True if a CUDA driver and at least one device are present (never throws).
bool cuda_device_available(std::string* why = nullptr);

}  // namespace lowbit

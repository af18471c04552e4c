// The runtime's internals (lowbit::Runtime is a handle to one of these): arch, device, primary
// context, module cache, and the loaded modules of this device.
#pragma once
#include <cuda.h>

#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/once_map.hpp"
#include "jit/module_cache.hpp"
#include "lowbit/runtime.hpp"
#include "tune/tuning_db.hpp"

namespace lowbit::jit {

struct LoadedKernel {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  int num_regs = 0;
  int local_bytes = 0;  // spills + stack per thread
  int static_smem = 0;
  int max_threads = 0;
  std::shared_ptr<const CompiledKernel> compiled;
};

DeviceInfo query_device(int ordinal);

class Context {
 public:
  explicit Context(const RuntimeOptions& options);
  ~Context();

  bool offline() const { return !device_; }
  const Arch& arch() const { return cache_->arch(); }
  const DeviceInfo& device() const;
  int sm_count() const { return device_ ? device_->sm_count : offline_sm_count_; }
  ModuleCache& cache() { return *cache_; }
  const tune::TuningDb& tuning() const { return tuning_; }

  // Compiles (or finds) the kernel; no device needed.
  std::shared_ptr<const CompiledKernel> compile(const KernelSpec& spec, KernelRecord* record = nullptr) {
    return cache_->get(spec, record);
  }
  // Compiles (or finds) every spec, up to `threads` at a time (0: the hardware's threads, at most 16):
  // NVRTC and the module cache are thread-safe, and concurrent requests for one kernel share one
  // build. A plan's buckets, a tuner's candidates and `lowbit compile` go through here, so a cold
  // cache costs the slowest compile, not the sum. `records`, if given, gets one record per spec.
  // Returns one entry per spec: null where it compiled, else what its compile threw (rethrow it, or
  // report it later); every compile has finished when this returns.
  std::vector<std::exception_ptr> compile_all(const std::vector<KernelSpec>& specs,
                                              std::vector<KernelRecord>* records = nullptr,
                                              unsigned threads = 0);
  // Compiles and loads the kernel into this device's context; the result lives as long as the Context.
  const LoadedKernel& load(const KernelSpec& spec, KernelRecord* record = nullptr);

  // A per-runtime memo for the families' functional APIs: built once per key, shared after. The
  // lock covers only the lookup: concurrent first requests for one key wait for one build, and
  // requests for other keys do not wait at all.
  template <class T, class Make>
  std::shared_ptr<T> memo(const std::string& key, Make&& make) {
    return std::static_pointer_cast<T>(memo_.get(key, [&] { return std::shared_ptr<void>(make()); }).first);
  }

  // Makes this device's primary context current on the calling thread (cheap).
  void make_current() const;

 private:
  std::optional<DeviceInfo> device_;
  int offline_sm_count_ = 0;
  CUcontext cu_context_ = nullptr;
  std::unique_ptr<ModuleCache> cache_;
  tune::TuningDb tuning_;
  std::mutex load_mu_;
  std::unordered_map<std::string, std::unique_ptr<LoadedKernel>> loaded_;  // by digest
  OnceMap<std::shared_ptr<void>> memo_;
};

}  // namespace lowbit::jit

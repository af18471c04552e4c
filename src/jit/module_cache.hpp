// The compiled-kernel cache: memory map in front of the disk cache in front of NVRTC. Concurrent
// requests for one key share one compile (the first requester compiles; the others wait on it).
#pragma once
#include <memory>
#include <string>

#include "common/once_map.hpp"
#include "jit/disk_cache.hpp"
#include "jit/kernel_spec.hpp"
#include "lowbit/runtime.hpp"

namespace lowbit::jit {

struct CompiledKernel {
  std::string name;
  std::string digest;
  std::string key_json;
  std::string cubin;
  std::string lowered_name;
  std::string log;   // NVRTC/ptxas log when compiled in this process
  std::string path;  // disk entry, if any
  double compile_ms = 0;
  KernelRecord::Source source = KernelRecord::Source::Compiled;
};

class ModuleCache {
 public:
  ModuleCache(Arch arch, std::string disk_root, bool no_compile);

  // Returns the kernel, compiling it if needed; fills `record` (source, timings).
  std::shared_ptr<const CompiledKernel> get(const KernelSpec& spec, KernelRecord* record = nullptr);

  const Arch& arch() const { return arch_; }
  const DiskCache& disk() const { return disk_; }

 private:
  std::shared_ptr<const CompiledKernel> build(const KernelSpec& spec, const std::string& key_json,
                                              const std::string& digest);

  Arch arch_;
  DiskCache disk_;
  bool no_compile_;
  OnceMap<std::shared_ptr<const CompiledKernel>> entries_;  // by digest
};

}  // namespace lowbit::jit

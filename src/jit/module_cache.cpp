#include "jit/module_cache.hpp"

#include <chrono>

#include "common/check.hpp"
#include "common/env.hpp"
#include "common/log.hpp"
#include "jit/nvrtc.hpp"

namespace lowbit::jit {

ModuleCache::ModuleCache(Arch arch, std::string disk_root, bool no_compile)
    : arch_(arch), disk_(std::move(disk_root)), no_compile_(no_compile) {}

std::shared_ptr<const CompiledKernel> ModuleCache::get(const KernelSpec& spec, KernelRecord* record) {
  const auto start = std::chrono::steady_clock::now();
  const std::string key_json = cache_key_json(spec, arch_);
  const std::string digest = cache_key_digest(key_json);

  // One build per digest; a failed one is retried by the next request (e.g. after the cache is fixed).
  const auto [result, owner] = entries_.get(digest, [&] { return build(spec, key_json, digest); });
  if (record) {
    record->name = spec.name;
    record->digest = digest;
    record->arch = arch_.str();
    record->source = owner ? result->source : KernelRecord::Source::MemoryCache;
    record->compile_ms = owner && result->source == KernelRecord::Source::Compiled ? result->compile_ms : 0;
    record->total_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  return result;
}

std::shared_ptr<const CompiledKernel> ModuleCache::build(const KernelSpec& spec, const std::string& key_json,
                                                         const std::string& digest) {
  auto out = std::make_shared<CompiledKernel>();
  out->name = spec.name;
  out->digest = digest;
  out->key_json = key_json;
  if (env_flag("LOWBIT_DUMP_SOURCE")) {
    info(fmt::format("source of {} ({}):\n{}", spec.name, digest, spec.source));
  }
  if (auto hit = disk_.load(arch_.str(), spec.family, spec.name, digest, key_json)) {
    out->cubin = std::move(hit->cubin);
    out->lowered_name = std::move(hit->lowered_name);
    out->compile_ms = hit->compile_ms;
    out->path = std::move(hit->path);
    out->source = KernelRecord::Source::DiskCache;
    return out;
  }
  LOWBIT_CHECK(!no_compile_,
               "LOWBIT_NO_COMPILE is set and kernel {} (key {}, arch {}) is not in the cache '{}': build it "
               "ahead with `lowbit compile` or unset LOWBIT_NO_COMPILE",
               spec.name, digest, arch_.str(),
               disk_.enabled() ? disk_.root() : std::string("(disk cache off)"));
  CompileResult compiled = nvrtc_compile({spec.source, spec.name_expression, arch_, CompileOutput::Cubin});
  out->cubin = std::move(compiled.binary);
  out->lowered_name = std::move(compiled.lowered_name);
  out->log = std::move(compiled.log);
  out->compile_ms = compiled.compile_ms;
  out->source = KernelRecord::Source::Compiled;
  out->path = disk_.store(arch_.str(), spec.family, spec.name, digest, key_json, spec.source, out->cubin,
                          out->lowered_name, out->compile_ms);
  return out;
}

}  // namespace lowbit::jit

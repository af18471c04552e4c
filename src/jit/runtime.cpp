#include <algorithm>
#include <atomic>
#include <filesystem>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "common/env.hpp"
#include "common/log.hpp"
#include "jit/context.hpp"
#include "jit/driver.hpp"
#include "jit/kernel_spec.hpp"
#include "jit/nvrtc.hpp"

namespace lowbit {
namespace jit {
namespace {
int typical_sm_count(const Arch& a) {
  switch (a.sm()) {
    case 80:
      return 108;  // A100
    case 86:
      return 84;  // A40 / RTX 3090 class
    case 89:
      return 142;  // L40S
    case 90:
      return 132;  // H100 SXM / H200
    case 100:
      return 148;  // B200
    case 120:
      return 170;  // RTX 5090
    default:
      return 108;
  }
}
// The shipped files of this arch (the one naming this device last, so it wins), then the user's
// $LOWBIT_TUNING_DB over them. Problems are warned about once and skipped.
tune::TuningDb load_tuning(const std::string& dir_option, const Arch& arch, const std::string& device_name) {
  namespace fs = std::filesystem;
  std::string dir = dir_option;
  std::error_code ec;
#if defined(LOWBIT_TUNING_DIR_INSTALL) && defined(LOWBIT_TUNING_DIR_SOURCE)
  if (dir.empty())
    dir = fs::is_directory(LOWBIT_TUNING_DIR_INSTALL, ec) ? LOWBIT_TUNING_DIR_INSTALL
                                                          : LOWBIT_TUNING_DIR_SOURCE;
#endif
  std::vector<std::string> warnings;
  // In name order (directory order is unspecified), then the file naming the device last: it wins.
  std::vector<std::string> paths;
  if (!dir.empty() && fs::is_directory(dir, ec))
    for (const auto& f : fs::directory_iterator(dir, ec))
      if (f.path().extension() == ".json") paths.push_back(f.path().string());
  std::sort(paths.begin(), paths.end());
  std::vector<tune::TuningDb> shipped;
  for (const auto& path : paths) shipped.push_back(tune::TuningDb::load(path, arch, &warnings));
  std::stable_partition(shipped.begin(), shipped.end(),
                        [&](const tune::TuningDb& db) { return db.meta.device != device_name; });
  tune::TuningDb db;
  for (const auto& s : shipped) db.overlay(s);
  if (auto user = env_string("LOWBIT_TUNING_DB")) db.overlay(tune::TuningDb::load(*user, arch, &warnings));
  for (const auto& w : warnings) warn_once("tuning:" + w, w);
  return db;
}

}  // namespace

Context::Context(const RuntimeOptions& options) {
  std::optional<Arch> arch;
  if (!options.arch.empty()) arch = Arch::parse(options.arch);
  if (options.device >= 0) {
    device_ = query_device(options.device);
    if (arch) {
      LOWBIT_CHECK(
          arch->major == device_->arch.major && arch->minor == device_->arch.minor,
          "arch = '{}' does not match device {} ({}, {}): a cubin for one arch does not load on another",
          options.arch, device_->ordinal, device_->name, device_->arch.str());
    } else {
      arch = device_->arch;
    }
    CUdevice dev;
    LOWBIT_CU_CHECK(driver().cuDeviceGet(&dev, device_->ordinal));
    LOWBIT_CU_CHECK(driver().cuDevicePrimaryCtxRetain(&cu_context_, dev));
    try {
      make_current();
    } catch (...) {
      driver().cuDevicePrimaryCtxRelease(dev);
      throw;
    }
  } else {
    LOWBIT_CHECK(arch.has_value(), "device = -1 (offline) needs an explicit arch, e.g. sm_90a");
    LOWBIT_CHECK(options.sm_count >= 0, "sm_count = {}: must be ≥ 0 (0 = a typical part of the arch)",
                 options.sm_count);
    offline_sm_count_ = options.sm_count > 0 ? options.sm_count : typical_sm_count(*arch);
  }
  const bool no_disk = options.no_disk_cache || env_flag("LOWBIT_NO_DISK_CACHE");
  const bool no_compile = options.no_compile || env_flag("LOWBIT_NO_COMPILE");
  cache_ = std::make_unique<ModuleCache>(
      *arch, no_disk ? std::string() : default_cache_root(options.cache_dir), no_compile);
  if (!options.no_tuning_db && !env_flag("LOWBIT_NO_TUNING_DB"))
    tuning_ = load_tuning(options.tuning_dir, *arch, device_ ? device_->name : options.device_name);
}

Context::~Context() {
  if (!cu_context_) return;
  try {
    make_current();
    for (auto& entry : loaded_) driver().cuModuleUnload(entry.second->module);
    CUdevice dev;
    if (driver().cuDeviceGet(&dev, device_->ordinal) == CUDA_SUCCESS) driver().cuDevicePrimaryCtxRelease(dev);
  } catch (...) {
  }
}

const DeviceInfo& Context::device() const {
  LOWBIT_CHECK(device_.has_value(),
               "this Runtime is offline (device = -1): it can compile for {} but not run", arch().str());
  return *device_;
}

void Context::make_current() const {
  if (cu_context_) LOWBIT_CU_CHECK(driver().cuCtxSetCurrent(cu_context_));
}

std::vector<std::exception_ptr> Context::compile_all(const std::vector<KernelSpec>& specs,
                                                     std::vector<KernelRecord>* records, unsigned threads) {
  std::vector<std::exception_ptr> errors(specs.size());
  if (records) records->assign(specs.size(), KernelRecord{});
  auto compile_one = [&](std::size_t i) {
    try {
      compile(specs[i], records ? &(*records)[i] : nullptr);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  // The first request for each kernel compiles in parallel; the repeats (buckets that share a
  // kernel) come after, in order, as memory-cache hits: records do not depend on thread timing.
  std::vector<std::size_t> first, repeats, original(specs.size());  // original: its first request
  std::unordered_map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto [at, is_new] = seen.emplace(cache_key_json(specs[i], arch()), i);  // the module cache's key
    original[i] = at->second;
    (is_new ? first : repeats).push_back(i);
  }
  if (threads == 0) threads = std::min(std::max(std::thread::hardware_concurrency(), 1u), 16u);
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, first.size()));
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t j = next++; j < first.size(); j = next++) compile_one(first[j]);
  };
  std::vector<std::thread> pool;
  try {
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  } catch (const std::system_error&) {  // no more threads: the ones started and this one share the work
  }
  work();
  for (auto& t : pool) t.join();
  for (std::size_t i : repeats) {
    if (errors[original[i]])
      errors[i] = errors[original[i]];  // the same failure: not compiled twice
    else
      compile_one(i);
  }
  return errors;
}

const LoadedKernel& Context::load(const KernelSpec& spec, KernelRecord* record) {
  LOWBIT_CHECK(device_.has_value(), "kernel {} cannot be loaded: this Runtime is offline (device = -1)",
               spec.name);
  make_current();  // callers go on to use the kernel with this context, hit or miss
  auto compiled = cache_->get(spec, record);
  std::lock_guard lock(load_mu_);
  auto it = loaded_.find(compiled->digest);
  if (it != loaded_.end()) return *it->second;
  const Driver& d = driver();
  auto k = std::make_unique<LoadedKernel>();
  LOWBIT_CU_CHECK(d.cuModuleLoadData(&k->module, compiled->cubin.data()));
  try {
    LOWBIT_CU_CHECK(d.cuModuleGetFunction(&k->function, k->module, compiled->lowered_name.c_str()));
    LOWBIT_CU_CHECK(d.cuFuncGetAttribute(&k->num_regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k->function));
    LOWBIT_CU_CHECK(d.cuFuncGetAttribute(&k->local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k->function));
    LOWBIT_CU_CHECK(d.cuFuncGetAttribute(&k->static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->function));
    LOWBIT_CU_CHECK(
        d.cuFuncGetAttribute(&k->max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->function));
  } catch (...) {
    d.cuModuleUnload(k->module);  // do not leak the module of a kernel that cannot be used
    throw;
  }
  k->compiled = std::move(compiled);
  // Modules stay loaded for the Context's life.
  auto [pos, inserted] = loaded_.emplace(k->compiled->digest, std::move(k));
  (void)inserted;
  return *pos->second;
}

}  // namespace jit

Runtime::Runtime(RuntimeOptions options) : ctx_(std::make_unique<jit::Context>(options)) {}
Runtime::~Runtime() = default;
bool Runtime::offline() const {
  return ctx_->offline();
}
const Arch& Runtime::arch() const {
  return ctx_->arch();
}
const DeviceInfo& Runtime::device() const {
  return ctx_->device();
}
std::string Runtime::cache_dir() const {
  const auto& disk = ctx_->cache().disk();
  return disk.enabled() ? disk.root() : std::string();
}
std::string Runtime::nvrtc_version() const {
  return jit::nvrtc_version();
}
int Runtime::sm_count() const {
  return ctx_->sm_count();
}
jit::Context& Runtime::context() {
  return *ctx_;
}

bool cuda_device_available(std::string* why) {
  try {
    int count = 0;
    LOWBIT_CU_CHECK(jit::driver().cuDeviceGetCount(&count));
    if (count == 0) {
      if (why) *why = "the CUDA driver reports no device";
      return false;
    }
    return true;
  } catch (const Error& e) {
    if (why) *why = e.message();
    return false;
  }
}

}  // namespace lowbit

#include "jit/driver.hpp"

#include <dlfcn.h>

#include <mutex>

namespace lowbit::jit {
namespace {

struct Loaded {
  Driver drv;
  std::string failure;  // empty on success
};

Loaded load() {
  Loaded out;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    out.failure = fmt::format("no CUDA driver: libcuda.so.1 not found ({}); GPU calls need an NVIDIA driver",
                              e ? e : "dlopen failed");
    return out;
  }
  // Each entry point is looked up by the exact symbol cuda.h maps its name to (cuMemAlloc →
  // cuMemAlloc_v2, cuEventElapsedTime → cuEventElapsedTime_v2, ...), so the pointer's type is the
  // declaration's type by construction. (cuGetProcAddress by base name may hand back a newer ABI,
  // e.g. cuCtxSynchronize_v2(CUcontext), than the one declared.)
  std::string missing;
#define LOWBIT_STRINGIFY_EXPANDED(x) LOWBIT_STRINGIFY(x)
#define LOWBIT_STRINGIFY(x) #x
#define LOWBIT_RESOLVE_DRIVER_FN(name)                                                              \
  {                                                                                                 \
    void* fn = dlsym(lib, LOWBIT_STRINGIFY_EXPANDED(name));                                         \
    if (!fn) missing += std::string(missing.empty() ? "" : ", ") + LOWBIT_STRINGIFY_EXPANDED(name); \
    out.drv.name = reinterpret_cast<decltype(out.drv.name)>(fn);                                    \
  }
  LOWBIT_DRIVER_FUNCTIONS(LOWBIT_RESOLVE_DRIVER_FN)
#undef LOWBIT_RESOLVE_DRIVER_FN
  if (!missing.empty()) {
    out.failure = "CUDA driver too old: libcuda.so.1 lacks " + missing;
    return out;
  }
  CUresult r = out.drv.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    out.drv.cuGetErrorName(r, &name);
    out.failure =
        fmt::format("CUDA driver present but cuInit failed: {} (no usable GPU?)", name ? name : "?");
  }
  return out;
}

}  // namespace

const Driver& driver() {
  static const Loaded loaded = load();
  if (!loaded.failure.empty()) throw Error(loaded.failure);
  return loaded.drv;
}

std::string driver_error(const char* call, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  try {
    driver().cuGetErrorName(result, &name);
    driver().cuGetErrorString(result, &text);
  } catch (const Error&) {
  }
  return fmt::format("{} failed: {} ({})", call, name ? name : std::to_string(static_cast<int>(result)),
                     text ? text : "no description");
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes) LOWBIT_CU_CHECK(driver().cuMemAlloc(&ptr_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) driver().cuMemFree(ptr_);  // no throw from a destructor; a failure here leaks at worst
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) driver().cuMemFree(ptr_);
    ptr_ = o.ptr_, bytes_ = o.bytes_;
    o.ptr_ = 0, o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
  LOWBIT_CHECK(offset + bytes <= bytes_, "upload of {} bytes at offset {} overruns a {}-byte buffer", bytes,
               offset, bytes_);
  LOWBIT_CU_CHECK(driver().cuMemcpyHtoD(ptr_ + offset, host, bytes));
  // From pageable memory the copy may still be in flight on return; finish it, so work on any
  // stream (non-blocking ones too) sees the data. Not a hot path.
  LOWBIT_CU_CHECK(driver().cuStreamSynchronize(nullptr));
}

void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
  LOWBIT_CHECK(offset + bytes <= bytes_, "download of {} bytes at offset {} overruns a {}-byte buffer", bytes,
               offset, bytes_);
  LOWBIT_CU_CHECK(driver().cuMemcpyDtoH(host, ptr_ + offset, bytes));
}

void DeviceBuffer::fill_bytes(unsigned char value) const {
  if (!bytes_) return;
  LOWBIT_CU_CHECK(driver().cuMemsetD8(ptr_, value, bytes_));
  LOWBIT_CU_CHECK(driver().cuStreamSynchronize(nullptr));  // a memset may return before it is done
}

}  // namespace lowbit::jit

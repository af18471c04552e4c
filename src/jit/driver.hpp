// The CUDA driver, opened with dlopen("libcuda.so.1") on first use. Nothing that needs no GPU
// (NVRTC compiles, the cache, the CLI's parsing, CPU references) ever touches it, so the library
// builds and runs on machines without a driver.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <string>
#include <vector>

#include "common/check.hpp"

namespace lowbit::jit {

// Driver entry points, resolved with dlsym by the exact symbol cuda.h maps each name to.
#define LOWBIT_DRIVER_FUNCTIONS(X)                                                                          \
  X(cuInit)                                                                                                 \
  X(cuDriverGetVersion)                                                                                     \
  X(cuGetErrorName)                                                                                         \
  X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)         \
      X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)       \
          X(cuCtxGetCurrent) X(cuCtxSynchronize) X(cuModuleLoadData) X(cuModuleUnload)                      \
              X(cuModuleGetFunction) X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuLaunchKernel)          \
                  X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemsetD8)  \
                      X(cuMemsetD8Async) X(cuMemsetD16Async) X(cuMemGetInfo) X(cuStreamCreate)              \
                          X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamBeginCapture)                 \
                              X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch)         \
                                  X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuEventCreate) X(cuEventRecord) \
                                      X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy)         \
                                          X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                    \
                                              X(cuLaunchCooperativeKernel) X(cuLaunchKernelEx)

struct Driver {
#define LOWBIT_DECLARE_DRIVER_FN(name) decltype(&::name) name = nullptr;
  LOWBIT_DRIVER_FUNCTIONS(LOWBIT_DECLARE_DRIVER_FN)
#undef LOWBIT_DECLARE_DRIVER_FN
};

// The loaded driver (cuInit done). Throws Error("no CUDA driver: libcuda.so.1 not found ...") when
// there is none; the failure is remembered, so later calls fail fast with the same message.
const Driver& driver();

// "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
std::string driver_error(const char* call, CUresult result);

}  // namespace lowbit::jit

#define LOWBIT_CU_CHECK(call)                                                                           \
  do {                                                                                                  \
    CUresult lowbit_cu_result_ = (call);                                                                \
    if (lowbit_cu_result_ != CUDA_SUCCESS)                                                              \
      throw ::lowbit::Error(::lowbit::jit::driver_error(#call, lowbit_cu_result_), __FILE__, __LINE__); \
  } while (0)

namespace lowbit::jit {

// Device memory owned by RAII; for plans' workspaces, tests and the benchmark. upload() and
// fill_bytes() are complete when they return (they synchronize the legacy stream).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0, o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  void* get() const { return reinterpret_cast<void*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

  void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
  void download(void* host, std::size_t bytes, std::size_t offset = 0) const;
  void fill_bytes(unsigned char value) const;  // device memory changes, not the handle
  template <class T>
  static DeviceBuffer from(const std::vector<T>& v) {
    DeviceBuffer b(v.size() * sizeof(T));
    if (!v.empty()) b.upload(v.data(), v.size() * sizeof(T));
    return b;
  }
  template <class T>
  std::vector<T> to_vector() const {
    std::vector<T> v(bytes_ / sizeof(T));
    download(v.data(), v.size() * sizeof(T));
    return v;
  }

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace lowbit::jit

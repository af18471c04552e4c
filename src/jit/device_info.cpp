#include "jit/context.hpp"
#include "jit/driver.hpp"

namespace lowbit::jit {

DeviceInfo query_device(int ordinal) {
  const Driver& d = driver();
  int count = 0;
  LOWBIT_CU_CHECK(d.cuDeviceGetCount(&count));
  LOWBIT_CHECK(ordinal >= 0 && ordinal < count,
               "device = {} does not exist: this machine has {} CUDA device(s)", ordinal, count);
  CUdevice dev;
  LOWBIT_CU_CHECK(d.cuDeviceGet(&dev, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  LOWBIT_CU_CHECK(d.cuDeviceGetName(name, sizeof(name), dev));
  info.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    LOWBIT_CU_CHECK(d.cuDeviceGetAttribute(&v, a, dev));
    return v;
  };
  info.arch.major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.arch.minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.arch.arch_specific = info.arch.major >= 9;  // sm_90a etc.: the kernels may use wgmma / setmaxnreg
  info.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info.smem_optin_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info.smem_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  info.clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  info.mem_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  info.mem_bus_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  size_t total = 0;
  LOWBIT_CU_CHECK(d.cuDeviceTotalMem(&total, dev));
  info.total_mem_bytes = static_cast<int64_t>(total);
  LOWBIT_CU_CHECK(d.cuDriverGetVersion(&info.driver_version));
  return info;
}

}  // namespace lowbit::jit

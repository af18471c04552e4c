#include "jit/launch.hpp"

#include "jit/driver.hpp"

namespace lowbit::jit {

void launch(CUfunction f, const LaunchShape& shape, CUstream stream, void** args, LaunchOptions options) {
  CUlaunchAttribute attrs[3] = {};
  unsigned n = 0;
  if (options.cooperative) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n++].value.cooperative = 1;
  }
  if (options.overlap_previous) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n++].value.programmaticStreamSerializationAllowed = 1;
  }
  if (options.cluster_y > 1) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = 1;
    attrs[n].value.clusterDim.y = options.cluster_y;
    attrs[n++].value.clusterDim.z = 1;
  }
  CUlaunchConfig config = {};
  config.gridDimX = shape.grid_x, config.gridDimY = shape.grid_y, config.gridDimZ = shape.grid_z;
  config.blockDimX = shape.block, config.blockDimY = 1, config.blockDimZ = 1;
  config.sharedMemBytes = shape.smem;
  config.hStream = stream;
  config.attrs = n > 0 ? attrs : nullptr;
  config.numAttrs = n;
  LOWBIT_CU_CHECK(driver().cuLaunchKernelEx(&config, f, args, nullptr));
}

}  // namespace lowbit::jit

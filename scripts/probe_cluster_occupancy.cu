// Probe (not part of the library): how many thread-block clusters of 1-8 blocks the device holds at
// once for blocks of 128/256/384 threads whose shared memory allows 1-4 a SM, from
// cudaOccupancyMaxActiveClusters. Answers whether four-way K-split clusters fit one
// wave of 128 blocks on 132 SMs (docs/perf-notes.md, twenty-third and twenty-fifth sessions).
// Run: scripts/device_probe_cluster_occupancy.sh
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void __launch_bounds__(384) dummy(int* p) {
  extern __shared__ int s[];
  if (p != nullptr) p[threadIdx.x] = s[threadIdx.x];
}

int main() {
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) return 1;
  // Shared memory that holds 1-4 blocks a SM (228 KB a SM, 1 KB reserved a block), for the mma.sync
  // kernel's 128/256-thread blocks and the wgmma kernel's 384 (seventy-ninth session: every cluster size).
  for (int threads : {128, 256, 384}) {
    for (int slots : {1, 2, 3, 4}) {
      const int smem = (228 * 1024 / slots - 1024) / 1024 * 1024;
      if (cudaFuncSetAttribute(dummy, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess ||
          cudaFuncSetAttribute(dummy, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
        return 1;
      for (int size = 1; size <= 8; ++size) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(1, size * 64, 1);
        cfg.blockDim = dim3(threads, 1, 1);
        cfg.dynamicSmemBytes = smem;
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = 1, attr.val.clusterDim.y = size, attr.val.clusterDim.z = 1;
        cfg.attrs = &attr, cfg.numAttrs = 1;
        int clusters = 0;
        const cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, dummy, &cfg);
        std::printf("%d SMs, %3d threads, %3d KB shared (%d a SM), clusters of %d: %s%3d at once = %3d blocks\n",
                    sms, threads, smem / 1024, slots, size, e == cudaSuccess ? "" : cudaGetErrorString(e),
                    clusters, clusters * size);
      }
    }
  }
  return 0;
}

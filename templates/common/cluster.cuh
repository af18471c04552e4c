// Thread-block clusters (sm_90): the blocks of one cluster run at the same time on one GPC and can
// read and write each other's shared memory (distributed shared memory). wq_gemm_wgmma.cuh adds the
// K-split pieces of a tile this way instead of through global memory.
#pragma once
#include "common/ptx.cuh"
#include "common/types.cuh"

namespace lowbit::kern {

// This block's rank in its cluster (0 .. cluster size − 1).
__device__ __forceinline__ u32 cluster_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of every block of the cluster arrives (release) and waits for all the others
// (acquire): shared-memory writes before it, local or remote, are visible to every block after it.
// All threads of a warp must call it together.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}
// The two halves of a cluster barrier phase, apart: arrive (release: this thread's earlier shared-
// memory writes, local or remote, are visible to the blocks that then wait; relaxed: nothing
// ordered, just "this block is running") and wait (acquire) for every thread of the cluster to have
// arrived. Each thread arrives once per phase and waits before arriving again.
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Bytes of dynamic shared memory this launch gave the block.
__device__ __forceinline__ u32 dynamic_smem_size() {
  u32 r;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
  return r;
}
// The address of the same shared-memory location (`addr`, this block's) in block `rank` of the cluster.
__device__ __forceinline__ u32 cluster_map(u32 addr, u32 rank) {
  u32 r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
// 16 bytes into another block's shared memory (an address from cluster_map).
__device__ __forceinline__ void st_cluster_v4(u32 addr, float a, float b, float c, float d) {
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "f"(a), "f"(b), "f"(c), "f"(d)
               : "memory");
}
// One float into another block's shared memory (an address from cluster_map).
__device__ __forceinline__ void st_cluster_f32(u32 addr, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
}
// 16 bytes of this block's shared memory as four floats (what st_cluster_v4 put there).
__device__ __forceinline__ float4 ld_shared_f4(u32 addr) {
  const uint4 v = ld_shared_v4(addr);
  return make_float4(__uint_as_float(v.x), __uint_as_float(v.y), __uint_as_float(v.z), __uint_as_float(v.w));
}

}  // namespace lowbit::kern

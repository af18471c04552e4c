// Probe (not part of the library): the rate of wgmma m64nNk16 with A from registers, as the
// wq_gemm wgmma kernel issues it (kM64 accumulators × 8 k16 steps per batch, then commit and, with
// kWaitEach, wait for the batch). One block per SM, kWG warpgroups per block, no data movement.
// Prints clocks per wgmma per SM and the resulting TFLOP/s. Run: scripts/device_probe_wgmma_rate.sh
// (nvcc -gencode arch=compute_90a,code=sm_90a -std=c++20 -I templates scripts/probe_wgmma_rate.cu).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#define CHECK(call)                                                                              \
  do {                                                                                           \
    const cudaError_t e = (call);                                                                \
    if (e != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)
#include "common/wgmma.cuh"
using namespace lowbit::kern;

// kAlu: f16x2 FMAs per thread and batch on registers the wgmmas do not use, 0 none; issued between
// the batch's commit and its wait (kAluAfter false: under the warpgroup's own wgmmas) or after the
// wait (true: in series).
template <int kN, int kWG, int kM64, bool kWaitEach, int kAlu = 0, bool kAluAfter = false,
          int kAluKind = 0>
__global__ void __launch_bounds__(kWG * 128) rate(long long* cycles, float* sink, int reps) {
  extern __shared__ __align__(1024) unsigned char smem[];
  for (int i = threadIdx.x; i < kN * 256 / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(smem)[i] = make_uint4(0, 0, 0, 0);
  fence_proxy_async_shared();
  __syncthreads();
  const u32 st = static_cast<u32>(__cvta_generic_to_shared(smem));
  float acc[kM64][kN / 2];
  for (int i = 0; i < kM64; ++i)
    for (int e = 0; e < kN / 2; ++e) acc[i][e] = 0.f;
  const u32 a = 0x3c003c00u ^ (threadIdx.x & 31);
  const u64 desc0 = wgmma_desc_sw128(st, 1024);
  u32 alu[16];
  for (int i = 0; i < 16; ++i) alu[i] = 0x3c003c00u + i + threadIdx.x;
  auto alu_work = [&] {
#pragma unroll
    for (int k = 0; k < kAlu / 16; ++k)
#pragma unroll
      for (int i = 0; i < 16; ++i)
        if constexpr (kAluKind == 1)  // the control: integer work (LOP3) instead of f16x2
          asm volatile("lop3.b32 %0, %0, %1, %2, 0x6a;" : "+r"(alu[i]) : "r"(0x0f0f0f0fu), "r"(0x64006400u));
        else if constexpr (kAluKind == 2)  // fp32 FMAs (the FMA pipes without the f16x2 dual issue)
          asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+r"(alu[i]) : "r"(0x3f7fffffu), "r"(0x33800000u));
        else
          asm volatile("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(alu[i]) : "r"(0x3bff3bffu), "r"(0x00010001u));
  };
  __syncthreads();
  const long long t0 = clock64();
  for (int r = 0; r < reps; ++r) {
    wgmma_fence();
#pragma unroll
    for (int i = 0; i < kM64; ++i)
#pragma unroll
      for (int s = 0; s < 8; ++s)
        wgmma_rs<kN, false>(acc[i], a, a ^ 1, a ^ 2, a ^ 3,
                            wgmma_desc_advance(desc0, (s / 4) * kN * 128 + 32 * (s % 4)));
    wgmma_commit();
    if constexpr (!kAluAfter) alu_work();
    if constexpr (kWaitEach) wgmma_wait<0>();
    if constexpr (kAluAfter) alu_work();
  }
  wgmma_wait<0>();
  const long long t1 = clock64();
  if (threadIdx.x % 128 == 0) cycles[blockIdx.x * kWG + threadIdx.x / 128] = t1 - t0;
  float s = 0.f;
  for (int i = 0; i < kM64; ++i)
    for (int e = 0; e < kN / 2; ++e) s += acc[i][e];
  for (int i = 0; i < 16; ++i) s += __uint_as_float(alu[i]);
  if (s == 12345.f) sink[threadIdx.x] = s;
}

template <int kN, int kWG, int kM64, bool kWaitEach, int kAlu = 0, bool kAluAfter = false,
          int kAluKind = 0>
void run(int sms) {
  const int reps = 2000;
  long long* cyc;
  float* sink;
  CHECK(cudaMalloc(&cyc, sms * kWG * sizeof(long long)));
  CHECK(cudaMalloc(&sink, 4096));
  auto k = rate<kN, kWG, kM64, kWaitEach, kAlu, kAluAfter, kAluKind>;
  const int smem = kN * 256 + 1024;
  CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  k<<<sms, kWG * 128, smem>>>(cyc, sink, 10);
  CHECK(cudaGetLastError());
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  CHECK(cudaEventRecord(e0));
  k<<<sms, kWG * 128, smem>>>(cyc, sink, reps);
  CHECK(cudaEventRecord(e1));
  CHECK(cudaEventSynchronize(e1));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, e0, e1));
  long long host[1024];
  CHECK(cudaMemcpy(host, cyc, sms * kWG * sizeof(long long), cudaMemcpyDeviceToHost));
  long long mx = 0;
  for (int i = 0; i < sms * kWG; ++i) mx = host[i] > mx ? host[i] : mx;
  const double wgmmas_per_sm = double(reps) * kM64 * 8 * kWG;
  const double flops = 2.0 * 64 * kN * 16 * wgmmas_per_sm * sms;
  printf(
      "N=%3d WG=%d m64=%d wait_each=%d alu=%3d %s %s: %6.1f clk per wgmma per SM (ideal %d), %7.1f clk per "
      "batch, %6.1f TFLOP/s\n",
      kN, kWG, kM64, int(kWaitEach), kAlu, kAluAfter ? "after the wait " : "under the batch",
      kAluKind == 1 ? "lop3 " : kAluKind == 2 ? "ffma " : "hfma2", mx / wgmmas_per_sm, kN / 2, double(mx) / reps, flops / (ms * 1e-3) / 1e12);
  cudaFree(cyc), cudaFree(sink);
}

// Role split: warpgroup 0 issues batches of 8 m64n64k16 (A from registers, or with kSS from shared
// memory), waiting for each; warpgroup 1 (if kAluWG) runs kAluKind instructions only (256 per
// batch, 16 independent chains). Each warpgroup times its own loop, so the two costs show whether
// one warpgroup's ALU work slows the other's wgmmas (and the reverse) on the same schedulers.
template <bool kSS, bool kMmaWG, bool kAluWG, int kAluKind>
__global__ void __launch_bounds__(256) roles(long long* cycles, float* sink, int reps) {
  extern __shared__ __align__(1024) unsigned char smem[];
  for (int i = threadIdx.x; i < 64 * 256 / 16; i += blockDim.x) reinterpret_cast<uint4*>(smem)[i] = make_uint4(0, 0, 0, 0);
  fence_proxy_async_shared();
  __syncthreads();
  const u32 st = static_cast<u32>(__cvta_generic_to_shared(smem));
  const u64 desc0 = wgmma_desc_sw128(st, 1024);
  float s = 0.f;
  long long t = 0;
  if (threadIdx.x < 128) {
    if constexpr (kMmaWG) {
      float acc[32];
      for (int e = 0; e < 32; ++e) acc[e] = 0.f;
      const u32 a = 0x3c003c00u ^ (threadIdx.x & 31);
      const long long t0 = clock64();
      for (int r = 0; r < reps; ++r) {
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const u64 db = wgmma_desc_advance(desc0, (k / 4) * 64 * 128 + 32 * (k % 4));
          if constexpr (kSS)
            asm volatile(
                "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, "
                "%10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, "
                "%28, %29, %30, %31}, %32, %33, 1, 1, 1, 0, 0;"
                : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3]), "+f"(acc[4]), "+f"(acc[5]),
                  "+f"(acc[6]), "+f"(acc[7]), "+f"(acc[8]), "+f"(acc[9]), "+f"(acc[10]), "+f"(acc[11]),
                  "+f"(acc[12]), "+f"(acc[13]), "+f"(acc[14]), "+f"(acc[15]), "+f"(acc[16]), "+f"(acc[17]),
                  "+f"(acc[18]), "+f"(acc[19]), "+f"(acc[20]), "+f"(acc[21]), "+f"(acc[22]), "+f"(acc[23]),
                  "+f"(acc[24]), "+f"(acc[25]), "+f"(acc[26]), "+f"(acc[27]), "+f"(acc[28]), "+f"(acc[29]),
                  "+f"(acc[30]), "+f"(acc[31])
                : "l"(desc0), "l"(db)
                : "memory");
          else
            wgmma_rs<64, false>(acc, a, a ^ 1, a ^ 2, a ^ 3, db);
        }
        wgmma_commit();
        wgmma_wait<0>();
      }
      t = clock64() - t0;
      for (int e = 0; e < 32; ++e) s += acc[e];
    }
  } else if constexpr (kAluWG) {
    u32 alu[16];
    for (int i = 0; i < 16; ++i) alu[i] = 0x3c003c00u + i + threadIdx.x;
    const long long t0 = clock64();
    for (int r = 0; r < reps; ++r)
#pragma unroll
      for (int k = 0; k < 16; ++k)
#pragma unroll
        for (int i = 0; i < 16; ++i)
          if constexpr (kAluKind == 1)
            asm volatile("lop3.b32 %0, %0, %1, %2, 0x6a;" : "+r"(alu[i]) : "r"(0x0f0f0f0fu), "r"(0x64006400u));
          else if constexpr (kAluKind == 2)
            asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+r"(alu[i]) : "r"(0x3f7fffffu), "r"(0x33800000u));
          else
            asm volatile("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(alu[i]) : "r"(0x3bff3bffu), "r"(0x00010001u));
    t = clock64() - t0;
    for (int i = 0; i < 16; ++i) s += __uint_as_float(alu[i]);
  }
  if (threadIdx.x % 128 == 0) cycles[blockIdx.x * 2 + threadIdx.x / 128] = t;
  if (s == 12345.f) sink[threadIdx.x] = s;
}

template <bool kSS, bool kMmaWG, bool kAluWG, int kAluKind>
void run_roles(int sms) {
  const int reps = 2000;
  long long* cyc;
  float* sink;
  CHECK(cudaMalloc(&cyc, sms * 2 * sizeof(long long)));
  CHECK(cudaMemset(cyc, 0, sms * 2 * sizeof(long long)));
  CHECK(cudaMalloc(&sink, 4096));
  auto k = roles<kSS, kMmaWG, kAluWG, kAluKind>;
  const int smem = 64 * 256 + 1024;
  CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  k<<<sms, 256, smem>>>(cyc, sink, reps);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  long long host[1024];
  CHECK(cudaMemcpy(host, cyc, sms * 2 * sizeof(long long), cudaMemcpyDeviceToHost));
  long long mx[2] = {0, 0};
  for (int i = 0; i < sms * 2; ++i) mx[i % 2] = host[i] > mx[i % 2] ? host[i] : mx[i % 2];
  printf("roles: A from %s, mma WG %d, ALU WG %d (%s): mma WG %7.1f clk per batch of 8, ALU WG %7.1f clk per 256\n",
         kSS ? "smem" : "regs", int(kMmaWG), int(kAluWG),
         kAluKind == 1 ? "lop3 " : kAluKind == 2 ? "ffma " : "hfma2", double(mx[0]) / reps, double(mx[1]) / reps);
  cudaFree(cyc), cudaFree(sink);
}
template <int kKind>
void role_runs(int sms) {
  run_roles<false, false, true, kKind>(sms);  // ALU alone
  run_roles<false, true, true, kKind>(sms);   // beside RS wgmmas
  run_roles<true, true, true, kKind>(sms);    // beside SS wgmmas
}

template <int kKind>
void kind_runs(int sms) {
  run<64, 1, 1, true, 256, false, kKind>(sms);
  run<64, 1, 1, true, 256, true, kKind>(sms);
  run<64, 2, 1, true, 256, false, kKind>(sms);
  run<64, 2, 1, true, 256, true, kKind>(sms);
  run<64, 2, 2, true, 256, false, kKind>(sms);
  run<64, 2, 2, true, 256, true, kKind>(sms);
}
void static_for_kinds(int sms) {
  kind_runs<0>(sms);
  kind_runs<1>(sms);
  kind_runs<2>(sms);
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  run<64, 1, 1, true>(sms);
  run<64, 2, 1, true>(sms);
  run<64, 2, 2, true>(sms);
  run_roles<false, true, false, 0>(sms);  // RS wgmmas alone
  run_roles<true, true, false, 0>(sms);   // SS wgmmas alone
  role_runs<0>(sms);
  role_runs<1>(sms);
  role_runs<2>(sms);
  // A warpgroup's own ALU work under its in-flight wgmmas against the same work after its wait, for
  // f16x2 FMAs (kind 0), LOP3 (1) and fp32 FMAs (2); and with no wgmma at all (kM64 = 0 is not
  // allowed, so the ALU alone is the "after" minus the no-ALU run).
  return 0;
}

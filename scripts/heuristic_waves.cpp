// The heuristic's grids, for scripts/heuristic_waves.py (seventy-ninth session, docs/perf-notes.md § 79.1 and
// § 79.7): one line per choice of choose_config on sm_90a over a grid of layers, M buckets, bit widths and
// dtypes, with its launch grid, threads, shared memory and how its K pieces meet. Build against a static
// build of the library:
//   g++ -std=c++20 -O1 -I include -I src scripts/heuristic_waves.cpp build/liblowbit.a -lfmt -ldl -lpthread
//     -o /tmp/hw    (one line), then: /tmp/hw [SMS] > /tmp/waves.txt
// Line: bits act(0 fp16, 1 bf16, 2 GPTQ-symmetric bf16) n k m config | blocks B threads T smem S split P meet
// (none, cluster, workspace or stream K) and the config as `--config` takes it.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/lowbit.hpp"
using namespace lowbit;

int main(int argc, char** argv) {
  const Arch arch = Arch::parse("sm_90a");
  const int sms = argc > 1 ? std::atoi(argv[1]) : 132;
  std::vector<long> ns;
  for (long n = 256; n <= 32768; n += 128) ns.push_back(n);
  const long ks[] = {1024, 2048, 3072, 3584, 4096, 5120, 6144, 8192, 9216, 11008, 14336, 16384, 18944, 28672};
  const long ms[] = {1, 2, 4, 8, 16, 32, 64, 128};
  for (long n : ns)
    for (long k : ks)
      for (long m : ms)
        for (int bits : {2, 3, 4, 8})
          for (int act = 0; act < 3; ++act) {
            WqGemmProblem p;
            p.n = n, p.k = k, p.m = m, p.bits = bits, p.group_size = 128;
            p.act = p.out = act == 0 ? DType::F16 : DType::BF16;
            if (act == 2) p.mode = DequantMode::Symmetric;
            const WqGemmConfig c = choose_config(p, arch, sms);
            const int64_t bucket = m_bucket(m);
            const auto g = wq::geometry(p, c, arch, m, bucket, c.stream_k ? 4LL * sms : 0);
            const std::string config = std::to_string(c.m_tiles) + "," + std::to_string(c.n_tiles) + "," +
                                       std::to_string(c.warps_n) + "," + std::to_string(c.warps_k) + "," +
                                       std::to_string(c.split_k) + "," + std::to_string(c.stages) + "," +
                                       std::to_string(c.x_shared) + "," + std::to_string(c.wgmma) + "," +
                                       std::to_string(c.stream_k) + "," + std::to_string(c.x_image) + "," +
                                       std::to_string(c.x_sums);
            std::printf("%d %d %ld %ld %ld %s | blocks %ld threads %u smem %u split %d meet %s\n", bits, act,
                        n, k, m, config.c_str(), static_cast<long>(g.grid_x) * g.grid_y * g.grid_z, g.block,
                        g.smem, c.split_k, c.stream_k ? "stream_k" : wq::k_split_path(c, arch));
          }
  return 0;
}

// The heuristic over a grid of problems, one line each (arch, SMs, N, K, M, bits, group, bf16, deterministic,
// config): diff two builds' outputs to check that a refactor of choose_config changes no choice (forty-first
// session: 4.8 M lines, 3 s; since the sixty-second, every bit width and groups of 64 too: 10.7 M lines, 8
// s; since the sixty-fifth, fp16 accumulation as act 2: 16 M lines; since the sixty-sixth, fp16 float zeros
// (HQQ) as act 3: 21 M lines). Build against a static build of the library:
//   g++ -std=c++20 -O1 -I include scripts/heuristic_grid.cpp build/liblowbit.a -lfmt -ldl -lpthread -o
//   /tmp/hg /tmp/hg > before.txt   (then rebuild the library, the grid, and: /tmp/hg | cmp - before.txt)
// A choice that can_implement rejects gets "NOIMPL" before it (grep -c NOIMPL: must be 0); on stderr, the
// count of such choices (forty-fifth session).
#include <cstdio>
#include <string>

#include "lowbit/lowbit.hpp"
using namespace lowbit;
int main() {
  const char* archs[] = {"sm_90a", "sm_90", "sm_80", "sm_86", "sm_89", "sm_120"};
  const int sms_list[] = {66, 78, 108, 114, 132, 170};
  const long ns[] = {8,    64,   512,  1280,  1792,  2304,  2560,  3584,  4096,  4608,  5120,
                     6144, 7168, 8192, 10240, 11008, 13824, 14336, 16384, 28672, 37888, 57344};
  const long ks[] = {256, 1024, 2048, 3584, 4096, 5120, 5504, 8192, 11008, 14336, 18944, 27648, 28672};
  const long ms[] = {1, 2, 3, 4, 8, 16, 24, 32, 48, 64, 100, 128, 200};
  long count = 0, rejected = 0;
  for (const char* a : archs) {
    const Arch arch = Arch::parse(a);
    for (int sms : sms_list)
      for (long n : ns)
        for (long k : ks)
          for (long m : ms)
            for (int bits : {1, 2, 3, 4, 8})
              for (int g : {128, 32, 64, 0})
                for (int act = 0; act < 4; ++act)  // 2: fp16 with fp16 accumulation; 3: fp16 float zeros
                  for (int det = 0; det < 2; ++det) {
                    WqGemmProblem p;
                    p.n = n, p.k = k, p.m = m, p.bits = bits, p.group_size = g;
                    p.act = p.out = act == 1 ? DType::BF16 : DType::F16;
                    if (act == 2) p.accum = DType::F16;
                    if (act == 3) p.mode = DequantMode::SubFloatZeroThenScale;
                    p.deterministic = det;
                    if (g && k % g) continue;
                    std::string c;
                    try {
                      const WqGemmConfig chosen = choose_config(p, arch, sms);
                      c = chosen.str();
                      if (!can_implement(p, chosen, arch)) c = "NOIMPL " + c, ++rejected;
                    } catch (const std::exception& e) {
                      c = std::string("ERR ") + e.what();
                    }
                    std::printf("%s %d %ld %ld %ld %d %d %d %d %s\n", a, sms, n, k, m, bits, g, act, det,
                                c.c_str());
                    ++count;
                  }
  }
  std::fprintf(stderr, "%ld problems, %ld choices can_implement rejects\n", count, rejected);
}

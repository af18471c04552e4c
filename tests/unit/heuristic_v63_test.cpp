// Heuristic v63 (docs/perf-notes.md, seventy-seventh session): 8-bit integer-zero weights at 17-32 rows run
// one wave of 32-row mma.sync blocks of 4 tiles × 8 warps along K, 2 stages, where those blocks make at most
// one a SM and at least 0.54 of the SMs' worth on 64-80 chunks of K (0.7 elsewhere), from 16 chunks.
#include <cstdint>
#include <string>
#include <utility>

#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::DequantMode;
using lowbit::WqGemmProblem;
using lowbit::test::choose_bf16_hopper;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::other_formats;
using lowbit::test::staged;

namespace {
const std::string kBlock = "2,4,1,8,1,2+xs";
}

TEST_CASE("choose_config v63: 8-bit weights at 17-32 rows, one wave of 8-warp 32-row blocks",
          "[config][heuristic]") {
  // In, both dtypes, M 17-32: the benched layers (narrow_32's wgmma before: 4096×14336, 4096×12288,
  // 3584×14336, 3584×18944, 3840×16384, 4096×28672, 2560×8192, 2688×8192, 2560×10240, 2304×8192, 2432×8192;
  // v61's before: 3072-4096 columns on K 2048-14336), and the edges: 4224 columns (132 blocks, one a SM),
  // 2304 on 64 chunks (72 blocks, 0.545 of the SMs; 2560 on 80), 3008 on 128 chunks and 3072 on 16 (94 and 96
  // blocks: 0.712 and 0.727).
  for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 14336},
                      {4096, 12288},
                      {3584, 14336},
                      {3584, 18944},
                      {3840, 16384},
                      {4096, 28672},
                      {2560, 8192},
                      {2688, 8192},
                      {2560, 10240},
                      {2304, 8192},
                      {2432, 8192},
                      {4096, 4096},
                      {3584, 3584},
                      {3072, 2048},
                      {4096, 11008},
                      {3072, 14336},
                      {4224, 4096},
                      {3008, 16384}})
    for (int64_t m : {17, 32}) {
      INFO(n << "x" << k << " " << m);
      CHECK(staged(choose_hopper(n, k, m, 8)) == kBlock);
      CHECK(staged(choose_bf16_hopper(n, k, m, 8)) == kBlock);
    }
  // The SMs scale it: on 114 SMs 4096 columns (128 blocks) are over one a SM, 3584 (112) not.
  const lowbit::Arch hopper = lowbit::Arch::parse("sm_90a");
  CHECK(staged(lowbit::choose_config(g128_problem(4096, 14336, 32, 8), hopper, 114)) != kBlock);
  CHECK(staged(lowbit::choose_config(g128_problem(3584, 14336, 32, 8), hopper, 114)) == kBlock);
  // Out: over one block a SM (4256 columns: 133 blocks; 5120, 6144: v61's or narrow_32's choice stays), under
  // 0.54 of the SMs (2240 columns: 70 blocks), under 0.7 over 96 chunks (2304×16384, 2560×16384, 2816×16384:
  // stream K won or tied), under 0.7 on 81-96 chunks and under 64 (2304×12288, 2944×4096: unmeasured there),
  // under 16 chunks (4096×1920), symmetric weights (unmeasured; ptxas spills 4-12 B).
  CHECK(staged(choose_hopper(4256, 4096, 32, 8)) != kBlock);
  CHECK(staged(choose_hopper(5120, 8192, 32, 8)) != kBlock);
  CHECK(staged(choose_hopper(6144, 4096, 32, 8)) == "2,4,1,4,1,2+xs");
  CHECK(staged(choose_hopper(2240, 8192, 32, 8)) != kBlock);
  CHECK(choose_hopper(2304, 16384, 32, 8).wgmma);
  CHECK(choose_hopper(2560, 16384, 32, 8).wgmma);
  CHECK(choose_hopper(2816, 16384, 32, 8).wgmma);
  CHECK(choose_hopper(2944, 16384, 32, 8).wgmma);  // 92 blocks: 0.697 of the SMs
  CHECK(staged(choose_hopper(4096, 1920, 32, 8)) != kBlock);
  CHECK(staged(choose_hopper(2304, 12288, 32, 8)) != kBlock);
  CHECK(staged(choose_hopper(2944, 4096, 32, 8)) == "2,4,1,4,1,2+xs");  // v61's
  WqGemmProblem sym = g128_problem(4096, 14336, 32, 8);
  sym.mode = DequantMode::Symmetric;
  CHECK(staged(choose_hopper(sym)) != kBlock);
  // Not other widths, 16 or 64 rows, groups other than 128, float zeros, fp16 accumulation, deterministic
  // problems, or off sm_90a.
  CHECK(staged(choose_hopper(4096, 14336, 32, 4)) != kBlock);
  CHECK(staged(choose_hopper(4096, 14336, 32, 2)) != kBlock);
  CHECK(staged(choose_hopper(4096, 14336, 16, 8)) != kBlock);
  CHECK(staged(choose_hopper(4096, 14336, 64, 8)) != kBlock);
  for (const WqGemmProblem& q : other_formats(g128_problem(4096, 14336, 32, 8))) {
    INFO(q.str());
    CHECK(staged(choose_hopper(q)) != kBlock);
  }
  CHECK(staged(lowbit::choose_config(g128_problem(4096, 14336, 32, 8), kSm80, 132)) != kBlock);
}

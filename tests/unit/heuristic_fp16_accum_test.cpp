// fp16 accumulation's heuristics at 32-128 rows (docs/perf-notes.md, sixty-fourth and sixty-fifth sessions,
// from H200 tunes and benches; src/kernels/wq_gemm_heuristic_fp16_accum.cpp): v47, 4-bit at 64 rows on
// 5120-6144-wide layers, block-shared activations, K split in two, 2 stages; v48, the other widths and bit
// widths at 32-128 rows, and 4 row tiles × 4 warps side by side on wide layers; v50 (sixty-sixth session),
// those at 128 rows on 10-12 tiles a SM with K = 4096 at 4 bits.
#include <cstdint>
#include <utility>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::DType;
using lowbit::WqGemmProblem;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::staged;

namespace {
WqGemmProblem f16_accum(int64_t n, int64_t k, int64_t m, int bits = 4) {
  WqGemmProblem p = g128_problem(n, k, m, bits);
  p.accum = DType::F16;
  return p;
}
using Layers = std::initializer_list<std::pair<int64_t, int64_t>>;
}  // namespace

TEST_CASE("choose_config v47-v48: fp16 accumulation at 64 rows", "[config][heuristic]") {
  // v47 (4-bit, 4.2-6 tiles a SM) and v48 (every bit width there; up to 4 bits from 3 tiles a SM).
  for (auto [n, k] :
       Layers{{6144, 4096}, {6144, 8192}, {6144, 16384}, {6144, 28672}, {5120, 16384}, {5120, 4096}}) {
    INFO(n << "x" << k);
    for (int bits : {2, 3, 4, 8}) CHECK(staged(choose_hopper(f16_accum(n, k, 64, bits))) == "2,4,2,2,2,2+xs");
  }
  for (auto [n, k] : Layers{{4096, 4096}, {4096, 14336}, {3584, 18944}}) {
    INFO(n << "x" << k);
    for (int bits : {2, 3, 4}) CHECK(staged(choose_hopper(f16_accum(n, k, 64, bits))) == "2,4,2,2,2,2+xs");
    CHECK(choose_hopper(f16_accum(n, k, 64, 8)).split_k == 1);
  }
  // The bounds: over 3 tiles a SM (3176 columns in, 3168 out), over 4.2 at 8 bits (4440 in, 4432 out), up
  // to 6 (6336 in, 6344 out), 32 chunks (4096 in, 3968 out).
  CHECK(staged(choose_hopper(f16_accum(3176, 8192, 64))) == "2,4,2,2,2,2+xs");
  CHECK(staged(choose_hopper(f16_accum(3168, 8192, 64))) != "2,4,2,2,2,2+xs");
  CHECK(staged(choose_hopper(f16_accum(4440, 8192, 64, 8))) == "2,4,2,2,2,2+xs");
  CHECK(choose_hopper(f16_accum(4432, 8192, 64, 8)).split_k == 1);
  CHECK(staged(choose_hopper(f16_accum(6336, 8192, 64))) == "2,4,2,2,2,2+xs");
  CHECK(staged(choose_hopper(f16_accum(6344, 8192, 64))) == "2,8,2,4,1,2+xs");
  CHECK(choose_hopper(f16_accum(6144, 3968, 64)).stages != 2);
  // Over 6 up to 8 tiles a SM, up to 4 bits: 2 × 2 warps of 2 × 8 tiles; 8-bit weights keep the rules before.
  for (auto [n, k] : Layers{{8192, 8192}, {8192, 6144}, {8192, 28672}, {7168, 8192}}) {
    INFO(n << "x" << k);
    for (int bits : {2, 3, 4}) CHECK(staged(choose_hopper(f16_accum(n, k, 64, bits))) == "2,8,2,4,1,2+xs");
    CHECK(staged(choose_hopper(f16_accum(n, k, 64, 8))) == "2,4,2,2,1,3+xs");
  }
  // Over 12 up to 16 and over 24 tiles a SM: 4 row tiles × 4 warps side by side, split in two below one
  // block a SM (14336: 112 blocks) and, at 4 bits, where it lightens the busiest SM (36864: 288 blocks).
  for (int bits : {2, 4, 8}) {
    CHECK(staged(choose_hopper(f16_accum(14336, 4096, 64, bits))) == "4,4,4,1,2,2+xs");
    CHECK(staged(choose_hopper(f16_accum(13824, 5120, 64, bits))) == "4,4,4,1,2,2+xs");
    CHECK(staged(choose_hopper(f16_accum(28672, 4096, 64, bits))) == "4,4,4,1,1,2+xs");
  }
  CHECK(staged(choose_hopper(f16_accum(36864, 4096, 64))) == "4,4,4,1,2,2+xs");
  CHECK(staged(choose_hopper(f16_accum(36864, 4096, 64, 8))) == "4,4,4,1,1,2+xs");
  // Between (over 8 up to 12, over 16 up to 24) the rules before stay: 10240×8192, 20480×4096.
  CHECK(staged(choose_hopper(f16_accum(10240, 8192, 64))) == "2,4,2,2,1,3+xs");
  CHECK(staged(choose_hopper(f16_accum(20480, 4096, 64))) == "2,4,2,2,1,3+xs");
}

TEST_CASE("choose_config v48: fp16 accumulation at 128 and 32 rows", "[config][heuristic]") {
  // 128 rows: 3-4.2 tiles a SM up to 4 bits 2 × 8 tiles; 4.2-6 and 8-12 2 × 4 tiles unsplit, 2 stages.
  for (int bits : {2, 3, 4})
    CHECK(staged(choose_hopper(f16_accum(4096, 14336, 128, bits))) == "2,8,2,4,1,2+xs");
  CHECK(staged(choose_hopper(f16_accum(4096, 4096, 128, 8))) == "2,4,2,2,1,3+xs");
  for (int bits : {2, 4, 8}) {
    CHECK(staged(choose_hopper(f16_accum(6144, 4096, 128, bits))) == "2,4,2,2,1,2+xs");
    CHECK(staged(choose_hopper(f16_accum(10240, 8192, 128, bits))) == "2,4,2,2,1,2+xs");
  }
  // v50: 10-12 tiles a SM on 32 chunks at 4 bits: 4 row tiles × 4 warps side by side, split in two (11008 and
  // 12288 wide: 172 and 192 blocks, the busiest SM 2 unsplit, 1.5 split); 2- and 8-bit keep 2 × 4 tiles, and
  // so does 9216×4096 (8.7 tiles a SM).
  CHECK(staged(choose_hopper(f16_accum(9216, 4096, 128))) == "2,4,2,2,1,2+xs");
  CHECK(staged(choose_hopper(f16_accum(10568, 4096, 128))) == "4,4,4,1,2,2+xs");
  CHECK(staged(choose_hopper(f16_accum(10560, 4096, 128))) == "2,4,2,2,1,2+xs");
  for (int64_t n : {11008, 12288}) {
    INFO(n);
    CHECK(staged(choose_hopper(f16_accum(n, 4096, 128))) == "4,4,4,1,2,2+xs");
    CHECK(staged(choose_hopper(f16_accum(n, 4096, 128, 2))) == "2,4,2,2,1,2+xs");
    CHECK(staged(choose_hopper(f16_accum(n, 4096, 128, 8))) == "2,4,2,2,1,2+xs");
  }
  // 6-8 and over 12 tiles a SM: 4 row tiles × 4 warps side by side; 8192 wide (128 blocks) split in two,
  // 14336 (224) not, 28672 (448) at 4 bits only.
  for (int bits : {2, 4, 8}) {
    CHECK(staged(choose_hopper(f16_accum(8192, 8192, 128, bits))) == "4,4,4,1,2,2+xs");
    CHECK(staged(choose_hopper(f16_accum(7168, 8192, 128, bits))) == "4,4,4,1,2,2+xs");
    CHECK(staged(choose_hopper(f16_accum(14336, 4096, 128, bits))) == "4,4,4,1,1,2+xs");
  }
  CHECK(staged(choose_hopper(f16_accum(8192, 28672, 128))) == "4,4,4,1,2,2+xs");
  CHECK(staged(choose_hopper(f16_accum(28672, 4096, 128))) == "4,4,4,1,2,2+xs");
  CHECK(staged(choose_hopper(f16_accum(28672, 8192, 128))) == "4,4,4,1,2,2+xs");
  CHECK(staged(choose_hopper(f16_accum(28672, 4096, 128, 2))) == "4,4,4,1,1,2+xs");
  CHECK(staged(choose_hopper(f16_accum(28672, 4096, 128, 8))) == "4,4,4,1,1,2+xs");
  // 32 rows: 4-bit at 6-8 tiles a SM, one 32-row block of 2 warps side by side, split in two, 3 stages.
  for (auto [n, k] : Layers{{8192, 8192}, {8192, 6144}, {8192, 28672}, {7168, 8192}}) {
    INFO(n << "x" << k);
    CHECK(staged(choose_hopper(f16_accum(n, k, 32))) == "2,4,2,2,2,3+xs");
    CHECK(staged(choose_hopper(f16_accum(n, k, 32, 2))) != "2,4,2,2,2,3+xs");
  }
  CHECK(staged(choose_hopper(f16_accum(6144, 4096, 32))) != "2,4,2,2,2,3+xs");
  CHECK(staged(choose_hopper(f16_accum(14336, 4096, 32))) != "2,4,2,2,2,3+xs");
}

TEST_CASE("choose_config v54: fp16 accumulation over 128 rows, 64 × 128 blocks", "[config][heuristic]") {
  for (int64_t m : {129, 256, 1024, 4096})
    for (int bits : {2, 3, 4, 8}) {
      INFO("m " << m << " bits " << bits);
      CHECK(staged(choose_hopper(f16_accum(8192, 8192, m, bits))) == "4,4,4,1,1,2+xs");
      CHECK(staged(choose_hopper(f16_accum(28672, 4096, m, bits))) == "4,4,4,1,1,2+xs");
    }
  // K split in two only where the grid leaves SMs with one block or none: 4096² at 256 rows, 32 × 4 blocks.
  CHECK(staged(choose_hopper(f16_accum(4096, 4096, 256))) == "4,4,4,1,2,2+xs");
  CHECK(staged(choose_hopper(f16_accum(4096, 14336, 256))) == "4,4,4,1,2,2+xs");
  CHECK(staged(choose_hopper(f16_accum(4096, 4096, 1024))) == "4,4,4,1,1,2+xs");
  // Short K (under 32 chunks) keeps the mma.sync rules unmeasured here.
  CHECK(staged(choose_hopper(f16_accum(8192, 2048, 1024))) != "4,4,4,1,1,2+xs");
}

TEST_CASE("choose_config v47-v48 leave fp32 accumulation, deterministic problems, short K and sm_80",
          "[config][heuristic]") {
  CHECK(choose_hopper(g128_problem(6144, 16384, 64)).wgmma);
  CHECK(choose_hopper(g128_problem(8192, 8192, 128)).wgmma);
  for (int64_t m : {32, 64, 128}) {
    INFO("m " << m);
    WqGemmProblem det = f16_accum(8192, 8192, m);
    det.deterministic = true;
    CHECK(choose_hopper(det).warps_n != 4);
    CHECK(choose_hopper(det).m_tiles != 4);
    // 3968 columns of K: 31 chunks.
    CHECK(choose_hopper(f16_accum(8192, 3968, m)).m_tiles != 4);
    CHECK(lowbit::choose_config(f16_accum(8192, 8192, m), kSm80, 108).m_tiles != 4);
  }
  // Nor 1-16 rows.
  for (int64_t m : {1, 4, 16}) CHECK(choose_hopper(f16_accum(8192, 8192, m)).warps_n == 1);
}

// Heuristics v42-v46 (docs/perf-notes.md, sixty-third and sixty-fourth sessions, from out-of-sample H200
// tunes and benches): 3-bit weights at one row and on the widest layers at 16 rows take 8 tiles a warp (v42,
// v44); 3/4-bit weights at 16 rows about one wave of 8-tile blocks too (v43); 1-2-bit weights at one row take
// 6 tiles where those blocks fill 70-90 % of the SMs, or up to 100 % where the format dequantizes every
// weight (v45). v46: 3-bit groups of 256 take v42-v44 (tested with them). fp16 accumulation's v47-v48:
// heuristic_fp16_accum_test.cpp.
#include <cstdint>
#include <utility>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::DequantMode;
using lowbit::WqGemmProblem;
using lowbit::test::choose_bf16_hopper;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::kSm80;
using lowbit::test::staged;

namespace {
WqGemmProblem with_group(WqGemmProblem p, int group, DequantMode mode = DequantMode::SubZeroThenScale) {
  p.group_size = group, p.mode = mode;
  return p;
}
}  // namespace

TEST_CASE("choose_config v42: 3-bit at one row, 8 tiles where their blocks fill over half the SMs once",
          "[config][heuristic]") {
  // 12 warps along K under 64 chunks, 16 from 64.
  for (auto [n, k] : {std::pair<int64_t, int64_t>{8192, 6144}, {6144, 4096}, {5120, 4096}, {4608, 3584}}) {
    INFO(n << "x" << k);
    CHECK(staged(choose_hopper(n, k, 1, 3)) == "1,8,1,12,1,2+xs");
  }
  for (auto [n, k] : {std::pair<int64_t, int64_t>{8192, 8192}, {8192, 14336}, {7168, 8192}, {6144, 16384}}) {
    INFO(n << "x" << k);
    CHECK(staged(choose_hopper(n, k, 1, 3)) == "1,8,1,16,1,2+xs");
  }
  // GPTQ symmetric and bf16 on 2- or 4-tile configs too; bf16's 6 tiles × 12 warps stay.
  WqGemmProblem sym = g128_problem(8192, 8192, 1, 3);
  sym.mode = DequantMode::Symmetric;
  CHECK(staged(choose_hopper(sym)) == "1,8,1,16,1,2+xs");
  CHECK(staged(choose_bf16_hopper(8192, 8192, 1, 3)) == "1,8,1,16,1,2+xs");
  CHECK(staged(choose_bf16_hopper(6144, 16384, 1, 3)) == "1,6,1,12,1,2+xs");
  CHECK(staged(choose_bf16_hopper(5120, 8192, 1, 3)) == "1,6,1,12,1,2+xs");
  // The bounds: over half the SMs (4232 columns, 67 blocks of 8, in; 4224, 66, out), at most one wave
  // (8448 in, 8456 out), 28 chunks or more (3584 in, 3456 out).
  CHECK(choose_hopper(4232, 8192, 1, 3).n_tiles == 8);
  CHECK(choose_hopper(4224, 8192, 1, 3).n_tiles != 8);
  CHECK(choose_hopper(8448, 8192, 1, 3).n_tiles == 8);
  CHECK(choose_hopper(8456, 8192, 1, 3).warps_k < 12);
  CHECK(choose_hopper(8192, 3456, 1, 3).warps_k < 12);
  // Not 4-bit weights, other group sizes, float zeros, 2+ rows, deterministic mode or sm_80.
  CHECK(choose_hopper(8192, 8192, 1).n_tiles == 4);
  for (int group : {64, 32, 0})
    CHECK(choose_hopper(with_group(g128_problem(8192, 8192, 1, 3), group)).warps_k < 12);
  // Groups of 256 take it (sixty-fourth session).
  CHECK(staged(choose_hopper(with_group(g128_problem(6144, 16384, 1, 3), 256))) == "1,8,1,16,1,2+xs");
  CHECK(staged(choose_hopper(with_group(g128_problem(8192, 6144, 1, 3), 256))) == "1,8,1,12,1,2+xs");
  CHECK(choose_hopper(with_group(g128_problem(8192, 8192, 1, 3), 128, DequantMode::SubFloatZeroThenScale))
            .warps_k < 12);
  CHECK(choose_hopper(8192, 8192, 2, 3).warps_k < 12);
  WqGemmProblem det = g128_problem(8192, 8192, 1, 3);
  det.deterministic = true;
  CHECK(choose_hopper(det).warps_k < 12);
  CHECK(lowbit::choose_config(g128_problem(8192, 8192, 1, 3), kSm80, 132).warps_k < 12);
}

TEST_CASE("choose_config v43: 3/4-bit at 16 rows, 8 tiles x 8 warps about one wave of 8-tile blocks",
          "[config][heuristic]") {
  for (int bits : {3, 4}) {
    for (auto [n, k] : {std::pair<int64_t, int64_t>{8192, 6144},
                        {8192, 8192},
                        {8192, 14336},
                        {7168, 8192},
                        {8192, 28672}}) {
      INFO(bits << "-bit " << n << "x" << k);
      CHECK(staged(choose_hopper(n, k, 16, bits)) == "1,8,1,8,1,2+xs");
      CHECK(staged(choose_bf16_hopper(n, k, 16, bits)) == "1,8,1,8,1,2+xs");
    }
  }
  // The bounds: v23's 6 tiles up to one wave of 6-tile blocks (6336 columns) below, which is above 70 % of
  // the SMs in 8-tile blocks (5896 columns, 93 blocks); one wave (8448 in, 8456 out); 48 chunks (6144 in,
  // 6016 out).
  CHECK(choose_hopper(6344, 8192, 16).n_tiles == 8);
  CHECK(choose_hopper(6336, 8192, 16).n_tiles == 6);
  CHECK(choose_hopper(8448, 8192, 16).n_tiles == 8);
  CHECK(choose_hopper(8456, 8192, 16).n_tiles != 8);
  CHECK(choose_hopper(8192, 6016, 16).n_tiles != 8);
  // v23's 6 tiles keep the narrower layers (6144 columns: 6-tile blocks fill 97 %).
  CHECK(choose_hopper(6144, 16384, 16, 3).n_tiles == 6);
  // Not per channel, g64, 4-bit g256, float zeros, 8-bit weights (2-bit ones have v13's 8 tiles), 8 rows or
  // sm_80; 3-bit g256 takes it (sixty-fourth session).
  for (int group : {0, 64})
    CHECK(choose_hopper(with_group(g128_problem(8192, 8192, 16, 3), group)).n_tiles == 4);
  CHECK(choose_hopper(with_group(g128_problem(8192, 8192, 16, 4), 256)).n_tiles == 4);
  CHECK(staged(choose_hopper(with_group(g128_problem(8192, 6144, 16, 3), 256))) == "1,8,1,8,1,2+xs");
  CHECK(choose_hopper(with_group(g128_problem(8192, 8192, 16), 128, DequantMode::ScaleThenAddZero)).n_tiles ==
        4);
  CHECK(staged(choose_hopper(8192, 8192, 16, 8)) != "1,8,1,8,1,2+xs");
  CHECK(choose_hopper(8192, 8192, 8).n_tiles == 4);
  CHECK(lowbit::choose_config(g128_problem(8192, 8192, 16), kSm80, 132).n_tiles != 8);
}

TEST_CASE("choose_config v44: 3-bit at 16 rows on the widest layers, 8 tiles x 4 warps along K",
          "[config][heuristic]") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{40960, 7168},
                      {51200, 5120},
                      {57344, 8192},
                      {65536, 5120},
                      {73728, 4608}}) {
    INFO(n << "x" << k);
    CHECK(staged(choose_hopper(n, k, 16, 3)) == "1,8,1,4,1,2+xs");
    CHECK(staged(choose_bf16_hopper(n, k, 16, 3)) == "1,8,1,4,1,2+xs");
    CHECK(staged(choose_hopper(n, k, 16)) != "1,8,1,4,1,2+xs");  // 4-bit keeps its rules
  }
  // Over 36 tiles a SM (38024 columns in, 38016 out); v32's band of up to 3 blocks of 16 past 40 keeps
  // (1,8,2,2,1,2); over 16 chunks.
  CHECK(staged(choose_hopper(38024, 5120, 16, 3)) == "1,8,1,4,1,2+xs");
  CHECK(staged(choose_hopper(38016, 5120, 16, 3)) == "1,4,1,4,1,2+xs");
  CHECK(staged(choose_hopper(45056, 8192, 16, 3)) == "1,8,2,2,1,2+xs");
  CHECK(staged(choose_hopper(65536, 2048, 16, 3)) != "1,8,1,4,1,2+xs");
  CHECK(choose_hopper(with_group(g128_problem(40960, 7168, 16, 3), 64)).n_tiles != 8);
  CHECK(staged(choose_hopper(40960, 7168, 8, 3)) != "1,8,1,4,1,2+xs");  // 16 rows only
}

TEST_CASE(
    "choose_config v45: 1-2-bit at one row, 6 tiles and 3 stages where their blocks fill 70-90 % of the SMs",
    "[config][heuristic]") {
  // v19's 8 tiles × 8 warps (16 from 64 chunks) become 6 tiles, 3 stages, in every group size.
  CHECK(staged(choose_hopper(5120, 4096, 1, 2)) == "1,6,1,8,1,3+xs");
  CHECK(staged(choose_hopper(5120, 25600, 1, 2)) == "1,6,1,16,1,3+xs");
  CHECK(staged(choose_bf16_hopper(5120, 8192, 1, 2)) == "1,6,1,16,1,3+xs");
  CHECK(staged(choose_hopper(5120, 8192, 1, 1)) == "1,6,1,16,1,3+xs");
  CHECK(staged(choose_hopper(with_group(g128_problem(5120, 8192, 1, 2), 64))) == "1,6,1,16,1,3+xs");
  // Up to 90 % in g128 (6144-wide layers keep 8 tiles), up to 100 % where every weight is dequantized.
  CHECK(staged(choose_hopper(6144, 16384, 1, 2)) == "1,8,1,16,1,2+xs");
  const WqGemmProblem hqq =
      with_group(g128_problem(6144, 16384, 1, 2), 64, DequantMode::SubFloatZeroThenScale);
  CHECK(staged(choose_hopper(hqq)) == "1,6,1,16,1,3+xs");
  CHECK(staged(choose_hopper(with_group(g128_problem(6144, 4096, 1, 2), 32))) == "1,6,1,8,1,3+xs");
  // Not 3/4-bit weights, 2+ rows, or where v19 keeps fewer tiles (4.5 tiles a SM or less: 4608 columns).
  CHECK(choose_hopper(5120, 4096, 1).n_tiles == 6);  // 4-bit: v28's 6 × 12, 2 stages
  CHECK(choose_hopper(5120, 4096, 1).stages == 2);
  CHECK(staged(choose_hopper(5120, 4096, 2, 2)) != "1,6,1,8,1,3+xs");
  CHECK(choose_hopper(4608, 4096, 1, 2).n_tiles != 6);
  CHECK(lowbit::choose_config(g128_problem(5120, 4096, 1, 2), kSm80, 132).n_tiles != 6);
}

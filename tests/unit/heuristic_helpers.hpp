// Shared by the heuristic tests (header only): the heuristic's choice on an H100/H200-like GPU.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"

namespace lowbit::test {

// A g128 problem of `bits`-bit weights (fp16, integer zeros), the heuristic tests' default.
inline WqGemmProblem g128_problem(int64_t n, int64_t k, int64_t m, int bits = 4) {
  WqGemmProblem p;
  p.n = n, p.k = k, p.m = m, p.bits = bits, p.group_size = 128;
  return p;
}

// The arch the heuristic tests check a Hopper-only rule leaves alone on.
inline const Arch kSm80 = Arch::parse("sm_80");

// choose_config for `p` on sm_90a with 132 SMs; checks the choice is implementable.
inline WqGemmConfig choose_hopper(const WqGemmProblem& p) {
  static const Arch hopper = Arch::parse("sm_90a");
  const WqGemmConfig c = choose_config(p, hopper, 132);
  INFO(p.str() << " -> " << c.str());
  CHECK(can_implement(p, c, hopper));
  return c;
}

// The same for a W4-style g128 problem.
inline WqGemmConfig choose_hopper(int64_t n, int64_t k, int64_t m, int bits = 4) {
  return choose_hopper(g128_problem(n, k, m, bits));
}

// The same with activations (and output) in bf16.
inline WqGemmConfig choose_bf16_hopper(int64_t n, int64_t k, int64_t m, int bits = 4) {
  WqGemmProblem p = g128_problem(n, k, m, bits);
  p.act = DType::BF16, p.out = DType::BF16;
  return choose_hopper(p);
}

// v5's registers config with `warps_k` warps along K: 4 tiles a warp, one warp along N, K unsplit, 2 stages,
// activations in registers (heuristics v36 and v37 change its warps along K).
inline bool v5_registers(const WqGemmConfig& c, int warps_k) {
  return !c.x_shared && c.m_tiles == 1 && c.n_tiles == 4 && c.warps_n == 1 && c.warps_k == warps_k &&
         c.split_k == 1 && c.stages == 2;
}

// The tile and K split of a wgmma config, as "mt,nt,warps_n,warps_k sK|skN [img]".
inline std::string wgmma_shape(const WqGemmConfig& c) {
  if (!c.wgmma) return "mma.sync " + c.str();
  std::string s = std::to_string(c.m_tiles) + "," + std::to_string(c.n_tiles) + "," +
                  std::to_string(c.warps_n) + "," + std::to_string(c.warps_k) +
                  (c.stream_k ? " sK" : " sk" + std::to_string(c.split_k));
  return c.x_image ? s + " img" : s;
}

// m_tiles,n_tiles,warps_n,warps_k,split_k,stages of an mma.sync config with x_shared ("+xs"), or its str().
inline std::string staged(const WqGemmConfig& c) {
  if (c.wgmma || !c.x_shared) return c.str();
  return std::to_string(c.m_tiles) + "," + std::to_string(c.n_tiles) + "," + std::to_string(c.warps_n) + "," +
         std::to_string(c.warps_k) + "," + std::to_string(c.split_k) + "," + std::to_string(c.stages) + "+xs";
}

// `p` with activations (and output) in `act`.
inline WqGemmProblem with_act(WqGemmProblem p, DType act) {
  p.act = p.out = act;
  return p;
}

// Variants of `p` (a g128 integer-zero problem) that a rule measured in that format alone leaves to the other
// rules: groups of 64 and 256 and per channel, float zeros, fp16 accumulation, deterministic mode.
inline std::vector<WqGemmProblem> other_formats(const WqGemmProblem& p) {
  std::vector<WqGemmProblem> v(6, p);
  v[0].group_size = 64, v[1].group_size = 256, v[2].group_size = 0;
  v[3].mode = DequantMode::SubFloatZeroThenScale;
  v[4].accum = DType::F16;
  v[5].deterministic = true;
  return v;
}

}  // namespace lowbit::test

// wq_gemm's problem and config as text, JSON and tuning keys, and the checks a problem must pass.
#include <fmt/format.h>

#include <utility>

#include "kernels/wq_gemm_internal.hpp"

namespace lowbit {

using wq::fail;

std::string_view to_string(DequantMode m) {
  switch (m) {
    case DequantMode::SubZeroThenScale:
      return "sub_zero_then_scale";
    case DequantMode::Symmetric:
      return "symmetric";
    case DequantMode::SubFloatZeroThenScale:
      return "sub_float_zero_then_scale";
    case DequantMode::ScaleThenAddZero:
      return "scale_then_add_zero";
  }
  return "?";
}

bool has_int_zeros(DequantMode m) {
  return m == DequantMode::SubZeroThenScale;
}
bool has_float_zeros(DequantMode m) {
  return m == DequantMode::SubFloatZeroThenScale || m == DequantMode::ScaleThenAddZero;
}

std::string WqGemmProblem::str() const {
  return fmt::format("WqGemmProblem(m={}, n={}, k={}, bits={}, group_size={}, mode={}, act={}, out={}{}{}{})",
                     m, n, k, bits, group_size, to_string(mode), to_string(act), to_string(out),
                     act_order ? ", act_order" : "", deterministic ? ", deterministic" : "",
                     accum == DType::F32 ? "" : fmt::format(", accum={}", to_string(accum)));
}

std::string WqGemmConfig::str() const {
  return fmt::format(
      "WqGemmConfig(m_tiles={}, n_tiles={}, warps_n={}, warps_k={}, split_k={}, stages={}{}{}{}{}{})",
      m_tiles, n_tiles, warps_n, warps_k, split_k, stages, x_shared ? ", x_shared" : "",
      wgmma ? ", wgmma" : "", stream_k ? ", stream_k" : "", x_image ? ", x_image" : "",
      x_sums ? ", x_sums" : "");
}

bool can_implement(const WqGemmProblem& p, std::string* why) {
  if (p.m < 1) return fail(why, fmt::format("m = {}: M must be ≥ 1", p.m));
  if (p.n < 1) return fail(why, fmt::format("n = {}: N must be ≥ 1", p.n));
  if (p.k < 1) return fail(why, fmt::format("k = {}: K must be ≥ 1", p.k));
  if (p.n > (int64_t{1} << 30) || p.k > (int64_t{1} << 30) || p.m > (int64_t{1} << 30))
    return fail(why, fmt::format("m, n, k = {}, {}, {}: each must be ≤ 2^30", p.m, p.n, p.k));
  if (p.bits != 1 && p.bits != 2 && p.bits != 3 && p.bits != 4 && p.bits != 8)
    return fail(why, fmt::format("bits = {}: weights must have 1, 2, 3, 4 or 8 bits", p.bits));
  if (p.mode != DequantMode::SubZeroThenScale && p.mode != DequantMode::Symmetric &&
      p.mode != DequantMode::SubFloatZeroThenScale && p.mode != DequantMode::ScaleThenAddZero)
    return fail(why, fmt::format("mode = {}: not a DequantMode", static_cast<int>(p.mode)));
  if (p.act_order && p.group_size == 0)
    return fail(why, "act_order with group_size = 0: per-channel scales have no groups to reorder");
  if (p.group_size != 0 && p.group_size != 32 && p.group_size != 64 && p.group_size != 128 &&
      p.group_size != 256)
    return fail(why, fmt::format("group_size = {}: must be 32, 64, 128, 256, or 0 for per-channel scales",
                                 p.group_size));
  if (p.k % 8 != 0) return fail(why, fmt::format("k = {}: K must be a multiple of 8", p.k));
  if (p.group_size != 0 && p.k % p.group_size != 0)
    return fail(why, fmt::format("k = {}: K must be a multiple of group_size = {}", p.k, p.group_size));
  if (p.act != DType::F16 && p.act != DType::BF16)
    return fail(why, fmt::format("act = {}: activations must be f16 or bf16", to_string(p.act)));
  if (p.out != p.act && p.out != DType::F32)
    return fail(why, fmt::format("out = {}: the output must be the activation dtype ({}) or f32",
                                 to_string(p.out), to_string(p.act)));
  if (p.accum != DType::F32 && p.accum != DType::F16)
    return fail(why, fmt::format("accum = {}: accumulation must be f32 or f16", to_string(p.accum)));
  if (p.accum == DType::F16 && p.act != DType::F16)
    return fail(why, fmt::format("accum = f16 with act = {}: fp16 accumulation needs f16 activations (bf16 "
                                 "MMAs accumulate in fp32 only)",
                                 to_string(p.act)));
  return true;
}

namespace wq {

nlohmann::json to_json(const WqGemmProblem& p) {
  nlohmann::json j = {{"n", p.n},
                      {"k", p.k},
                      {"bits", p.bits},
                      {"group_size", p.group_size},
                      {"mode", to_string(p.mode)},
                      {"act", to_string(p.act)},
                      {"out", to_string(p.out)}};
  if (p.act_order) j["act_order"] = true;
  if (p.deterministic) j["deterministic"] = true;
  if (p.accum != DType::F32) j["accum"] = to_string(p.accum);
  return j;
}

nlohmann::json to_json(const WqGemmConfig& c) {
  nlohmann::json j = {{"m_tiles", c.m_tiles}, {"n_tiles", c.n_tiles}, {"warps_n", c.warps_n},
                      {"warps_k", c.warps_k}, {"split_k", c.split_k}, {"stages", c.stages}};
  if (c.x_shared) j["x_shared"] = true;  // absent = false: files from before the field stay valid
  if (c.wgmma) j["wgmma"] = true;        // likewise
  if (c.stream_k) j["stream_k"] = true;  // likewise
  if (c.x_image) j["x_image"] = true;    // likewise
  if (c.x_sums) j["x_sums"] = true;      // likewise
  return j;
}

std::optional<WqGemmConfig> config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  WqGemmConfig c;
  for (auto [name, field] :
       {std::pair{"m_tiles", &c.m_tiles}, std::pair{"n_tiles", &c.n_tiles}, std::pair{"warps_n", &c.warps_n},
        std::pair{"warps_k", &c.warps_k}, std::pair{"split_k", &c.split_k}, std::pair{"stages", &c.stages}}) {
    if (!j.contains(name) || !j[name].is_number_integer()) return std::nullopt;
    *field = j[name].get<int>();
  }
  for (auto [name, field] :
       {std::pair{"x_shared", &c.x_shared}, std::pair{"wgmma", &c.wgmma}, std::pair{"stream_k", &c.stream_k},
        std::pair{"x_image", &c.x_image}, std::pair{"x_sums", &c.x_sums}}) {
    if (!j.contains(name)) continue;
    if (!j[name].is_boolean()) return std::nullopt;
    *field = j[name].get<bool>();
  }
  return c;
}

tune::TuningKey tuning_key(const WqGemmProblem& p, int64_t bucket) {
  tune::TuningKey k;
  // No act-order field: act-order layers run the plain layers' config (on sm_90 in the chained kernel,
  // wq::overlaps_permutation).
  k.format = fmt::format("w{}.{}.{}{}.{}{}{}", p.bits, p.group_size ? fmt::format("g{}", p.group_size) : "pc",
                         to_string(p.act), p.out == DType::F32 ? ".o32" : "", mode_tag(p.mode),
                         p.deterministic ? ".det" : "", p.accum == DType::F16 ? ".a16" : "");
  k.shape = {{"m", bucket}, {"n", p.n}, {"k", p.k}};
  return k;
}

WqGemmProblem problem_of_format(WqGemmProblem p, std::string_view format) {
  p.deterministic = false, p.accum = DType::F32;
  const auto fields = tune::format_fields(format);
  for (std::size_t i = 2; i < fields.size(); ++i) {  // after bits and group
    const std::string_view f = fields[i];
    if (f == "f16" || f == "bf16") p.act = p.out = f == "f16" ? DType::F16 : DType::BF16;
    if (f == "o32") p.out = DType::F32;
    for (DequantMode m : {DequantMode::SubZeroThenScale, DequantMode::Symmetric,
                          DequantMode::SubFloatZeroThenScale, DequantMode::ScaleThenAddZero})
      if (f == mode_tag(m)) p.mode = m;
    if (f == "det") p.deterministic = true;
    if (f == "a16") p.accum = DType::F16;
  }
  return p;
}

}  // namespace wq

}  // namespace lowbit

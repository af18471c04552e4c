// wq_gemm host side: problem checks, config space, heuristic, render, launch.
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "common/check.hpp"
#include "common/env.hpp"
#include "common/log.hpp"
#include "jit/context.hpp"
#include "jit/driver.hpp"
#include "jit/launch.hpp"
#include "kernels/wq_gemm_internal.hpp"

namespace lowbit {

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

namespace {
bool fail(std::string* why, std::string msg) {
  if (why) *why = std::move(msg);
  return false;
}
int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
}  // namespace

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

std::size_t reduction_smem_bytes(const WqGemmConfig& c) {
  // Every warp's accumulators (kRegs ≤ m_tiles · n_tiles · 4 per lane), [warps_n][kRegs][warps_k][32].
  return c.warps_k > 1 ? static_cast<std::size_t>(c.warps_k) * c.warps_n * c.m_tiles * c.n_tiles * 4 * 32 * 4
                       : 0;
}

// Scale/zero groups per 128-wide K chunk (kGroupsPerChunk in the templates): 0 per channel.
static int groups_per_chunk(const WqGemmProblem& p) {
  return p.group_size == 0 ? 0 : (p.group_size >= 128 ? 1 : 128 / p.group_size);
}
std::size_t stage_bytes(const WqGemmProblem& p, const WqGemmConfig& c) {
  // kStageBytes in templates/wq_gemm_wgmma.cuh: 16·m_tiles activation rows × 128 k, the block's
  // warps_n·n_tiles weight tiles, and a 16-byte scale row and zero row per tile and group, rounded
  // up to 1 KiB (the swizzled activations).
  const std::size_t tiles = static_cast<std::size_t>(c.warps_n) * c.n_tiles;
  const std::size_t stage = 16 * static_cast<std::size_t>(c.m_tiles) * 256 + tiles * 128 * p.bits +
                            2 * tiles * groups_per_chunk(p) * 16;
  return (stage + 1023) / 1024 * 1024;
}
bool cluster_split(const WqGemmConfig& c) {
  // The wgmma kernel's kClusterK (a template argument, so the rule lives here only). Four-way
  // clusters ran in two waves on the H100 (docs/perf-notes.md, twenty-third session).
  return c.wgmma && !c.stream_k && (c.split_k == 2 || c.split_k == 3);
}
bool needs_split_workspace(const WqGemmConfig& c) {
  return c.split_k > 1 && !cluster_split(c);  // a cluster adds in shared memory, stream K in its scratch
}
bool adds_in_scratch(const WqGemmConfig& c) {
  return c.stream_k || (c.wgmma && needs_split_workspace(c));
}
std::size_t cluster_sums_bytes(const WqGemmConfig& c) {
  // kSplitK · kOwnVecs · kConsumers · 16 B in templates/wq_gemm_wgmma.cuh: each MMA thread's
  // accumulators in 16-byte vectors (m_tiles·n_tiles of them), dealt out to the split's ranks.
  const std::size_t vecs = static_cast<std::size_t>(c.m_tiles) * c.n_tiles;
  const std::size_t own = (vecs + c.split_k - 1) / c.split_k;
  return static_cast<std::size_t>(c.split_k) * own * 32 * c.warps_n * 16;
}
std::size_t smem_bytes(const WqGemmProblem& p, const WqGemmConfig& c) {
  if (c.wgmma) {
    // The stages, plus 1 KiB to align the first, plus two 8-byte mbarriers per stage (full and empty).
    return static_cast<std::size_t>(c.stages) * (stage_bytes(p, c) + 16) + 1024;
  }
  // Per warp and stage: weight fragments (n_tiles × 128·bits B) + per tile and group of a chunk one
  // 16-byte row of scales and one of zeros (must match kSlot in templates/wq_gemm.cuh).
  const std::size_t slot =
      (static_cast<std::size_t>(c.n_tiles) * 8 * p.bits + 2 * c.n_tiles * groups_per_chunk(p)) * 16;
  const std::size_t rings = static_cast<std::size_t>(c.warps_n) * c.warps_k * c.stages * slot;
  // x_shared: per stage the activations of 16·m_tiles rows (8 when it skips rows 8..15, 1 for the
  // kernel of M = 1) × warps_k chunks of 128 (kXStage).
  const int64_t bucket = m_bucket(p.m);
  const int x_rows = one_row_kernel(c, bucket) ? 1 : skips_upper_rows(c, bucket) ? 8 : 16 * c.m_tiles;
  const std::size_t x_stages =
      c.x_shared ? static_cast<std::size_t>(c.stages) * x_rows * 128 * c.warps_k * 2 : 0;
  return std::max(x_stages + rings, reduction_smem_bytes(c));
}

std::size_t smem_limit(const Arch& a) {
  switch (a.sm()) {
    case 90:
    case 100:
    case 103:
    case 110:
      return 227 * 1024;
    case 80:
    case 87:
      return 163 * 1024;
    default:
      return 99 * 1024;  // sm_75 (64 KiB is refused earlier), sm_86, sm_89, sm_120, sm_121
  }
}

Layout layout(const WqGemmProblem& p) {
  Layout l;
  l.n_pad = ceil_div(p.n, 8) * 8;
  l.k_pad = ceil_div(p.k, 128) * 128;
  l.groups_pad = p.group_size == 0 ? 1 : l.k_pad / p.group_size;
  l.chunks = l.k_pad / 128;
  l.qweight_bytes = static_cast<std::size_t>(l.n_pad) * l.k_pad / 8 * p.bits;
  l.scales_bytes = static_cast<std::size_t>(l.groups_pad) * l.n_pad * 2;
  l.zeros_bytes = has_int_zeros(p.mode)     ? static_cast<std::size_t>(l.groups_pad) * l.n_pad
                  : has_float_zeros(p.mode) ? static_cast<std::size_t>(l.groups_pad) * l.n_pad * 2
                                            : 0;
  l.perm_bytes = p.act_order ? static_cast<std::size_t>(p.k) * 4 : 0;
  return l;
}

std::size_t traffic_bytes(const WqGemmProblem& p) {
  const Layout l = layout(p);
  return l.qweight_bytes + l.scales_bytes + l.zeros_bytes + l.perm_bytes +
         static_cast<std::size_t>(p.m) * p.k * dtype_bytes(p.act) +
         static_cast<std::size_t>(p.m) * p.n * dtype_bytes(p.out);
}

int64_t stream_k_steps(const WqGemmProblem& p, const WqGemmConfig& c, int64_t m) {
  const Layout l = layout(p);
  return ceil_div(m, 16 * c.m_tiles) * ceil_div(l.n_pad / 8, c.n_tiles * c.warps_n) * l.chunks;
}

Geometry geometry(const WqGemmProblem& p, const WqGemmConfig& c, int64_t m, int64_t bucket,
                  int64_t resident_blocks) {
  LOWBIT_CHECK(!one_row_kernel(c, bucket) || m == 1, "m = {}: the one-row kernel of {} runs M = 1 only", m,
               c.str());
  const Layout l = layout(p);
  Geometry g;
  g.grid_x = static_cast<unsigned>(ceil_div(l.n_pad / 8, c.n_tiles * c.warps_n));
  g.grid_y = static_cast<unsigned>(c.split_k);
  g.grid_z = static_cast<unsigned>(ceil_div(m, 16 * c.m_tiles));
  if (c.stream_k) {
    LOWBIT_CHECK(resident_blocks > 0, "{}: stream K needs the number of resident blocks", c.str());
    g.grid_x = static_cast<unsigned>(std::min(stream_k_steps(p, c, m), resident_blocks));
    g.grid_z = 1;
  }
  // wgmma: the MMA warpgroups and the activation producer warpgroup (templates/wq_gemm_wgmma.cuh).
  g.block = static_cast<unsigned>(32 * c.warps_n * c.warps_k + (c.wgmma ? 128 : 0));
  WqGemmProblem pb = p;
  pb.m = bucket;
  g.smem = static_cast<unsigned>(smem_bytes(pb, c));
  return g;
}

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

bool chain_eligible(const WqGemmConfig& c, const Arch& arch) {
  // griddepcontrol is sm_90. The pre-kernels of x_sums and act-order wait for the previous call
  // themselves. Measured on the H200 (docs/perf-notes.md, thirty-fifth session): the wgmma kernel
  // chained was slower on four of the five layers (up to +49 % with the shared-memory cap, +4-10 %
  // without). (Act-order layers chain with a smaller cap: WqGemmPlan::run.)
  return arch.sm() >= 90 && !c.wgmma;
}

bool overlaps_permutation(const WqGemmProblem& p, const WqGemmConfig& c, const Arch& arch) {
  return p.act_order && chain_eligible(c, arch);
}

bool uses_chained_kernel(const WqGemmProblem& p, const WqGemmConfig& c, const Arch& arch, bool chained_plan) {
  return (chained_plan && chain_eligible(c, arch)) || overlaps_permutation(p, c, arch);
}

int chained_stages(const WqGemmProblem& p, const WqGemmConfig& c) {
  const int64_t chunks = ceil_div(ceil_div(p.k, 128), c.split_k);
  const int per_warp = static_cast<int>(ceil_div(chunks, c.warps_k));
  return c.stages - 1 >= per_warp && per_warp >= 2 ? per_warp : c.stages;
}

WqGemmConfig config_as_run(const WqGemmProblem& p, const WqGemmConfig& chosen, const Arch& arch,
                           bool chained_plan) {
  WqGemmConfig run = chosen;
  if (uses_chained_kernel(p, chosen, arch, chained_plan)) run.stages = chained_stages(p, chosen);
  return run;
}

std::string stages_note(const WqGemmConfig& chosen, const WqGemmConfig& run) {
  return run.stages == chosen.stages ? std::string()
                                     : fmt::format(" (chained: stages {} -> {})", chosen.stages, run.stages);
}

jit::KernelSpec kernel_spec(const WqGemmProblem& problem, const WqGemmConfig& c, int64_t bucket, bool chain) {
  // Act-order layers run a plain layer's kernel on permuted activations (on sm_90 the chained one, whose
  // cache entry chained plans share): no act-order variant.
  WqGemmProblem p = problem;
  p.act_order = false;
  const bool bf16 = p.act == DType::BF16;
  const bool upper_rows = !skips_upper_rows(c, bucket);
  const bool one_row = one_row_kernel(c, bucket);
  auto b = [](bool v) { return v ? "true" : "false"; };
  jit::KernelSpec s;
  s.family = "wq_gemm";
  s.name = fmt::format("wq_gemm_w{}{}{}{}_{}{}{}_n{}k{}_mt{}{}nt{}wn{}wk{}sk{}st{}{}{}{}{}{}{}", p.bits,
                       p.group_size ? fmt::format("g{}", p.group_size) : std::string("pc"), mode_tag(p.mode),
                       p.deterministic ? "det" : "", to_string(p.act), p.out == DType::F32 ? "o32" : "",
                       p.accum == DType::F16 ? "a16" : "", p.n, p.k, c.m_tiles,
                       one_row      ? "r"
                       : upper_rows ? ""
                                    : "h",
                       c.n_tiles, c.warps_n, c.warps_k, c.split_k, c.stages, c.x_shared ? "xs" : "",
                       c.wgmma ? "wg" : "", c.stream_k ? "sk" : "", c.x_image ? "xi" : "",
                       c.x_sums ? "xz" : "", chain ? "ch" : "");
  s.name_expression =
      c.wgmma ? fmt::format(
                    "lowbit::kern::wq_gemm_wgmma_kernel<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                    "{}, {}>",
                    p.bits, p.group_size, p.n, p.k, c.m_tiles, c.n_tiles, c.warps_n, c.split_k,
                    b(wq::cluster_split(c)), c.stages, b(bf16), b(p.out == DType::F32),
                    static_cast<int>(p.mode), b(c.stream_k), b(c.x_image))
              : fmt::format(
                    "lowbit::kern::wq_gemm_kernel<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                    "{}, {}, {}, {}, {}{}>",
                    p.bits, p.group_size, p.n, p.k, c.m_tiles, c.n_tiles, c.warps_n, c.warps_k, c.split_k,
                    c.stages, b(upper_rows), b(one_row), b(bf16), b(p.out == DType::F32),
                    static_cast<int>(p.mode), b(p.deterministic), b(c.x_shared), b(p.accum == DType::F16),
                    b(c.x_sums), chain ? ", true" : "");
  // The source must not mention M: one kernel serves every M of its bucket's config (M is a run-time
  // argument; the one-row kernel of bucket 1 serves M = 1, which is all that bucket holds).
  s.source = fmt::format(
      "// {}\n// {}\n// {}\n#include \"{}\"\n// instantiated through the name expression:\n// {}\n", s.name,
      to_json(p).dump(), c.str(), c.wgmma ? "wq_gemm_wgmma.cuh" : "wq_gemm.cuh", s.name_expression);
  s.specialization = to_json(p);
  s.config = to_json(c);
  return s;
}

jit::KernelSpec permute_spec(const WqGemmProblem& p, int image_rows) {
  return jit::header_instance_spec("wq_gemm",
                                   image_rows ? fmt::format("wq_permute_x_k{}_r{}", p.k, image_rows)
                                              : fmt::format("wq_permute_x_k{}", p.k),
                                   "wq_permute_x.cuh",
                                   fmt::format("lowbit::kern::wq_permute_x_kernel<{}, {}>", p.k, image_rows),
                                   {{"k", p.k}, {"rows", image_rows}});
}

bool permute_in_shared(const WqGemmProblem& p, int64_t m) {
  return m > 16 && p.k <= 24576;  // 24576: kRowInShared of templates/wq_permute_x.cuh
}

jit::LaunchShape permute_shape(const WqGemmProblem& p, int image_rows, int64_t m, int sm_count) {
  const int64_t vectors = image_rows ? ceil_div(p.k, 128) * 16 : p.k / 8;  // per row: one per thread
  const int64_t rows = image_rows ? ceil_div(m, image_rows) * image_rows : m;
  jit::LaunchShape shape;
  shape.grid_y = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
  if (!permute_in_shared(p, m)) {  // gathers from global memory: blocks of 256, each row its own
    shape.block = 256;
    shape.grid_x = static_cast<unsigned>(ceil_div(vectors, 256));
    return shape;
  }
  // Each block copies its row of x whole (wq_permute_x.cuh): as few blocks per row as give every SM
  // one (fewer copies of the row), at most 1024 threads and at least 128 per block.
  const int64_t per_row = std::clamp<int64_t>(ceil_div(sm_count, rows), ceil_div(vectors, 1024),
                                              std::max<int64_t>(1, ceil_div(vectors, 128)));
  shape.block = static_cast<unsigned>(ceil_div(ceil_div(vectors, per_row), 32) * 32);
  shape.grid_x = static_cast<unsigned>(ceil_div(vectors, shape.block));  // (rounding may leave one idle)
  shape.smem = static_cast<unsigned>(p.k * 2);                           // the row
  return shape;
}

jit::KernelSpec x_image_spec(const WqGemmProblem& p, const WqGemmConfig& c) {
  // Act-order: the permutation writes the image itself.
  if (p.act_order) return permute_spec(p, 16 * c.m_tiles);
  const int rows = 16 * c.m_tiles;
  return jit::header_instance_spec(
      "wq_gemm", fmt::format("wq_x_image_k{}_r{}", p.k, rows), "wq_gemm_wgmma.cuh",
      fmt::format("lowbit::kern::wq_x_image_kernel<{}, {}>", p.k, rows), {{"k", p.k}, {"rows", rows}});
}

jit::KernelSpec x_sums_spec(const WqGemmProblem& p) {
  return jit::header_instance_spec(
      "wq_gemm", fmt::format("wq_x_sums_k{}_w{}_{}", p.k, p.bits, to_string(p.act)), "wq_gemm.cuh",
      fmt::format("lowbit::kern::wq_x_sums_kernel<{}, {}, {}>", p.k, p.bits,
                  p.act == DType::BF16 ? "true" : "false"),
      {{"k", p.k}, {"bits", p.bits}, {"act", to_string(p.act)}});
}

int64_t grid_rows(const WqGemmConfig& c, int64_t m) {
  return ceil_div(m, 16 * c.m_tiles) * 16 * c.m_tiles;
}

std::size_t x_sums_bytes(const WqGemmProblem& p, const WqGemmConfig& c, int64_t max_m) {
  if (!c.x_sums) return 0;
  return static_cast<std::size_t>(grid_rows(c, max_m)) * static_cast<std::size_t>(ceil_div(p.k, 128)) * 8;
}

std::size_t x_image_bytes(const WqGemmProblem& p, const WqGemmConfig& c, int64_t max_m) {
  if (!c.x_image) return 0;
  const std::size_t rows = static_cast<std::size_t>(grid_rows(c, max_m));
  return rows * static_cast<std::size_t>(ceil_div(p.k, 128)) * 128 * 2;
}

std::size_t permuted_x_bytes(const WqGemmProblem& p, int64_t max_m) {
  return p.act_order ? (static_cast<std::size_t>(max_m) * p.k * 2 + 255) / 256 * 256 : 0;
}

WqGemmConfig fit_registers(const WqGemmProblem& p, WqGemmConfig c) {
  // Modes that dequantize every weight before the MMA (float zeros, groups under 128, fp16
  // accumulation) keep more registers live per tile: past 8 accumulator tiles per warp they spill
  // (ptxas, sm_90a: m_tiles 2 × n_tiles 8 needs 255 registers and 32-76 B of stack).
  const bool full_dequant =
      has_float_zeros(p.mode) || (p.group_size > 0 && p.group_size < 128) || p.accum == DType::F16;
  // wgmma always dequantizes before the MMA; can_implement caps m_tiles·n_tiles at 16 (a few
  // 8-bit and per-channel configs still spill 4-76 bytes at the 168 registers of 384 threads).
  if (full_dequant && !c.wgmma)
    while (c.m_tiles * c.n_tiles > 8 && c.m_tiles > 1) c.m_tiles /= 2;
  return c;
}

void shrink_to_fit(const WqGemmProblem& p, WqGemmConfig& c, const Arch& arch, bool keep_k_split) {
  // wgmma configs shrink their stages, column tiles and warpgroups; where wgmma cannot run at all
  // (not sm_90a, deterministic, fp16 accumulation) they become the mma.sync config of one warpgroup's shape
  // (4 warps side by side), cut to the registers of its mode.
  const bool hopper = wq::has_wgmma(arch) && wq::may_run_wgmma(p);
  while (c.wgmma && !can_implement(p, c, arch)) {
    if (hopper && c.stages > 3) {
      --c.stages;
    } else if (hopper && c.n_tiles > 2) {
      c.n_tiles /= 2;
    } else if (hopper && c.warps_n > 4) {
      c.warps_n = 4;
    } else {
      c.wgmma = false, c.stream_k = false, c.x_image = false, c.warps_n = std::min(c.warps_n, 4);
      c = fit_registers(p, c);
    }
  }
  while (!can_implement(p, c, arch)) {
    if (keep_k_split && c.x_shared)
      c.x_shared = false;  // its stages grow with warps_k, which stays
    else if (!keep_k_split && c.warps_k > 1)
      c.warps_k /= 2;
    else if (c.warps_n > 1)
      c.warps_n /= 2;
    else if (c.n_tiles > 1)
      c.n_tiles /= 2;
    else if (c.m_tiles > 1)
      c.m_tiles /= 2;
    else if (c.stages > 2)
      c.stages = 2;
    else if (c.x_shared)
      c.x_shared = false;
    else
      return;
  }
}

namespace {
Choice choose_any(jit::Context& ctx, const WqGemmProblem& problem, int64_t bucket,
                  const std::optional<WqGemmConfig>& forced) {
  if (forced) return {*forced, "forced"};
  WqGemmProblem pb = problem;
  pb.m = bucket;
  const tune::TuningKey key = tuning_key(problem, bucket);
  if (auto hit = ctx.tuning().lookup("wq_gemm", key)) {
    // Every config read from a file is checked before use: files outlive code changes. The parse
    // is kept with the entry (plans choose per bucket, often; the checks here are cheap).
    const auto& c = hit->parsed<std::optional<WqGemmConfig>>(config_from_json);
    std::string why;
    if (!c) why = "a field is missing or not an integer";
    if (c && can_implement(pb, *c, ctx.arch(), &why)) {
      // Joined by hand: half the cost of fmt::format, paid by every bucket of every plan.
      auto join = [](std::initializer_list<std::string_view> parts) {
        std::size_t n = 0;
        for (std::string_view part : parts) n += part.size();
        std::string s;
        s.reserve(n);
        for (std::string_view part : parts) s += part;
        return s;
      };
      if (hit->step == "exact") return {*c, join({"tuned (exact, ", hit->file, ")"})};
      std::string source = join({"tuned (", hit->step, " ", hit->key, ", ", hit->file, ")"});
      // An entry tuned for another mode may hold more tiles than this mode's registers allow.
      const WqGemmConfig fitted = hit->step == "similar format" ? fit_registers(pb, *c) : *c;
      if (fitted.m_tiles != c->m_tiles)
        source += fmt::format("; m_tiles {} -> {} (registers)", c->m_tiles, fitted.m_tiles);
      return {fitted, source};
    }
    // An entry of another format may hold a wgmma config, which a deterministic or fp16-accumulating
    // problem cannot run: not a fault of the file, so no warning (any other refusal still warns). The
    // message names the bucket and the lookup step: an entry found as the nearest M bucket's may fit
    // its own bucket and not this one (a one-row staged config at 8 rows), which is no fault either
    // but worth knowing, since this bucket then runs the heuristic's config.
    if (!(hit->step == "similar format" && c && c->wgmma && !wq::may_run_wgmma(pb)))
      warn_once(fmt::format("tuning-entry:{}{}:{}", hit->file, hit->key, bucket),
                fmt::format("tuning file '{}': entry wq_gemm/{} ({} match) cannot serve M bucket {} ({}); "
                            "using the heuristic",
                            hit->file, hit->key, hit->step, bucket, why));
  }
  const WqGemmConfig h = choose_config(pb, ctx.arch(), ctx.sm_count());
  std::string why;
  if (can_implement(pb, h, ctx.arch(), &why)) return {h, "heuristic"};
  // The last step: the smallest config, which fits every arch this family runs on.
  return {default_config(), fmt::format("default (the heuristic's {} cannot run: {})", h.str(), why)};
}
}  // namespace

Choice choose(jit::Context& ctx, const WqGemmProblem& problem, int64_t bucket,
              const std::optional<WqGemmConfig>& forced) {
  Choice choice = choose_any(ctx, problem, bucket, forced);
  if (!problem.deterministic || bucket == 1) return choice;
  // Deterministic: every bucket sums K in the order of the M = 1 choice (same warps_k and split_k),
  // so a row's result does not depend on how many rows come with it.
  const WqGemmConfig k_order = choose_any(ctx, problem, 1, forced).config;
  WqGemmProblem pb = problem;
  pb.m = bucket;
  WqGemmConfig c = choice.config;
  c.warps_k = k_order.warps_k, c.split_k = k_order.split_k;
  shrink_to_fit(pb, c, ctx.arch(), /*keep_k_split=*/true);
  return {c, choice.source + ", K split of the M = 1 choice (deterministic)"};
}

}  // namespace wq

bool can_implement(const WqGemmProblem& p, const WqGemmConfig& c, const Arch& arch, std::string* why) {
  if (!can_implement(p, why)) return false;
  if (arch.sm() < 80)
    return fail(why, fmt::format("arch = {}: wq_gemm needs sm_80 or newer (m16n8k16 MMA)", arch.str()));
  if (c.m_tiles < 1 || c.m_tiles > 8) return fail(why, fmt::format("m_tiles = {}: must be 1..8", c.m_tiles));
  if (c.n_tiles != 1 && c.n_tiles != 2 && c.n_tiles != 4 && c.n_tiles != 8 && c.n_tiles != 16)
    return fail(why, fmt::format("n_tiles = {}: must be 1, 2, 4, 8 or 16", c.n_tiles));
  // Each lane of a warp copies one scale (and zero) row of a tile and group per chunk.
  if (c.n_tiles * wq::groups_per_chunk(p) > 32)
    return fail(why,
                fmt::format("n_tiles = {}: {} tiles × {} groups of {} per 128-k chunk is over 32 scale rows "
                            "per warp (fewer tiles, or larger groups)",
                            c.n_tiles, c.n_tiles, wq::groups_per_chunk(p), p.group_size));
  if (c.warps_n != 1 && c.warps_n != 2 && c.warps_n != 4 && !(c.wgmma && c.warps_n == 8))
    return fail(why, fmt::format("warps_n = {}: must be 1, 2 or 4 (or 8 with wgmma)", c.warps_n));
  // Any count along K: the warps take interleaved chunks and sum in warp order, so nothing needs a
  // power of 2; 12 warps fit where 16 do not (registers, shared memory) and give 3 per scheduler.
  if (c.warps_k < 1 || c.warps_k > 16) return fail(why, fmt::format("warps_k = {}: must be 1..16", c.warps_k));
  const int64_t chunks = wq::layout(p).chunks;
  if (c.split_k < 1 || c.split_k > 64 || c.split_k > chunks)
    return fail(why, fmt::format("split_k = {}: must be 1..min(64, K_pad/128 = {})", c.split_k, chunks));
  if (p.deterministic && c.split_k > wq::kMaxDeterministicSplit)
    return fail(why,
                fmt::format("split_k = {}: deterministic problems split K at most {} ways (one fp32 slice of "
                            "M·N per split in the workspace)",
                            c.split_k, wq::kMaxDeterministicSplit));
  if (c.stages < 2 || c.stages > 8) return fail(why, fmt::format("stages = {}: must be 2..8", c.stages));
  if (c.wgmma) {
    if (!wq::has_wgmma(arch))
      return fail(why, fmt::format("{}: wgmma needs sm_90a (arch = {})", c.str(), arch.str()));
    if ((c.warps_n != 4 && c.warps_n != 8) || c.warps_k != 1)
      return fail(why,
                  fmt::format("{}: wgmma runs one or two warpgroups side by side: warps_n must be 4 or 8 "
                              "and warps_k 1",
                              c.str()));
    if (c.n_tiles != 2 && c.n_tiles != 4)
      return fail(why,
                  fmt::format("n_tiles = {}: wgmma needs 2 or 4 (one or two 64-column MMA tiles per block)",
                              c.n_tiles));
    if (c.m_tiles != 1 && c.m_tiles != 2 && c.m_tiles != 4 && c.m_tiles != 8)
      return fail(why, fmt::format("m_tiles = {}: wgmma needs 1, 2, 4 or 8 (N = 16 to 128 rows)", c.m_tiles));
    if (c.m_tiles * c.n_tiles > 16)
      return fail(why, fmt::format("{}: m_tiles·n_tiles = {}, over 16 for wgmma (accumulator registers)",
                                   c.str(), c.m_tiles * c.n_tiles));
    if (c.x_shared)
      return fail(why, fmt::format("{}: x_shared must be off with wgmma (it always stages the activations)",
                                   c.str()));
    if (p.deterministic)
      return fail(why, fmt::format("{}: deterministic problems do not run wgmma (its sums over K are ordered "
                                   "differently from the M = 1 kernel's)",
                                   c.str()));
    if (p.accum != DType::F32)
      return fail(why, fmt::format("{}: accum = {} problems do not run wgmma (it accumulates in fp32 here)",
                                   c.str(), to_string(p.accum)));
    // A two- or three-way K split is one thread-block cluster per tile, whose pieces' sums pass
    // through the receiving block's stages.
    if (wq::cluster_split(c) && wq::cluster_sums_bytes(c) > wq::stage_bytes(p, c) * c.stages)
      return fail(why,
                  fmt::format("{}: the K split's {} bytes of partial sums per block do not fit in its {} "
                              "stages of {} bytes (more stages)",
                              c.str(), wq::cluster_sums_bytes(c), c.stages, wq::stage_bytes(p, c)));
  }
  if (c.x_image && !c.wgmma)
    return fail(
        why, fmt::format("{}: x_image needs wgmma (its image is the wgmma kernel's stage layout)", c.str()));
  if (c.x_sums) {
    if (c.wgmma)
      return fail(
          why, fmt::format("{}: x_sums is for mma.sync configs (wgmma dequantizes the zero before the MMA)",
                           c.str()));
    if (p.deterministic)
      return fail(why, fmt::format("{}: x_sums must be off in deterministic problems", c.str()));
    if (p.accum != DType::F32)
      return fail(why, fmt::format("{}: x_sums needs accum = f32 (accum = {} scales before the MMA)", c.str(),
                                   to_string(p.accum)));
    if (has_float_zeros(p.mode) || p.group_size < 128)
      return fail(
          why, fmt::format("{}: x_sums needs integer zeros or symmetric weights with groups of 128 or "
                           "more (mode = {}, group_size = {}): only there does the zero come after the MMA",
                           c.str(), to_string(p.mode), p.group_size));
    if (p.bits == 8 && p.act == DType::BF16)
      return fail(why,
                  fmt::format("{}: x_sums: bits = {} with act = {} takes the zero before the MMA (no sums to "
                              "precompute)",
                              c.str(), p.bits, to_string(p.act)));
    if (c.n_tiles % 2 != 0)
      return fail(why, fmt::format("{}: x_sums needs an even n_tiles (the swapped operands)", c.str()));
  }
  if (c.stream_k && (!c.wgmma || c.split_k != 1))
    return fail(why, fmt::format("{}: stream_k needs wgmma and split_k = 1 (it splits K itself)", c.str()));
  // + the kernel's static shared memory (the split-K arrival flag, 16 B with alignment).
  if (wq::smem_bytes(p, c) + 16 > wq::smem_limit(arch))
    return fail(why, fmt::format("{}: needs {} bytes of shared memory per block, over the {} bytes of {}",
                                 c.str(), wq::smem_bytes(p, c) + 16, wq::smem_limit(arch), arch.str()));
  if (c.warps_n * c.warps_k > 16)
    return fail(why, fmt::format("{}: {} warps per block, over 16", c.str(), c.warps_n * c.warps_k));
  if (ceil_div(p.m, 16 * c.m_tiles) > 65535)
    return fail(why, fmt::format("m = {}: {} needs {} row blocks, over the grid limit of 65535", p.m, c.str(),
                                 ceil_div(p.m, 16 * c.m_tiles)));
  if (c.m_tiles * c.n_tiles > 32)
    return fail(why,
                fmt::format("{}: m_tiles·n_tiles = {} accumulator tiles per warp, over 32 (register spills)",
                            c.str(), c.m_tiles * c.n_tiles));
  return true;
}

namespace wq {
std::size_t counter_bytes(int64_t n, int64_t m) {
  // Counters for the largest grid any config makes (8-column blocks, 16-row blocks).
  const std::size_t counters = static_cast<std::size_t>(ceil_div(n, 8)) * ceil_div(m, 16);
  return (counters * 4 + 255) / 256 * 256;
}
std::size_t workspace_bytes(const WqGemmProblem& p, int split_k) {
  if (split_k <= 1) return 0;
  // Atomic split-K adds into one fp32 M×N slice; deterministic split-K writes one per split.
  const std::size_t slices = p.deterministic ? static_cast<std::size_t>(split_k) : 1;
  return counter_bytes(p.n, p.m) + slices * static_cast<std::size_t>(p.m) * p.n * 4;
}
std::size_t stream_k_scratch_bytes(const WqGemmProblem& p, const WqGemmConfig& c) {
  if (!adds_in_scratch(c)) return 0;
  const std::size_t rows = static_cast<std::size_t>(ceil_div(p.m, 16 * c.m_tiles)) * 16 * c.m_tiles;
  const std::size_t cols =
      static_cast<std::size_t>(ceil_div(ceil_div(p.n, 8), c.n_tiles * c.warps_n)) * 8 * c.n_tiles * c.warps_n;
  return rows * cols * 4;  // a multiple of 256: rows of 16
}
std::size_t stream_k_scratch_bound(const WqGemmProblem& p) {
  // A plan sizes it for its bucket (the functional API's plan: M's bucket), rows rounded to the block.
  return static_cast<std::size_t>(ceil_div(m_bucket(p.m), 128)) * 128 *
         static_cast<std::size_t>(ceil_div(p.n, 256)) * 256 * 4;
}
}  // namespace wq

namespace {
// The functional API's workspace for one call of p (its M), as the plan of M's bucket lays it out:
// [permuted x (act-order, for the bucket) | stream-K scratch | counters | fp32 sums].
std::size_t call_workspace_bytes(const WqGemmProblem& p) {
  return wq::permuted_x_bytes(p, m_bucket(p.m)) +
         wq::workspace_bytes(p, p.deterministic ? wq::kMaxDeterministicSplit : 2) +
         (p.deterministic ? 0 : wq::stream_k_scratch_bound(p));
}
// Where M's bucket starts in the functional API's workspace. Every call leaves the counters and sums
// zero, so buckets share them; but an act-order call leaves its permuted activations behind, which
// would lie where a smaller bucket's counters are. So act-order gives every bucket a segment of its
// own (buckets 1, 2, 4, .. in turn, each at its largest M; each holds a full stream-K scratch bound,
// so up to ~5x one bucket's bytes).
std::size_t bucket_offset(const WqGemmProblem& p) {
  if (!p.act_order) return 0;
  std::size_t offset = 0;
  for (int64_t b = 1; b < m_bucket(p.m); b *= 2) {
    WqGemmProblem pb = p;
    pb.m = b;
    offset += (call_workspace_bytes(pb) + 255) / 256 * 256;  // keeps the 256-byte alignment
  }
  return offset;
}
}  // namespace

std::size_t workspace_bytes(const WqGemmProblem& p) {
  std::string why;
  LOWBIT_CHECK(can_implement(p, &why), "wq_gemm: {}", why);
  WqGemmProblem pb = p;
  pb.m = p.act_order ? m_bucket(p.m) : p.m;  // act-order: the bucket's segment, for any M in it
  return bucket_offset(p) + call_workspace_bytes(pb);
}

WqGemmConfig default_config() {
  WqGemmConfig c;
  c.m_tiles = 1, c.n_tiles = 1, c.warps_n = 1, c.warps_k = 1, c.split_k = 1, c.stages = 2;
  return c;
}

WqGemmConfig choose_config(const WqGemmProblem& p, const Arch& arch, int sm_count) {
  // Fitted to `lowbit tune` over the model presets at M 1..128 on the H200 (docs/perf-notes.md,
  // "heuristic v3"); shapes are measured in 8-column tiles per SM so other GPUs scale with them.
  const int64_t bucket = m_bucket(p.m);
  const int sms = std::max(sm_count, 1);
  const int64_t tiles = ceil_div(p.n, 8);
  const double tiles_per_sm = static_cast<double>(tiles) / sms;
  const int64_t chunks = wq::layout(p).chunks;
  auto make = [](int mt, int nt, int wk, int st) {
    WqGemmConfig c;
    c.m_tiles = mt, c.n_tiles = nt, c.warps_n = 1, c.warps_k = wk, c.split_k = 1, c.stages = st;
    return c;
  };
  // Hopper, warpgroup MMA: two MMA warpgroups, 4 tiles per warp, 3 stages, K split to fill half the
  // SMs (one block fits per SM, so this keeps the grid to one wave). Where (docs/perf-notes.md,
  // "heuristic v4", from `lowbit tune` of the model presets):
  // - 64 and 128 rows from 48 M weights, one m64 tile per warpgroup (a 128-row bucket runs two row
  //   blocks). H100: at 128 rows 2-33 % faster than two m64 tiles on the 8 layers from 117 M
  //   weights; at 64 rows 3 stages 2-4 % faster than 4. H200: best or within 3 % on every such layer.
  // - Not at 32 rows any more: wgmma (one 32-row tile) was best on 7 of 9 large layers there until
  //   the mma.sync kernel swapped its operands from 16 rows (session of 2026-11-23, eleventh); then
  //   block-shared mma.sync won on the 3 such standard layers re-tuned on the H200 by 10-19 %
  //   (`lowbit tune` 16384² 69.2 µs against `lowbit bench` of wgmma 76.8, 28672×4096 32.5 vs 37.2,
  //   4096×14336 20.1 vs 24.8), while the old margins of wgmma on the others were 3-15 %, less than
  //   the swap gained (9-21 %).
  // - 4-bit weights; 2- and 8-bit with groups of 128 at 64 and 128 rows only: 1.1-1.7× faster than
  //   x_shared there (H200; 16384² M=128 W8 251 µs against 427). Per-channel scales and other group
  //   sizes spill registers at 8 bits and are not measured at 2 and 8; 1 and 3 bits are not measured.
  // - 128 rows below 48 M weights: from 8 M weights at 7-10 tiles per SM (8192×1024…4096) with 2
  //   tiles per warp, a 128-column block (one wave of blocks, K unsplit): 14-28 % faster than
  //   x_shared on both GPUs (tune-day heuristic; 12-17 % than the best x_shared config); K ≥ 2N from 16 M
  //   weights (2560×8192) with 4 tiles: 18-22 % faster on both. Measured on W4 g128 only, so only there
  //   (per-channel W4 and 8-bit spill with them).
  const double weights = static_cast<double>(p.n) * static_cast<double>(p.k);
  const bool small_128 = bucket == 128 && weights < 48e6 && p.bits == 4 && p.group_size == 128;
  const bool one_wave_128 = small_128 && weights >= 8e6 && tiles_per_sm >= 7 && tiles_per_sm <= 10;
  const bool k_heavy_128 = small_128 && weights >= 16e6 && p.k >= 2 * p.n;
  // - Heuristic v10 (after the coalesced activation loads, fifteenth session; H200 re-tune of the
  //   standard layers at 64/128 rows): 5-7 tiles per SM from 8 M weights (6144×4096) at 64 and 128
  //   rows below 48 M weights, groups of 128 at 2, 4 and 8 bits (8 bits: 128 rows only; at 64 rows
  //   the bench timed it 1.21× the best, 24.35 µs against 20.18), a 128-column block. Against the v9
  //   heuristic's mma.sync configs there: M = 64 W4 f16 19.2 µs against 21.9, M = 128 W2 23.0 against 31.4,
  //   bf16 25.3 against 30.9 (tuner times). And 128 rows from 48 M weights take all 128 rows per
  //   block (m_tiles 8, 128 columns): W8 1.10-1.24× faster than 2 row blocks of 256 columns on the
  //   four wgmma standard layers (16384² 161.5 µs against 198.9); W4 f16, once the accumulators
  //   stopped spilling in that config, best or within 0.6 % on the same four (28672×4096 69.3 µs
  //   against 77.1).
  const bool rows_64_128 = bucket == 64 || bucket == 128;
  const bool large = weights >= 48e6;
  const bool mid_wgmma = rows_64_128 && weights >= 8e6 && !large && tiles_per_sm >= 5 && tiles_per_sm < 7 &&
                         p.group_size == 128 && !(bucket == 64 && p.bits == 8);
  // Heuristic v17: where 128-column blocks split in two along K (a cluster pair, below) make
  // 0.7-1 wave, with at least 8 chunks per piece.
  // 128-column blocks of 16·mt rows over all of K, and split in two along K.
  auto blocks_128 = [&](int mt) { return ceil_div(tiles, 16) * ceil_div(bucket, 16 * mt); };
  auto pair_blocks = [&](int mt) { return 2 * blocks_128(mt); };
  auto pair_wave_at = [&](int mt) {
    return mt * 16 <= bucket && pair_blocks(mt) >= 0.7 * sms && pair_blocks(mt) <= sms && chunks >= 16;
  };
  // Heuristic v20 (twenty-sixth session): 8-bit weights at 64 rows too. The exclusion dated from before
  // the cluster pair (v10: wgmma 1.21× the best there); since, the pair ran 6144×4096 W8 M = 64 in 15.4
  // µs on the H100 (stream K, its tuned entry, 17.2; block-shared, v19's choice, 18.8) and 14.5 on the
  // H200 (its tuned best; v19's 19.3).
  const bool pair_wave = rows_64_128 && weights >= 8e6 && (pair_wave_at(8) || pair_wave_at(4));
  // Heuristic v21 (thirty-first session): 8-bit weights at 64 rows on the narrow layers (3-4 tiles per
  // SM, 32-63 chunks: 4096²) take the four-way K split of 128-column blocks of 64 rows that v18 (below)
  // gives from 64 chunks, although its pieces keep only 8 chunks: the tuned best of both GPUs' files
  // (H200 12.06 µs against 14.2 for v20's block-shared (2,4,2,4); H100 13.66 against 13.82).
  const bool narrow_w8_64 = bucket == 64 && p.bits == 8 && p.group_size == 128 && tiles_per_sm >= 3 &&
                            tiles_per_sm <= 4 && chunks >= 32 && chunks < 64;
  const bool wgmma_rows =
      (rows_64_128 && large) || one_wave_128 || k_heavy_128 || mid_wgmma || pair_wave || narrow_w8_64;
  const bool measured_format =
      p.bits == 4 || ((p.bits == 2 || p.bits == 8) && p.group_size == 128 && bucket >= 64);
  if (wq::has_wgmma(arch) && wq::may_run_wgmma(p) && measured_format && wgmma_rows) {
    const bool all_rows_128 = bucket == 128 && large;
    WqGemmConfig w = make(all_rows_128 ? 8 : 4, one_wave_128 || mid_wgmma || all_rows_128 ? 2 : 4, 1, 3);
    w.warps_n = 8, w.wgmma = true;
    w.split_k = wq::fill_split(p, w, sms / 2.0);
    // 128-column blocks of 16·mt rows (two warpgroups of one m64 tile) with the image: the rules below.
    auto blocks_128_config = [&](int mt, int stages) {
      WqGemmConfig c = make(mt, 2, 1, stages);
      c.warps_n = 8, c.wgmma = true, c.x_image = true;
      return c;
    };
    // - Heuristic v11 (seventeenth session, `lowbit tune` with stream-K candidates, standard layers at
    //   64/128 rows, both GPUs): where that split leaves each block 32 chunks or fewer, stream K over
    //   128-column blocks instead; the tuned best on 8192² (M 64 and 128), 4096×14336 and 6144×4096
    //   (M = 64): H100 W4 f16 8192² M = 64 30.7 µs against 35.7 for (4,4,8) split 4, 4096×14336 28.0
    //   against 35.5. With 64 chunks per split (16384², split 2) split K stays ahead (H200 83.5-84.0
    //   against 86.9 for stream K).
    // - Heuristic v12 (eighteenth session, after the stream-K fix-up moved to vector adds): at 128 rows
    //   on the mid layers (5-7 tiles per SM under 48 M weights, 6144×4096), all 128 rows per block
    //   with stream K over 128-column blocks, the H200's tuned best in all four formats (W4 f16 22.6
    //   µs, bf16 23.0, W2 21.9, W8 25.9) where (4,2,8) without it ran 1.01-1.28× that.
    // - Heuristic v15 (twenty-first session, H100 re-tune with x_image candidates, W4 f16, bf16 and W2
    //   at 64/128 rows on the standard layers): with the activations from an image, one wave of
    //   128-column blocks over all of K won where it makes 0.7-1.5 blocks per SM: at 128 rows 64
    //   rows per block on 8192² (W4 f16 36.7 µs against 43.1 for v14's stream K) and 6144×4096
    //   (20.6 against 22.8), all of them on 16384²; at 64 rows on 16384² (70.6 against 79.7 for two
    //   m64 tiles, K split in 2).
    // - Heuristic v17 (twenty-third session): the K split now adds its two pieces through a
    //   thread-block cluster's shared memory, not global memory. Where two-way split blocks of
    //   128 columns make 0.7-1 wave, that beat stream K and the one-wave data-parallel run (H100
    //   W4 f16: 4096² M = 128 13.74 µs against 16.74 for stream K, 8192² M = 64 21.81 against 26.28,
    //   6144×4096 M = 64 13.85 against 14.92; 8192² M = 128 with all 128 rows per block 31.62
    //   against 35.52 for (4,2,8) in one wave). Four-way clusters ran 1.5-1.8× slower (4096×14336
    //   M = 128 52.4 against 34.8 µs), apparently a second wave: 32 clusters of 4 one-block-per-SM CTAs
    //   need 4 free SMs in one GPC each: the H100 holds 30 such clusters at once
    //   (cudaOccupancyMaxActiveClusters, twenty-fifth session), so 32 take two waves. Such splits add through
    //   the workspace's scratch.
    for (int mt : {8, 4}) {
      if (!pair_wave_at(mt)) continue;
      WqGemmConfig pair = blocks_128_config(mt, 3);
      pair.split_k = 2;
      if (can_implement(p, pair, arch)) return pair;
    }
    for (int mt : {8, 4}) {
      const int64_t blocks = blocks_128(mt);
      if (mt * 16 > bucket || blocks < 0.7 * sms || blocks > 1.5 * sms) continue;
      const WqGemmConfig wave = blocks_128_config(mt, 4);
      if (can_implement(p, wave, arch)) return wave;
    }
    // - Heuristic v14 (twenty-first session, H100 A/B of every shipped wgmma entry with and without
    //   x_image, four formats, standard layers): the activations from an image wherever K is not
    //   cut into stream-K pieces: all 12 such entries ran 1.6-28 % faster (28672×4096 M = 128 W4 f16
    //   75.3 → 56.3 µs); the stream-K ones on the smaller layers ran up to 12 % slower (the extra
    //   launch and its M·K·2 bytes there weigh more than the loop's gain).
    // - Heuristic v16 (twenty-second session): since the GEMM overlaps the image kernel (programmatic
    //   dependent launch) the image costs 1-1.6 µs less, and stream K with it ran 1.5-3 % faster than
    //   without on the small layers too (H100 W4 f16: 4096² M = 128 16.22 against 16.46 µs,
    //   6144×4096 M = 64 15.05 against 15.33, 4096×14336 M = 64 24.67 against 25.42): the image on
    //   every wgmma config.
    // - Heuristic v18 (twenty-fifth session, after the wgmma kernel's four-way splits moved to the
    //   scratch slots; H100 re-tune of the K-heavy layers at 64/128 rows): at 64 rows, where a
    //   four-way K split of 128-column blocks makes 0.7-1 wave and each piece keeps 16 chunks or more
    //   (4096×14336, 3584×18944), that split: the tuned best in all four formats on 4096×14336 (W4
    //   f16 22.47 µs against 24.72 for stream K, bf16 24.09 against 26.36, W2 21.72 against 22.99, W8
    //   30.69 against 31.75) and W4 f16 3584×18944 (27.36 against 28.73). Not at 128 rows: the
    //   cluster pair of 64-row blocks is within 6 % there, and stream K won on 3584×18944.
    if (narrow_w8_64) {  // v21, above: 3 stages, no image (both files' entry)
      WqGemmConfig s = blocks_128_config(4, 3);
      s.split_k = 4, s.x_image = false;
      if (can_implement(p, s, arch)) return s;
    }
    if (bucket == 64) {
      const int64_t four_way = 4 * blocks_128(4);
      if (four_way >= 0.7 * sms && four_way <= sms && chunks >= 4 * 16) {
        WqGemmConfig s = blocks_128_config(4, 4);
        s.split_k = 4;
        if (can_implement(p, s, arch)) return s;
      }
    }
    if (mid_wgmma && bucket == 128) {
      WqGemmConfig s = blocks_128_config(8, 3);
      s.stream_k = true;
      if (can_implement(p, s, arch)) return s;
    }
    if (w.split_k > 1 && chunks / w.split_k <= 32) {
      WqGemmConfig s = w;
      s.split_k = 1, s.n_tiles = 2, s.stream_k = true, s.x_image = true;
      if (can_implement(p, s, arch)) return s;
    }
    w.x_image = true;
    if (can_implement(p, w, arch)) return w;
  }
  // At 64 rows with 3-4 tiles per SM (3584², 4096²) x_shared won on both GPUs (4096² H200: 15.3 µs
  // against 17.6 for per-warp activations); not in deterministic mode, whose forced K order would
  // turn it into a spilling config.
  const bool narrow = tiles_per_sm >= 3 && tiles_per_sm <= 4 && !p.deterministic;  // 3584², 4096²
  const bool narrow_x_shared = bucket == 64 && narrow;
  // Heuristic v9: 8-bit weights at 64 rows and 4-6 tiles per SM take block-shared activations too: per-warp
  // activation configs were more than 20 % behind on 6144×4096 (H200 W8 re-tune; in the bench 21.29
  // µs block-shared against 29.01 for (1,4,1,2,1,4)).
  const bool eight_bit_x_shared =
      bucket == 64 && p.bits == 8 && tiles_per_sm > 4 && tiles_per_sm <= 6 && !p.deterministic;
  // Per-warp staged activations (v6 rules below) need a ring slot of activations per warp and stage:
  // only where shared memory holds them at 8 warps (measured on Hopper; the 99 KiB of sm_86/89
  // would cut them to 2-warp blocks); not in deterministic mode (its K order comes from M = 1).
  const bool stage_per_warp = !p.deterministic && wq::smem_limit(arch) >= 160 * 1024;
  WqGemmConfig c;
  if (bucket <= 8) {
    // 4 tiles per warp, 8 warps along K, 2 stages (3 cost registers and gained nothing); ~72
    // registers, so three blocks of 8 warps fit per SM. Fitted to the M ≤ 8 tunes of both GPUs:
    // - Few column blocks (1280-wide shards): 2 tiles per warp for twice the blocks, 3 stages.
    // - Up to 2 blocks of 4 tiles per SM at M ≤ 2 (1.5 at M = 4): 2 tiles per warp, so the grid
    //   fills the SMs' block slots in one wave (8192² M = 1: 11.99 µs against 12.71 on the H200).
    // - Fewer blocks than SMs, or K-heavy narrow layers (≤ 4 tiles per SM, ≥ 64 chunks:
    //   4096×14336, 3584×18944): 16 warps along K.
    // - Wide layers (more than 3 blocks of 4 tiles per SM): 4 warps along K, more than 4: 2, so
    //   more blocks fit per SM and the last wave is short; more than 12: 8 tiles per warp.
    // 2- and 8-bit weights (H200 tune of the standard layers at M = 1): the 2-tile rule only up to
    // one block of 4 tiles per SM (8192² W8: 19.3 µs with 4 tiles, 23.0 with 2); at 2 bits, where
    // a tile-chunk is half the bytes, wide layers take 8 tiles per warp instead of fewer warps
    // along K (16384² W2: 35.5 µs with 8 tiles × 8 warps, 39.8 with 4 × 4, 44.4 with 4 × 8; 1 bit
    // follows 2 unmeasured).
    // Deterministic mode keeps the v4 rules: every bucket reuses M = 1's warps along K, and the
    // larger counts of the v5 rules made 16-row-and-up blocks of 16 warps that spill (11008×4096
    // M = 64: 464 B).
    c = make(1, 4, 8, 2);
    const int64_t col_blocks = ceil_div(tiles, 4);
    const bool v5 = !p.deterministic;
    // Twice the blocks of 4 tiles per SM up to which a warp takes 2 tiles.
    const int64_t two_tile_limit = p.bits == 3 || p.bits == 4 ? (bucket <= 2 ? 4 : bucket == 4 ? 3 : 0) : 2;
    if (2 * col_blocks < sms)
      c.n_tiles = 2, c.stages = 3;
    else if (v5 && bucket <= 4 && 2 * col_blocks <= two_tile_limit * sms)
      c.n_tiles = 2;
    if ((ceil_div(tiles, c.n_tiles) < sms && chunks >= 2LL * 16) || (v5 && tiles_per_sm <= 4 && chunks >= 64))
      c.warps_k = 16;
    const int64_t fewer_warps_above = v5 ? 3 : 2;  // blocks of 4 tiles per SM
    if (v5 && col_blocks > 3LL * sms && p.bits <= 2)
      c.n_tiles = 8;
    else if (col_blocks > fewer_warps_above * sms)
      c.warps_k = col_blocks > 4LL * sms ? 2 : 4;
    if (col_blocks > 12LL * sms) c.n_tiles = 8;
    // 3/4-bit: activations staged per warp on layers of up to 8 tiles per SM (v6: 7), with 2 tiles
    // per warp up to 6 unless K-heavy (16 warps along K); at 8 rows up to 10 tiles per SM. v6, H100
    // re-tune of the model presets: staged won on every such layer at M 1-8, by up to 20 % at M = 8
    // (4096² M = 8: 5.50 µs against 6.76 for the v5 choice). v7: 8192×K (7.8 tiles per SM) too,
    // with 4 tiles per warp: the re-tunes of both GPUs with the 3-stage staged candidates picked it
    // for 43 of the 48 (8192×K layer, M 1/2/4, GPU) entries (H200 8192² M = 2: 16 % faster than 2
    // tiles of registers). The 5 others lose 0.3-6 %: 8192×1024 at M 1-2 on both GPUs, and the
    // H100's 8192² at M = 1.
    // Few column blocks keep their 2 tiles (1280×8192: (1,2,1,16,1,3) staged best at M 1-8).
    // Heuristic v9: at M = 1 for every bit width. Since the one-row stage (twelfth session) the
    // registers' configs lost on 4096² and 4096×14336 at 2 and 8 bits (H200 bench: W2 4096² 5.16 µs
    // against 4.32 staged); the W2/W8 tunes at M = 1 (older than the one-row stage) put staged configs first
    // on 10 of 12 standard layers of the H200 (of the buckets up to 8 rows, only M = 1 is tuned at those
    // widths).
    const bool staged_bits = p.bits == 3 || p.bits == 4 || bucket == 1;
    if (stage_per_warp && staged_bits && (tiles_per_sm <= 8 || (bucket == 8 && tiles_per_sm <= 10))) {
      c.x_shared = true;
      if (2 * col_blocks >= sms)
        c.n_tiles = tiles_per_sm <= 6 && c.warps_k != 16 ? 2 : std::max(c.n_tiles, 4);
      // Heuristic v21 (thirty-first session): bf16 4-bit weights at one row from 6 tiles per SM (8192²)
      // take 8 tiles per warp, like 2-bit ones (v19): their zero comes after the MMA, so each chunk
      // carries Σ MMAs that more tiles share. The best of both GPUs' files (H200 (1,8,1,8) 10.70 µs
      // with 3 stages, 11.78 with 2, against 12.29 for v20's 4 tiles; H100 14.50 with 2 stages against
      // 14.78).
      if (v5 && bucket == 1 && p.bits == 4 && p.act == DType::BF16 && p.group_size == 128 &&
          tiles_per_sm > 6 && 2 * col_blocks >= sms)
        c.n_tiles = 8;
    }
    // Heuristic v19 (twenty-sixth session; the W2 M = 1 entries of both GPUs, the H200's re-tuned
    // with the band copies): 2-bit weights at one row, where a tile-chunk is 256 bytes, take 8 tiles
    // per warp from 4.5 tiles per SM (6144×4096, 8192²), with 16 warps along K from 64 chunks: the
    // tuned best or within 0.5 % on both GPUs (H200 8192² 8.68 µs against 10.02 for v18's
    // (1,4,1,8), 6144×4096 5.74 against 6.25). On the wide layers that already take 8 tiles, 4 warps
    // along K up to 32 chunks (28672×4096): the tuned best on both (H200 14.78 against 16.12 for 8
    // warps; H100 16.08 against 18.22). 1 bit follows 2, unmeasured.
    if (v5 && bucket == 1 && p.bits <= 2 && 2 * col_blocks >= sms) {
      if (c.x_shared && tiles_per_sm > 4.5)
        c.n_tiles = 8, c.warps_k = chunks >= 64 ? 16 : 8;
      else if (!c.x_shared && c.n_tiles == 8 && chunks <= 32)
        c.warps_k = 4;
    }
  } else if (bucket <= 16 && stage_per_warp) {
    // Activations staged per warp (x_shared with one warp along N; docs/perf-notes.md, "wq_gemm
    // v9"): 4 tiles × 8 warps along K (~124 registers before the 16-row operand swap, ~99 since;
    // with 2 stages two blocks fit per SM, with 3 one), 3 stages up to 4 tiles per SM, else 2 (re-tuned after
    // the swap: the heuristic within 10 % of the best on the six standard layers of the H200 at 16 rows).
    // Wide layers (over 12 tiles per SM): 8 tiles × 4 warps (over 20: 4 × 4). Few column blocks (1280-wide
    // shards): 2 tiles per warp for twice the blocks. Re-tunes of both GPUs: 4-23 % faster than the per-warp
    // registers of v5. Measured on W4; at 2 bits 8192² the registers still won (H100 14.6 µs against 16.0).

    // Heuristic v9: 8-bit weights up to 12 tiles per SM: 4 warps along K (a chunk is twice the bytes of 4-bit
    // ones), the best config of the H200's W8 re-tunes at 16 rows on 4096², 6144×4096 and 8192²
    // (6144×4096: 9.34 µs against 11.58 with 8 warps).
    c = make(1, 4, 8, tiles_per_sm <= 4 ? 3 : 2);
    if (tiles_per_sm > 20)
      c.warps_k = 4;
    else if (tiles_per_sm > 12)
      c.n_tiles = 8, c.warps_k = 4;
    else if (2 * ceil_div(tiles, 4) < sms)
      c.n_tiles = 2;
    else if (p.bits == 8)
      c.warps_k = 4;
    // Heuristic v13 (nineteenth session, H100 W2 re-tune at 16 rows with the in-place bases): 2-bit
    // weights (1 bit follows 2, unmeasured) over 4 tiles per SM take 8 tiles per warp, where a 2-bit
    // tile-chunk is half the bytes of a 4-bit one: 8192² 12.30 µs against 14.41 for 4 tiles, 6144×4096
    // 7.63 against 8.52, 28672×4096 21.39 against 22.05 (4 warps along K; the tuned best, 2 warps,
    // 20.90); 16384² had 8 tiles already.
    if (p.bits <= 2 && tiles_per_sm > 4) c.n_tiles = 8;
    // Heuristic v22 (thirty-third session): 8-bit weights over 20 tiles per SM (28672×4096) take 4
    // warps side by side sharing each chunk's activations, one along K, 3 stages: the tuned best of
    // both GPUs' files (H200 31.0 µs against 35.7 for v21's (1,4,1,4), the one standard case over
    // 1.15 × the best; H100 43.0 against 45.8).
    if (p.bits == 8 && tiles_per_sm > 20) c.warps_n = 4, c.warps_k = 1, c.stages = 3;
    c.x_shared = true;
  } else if (bucket <= 16) {
    // Deterministic mode and smaller shared memory (v5 rules): 8 tiles share each chunk's activations in
    // registers; the more column blocks, the fewer warps along K. Short K (≤ 32 chunks) on a layer of about
    // one 8-tile block per SM (≥ 7 tiles per SM): 4 tiles, 4 warps along K and 2 stages, twice the blocks
    // (8192×2048: 7.1 µs against 8.0 with 8 tiles × 8 warps on the H100).
    c = tiles_per_sm >= 4.3 ? make(1, 8, 8, 2) : make(1, 4, 8, 3);
    const int64_t col_blocks = ceil_div(tiles, c.n_tiles);
    c.warps_k = col_blocks <= sms ? 8 : col_blocks <= 2LL * sms ? 4 : 2;
    if (tiles_per_sm >= 7 && chunks <= 32 && col_blocks <= sms) c = make(1, 4, 4, 2);
  } else if (bucket <= 32 && tiles_per_sm <= 10 && stage_per_warp) {
    // 17-32 rows up to 10 tiles per SM: two 16-row blocks of per-warp staged activations, 3 stages;
    // 4 tiles × 8 warps and 2 stages up to 2 tiles per SM (1280-wide shards), 8 × 8 up to 4.2
    // (3584², 4096², 2560×8192), 4 × 4 up to 6, 8 × 4 up to 8 (7168×8192, 8192²), 4 × 8 and 2
    // stages above (10240×8192: H200 best; the H100's is 8 × 4 in registers). Re-tunes of both
    // GPUs: 4096² 9.0 µs against 12.2 with the v5 choice.
    c = tiles_per_sm <= 2     ? make(1, 4, 8, 2)
        : tiles_per_sm <= 4.2 ? make(1, 8, 8, 3)
        : tiles_per_sm <= 6   ? make(1, 4, 4, 3)
        : tiles_per_sm <= 8   ? make(1, 8, 4, 3)
                              : make(1, 4, 8, 2);
    c.x_shared = true;
  } else if (bucket <= 64 && tiles_per_sm <= 6 && !narrow_x_shared && !eight_bit_x_shared) {
    // Narrow layers up to 64 rows: per-warp activations (for narrow_x_shared see above).
    // Up to 32 rows and 4 tiles per SM: 2 row tiles × 8 warps along K, or 1 row tile when 2 leave
    // fewer blocks than half the SMs (1280-wide shards: 9.8 µs against 17.7); otherwise 1 row tile
    // and 4 warps along K below 3 blocks per SM, else 2 (fitted to the H100 and H200 tunes).
    const int64_t col_blocks = ceil_div(tiles, 4);
    if (bucket <= 32 && tiles_per_sm <= 4) {
      c = make(2 * col_blocks * ceil_div(bucket, 32) < sms ? 1 : 2, 4, 8, 4);
    } else if (bucket == 64 && tiles_per_sm > 5 && !p.deterministic) {
      // Heuristic v9: 8 tiles × 4 warps along K above 5 tiles per SM (6144×4096: best of the H200's W4 f16,
      // W4 bf16 and W2 re-tunes, within 1 % of the H100's best; (1,4,1,2,1,4) was 3-18 % behind).
      c = make(1, 8, 4, 4);
    } else {
      c = make(1, 4, col_blocks * ceil_div(bucket, 16) < 3LL * sms ? 4 : 2, 4);
    }
  } else {
    // Block-shared activations (x_shared), fitted to `lowbit tune` at M 64 and 128 on the H200
    // (docs/perf-notes.md, "x_shared"): 2 × 2 warps with 2 × 4 tiles each, more tiles from 128
    // rows, and from 128 rows on very wide layers (≥ 20 tiles per SM) 4 warps side by side with 4
    // row tiles. v7: not below 128 rows, where the re-tuned files of both GPUs put 2 × 2 warps
    // first among the x_shared configs of every such layer (37888×3584 M = 32: 45.4 µs against
    // 53.8 for 4 × 1 on the H200, 46.3 against 54.5 on the H100).
    const bool wide = bucket >= 128 && tiles_per_sm >= 20;
    c = make(wide ? 4 : 2, bucket <= 64 || tiles_per_sm <= 6 ? 4 : 8, wide ? 1 : 2, 3);
    c.warps_n = wide ? 4 : 2;
    c.x_shared = true;
    // Heuristic v9, 3-4 tiles per SM with at least 32 chunks along K (4096²; 3584², 28 chunks, keeps v7): at
    // 64 rows 4 warps along K, at 128 rows 4 row tiles. Within 5 % of the best on both GPUs' re-tunes in all
    // four tuned formats (W4 f16/bf16, W2, W8), where v7's (2,4,2,2) was up to 18 % behind (3 % ahead for f16
    // at 128 rows; H200 bench: bf16 4096² M = 64 14.23 µs against 11.79, M = 128 22.17 against 18.63).
    const bool narrow_long_k = narrow && chunks >= 32;
    if (narrow_long_k && bucket == 64) c.warps_k = 4;
    // Heuristic v18 (twenty-third session): at 64 rows there, 2-, 3- and 4-bit weights stage per warp, one
    // row tile × 8 column tiles × 4 warps along K: the best config in the H100's re-tunes of W4 f16, bf16
    // and W2 and the H200's of W4 f16 and bf16 (H100 bench: W2 4096² M = 64 11.06 µs against 12.87 for
    // (2,4,2,4), bf16 11.48 against 12.86); W8 keeps (2,4,2,4), the H200's best.
    if (narrow_long_k && bucket == 64 && p.bits != 8 && stage_per_warp) {
      c = make(1, 8, 4, 3);
      c.x_shared = true;
    }
    if (narrow_long_k && bucket == 128 && !wide) c.m_tiles = 4;
    // Heuristic v10: 8-bit weights at 64 rows (4-6 tiles per SM) take all 64 rows per block (H200
    // re-tune of 6144×4096 after the fifteenth session: 20.15 µs against 24.08 for 2 row tiles).
    if (eight_bit_x_shared) c.m_tiles = 4;
  }
  c = wq::fit_registers(p, c);
  // Smaller shared memory (sm_86/89: 99 KiB): fewer warps per block until the rings fit, then
  // fewer tiles, stages, and no activation stages.
  wq::shrink_to_fit(p, c, arch, /*keep_k_split=*/false);
  // Split K only when the grid would leave most SMs idle: each split adds a pipeline ramp per warp
  // and a reduction, and measured slower even with half the SMs busy (4096² M=16: 9.9 µs unsplit,
  // 12.6 split in two). So: fewer than SMs/4 blocks.
  // With block-shared activations the blocks are larger (2-4 warps of ~150 registers): split only
  // below half the SMs (8192² M = 32: 128 blocks unsplit 28.1 µs, split in two 39.5). Activations
  // staged per warp (one warp along N) count as per-warp.
  c.split_k = wq::fill_split(p, c, sms / (c.x_shared && c.warps_n > 1 ? 2.0 : 4.0));
  return c;
}

namespace wq {
int fill_split(const WqGemmProblem& p, const WqGemmConfig& c, double min_blocks) {
  const int64_t col_blocks = ceil_div(ceil_div(p.n, 8), c.n_tiles * c.warps_n);
  const int64_t blocks = col_blocks * ceil_div(p.m, 16 * c.m_tiles);
  const int64_t chunks = layout(p).chunks;
  const int64_t max_split = p.deterministic ? 8 : 64;
  int64_t split = 1;
  while (static_cast<double>(blocks * split) < min_blocks && chunks / (split * 2) >= 2LL * c.warps_k &&
         split < max_split)
    split *= 2;
  return static_cast<int>(split);
}
}  // namespace wq

// ---- plans --------------------------------------------------------------------------------------

struct WqGemmPlan::Impl {
  struct Bucket {
    int64_t max_m;
    WqGemmConfig config;
    const jit::LoadedKernel* kernel;
    int64_t resident_blocks;         // stream K: SMs × blocks per SM of this kernel
    const jit::LoadedKernel* image;  // x_image: the kernel that arranges the activations
    const jit::LoadedKernel* sums;   // x_sums: the kernel that sums them per chunk
    bool chain = false;              // chained launch (WqGemmPlanOptions::overlap_previous)
    bool after_permutation = false;  // the permutation's dependent (wq::overlaps_permutation)
  };
  jit::Context* ctx = nullptr;
  WqGemmProblem problem;
  std::vector<Bucket> buckets;  // ascending max_m
  std::vector<KernelRecord> records;
  jit::DeviceBuffer workspace;
  const jit::LoadedKernel* permute = nullptr;  // act-order: x → packed K order, into the workspace
  std::size_t permuted_x_bytes = 0;            // act-order: the first bytes of the workspace
  std::size_t stream_k_bytes = 0;              // stream K, wgmma K splits: the scratch after them
  std::size_t workspace_bytes = 0;             // the above + what the splitting buckets need
  jit::DeviceBuffer x_image;                   // x_image configs: the activations' stage image
  jit::DeviceBuffer x_sums;                    // x_sums configs: each row's sums per chunk
  // x_image and x_sums configs, and act-order layers: the GEMM starts its weight copies while the image
  // (sums, permutation) kernel runs (programmatic dependent launch); LOWBIT_NO_PDL=1 launches it after,
  // for comparisons.
  bool overlap_image = true;
};

namespace {

std::vector<int64_t> buckets_for(const std::vector<int64_t>& m_values) {
  LOWBIT_CHECK(!m_values.empty(), "m_values is empty: a plan needs at least one M");
  std::vector<int64_t> b;
  for (int64_t m : m_values) b.push_back(m_bucket(m));
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  // Cover every bucket up to the largest, so run() accepts any M ≤ max.
  std::vector<int64_t> all;
  for (int64_t x = 1; x <= b.back(); x *= 2) all.push_back(x);
  return all;
}

WqGemmConfig config_for_bucket(jit::Context& ctx, const WqGemmProblem& problem, int64_t bucket,
                               const std::optional<WqGemmConfig>& forced, bool allow_own_buffers,
                               std::string* source = nullptr) {
  WqGemmProblem pb = problem;
  pb.m = bucket;
  wq::Choice choice = wq::choose(ctx, problem, bucket, forced);
  if (!allow_own_buffers) choice.config.x_image = choice.config.x_sums = false;
  std::string why;
  LOWBIT_CHECK(can_implement(pb, choice.config, ctx.arch(), &why), "wq_gemm cannot run {} with {}: {}",
               pb.str(), choice.config.str(), why);
  if (env_flag("LOWBIT_PRINT_CONFIGS"))
    info(fmt::format("wq_gemm {} m-bucket {} -> {} ({})", problem.str(), bucket, choice.config.str(),
                     choice.source));
  if (source) *source = choice.source;
  return choice.config;
}

bool aligned(const void* p, std::size_t a) {
  return reinterpret_cast<std::uintptr_t>(p) % a == 0;
}

// The kernels of one layer: every bucket a plan for m_values covers, in order, and the act-order
// permutation's; each record says how the kernel was chosen and obtained.
struct BucketKernel {
  int64_t bucket;
  WqGemmConfig config;
  std::string config_source;  // how the config was chosen
  jit::KernelSpec spec;
  KernelRecord record;
  bool chain = false;              // chained launch (compile_layers' `chain` and wq::chain_eligible)
  bool after_permutation = false;  // the chained kernel in every call (wq::overlaps_permutation)
};
// How compile_layers treats x_image and x_sums configs: as chosen (a plan that owns its workspace),
// cleared (a plan without one: it owns no image or sums either), or both (ahead-of-time builds, which
// serve both kinds).
enum class OwnBuffers { kAsChosen, kCleared, kBoth };
// Configs whose extra kernel writes into a buffer the plan owns (the image, the sums).
bool needs_own_buffer(const WqGemmConfig& c) {
  return c.x_image || c.x_sums;
}

struct LayerKernels {
  std::vector<BucketKernel> buckets;
  std::optional<jit::KernelSpec> permute;
  KernelRecord permute_record;
  // x_image: the arranging kernel per rows-per-block the buckets use; x_sums: the summing kernel; and
  // (OwnBuffers::kBoth) each such bucket's kernel without them (its bucket and config in its record).
  struct Extra {
    jit::KernelSpec spec;
    int64_t bucket = 0;
    std::optional<WqGemmConfig> config;
  };
  std::vector<Extra> extra;
  std::vector<KernelRecord> extra_records;
};

// Chooses every layer's configs, then compiles (or finds) all their kernels in one parallel batch;
// the first error in (layer, bucket) order is thrown.
std::vector<LayerKernels> compile_layers(jit::Context& ctx, const std::vector<WqGemmProblem>& problems,
                                         const std::vector<int64_t>& m_values,
                                         const std::optional<WqGemmConfig>& forced, OwnBuffers own,
                                         bool chain = false) {
  std::vector<LayerKernels> out(problems.size());
  std::vector<jit::KernelSpec> specs;
  for (std::size_t l = 0; l < problems.size(); ++l) {
    auto& extra = out[l].extra;
    auto add_extra = [&](jit::KernelSpec spec, int64_t bucket = 0, std::optional<WqGemmConfig> c = {}) {
      if (std::none_of(extra.begin(), extra.end(), [&](const auto& e) { return e.spec.name == spec.name; }))
        extra.push_back({std::move(spec), bucket, c});
    };
    for (int64_t bucket : buckets_for(m_values)) {
      BucketKernel bk{bucket, {}, {}, {}, {}};
      bk.config =
          config_for_bucket(ctx, problems[l], bucket, forced, own != OwnBuffers::kCleared, &bk.config_source);
      bk.chain = chain && wq::chain_eligible(bk.config, ctx.arch());
      bk.after_permutation = wq::overlaps_permutation(problems[l], bk.config, ctx.arch());
      if (!forced) {
        const WqGemmConfig run = wq::config_as_run(problems[l], bk.config, ctx.arch(), chain);
        bk.config_source += wq::stages_note(bk.config, run);
        bk.config = run;
      }
      bk.spec = wq::kernel_spec(problems[l], bk.config, bucket, bk.chain || bk.after_permutation);
      specs.push_back(bk.spec);
      if (bk.config.x_image) add_extra(wq::x_image_spec(problems[l], bk.config));
      if (bk.config.x_sums) add_extra(wq::x_sums_spec(problems[l]));
      if (needs_own_buffer(bk.config) && own == OwnBuffers::kBoth) {
        WqGemmConfig plain = bk.config;
        plain.x_image = plain.x_sums = false;
        const bool plain_chain = wq::uses_chained_kernel(problems[l], plain, ctx.arch(), chain);
        add_extra(wq::kernel_spec(problems[l], plain, bucket, plain_chain), bucket, plain);
      }
      out[l].buckets.push_back(std::move(bk));
    }
    // Act-order: the permutation into the workspace, for the buckets that do not permute into an image
    // (all of them where own buffers are cleared; ahead-of-time builds serve both).
    const bool any_plain =
        own == OwnBuffers::kBoth || std::any_of(out[l].buckets.begin(), out[l].buckets.end(),
                                                [](const auto& bk) { return !bk.config.x_image; });
    if (problems[l].act_order && any_plain)
      specs.push_back(*(out[l].permute = wq::permute_spec(problems[l])));
    for (const auto& e : extra) specs.push_back(e.spec);
  }
  std::vector<KernelRecord> records;
  for (const std::exception_ptr& e : ctx.compile_all(specs, &records))
    if (e) std::rethrow_exception(e);
  std::size_t i = 0;
  for (LayerKernels& layer : out) {
    for (BucketKernel& bk : layer.buckets) {
      bk.record = records[i++];
      bk.record.config_source = bk.config_source;
      bk.record.config = bk.config.str();
      bk.record.m_bucket = bk.bucket;
    }
    if (layer.permute) layer.permute_record = records[i++];
    for (const auto& e : layer.extra) {
      KernelRecord r = records[i++];
      if (e.config) {
        r.config = e.config->str();
        r.config_source = "the x_image/x_sums config without its buffer (plans without their own workspace)";
        r.m_bucket = e.bucket;
      }
      layer.extra_records.push_back(std::move(r));
    }
  }
  return out;
}

std::vector<KernelRecord> records_of(const std::vector<LayerKernels>& layers) {
  std::vector<KernelRecord> out;
  for (const LayerKernels& layer : layers) {
    for (const BucketKernel& bk : layer.buckets) out.push_back(bk.record);
    if (layer.permute) out.push_back(layer.permute_record);
    out.insert(out.end(), layer.extra_records.begin(), layer.extra_records.end());
  }
  return out;
}

}  // namespace

std::vector<KernelRecord> compile_wq_gemm(Runtime& rt, const WqGemmProblem& problem,
                                          const std::vector<int64_t>& m_values,
                                          const std::optional<WqGemmConfig>& config) {
  return records_of(compile_layers(rt.context(), {problem}, m_values, config, OwnBuffers::kBoth));
}

std::vector<KernelRecord> compile_wq_gemm_layers(Runtime& rt, const std::vector<WqGemmProblem>& problems,
                                                 const std::vector<int64_t>& m_values,
                                                 const std::optional<WqGemmConfig>& config, bool chained) {
  std::vector<KernelRecord> out =
      records_of(compile_layers(rt.context(), problems, m_values, config, OwnBuffers::kBoth));
  if (!chained) return out;
  // The second pass finds everything but the chained GEMM kernels in the cache: keep only those, one per
  // (layer, bucket) as the first pass lists them, less those the first pass already ran chained
  // (act-order layers on sm_90). Both passes list the same kernels in the same order.
  auto chained_name = [](const KernelRecord& r) {
    return r.name.size() > 2 && r.name.compare(r.name.size() - 2, 2, "ch") == 0;
  };
  std::vector<KernelRecord> second =
      records_of(compile_layers(rt.context(), problems, m_values, config, OwnBuffers::kBoth, true));
  const std::size_t first = out.size();
  for (std::size_t i = 0; i < second.size(); ++i)
    if (chained_name(second[i]) && !(i < first && chained_name(out[i]))) out.push_back(std::move(second[i]));
  return out;
}

WqGemmPlan::WqGemmPlan(Runtime& rt, const WqGemmProblem& problem, const std::vector<int64_t>& m_values,
                       const WqGemmPlanOptions& options)
    : impl_(std::make_unique<Impl>()) {
  std::string why;
  LOWBIT_CHECK(can_implement(problem, &why), "wq_gemm: {}", why);
  jit::Context& ctx = rt.context();
  ctx.make_current();  // the attribute calls and the workspace below need this device's context
  impl_->ctx = &ctx;
  impl_->problem = problem;
  const LayerKernels layer =
      std::move(compile_layers(ctx, {problem}, m_values, options.config,
                               options.allocate_workspace ? OwnBuffers::kAsChosen : OwnBuffers::kCleared,
                               options.overlap_previous)
                    .front());
  std::size_t image_bytes = 0, sums_bytes = 0;
  for (const BucketKernel& bk : layer.buckets) {
    const int64_t bucket = bk.bucket;
    const WqGemmConfig& c = bk.config;
    const jit::LoadedKernel& k = ctx.load(bk.spec);  // compiled above: a memory-cache hit
    WqGemmProblem pb = problem;
    pb.m = bucket;
    // Dynamic shared memory beyond the default 48 KiB needs an opt-in (set always: it is cheap). Its
    // size depends on the bucket (x_shared stages 8 rows where the kernel skips rows 8..15, 1 at M = 1).
    // A chained bucket may ask for up to a block's opt-in maximum less its static shared memory (run()
    // shares out an SM's memory). The chained kernel of an act-order bucket gets that maximum too: a
    // chained plan of the same layer shares the function (and the attribute).
    LOWBIT_CU_CHECK(jit::driver().cuFuncSetAttribute(
        k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        bk.chain || bk.after_permutation ? ctx.device().smem_optin_per_block - k.static_smem
                                         : static_cast<int>(wq::smem_bytes(pb, c))));
    int64_t resident = 0;
    if (c.stream_k) {
      const wq::Geometry geo = wq::geometry(problem, c, bucket, bucket, 1);
      int per_sm = 0;
      LOWBIT_CU_CHECK(jit::driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(
          &per_sm, k.function, static_cast<int>(geo.block), geo.smem));
      LOWBIT_CHECK(per_sm > 0, "{}: no block of it fits on an SM ({} threads, {} B shared memory)", c.str(),
                   geo.block, geo.smem);
      resident = static_cast<int64_t>(per_sm) * ctx.sm_count();
    }
    const jit::LoadedKernel* image = nullptr;
    if (c.x_image) {
      image = &ctx.load(wq::x_image_spec(problem, c));  // compiled above
      image_bytes = std::max(image_bytes, wq::x_image_bytes(problem, c, bucket));
    }
    impl_->records.push_back(bk.record);
    const jit::LoadedKernel* sums = nullptr;
    if (c.x_sums) {
      sums = &ctx.load(wq::x_sums_spec(problem));  // compiled above
      sums_bytes = std::max(sums_bytes, wq::x_sums_bytes(problem, c, bucket));
    }
    impl_->buckets.push_back({bucket, c, &k, resident, image, sums, bk.chain, bk.after_permutation});
    // Stream K and wgmma K splits need only the counters there (their sums go through the scratch
    // below them); mma.sync K splits also the fp32 sums; a cluster adds the pieces itself (nothing).
    impl_->workspace_bytes =
        std::max(impl_->workspace_bytes, wq::adds_in_scratch(c)         ? wq::counter_bytes(pb.n, pb.m)
                                         : wq::needs_split_workspace(c) ? wq::workspace_bytes(pb, c.split_k)
                                                                        : 0);
    impl_->stream_k_bytes = std::max(impl_->stream_k_bytes, wq::stream_k_scratch_bytes(pb, c));
  }
  if (layer.permute) {
    impl_->permute = &ctx.load(*layer.permute);
    impl_->permuted_x_bytes = wq::permuted_x_bytes(problem, impl_->buckets.back().max_m);
    impl_->workspace_bytes += impl_->permuted_x_bytes;
  }
  impl_->workspace_bytes += impl_->stream_k_bytes;
  if (image_bytes > 0) impl_->x_image = jit::DeviceBuffer(image_bytes);  // rewritten by every call
  if (sums_bytes > 0) impl_->x_sums = jit::DeviceBuffer(sums_bytes);     // likewise
  impl_->overlap_image = !env_flag("LOWBIT_NO_PDL");
  if (impl_->workspace_bytes > 0 && options.allocate_workspace) {
    impl_->workspace = jit::DeviceBuffer(impl_->workspace_bytes);
    impl_->workspace.fill_bytes(0);  // the kernels keep it zero from here on
  }
}

WqGemmPlan::~WqGemmPlan() = default;
WqGemmPlan::WqGemmPlan(WqGemmPlan&&) noexcept = default;
WqGemmPlan& WqGemmPlan::operator=(WqGemmPlan&&) noexcept = default;

int64_t WqGemmPlan::max_m() const {
  return impl_->buckets.back().max_m;
}
std::size_t WqGemmPlan::workspace_bytes() const {
  return impl_->workspace_bytes;
}
const std::vector<KernelRecord>& WqGemmPlan::records() const {
  return impl_->records;
}

const WqGemmConfig& WqGemmPlan::config_for(int64_t m) const {
  for (const auto& b : impl_->buckets)
    if (m <= b.max_m) return b.config;
  LOWBIT_FAIL("m = {} is over this plan's largest M bucket ({})", m, max_m());
}

void WqGemmPlan::run(const WqGemmArgs& a, int64_t m, Stream stream) const {
  const Impl& im = *impl_;
  const WqGemmProblem& p = im.problem;
  LOWBIT_CHECK(m >= 1 && m <= max_m(), "m = {}: must be 1..{} (the plan's largest M bucket)", m, max_m());
  const Impl::Bucket* b = nullptr;
  for (const auto& bk : im.buckets)
    if (m <= bk.max_m) {
      b = &bk;
      break;
    }
  LOWBIT_CHECK(a.x != nullptr, "args.x is null");
  LOWBIT_CHECK(aligned(a.x, 16), "args.x = {}: must be 16-byte aligned", a.x);
  LOWBIT_CHECK(a.w.qweight != nullptr, "args.w.qweight is null");
  LOWBIT_CHECK(aligned(a.w.qweight, 16), "args.w.qweight = {}: must be 16-byte aligned", a.w.qweight);
  LOWBIT_CHECK(a.w.scales != nullptr, "args.w.scales is null");
  LOWBIT_CHECK(aligned(a.w.scales, 16), "args.w.scales = {}: must be 16-byte aligned", a.w.scales);
  if (has_int_zeros(p.mode) || has_float_zeros(p.mode)) {
    LOWBIT_CHECK(a.w.zeros != nullptr, "args.w.zeros is null but mode = {} needs zero points",
                 to_string(p.mode));
    const std::size_t za = has_int_zeros(p.mode) ? 8 : 16;
    LOWBIT_CHECK(aligned(a.w.zeros, za), "args.w.zeros = {}: must be {}-byte aligned", a.w.zeros, za);
  }
  if (p.act_order) {
    LOWBIT_CHECK(a.w.perm != nullptr,
                 "args.w.perm is null but problem.act_order is set (PackedWeights::perm)");
    LOWBIT_CHECK(aligned(a.w.perm, 16), "args.w.perm = {}: must be 16-byte aligned",
                 static_cast<const void*>(a.w.perm));
  } else {
    LOWBIT_CHECK(a.w.perm == nullptr, "args.w.perm is set but problem.act_order is false");
  }
  LOWBIT_CHECK(aligned(a.bias, 2), "args.bias = {}: must be 2-byte aligned", a.bias);
  LOWBIT_CHECK(a.y != nullptr, "args.y is null");
  LOWBIT_CHECK(aligned(a.y, dtype_bytes(p.out)), "args.y = {}: must be {}-byte aligned", a.y,
               dtype_bytes(p.out));
  void* ws = a.workspace;
  const bool permutes_into_workspace = p.act_order && !b->config.x_image;
  if (wq::needs_split_workspace(b->config) || b->config.stream_k || permutes_into_workspace) {
    if (ws == nullptr) ws = im.workspace.get();
    LOWBIT_CHECK(
        ws != nullptr,
        "args.workspace is null, but {} needs plan.workspace_bytes() = {} bytes (zero-filled once) {}",
        b->config.str(), im.workspace_bytes,
        permutes_into_workspace ? "for the permuted activations of act-order" : "to split K");
    LOWBIT_CHECK(aligned(ws, 256), "args.workspace = {}: must be 256-byte aligned", ws);
  }
  const wq::Geometry geo = wq::geometry(p, b->config, m, b->max_m, b->resident_blocks);
  // Workspace = [permuted x (act-order; fixed size for the plan's largest M) | scratch of stream K
  // and wgmma K splits (the plan's largest) | counters | fp32 sums]. Counters and sums are laid out
  // for this M; where they fall does not matter between calls: every call leaves them zero
  // (counters, atomic sums and deterministic slices), and the scratch (the piece that reads a slot
  // zeroes it; slots are added into, so they must start zero).
  char* base = static_cast<char*>(ws);
  const void* x = a.x;
  int mi = static_cast<int>(m);
  im.ctx->make_current();
  // Chained, the first kernel of the call is the one that waits for the previous call; the pre-kernels
  // (permutation, sums) wait in every block before they read x or write their buffers. (x_image
  // buckets are wgmma ones, which do not chain.)
  jit::LaunchOptions pre_options;
  pre_options.overlap_previous = b->chain;
  // Unchained, the permutation starts after whatever came before (an ordinary launch) and the kernels
  // after it in this call are its dependents where they wait for it (the sums kernel in every block; the
  // GEMM where wq::overlaps_permutation compiled the chained kernel). x_image buckets: the permutation
  // writes the image, and the wgmma GEMM is its dependent as it is the image kernel's.
  const bool after_permutation = p.act_order && im.overlap_image;
  const int sm_count = im.ctx->sm_count();
  int in_shared = wq::permute_in_shared(p, m) ? 1 : 0;
  if (permutes_into_workspace) {
    void* xp = base;
    const void* pargs[] = {&a.x, &a.w.perm, &xp, &mi, &in_shared};
    jit::launch(im.permute->function, wq::permute_shape(p, 0, m, sm_count), stream, const_cast<void**>(pargs),
                pre_options);
    x = xp;
  }
  if (b->config.x_image) {
    void* image = im.x_image.get();
    const int rows = 16 * b->config.m_tiles;
    if (p.act_order) {
      // The permutation writes the image itself (wq::x_image_spec): one kernel before the GEMM.
      const void* pargs[] = {&a.x, &a.w.perm, &image, &mi, &in_shared};
      jit::launch(b->image->function, wq::permute_shape(p, rows, m, sm_count), stream,
                  const_cast<void**>(pargs), pre_options);
    } else {
      const void* iargs[] = {&x, &image, &mi};
      jit::LaunchShape shape;
      shape.grid_x = static_cast<unsigned>(ceil_div(p.k, 128));
      shape.grid_y = static_cast<unsigned>(ceil_div(m, rows));
      // 128 rows per block: the image kernel's blocks take 16 of them each (8 × 64 threads per chunk
      // instead of 512), so its loads spread over more SMs. H200, W4 f16 at 128 rows: 0.2-2.9 % faster
      // on four of five such standard layers (6144×4096 19.06 → 18.47 µs), one +0.4 %; split at 64 rows
      // per block it was ±0.7 % (docs/perf-notes.md, twenty-sixth session).
      const int block_rows = rows == 128 ? 16 : rows;
      shape.grid_z = static_cast<unsigned>(rows / block_rows);
      shape.block = static_cast<unsigned>(4 * block_rows);
      jit::launch(b->image->function, shape, stream, const_cast<void**>(iargs), pre_options);
    }
    x = image;
  }
  float* xsums = nullptr;
  if (b->config.x_sums) {
    xsums = static_cast<float*>(im.x_sums.get());
    int rows = static_cast<int>(wq::grid_rows(b->config, m));
    const void* sargs[] = {&x, &xsums, &mi, &rows};
    jit::LaunchShape shape;
    shape.grid_x = static_cast<unsigned>(ceil_div(p.k, 128));
    shape.grid_y = static_cast<unsigned>(ceil_div(rows, 8));
    shape.block = 256;  // a warp per row and chunk
    jit::LaunchOptions sums_options = pre_options;
    sums_options.overlap_previous = b->chain || after_permutation;
    jit::launch(b->sums->function, shape, stream, const_cast<void**>(sargs), sums_options);
  }
  char* split_ws = base ? base + im.permuted_x_bytes + im.stream_k_bytes : nullptr;
  float* sums = split_ws ? reinterpret_cast<float*>(split_ws + wq::counter_bytes(p.n, m)) : nullptr;
  unsigned* counters = reinterpret_cast<unsigned*>(split_ws);
  // (The wgmma kernel takes the first nine: the driver reads as many as the kernel has.)
  const void* args[] = {&a.w.qweight, &a.w.scales, &a.w.zeros, &x,  &a.bias,
                        &a.y,         &sums,       &counters,  &mi, &xsums};
  jit::LaunchOptions options;
  // A stream-K block may wait for a later block (templates/wq_gemm_wgmma.cuh), so all must be
  // resident at once: a cooperative launch guarantees it or fails (MPS limits, a smaller partition)
  // instead of hanging.
  options.cooperative = b->config.stream_k;
  // The wgmma kernel reads the image only after griddepcontrol.wait; nothing else it reads or writes
  // is touched by the image kernel (act-order: the permutation, which writes the image), and
  // everything before that kernel in the stream has completed.
  // Likewise the mma.sync kernel reads the sums of x_sums only after it.
  // Chained, or an act-order GEMM overlapping its permutation: the mma.sync kernel starts early.
  const bool early = b->chain || (b->after_permutation && im.overlap_image);
  options.overlap_previous = (needs_own_buffer(b->config) && im.overlap_image) || early;
  // The wgmma kernel's two- and three-way K splits add their pieces through a cluster's shared memory.
  if (wq::cluster_split(b->config)) options.cluster_y = static_cast<unsigned>(b->config.split_k);
  wq::Geometry shape = geo;
  if (early) {
    // The next call may start early (chained), and this one while the previous kernel runs: each block
    // takes the shared memory of 1 / ceil(blocks / SMs) of an SM (less 1 KiB the SM reserves per block
    // and its static shared memory), so the grid spreads as evenly as it would on an idle device
    // (templates/wq_gemm.cuh, kChain). At most the opt-in maximum set at plan build. Without that, an
    // act-order GEMM started beside its permutation ran 16384² at one row 26 % slower (H200; the other
    // standard layers 4-12 % faster; docs/perf-notes.md, thirty-sixth session).
    const DeviceInfo& dev = im.ctx->device();
    const unsigned blocks = geo.grid_x * geo.grid_y * geo.grid_z, sms = static_cast<unsigned>(dev.sm_count);
    const unsigned per_sm = (blocks + sms - 1) / sms, smem_sm = static_cast<unsigned>(dev.smem_per_sm);
    // Beyond its dynamic shared memory a block holds its static memory and the 1 KiB the SM reserves
    // per block; the share leaves 256 B more.
    const unsigned per_block = 1024 + static_cast<unsigned>(b->kernel->static_smem),
                   reserved = per_block + 256;
    const unsigned most = static_cast<unsigned>(dev.smem_optin_per_block - b->kernel->static_smem);
    if (smem_sm / per_sm > reserved) {
      unsigned want = smem_sm / per_sm - reserved;  // the SM's share
      // Act-order: at most 96 KiB, so the SM keeps L1 for the permutation's 2-byte gathers (H200, W4
      // f16 at 16 rows with the whole SM: 11-45 % slower than not chained on five of six layers; with
      // 96 KiB 2-8 % faster on four, 16384² +1 %, 6144×4096 +10 %; one row unchanged, 5-23 % faster;
      // docs/perf-notes.md, thirty-fifth session); but enough that per_sm + 1 blocks do not fit, or
      // the spread is lost (bf16 16384² at one row, 128 blocks of 105 KiB: 37 → 59 µs; thirty-sixth).
      const unsigned one_more = smem_sm / (per_sm + 1);  // each block's room were one more to fit
      if (p.act_order)
        want = std::min(want, std::max(96u * 1024, one_more > per_block ? one_more - per_block + 256 : 0));
      shape.smem = std::max(geo.smem, std::min(want, most));
    }
  }
  jit::launch(b->kernel->function, shape, stream, const_cast<void**>(args), options);
}

// ---- functional API -----------------------------------------------------------------------------

void wq_gemm(Runtime& rt, const WqGemmProblem& problem, const WqGemmArgs& args, Stream stream,
             const WqGemmCallOptions& options) {
  std::string why;
  LOWBIT_CHECK(can_implement(problem, &why), "wq_gemm: {}", why);
  // One plan per (problem, bucket, chained or not), kept by the runtime; built on first use.
  WqGemmProblem key_problem = problem;
  key_problem.m = m_bucket(problem.m);
  const std::string key = "wq_gemm|" + key_problem.str() + (options.overlap_previous ? "|chained" : "");
  auto plan = rt.context().memo<WqGemmPlan>(key, [&] {
    WqGemmPlanOptions o;
    o.allocate_workspace = false;  // one plan serves every call, on any stream: no buffers of its own
    o.overlap_previous = options.overlap_previous;
    return std::make_shared<WqGemmPlan>(rt, key_problem, std::vector<int64_t>{key_problem.m}, o);
  });
  if (plan->workspace_bytes() > 0) {
    LOWBIT_CHECK(args.workspace != nullptr,
                 "args.workspace is null, but the chosen config ({}) {}: pass workspace_bytes(problem) = {} "
                 "zero-filled bytes",
                 plan->config_for(problem.m).str(),
                 problem.act_order ? "permutes the activations (act-order)" : "splits K",
                 workspace_bytes(problem));
  }
  WqGemmArgs a = args;
  if (a.workspace != nullptr) a.workspace = static_cast<char*>(a.workspace) + bucket_offset(problem);
  plan->run(a, problem.m, stream);
}

}  // namespace lowbit

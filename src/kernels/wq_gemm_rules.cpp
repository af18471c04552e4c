// wq_gemm's config rules: the shared memory, workspace and launch geometry a config needs, whether it
// runs on an arch (can_implement), and how to shrink or split one until it fits.
#include <algorithm>
#include <cstdint>
#include <optional>

#include "common/check.hpp"
#include "kernels/wq_gemm_internal.hpp"

namespace lowbit {

using wq::ceil_div;
using wq::fail;

namespace wq {

std::size_t reduction_smem_bytes(const WqGemmConfig& c) {
  // Every warp's summed accumulators, [warps_n][kSummed][warps_k][32] floats in templates/wq_gemm.cuh
  // (kSummed ≤ kRegs ≤ m_tiles · n_tiles · 4 per lane; the swapped one-row kernel sums half its registers).
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
bool mma_cluster_split(const WqGemmConfig& c, const Arch& arch) {
  // kClusterK in templates/wq_gemm.cuh, which derives it from the same three facts (__CUDA_ARCH__).
  return !c.wgmma && c.split_k >= 2 && c.split_k <= kMaxMmaClusterSplit && arch.sm() >= 90;
}
bool adds_in_cluster(const WqGemmConfig& c, const Arch& arch) {
  return cluster_split(c) || mma_cluster_split(c, arch);
}
bool needs_split_workspace(const WqGemmConfig& c, const Arch& arch) {
  // A cluster adds in shared memory, stream K in its scratch.
  return c.split_k > 1 && !adds_in_cluster(c, arch);
}
bool adds_in_scratch(const WqGemmConfig& c) {
  return c.stream_k || (c.wgmma && c.split_k > 1 && !cluster_split(c));
}
const char* k_split_path(const WqGemmConfig& c, const Arch& arch) {
  if (c.stream_k) return "stream K";
  if (c.split_k <= 1) return "none";
  return adds_in_cluster(c, arch) ? "cluster" : "workspace";
}
std::size_t mma_cluster_sums_bytes(const WqGemmConfig& c, const Arch& arch) {
  // kClusterBytes in templates/wq_gemm.cuh: ranks 1.. of the cluster send rank 0 each thread's
  // summed values (at most kValsBound = ceil(m_tiles·n_tiles·4 / warps_k) per thread; all of its
  // accumulators with one warp along K), 4 bytes each, [rank − 1][value][thread], into a region of
  // its own at the end of rank 0's dynamic shared memory.
  if (!mma_cluster_split(c, arch)) return 0;
  const std::size_t regs = static_cast<std::size_t>(c.m_tiles) * c.n_tiles * 4;
  const std::size_t vals = (regs + c.warps_k - 1) / c.warps_k;
  const std::size_t threads = static_cast<std::size_t>(32) * c.warps_n * c.warps_k;
  return static_cast<std::size_t>(c.split_k - 1) * vals * threads * 4;
}
std::size_t cluster_sums_bytes(const WqGemmConfig& c) {
  // kSplitK · kOwnVecs · kConsumers · 16 B in templates/wq_gemm_wgmma.cuh: each MMA thread's
  // accumulators in 16-byte vectors (m_tiles·n_tiles of them), dealt out to the split's ranks.
  const std::size_t vecs = static_cast<std::size_t>(c.m_tiles) * c.n_tiles;
  const std::size_t own = (vecs + c.split_k - 1) / c.split_k;
  return static_cast<std::size_t>(c.split_k) * own * 32 * c.warps_n * 16;
}
std::size_t smem_bytes(const WqGemmProblem& p, const WqGemmConfig& c, const Arch& arch) {
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
  // An mma.sync cluster split's receive region comes after everything else (rank 0's last bytes).
  return std::max(x_stages + rings, reduction_smem_bytes(c)) + mma_cluster_sums_bytes(c, arch);
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

Geometry geometry(const WqGemmProblem& p, const WqGemmConfig& c, const Arch& arch, int64_t m, int64_t bucket,
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
  g.smem = static_cast<unsigned>(smem_bytes(pb, c, arch));
  return g;
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

bool dequantizes_every_weight(const WqGemmProblem& p) {
  return has_float_zeros(p.mode) || (p.group_size > 0 && p.group_size < 128) || p.accum == DType::F16;
}

bool eight_tile_groups(const WqGemmProblem& p) {
  return p.group_size == 128 || (p.bits == 3 && p.group_size == 256);
}

bool sixteen_tile_groups(const WqGemmProblem& p) {
  return (p.group_size == 128 || p.group_size == 256) && !dequantizes_every_weight(p);
}

WqGemmConfig fit_registers(const WqGemmProblem& p, WqGemmConfig c) {
  // Modes that dequantize every weight before the MMA keep more registers live per tile: past 8 accumulator
  // tiles per warp they spill (ptxas, sm_90a: m_tiles 2 × n_tiles 8 needs 255 registers and 32-76 B of
  // stack). (fp16 accumulation's v48 blocks of warps side by side, wq_gemm_heuristic_fp16_accum.cpp, hold 16
  // without spills and come after this cut.) One row tile of 16 column tiles (the integer-zero entries of the
  // widest layers at 1-8 rows, which serve these modes as a similar format) does not spill, yet ran slower
  // than 8 in 9 of 11 cases (H200, 28672×4096 at one row, 28672×8192 at 4/8 rows, 16384² bf16 at one row;
  // sixty-ninth session): fp16 accumulation 0.77-0.94×, q·s + z 0.95-0.99×, float zeros 0.90-1.03×.
  const bool full_dequant = dequantizes_every_weight(p);
  // wgmma always dequantizes before the MMA; can_implement caps m_tiles·n_tiles at 16 (a few
  // 8-bit and per-channel configs still spill 4-76 bytes at the 168 registers of 384 threads).
  if (full_dequant && !c.wgmma) {
    while (c.m_tiles * c.n_tiles > 8 && c.m_tiles > 1) c.m_tiles /= 2;
    c.n_tiles = std::min(c.n_tiles, 8);
  }
  return c;
}

int64_t smem_blocks_per_sm(const WqGemmProblem& p, const WqGemmConfig& c, const Arch& arch) {
  return static_cast<int64_t>((smem_limit(arch) + 1024) / (smem_bytes(p, c, arch) + 1024));
}

int64_t smem_waves(const WqGemmProblem& p, const WqGemmConfig& c, const Arch& arch, int sms) {
  // Threads a SM holds: 2048 on sm_80, sm_90 and sm_100/103; 1536 on sm_86/87/89 and sm_120/121, and on
  // sm_110, which we could not confirm (fewer threads only makes the cut readier); 1024 on sm_75.
  const int sm = arch.sm();
  const int64_t threads_per_sm = sm == 80 || sm == 90 || sm == 100 || sm == 103 ? 2048
                                 : sm == 75                                     ? 1024
                                                                                : 1536;
  const int64_t bucket = m_bucket(p.m);
  const Geometry g = geometry(p, c, arch, bucket, bucket);  // the grid and shared memory the launch takes
  const int64_t per_sm = std::min<int64_t>(threads_per_sm / g.block, smem_blocks_per_sm(p, c, arch));
  const int64_t blocks = int64_t{g.grid_x} * g.grid_y * g.grid_z;
  return per_sm > 0 ? ceil_div(blocks, per_sm * std::max(sms, 1)) : INT64_MAX;
}

WqGemmConfig keep_one_wave(const WqGemmProblem& p, WqGemmConfig c, int64_t entry_bucket, const Arch& arch,
                           int sms) {
  // Only from one row to 2 (measured), for an entry valid at its own bucket (one that is not is left to the
  // checks after this, which refuse it) whose blocks took one wave there.
  WqGemmProblem at_entry = p;
  at_entry.m = entry_bucket;
  if (entry_bucket != 1 || m_bucket(p.m) != 2 || c.wgmma || c.stream_k || !can_implement(at_entry, c, arch) ||
      smem_waves(at_entry, c, arch, sms) != 1)
    return c;
  // The most stages, from the entry's down to 2, whose blocks take one wave; where none does, the most that
  // fit.
  std::optional<WqGemmConfig> fitting;
  for (WqGemmConfig s = c; s.stages >= 2; --s.stages) {
    const int64_t waves = smem_waves(p, s, arch, sms);
    if (waves <= 1) return s;
    if (!fitting && waves != INT64_MAX) fitting = s;
  }
  return fitting.value_or(c);
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

}  // namespace wq

bool can_implement(const WqGemmProblem& p, const WqGemmConfig& c, const Arch& arch, std::string* why) {
  if (!can_implement(p, why)) return false;
  if (arch.sm() < 80)
    return fail(why, fmt::format("arch = {}: wq_gemm needs sm_80 or newer (m16n8k16 MMA)", arch.str()));
  if (c.m_tiles < 1 || c.m_tiles > 8) return fail(why, fmt::format("m_tiles = {}: must be 1..8", c.m_tiles));
  // 6 (48-column warps): the blocks of layers like 6144×K fill 132 SMs once, where 32-column ones leave
  // 60 SMs with two and 72 with one (docs/perf-notes.md, thirty-ninth session).
  if (c.n_tiles != 1 && c.n_tiles != 2 && c.n_tiles != 4 && c.n_tiles != 6 && c.n_tiles != 8 &&
      c.n_tiles != 16)
    return fail(why, fmt::format("n_tiles = {}: must be 1, 2, 4, 6, 8 or 16", c.n_tiles));
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
  if (c.warps_k < 1 || c.warps_k > 16)
    return fail(why, fmt::format("warps_k = {}: must be 1..16", c.warps_k));
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
  if (wq::smem_bytes(p, c, arch) + 16 > wq::smem_limit(arch))
    return fail(why, fmt::format("{}: needs {} bytes of shared memory per block, over the {} bytes of {}",
                                 c.str(), wq::smem_bytes(p, c, arch) + 16, wq::smem_limit(arch), arch.str()));
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

}  // namespace lowbit

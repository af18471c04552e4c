// wq_gemm host internals shared by the family's files, the CLI (inspect/bench) and the tests.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "jit/kernel_spec.hpp"
#include "jit/launch.hpp"
#include "lowbit/wq_gemm.hpp"
#include "tune/tuning_db.hpp"

namespace lowbit::jit {
class Context;
}

namespace lowbit::wq {

// Helpers shared by the family's host files (wq_gemm_*.cpp). fail sets *why (where given) and returns
// false, for the can_implement checks.
inline bool fail(std::string* why, std::string msg) {
  if (why) *why = std::move(msg);
  return false;
}
inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Up to 8 rows with one row tile the kernel skips activation rows 8..15 (its one 8-row B slice;
// the kernel swaps the MMA operands, weights as the 16-row A, from 16 rows too where it can).
constexpr bool skips_upper_rows(const WqGemmConfig& c, int64_t bucket) {
  return bucket <= 8 && c.m_tiles == 1 && !c.wgmma;
}

// The kernel of M bucket 1 serves M = 1 only (a plan runs M = 1 on bucket 1 and nothing else), so
// it computes one row: with block-shared activations it stages that row, not eight, and with the
// zero after the MMA under in-place bases (2-bit) it skips the per-chunk fix-up of the other rows.
constexpr bool one_row_kernel(const WqGemmConfig& c, int64_t bucket) {
  return bucket == 1 && skips_upper_rows(c, bucket);
}

// The warpgroup-MMA kernel (WqGemmConfig::wgmma) compiles for sm_90a only.
inline bool has_wgmma(const Arch& a) {
  return a.sm() == 90 && a.arch_specific;
}
// ... and serves neither deterministic problems (its K order differs from the M = 1 kernel's) nor
// fp16 accumulation (it accumulates in fp32).
inline bool may_run_wgmma(const WqGemmProblem& p) {
  return !p.deterministic && p.accum == DType::F32;
}

// Launch geometry of one config for one M, run by the kernel of M bucket `bucket`.
using Geometry = jit::LaunchShape;
// Stream-K configs launch min(their steps, resident_blocks) blocks: as many as the device holds at once.
Geometry geometry(const WqGemmProblem& problem, const WqGemmConfig& config, const Arch& arch, int64_t m,
                  int64_t bucket, int64_t resident_blocks = 0);
// The steps a stream-K config's blocks share: (row block, column block, 128-k chunk).
int64_t stream_k_steps(const WqGemmProblem& problem, const WqGemmConfig& config, int64_t m);

// Everything the runtime needs to build the kernel for (problem, config) serving M bucket `bucket`
// (buckets ≤ 8 with one 16-row tile skip the activation rows 8..15; see also one_row_kernel).
// chain: the mma.sync kernel that waits for the previous grid before it reads x (chained calls,
// WqGemmPlanOptions::overlap_previous, and act-order layers on sm_90; see uses_chained_kernel).
jit::KernelSpec kernel_spec(const WqGemmProblem& problem, const WqGemmConfig& config, int64_t bucket,
                            bool chain = false);
// Whether a bucket with this config runs chained when its plan asks for it (sm_90, the mma.sync kernel,
// with or without its x_sums or act-order pre-kernel); others launch as usual.
bool chain_eligible(const WqGemmConfig& config, const Arch& arch);
// Whether an act-order bucket runs the chained kernel in every call, chained or not: launched as the
// permutation's dependent, it issues its first weights while the permutation runs and waits for it
// before it reads the permuted activations (wherever chain_eligible; LOWBIT_NO_PDL=1 launches it after).
bool overlaps_permutation(const WqGemmProblem& problem, const WqGemmConfig& config, const Arch& arch);
// Whether a bucket runs the chained kernel: in a chained plan where chain_eligible, and wherever
// overlaps_permutation. That kernel runs a plan's own choice with chained_stages.
bool uses_chained_kernel(const WqGemmProblem& problem, const WqGemmConfig& config, const Arch& arch,
                         bool chained_plan);
// The stages a chained bucket runs (a plan's own choice; forced configs keep theirs): fewer where the
// prologue would hold every chunk of a warp (stages − 1 ≥ its chunks), so one is left to refill. The
// one such standard case, W2 4096² at 16 rows (4 chunks per warp, 5 stages), ran 7-8 % slower chained
// than plain on both GPUs, and 12 % faster than plain with 4 stages (docs/perf-notes.md, thirty-fourth
// session).
int chained_stages(const WqGemmProblem& problem, const WqGemmConfig& config);
// The config a plan runs for its own choice `chosen` (not a forced one): chained_stages where the bucket
// uses the chained kernel; and the note for its config source, " (chained: stages a -> b)", or "".
WqGemmConfig config_as_run(const WqGemmProblem& problem, const WqGemmConfig& chosen, const Arch& arch,
                           bool chained_plan);
std::string stages_note(const WqGemmConfig& chosen, const WqGemmConfig& run);

// The kernel that puts an act-order layer's activations in packed K order (one per K): into the
// workspace (image_rows 0), or straight into the stage image of an x_image bucket with image_rows rows
// per block (x_image_spec gives it for act-order problems); and its launch shape for M rows.
jit::KernelSpec permute_spec(const WqGemmProblem& problem, int image_rows = 0);
jit::LaunchShape permute_shape(const WqGemmProblem& problem, int image_rows, int64_t m, int sm_count);
// Whether it copies each row of x into shared memory and gathers there (from 17 rows, where K fits),
// rather than gathering from global memory.
bool permute_in_shared(const WqGemmProblem& problem, int64_t m);
// The rows the grid's row blocks cover for M rows (16·m_tiles each): the image's and the sums' rows.
int64_t grid_rows(const WqGemmConfig& config, int64_t m);
// The kernel that arranges the activations into a wgmma config's stage image (WqGemmConfig::x_image;
// one per K and rows per block; for act-order problems the permutation, which writes it), and the image's
// bytes for up to max_m rows (0 without x_image).
jit::KernelSpec x_image_spec(const WqGemmProblem& problem, const WqGemmConfig& config);
std::size_t x_image_bytes(const WqGemmProblem& problem, const WqGemmConfig& config, int64_t max_m);
// The kernel that sums each row's activations per chunk for WqGemmConfig::x_sums (one per K, bits and
// activation dtype), and its buffer's bytes for up to max_m rows (0 without x_sums).
jit::KernelSpec x_sums_spec(const WqGemmProblem& problem);
std::size_t x_sums_bytes(const WqGemmProblem& problem, const WqGemmConfig& config, int64_t max_m);
// Workspace bytes for the permuted activations of up to max_m rows (0 without act-order).
std::size_t permuted_x_bytes(const WqGemmProblem& problem, int64_t max_m);

// Derived sizes of lowbit's packed layout for a problem.
struct Layout {
  int64_t n_pad, k_pad, groups_pad, chunks;
  std::size_t qweight_bytes, scales_bytes, zeros_bytes, perm_bytes;
};
Layout layout(const WqGemmProblem& problem);
// Words per load of one lane's weight fragment (pack.hpp): 4 for 4/8 bits, 2 for 2, 1 for 1 and 3.
constexpr int vector_words(int bits) {
  return bits % 4 == 0 ? 4 : bits == 2 ? 2 : 1;
}
// Short name of a mode in kernel names and tuning keys: zp, sym, fz, sz.
constexpr const char* mode_tag(DequantMode m) {
  return m == DequantMode::SubZeroThenScale        ? "zp"
         : m == DequantMode::Symmetric             ? "sym"
         : m == DequantMode::SubFloatZeroThenScale ? "fz"
                                                   : "sz";
}

// Split-K workspace: arrival counters (sized for the finest grid at M = m), then fp32 sums.
constexpr int kMaxDeterministicSplit = 16;
std::size_t counter_bytes(int64_t n, int64_t m);
std::size_t workspace_bytes(const WqGemmProblem& problem, int split_k);  // 0 without split
// Stream K, and the wgmma kernel's K splits past a cluster's, add their pieces in a scratch slot per
// output tile, right before the counters (templates/wq_gemm_wgmma.cuh): a plan reserves the most any
// of its buckets needs there, so the counters (and a split-K bucket's fp32 slice after them) sit at
// the same place for every M. stream_k_scratch_bound covers every config (at most 128 rows × 256
// columns per tile).
std::size_t stream_k_scratch_bytes(const WqGemmProblem& problem, const WqGemmConfig& config);
std::size_t stream_k_scratch_bound(const WqGemmProblem& problem);

// Shared-memory bytes of the intra-block reduction.
std::size_t reduction_smem_bytes(const WqGemmConfig& config);
// Dynamic shared memory of a launch: the cp.async rings (and x_shared stages), reused for the
// reduction, for the kernel of M bucket m_bucket(problem.m).
std::size_t smem_bytes(const WqGemmProblem& problem, const WqGemmConfig& config, const Arch& arch);
// wgmma configs: one pipeline stage's shared memory, and the partial sums a block of a K split
// receives from the others of its cluster (they must fit in its stages).
std::size_t stage_bytes(const WqGemmProblem& problem, const WqGemmConfig& config);
std::size_t cluster_sums_bytes(const WqGemmConfig& config);
// Whether a config's K split is a thread-block cluster adding through shared memory: the wgmma
// kernel's with split_k 2 or 3 (cluster_split), the mma.sync kernel's with split_k 2..8 on sm_90 and
// later (mma_cluster_split; its workspace path cost 2-11 µs per call on the H200, docs/perf-notes.md,
// fortieth session). Larger splits, and mma.sync before sm_90, add through the workspace.
constexpr int kMaxMmaClusterSplit = 8;  // the portable cluster size
bool cluster_split(const WqGemmConfig& config);
bool mma_cluster_split(const WqGemmConfig& config, const Arch& arch);
bool adds_in_cluster(const WqGemmConfig& config, const Arch& arch);
// The mma.sync cluster's partial sums that rank 0 receives, in a region at the end of every block's
// shared memory (0 where the split does not meet in a cluster).
std::size_t mma_cluster_sums_bytes(const WqGemmConfig& config, const Arch& arch);
// Whether a config adds its K pieces through the workspace (a K split that is not a cluster one):
// mma.sync through its counters and fp32 sums, wgmma through its counters and the scratch slots.
// Stream K needs the scratch and counters too.
bool needs_split_workspace(const WqGemmConfig& config, const Arch& arch);
// Whether a config's pieces meet in the scratch slots (stream K, wgmma K splits through the workspace).
bool adds_in_scratch(const WqGemmConfig& config);
// How a config's K pieces meet, for `lowbit inspect`: "none" (no split), "cluster" (a thread-block
// cluster's shared memory, no workspace), "workspace" (fp32 sums or scratch slots and counters) or
// "stream K" (the workspace's scratch slots).
const char* k_split_path(const WqGemmConfig& config, const Arch& arch);
// Shared memory a block may opt in to on an arch.
std::size_t smem_limit(const Arch& arch);
// Blocks of a config a SM holds by shared memory alone (at problem.m's bucket; 1 KiB reserved a block).
int64_t smem_blocks_per_sm(const WqGemmProblem& problem, const WqGemmConfig& config, const Arch& arch);
// Whole waves of an mma.sync config's blocks at problem.m's bucket, where shared memory and threads decide
// how many blocks a SM holds (INT64_MAX where a block does not fit). Registers are left out: they are known
// only after a compile.
int64_t smem_waves(const WqGemmProblem& problem, const WqGemmConfig& config, const Arch& arch, int sms);

// Bytes read and written by one call, for the floor: packed weights + scales + zeros + x + y (+ bias).
std::size_t traffic_bytes(const WqGemmProblem& problem);

nlohmann::json to_json(const WqGemmProblem& problem);
nlohmann::json to_json(const WqGemmConfig& config);
// A config read from a tuning file; nullopt if a field is missing or not an integer.
std::optional<WqGemmConfig> config_from_json(const nlohmann::json& j);

// The tuning-database key of a problem at an M bucket: "w4.g128.f16.zp|m16.n8192.k8192"
// ("pc" for per-channel, ".o32" for f32 output, "sym" for symmetric).
tune::TuningKey tuning_key(const WqGemmProblem& problem, int64_t bucket);
// The other way: `problem` with the activation dtype, output, mode and flags a key's format names
// ("w4.g128.f16.o32.zp.det.a16"); its bits and group stay (the tuning lookup's similar-format step keeps
// them).
WqGemmProblem problem_of_format(WqGemmProblem problem, std::string_view format);

// Whether the mma.sync kernel dequantizes every weight before the MMA in this format (float zeros, groups
// under 128, fp16 accumulation), where other formats fold the zero and scale in after it: such formats
// keep more registers live per tile and spend more of the ALU pipe per weight.
bool dequantizes_every_weight(const WqGemmProblem& problem);
// Whether the group size is one where 8 tiles a warp paid off in the 3/4-bit mma.sync rules (v42-v44):
// 128, and 256 at 3 bits (H200 tunes, sixty-fourth session). Not 4-bit g256 or per channel (v43 ran 1.010×
// and 1.049× there), nor 3-bit per channel (its bests keep 2-4 tiles at one row, 4-6 at 16 rows).
bool eight_tile_groups(const WqGemmProblem& problem);
// The formats v58-v60 give 16 tiles a warp at 2-8 rows: groups of 128 or 256 whose zero and scale come after
// the MMA (integer zeros or none, fp32 accumulation). Where every weight is dequantized first, fit_registers
// would cut 16 tiles to 8 anyway; per channel and g64 lost or gained nothing (seventy-third session).
bool sixteen_tile_groups(const WqGemmProblem& problem);
// The config with fewer 16-row tiles per warp where the mode dequantizes every weight before the
// MMA (float zeros, groups under 128) and more than 8 accumulator tiles would spill registers.
WqGemmConfig fit_registers(const WqGemmProblem& problem, WqGemmConfig config);
// A one-row entry's mma.sync config served to 2 rows by the nearest-bucket lookup step, where its blocks took
// one wave on `sms` SMs at one row: the most stages, from its own down to 2, whose blocks fit shared memory
// and take one wave at 2 rows (where none does, the most that fit; otherwise, and for any other pair of
// buckets, the config unchanged). The one-row kernel stages one activation row and the 2-row bucket eight, so
// the activation stages grow eightfold (4 stages of 16 warps' chunks: 16 KB → 128 KB): fewer blocks fit a SM
// and a second wave runs, or a block no longer fits at all. Residency counts shared memory (each block also
// holds 1 KiB) and threads, not registers (known only after a compile), which also grow at 2 rows:
// 57344×8192's (1,4,1,8,1,3) from 78 to 96 (ptxas, sm_90a), so its cut to 2 stages, five waves by this count,
// stayed at seven and lost (62.3 → 63.7 µs); hence one-wave entries only. H200 bench (seventy-fourth
// session), the entry's stages → the cut, bf16 symmetric at 2 rows: 4096² 6.50 → 4.93 µs (4 → 2 stages),
// 6144×4096 7.97 → 5.93 (4 → 3).
WqGemmConfig keep_one_wave(const WqGemmProblem& problem, WqGemmConfig config, int64_t entry_bucket,
                           const Arch& arch, int sms);

// What the heuristic's rules measure a problem by: its M bucket, the SM count (at least 1), its
// 8-column tiles (per SM) and 128-k chunks. Shapes count in tiles per SM so that other GPUs scale.
struct HeuristicShape {
  int64_t bucket, tiles, chunks;
  int sms;
  double tiles_per_sm;
};
HeuristicShape heuristic_shape(const WqGemmProblem& problem, int sm_count);
// The tiles of the busiest SM when the shape's tiles go n_tiles to a warp-column block, one block
// after another round the SMs (whole waves: the last one counts whole).
inline int64_t busiest_sm_tiles(const HeuristicShape& h, int64_t n_tiles) {
  return ceil_div(ceil_div(h.tiles, n_tiles), h.sms) * n_tiles;
}
// Whether the shape's warp-column blocks of n_tiles tiles number min_percent to max_percent of the SMs
// (100: at most one wave).
inline bool blocks_fill_within(const HeuristicShape& h, int64_t n_tiles, int min_percent, int max_percent) {
  const int64_t blocks = ceil_div(h.tiles, n_tiles);
  return 100 * blocks >= min_percent * h.sms && 100 * blocks <= max_percent * h.sms;
}
// Where v58-v60's 16-tile blocks of 4 warps suit a 2-8-row problem: 32 chunks or more, and those blocks all
// fit at once (at most 2 a SM: 165-188 registers, 53-86 KB of rings) with the busiest SM holding at most 1.3×
// the mean tiles (H200 bench, seventy-second session: 1.27 gained, 1.375 lost).
inline bool sixteen_tile_blocks_fit_evenly(const HeuristicShape& h) {
  return h.chunks >= 32 && ceil_div(h.tiles, 16) <= 2LL * h.sms &&
         10 * busiest_sm_tiles(h, 16) <= 13 * h.tiles_per_sm;
}
// Whether activations may be staged per warp (the heuristic's staged rules): shared memory holds a ring
// slot per warp and stage at 8 warps (measured on Hopper; the 99 KiB of sm_86/89 would cut them to 2-warp
// blocks), and not in deterministic mode (its K order comes from M = 1).
inline bool may_stage_per_warp(const WqGemmProblem& p, const Arch& arch) {
  return !p.deterministic && smem_limit(arch) >= 160 * 1024;
}
// How many blocks of v5's registers config with 4 warps along K (4 tiles a warp, 2 stages, 1-8 rows)
// fit per Hopper SM, from the registers ptxas gives each format (65536 a SM, allocated 8 at a time: up
// to 72 a thread, 7 blocks; up to 80, 6); 0 where the heuristic has no measurement (perf-notes,
// sixtieth to sixty-second sessions). tests/unit/heuristic_v37_test.cpp compiles the formats and
// checks their registers against it.
int64_t four_warp_register_blocks_per_sm(const WqGemmProblem& problem, int64_t bucket);
// The registers a thread of that config holds in the problem's 3/4-bit format at this bucket (ptxas,
// CUDA 13.0; wq_gemm_registers.cpp), or 0 where the table counts none.
int four_warp_register_config_registers(const WqGemmProblem& problem, int64_t bucket);
// A config of one warp along N, K unsplit: the heuristic's starting point.
WqGemmConfig base_config(int m_tiles, int n_tiles, int warps_k, int stages);
// The heuristic's warpgroup-MMA config (sm_90a, 32-128 rows), or none where its rules leave the
// problem to mma.sync (choose_config's other rules).
std::optional<WqGemmConfig> choose_wgmma_config(const WqGemmProblem& problem, const Arch& arch, int sm_count);

// What choose_config's mma.sync rules (wq_gemm_heuristic.cpp and the files it calls) branch on besides the
// shape: whether activations may be staged per warp, whether v26's (sm_90a, 3/4-bit) and the later sm_90a
// rules apply, and whether the shape is in v28's wide band (3/4-bit, over 40 tiles a SM, over 16 chunks).
struct MmaSyncFlags {
  bool stage_per_warp = false, v26 = false, sm90a = false, v28_band = false;
};
MmaSyncFlags mma_sync_flags(const WqGemmProblem& problem, const HeuristicShape& shape, const Arch& arch);
// choose_config's mma.sync config at 1-8 rows (wq_gemm_heuristic_few_rows.cpp), and at 9-16 rows with
// activations staged per warp (wq_gemm_heuristic_sixteen_rows.cpp), before its shared steps.
WqGemmConfig few_rows_config(const WqGemmProblem& problem, const HeuristicShape& shape,
                             const MmaSyncFlags& flags);
WqGemmConfig sixteen_rows_staged_config(const WqGemmProblem& problem, const HeuristicShape& shape,
                                        const MmaSyncFlags& flags);

// Tiny layers' config (heuristics v72 and v78, wq_gemm_heuristic_tiny_layers.cpp): sm_90a, at most half as
// many tiles as SMs, 1-128 rows; none elsewhere.
std::optional<WqGemmConfig> tiny_layer_config(const WqGemmProblem& problem, const HeuristicShape& shape,
                                              const Arch& arch);
// Narrow layers' config at 64/128 rows (heuristics v76-v77 and v80-v83, the same file) in place of `chosen`,
// the rules' choice: sm_90a, 0.5-2 tiles a SM; none elsewhere.
std::optional<WqGemmConfig> narrow_layer_config(const WqGemmProblem& problem, const HeuristicShape& shape,
                                                const WqGemmConfig& chosen, const Arch& arch);

// 3-bit weights' own mma.sync config where their rules (v42-v44, wq_gemm_heuristic_three_bit.cpp) replace
// `chosen`, the config of the rules they share with 4-bit weights; none elsewhere.
std::optional<WqGemmConfig> three_bit_config(const WqGemmProblem& problem, const HeuristicShape& shape,
                                             const WqGemmConfig& chosen, const Arch& arch);

// fp16 accumulation's own mma.sync config at 32-128 rows where its rules (v47-v48,
// wq_gemm_heuristic_fp16_accum.cpp) apply (sm_90a, not deterministic); none elsewhere.
std::optional<WqGemmConfig> fp16_accum_config(const WqGemmProblem& problem, const HeuristicShape& shape,
                                              bool sm90a);

// A deterministic problem's config (problem.m the bucket) in the K order of `k_order`, its one-row choice
// (heuristic v55, wq_gemm_heuristic_deterministic.cpp): from 32 rows, and at 16 with more than 8 warps
// along K; none elsewhere or where the arch cannot run it.
std::optional<WqGemmConfig> deterministic_config(const WqGemmProblem& problem, const WqGemmConfig& k_order,
                                                 const Arch& arch);
// `config` with at most 8 accumulator tiles a warp (n_tiles halved), for deterministic problems, whose
// kernel keeps two accumulator chains in every config (wq_gemm_heuristic_deterministic.cpp).
WqGemmConfig deterministic_tile_cap(WqGemmConfig config);

// The smallest power-of-2 split of K that gives the grid at least min_blocks blocks, keeping ≥ 2
// chunks per warp per split (at most 64; deterministic problems at most 8).
int fill_split(const WqGemmProblem& problem, const WqGemmConfig& config, double min_blocks);
// 6 tiles per warp at 16 rows (heuristic v23) take effect within one wave where their blocks fill at
// least this share of the SMs (beyond one wave, v27's rule of a quarter off the busiest SM); the tuner
// keeps such candidates unsplit down to the same share.
constexpr int kSixTileMinFillPercent = 70;
// v28: at one row, 6-tile blocks only up to this fill (5120-wide layers fill 81 %; 6144-wide ones,
// 97 %, kept their 2 tiles: H200 bf16 6144×4096 5.94 µs with 2 tiles and 3 stages, 6.11-6.26 with 6).
constexpr int kSixTileOneRowMaxFillPercent = 90;

// Makes `config` fit the arch (shared memory, warps), shrinking in this order: warps along K, warps
// along N, column tiles, row tiles, stages (to 2), then x_shared. With keep_k_split (deterministic
// problems keep their K order) warps_k stays and x_shared goes first, since its stages grow with it. Leaves
// it unchanged if it already fits; may still not fit when nothing is left to shrink (the caller checks).
void shrink_to_fit(const WqGemmProblem& problem, WqGemmConfig& config, const Arch& arch, bool keep_k_split);

// How a plan picked the config of one M bucket.
struct Choice {
  WqGemmConfig config;
  std::string
      source;  // "forced", "tuned (exact, <file>)", "tuned (nearest M bucket <key>, <file>)", "heuristic"
  bool exact_entry = false;  // a tuning entry of this very problem and bucket
};
// The plan a choice is for: act-order's image rule (act_order_image_config) applies only to plans
// that own their buffers (others run without the image) and are not chained (not measured).
struct ChooseFor {
  bool own_buffers = true;
  bool chained = false;
};
Choice choose(jit::Context& ctx, const WqGemmProblem& problem, int64_t bucket,
              const std::optional<WqGemmConfig>& forced, const ChooseFor& plan = {});
// The config choose() runs instead of `chosen` (tuned or heuristic) for an act-order problem whose
// bucket (problem.m) gains the activation image from its permutation in a plan of kind `plan`; none
// where it keeps `chosen`.
std::optional<WqGemmConfig> act_order_image_config(const WqGemmProblem& problem, const WqGemmConfig& chosen,
                                                   const Arch& arch, int sm_count,
                                                   const ChooseFor& plan = {});

}  // namespace lowbit::wq

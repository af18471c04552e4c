// wq_gemm: y[M,N] = x[M,K] · dequant(Wq)[N,K]ᵀ (+ bias), weights quantized to a few bits.
//
// Weights are first converted with lowbit::pack_* (lowbit/pack.hpp) into lowbit's layout; the
// kernels read only that layout. N and K are baked into the kernel; M is bucketed (1, 2, 3-4, 5-8,
// ...) and passed at run time.
//
// Two ways to call it:
//   - functional: lowbit::wq_gemm(rt, problem, args, stream). The first call for a problem (per M
//     bucket) compiles or loads the kernel; later calls only look it up.
//   - plan: WqGemmPlan plan(rt, problem, {1, 16}); plan.run(args, m, stream). The plan compiles
//     every kernel and allocates its workspace up front; run() never compiles or allocates and can
//     be captured in a CUDA graph.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lowbit/runtime.hpp"
#include "lowbit/types.hpp"

namespace lowbit {

// How a quantized integer q becomes a weight.
enum class DequantMode : uint8_t {
  SubZeroThenScale,       // (q − z)·s, one integer zero point per group (GPTQ / AWQ asymmetric)
  Symmetric,              // (q − 2^(bits−1))·s (GPTQ sym)
  SubFloatZeroThenScale,  // (q − z)·s, z a float in the act dtype (HQQ / GemLite)
  ScaleThenAddZero,       // q·s + z, z a float in the act dtype
};
std::string_view to_string(DequantMode);
bool has_int_zeros(DequantMode m);    // zeros are uint8
bool has_float_zeros(DequantMode m);  // zeros are act dtype

struct WqGemmProblem {
  int64_t m = 1;         // rows of x; any value ≥ 1 (the kernel is specialized on its bucket)
  int64_t n = 0;         // output features
  int64_t k = 0;         // input features; multiple of 8 and of group_size
  int bits = 4;          // weight bits: 1, 2, 3, 4 or 8
  int group_size = 128;  // 32, 64, 128, 256, or 0 for one scale per output channel
  DequantMode mode = DequantMode::SubZeroThenScale;
  DType act = DType::F16;  // activations, scales, float zeros and bias
  DType out = DType::F16;  // output: F16, BF16 (same as act) or F32
  // The weights were packed from an act-order checkpoint (PackedWeights::perm not empty): each call
  // first permutes the activations through args.w.perm into the workspace, or for x_image buckets
  // straight into the image (a small kernel; on sm_90 the GEMM starts beside it and waits for it
  // before it reads them).
  bool act_order = false;
  // Split-K sums in a fixed order through the workspace instead of atomics, and every M bucket uses
  // the same K decomposition: results are bitwise equal across runs and across M buckets.
  bool deterministic = false;
  // Accumulation of the tensor-core products: F32 (default), or F16 (act = F16 only; bf16 MMAs
  // accumulate in fp32 only). F16 sums each 128-wide K chunk of x·w in fp16 (8 MMA steps, two
  // chains) and the chunks in fp32, so the fp16 rounding covers one chunk and not all of K
  // (standard shapes: relative error 3.7-5.1e-4 against 1.5-2.4e-4 in fp32). The weights are then
  // always scaled before the MMA, so the fp16 sums are partial sums of the outputs themselves, not
  // of unscaled q − z; they must stay under 65504 in magnitude (not checked: overflow gives inf).
  // For GPUs whose fp16-accumulating MMA runs at twice the rate (GeForce sm_86/sm_89); on the H200
  // it is 4-18 % slower at 1-16 rows and up to 2.2x at 64-128 (it never runs the wgmma kernel).
  DType accum = DType::F32;
  std::string str() const;  // WqGemmProblem(m=1, n=4096, ...)
};

// One point of the configuration space. A block is warps_n × warps_k warps; each warp owns
// n_tiles 8-column MMA tiles and m_tiles 16-row tiles; the warps_k warps of a block split its K
// range and reduce through shared memory; split_k blocks split K across the grid and reduce
// through the shared memory of a thread-block cluster on sm_90 (mma.sync: split_k 2..8; wgmma: 2 or
// 3), else through an fp32 workspace (mma.sync: atomics, the last block to finish writes the output;
// wgmma: the workspace's scratch slots; below).
struct WqGemmConfig {
  int m_tiles = 1;  // 1..8
  int n_tiles = 4;  // 1, 2, 4, 6, 8, 16 (16 needs groups of 64 or more, or per channel; wgmma: 2, 4)
  int warps_n = 1;  // 1, 2, 4
  int warps_k = 4;  // 1..16, any count (at most 16 warps per block)
  int split_k = 1;  // 1..64; 1 = data-parallel (each output written once, no workspace). mma.sync on
                    // sm_90: 2..8 pieces meet in a thread-block cluster (no workspace); wgmma: 2-3
                    // likewise; otherwise the pieces add through the plan's workspace
  int stages = 4;   // 2..8: cp.async ring slots per warp (stages − 1 chunks of weights in flight)
  // Activations staged in shared memory with cp.async, in the weights' ring depth, instead of each
  // warp loading its own into registers. warps_n > 1: the warps_n warps side by side that take the
  // same chunks copy their chunk's activations once and share them, synchronizing only among
  // themselves (a named barrier per group; with warps_k = 1 the group is the block, under one block
  // barrier per step). warps_n = 1: each warp stages its own chunk's activations (no barrier). Either
  // way they arrive stages − 1 chunks ahead and hold no registers; the heuristic's choice at 16 and 32 rows,
  // and at 1-8 rows on most layers up to 8 tiles per SM and on wide ones with short K (on sm_90a 1-2-bit
  // weights at 2-8 rows, and 8-bit ones at 8 rows or at 2-4 up to 20 tiles per SM, take the 16-row choice:
  // heuristic v33). From 16 rows only these configs run the MMAs with swapped operands (weights as A, each
  // 8-row slice of activations as B), which spares the register moves of assembling A from two rows: 9-21 %
  // faster on the H200; with the activations in registers the swap measured slower, so it is off there.
  bool x_shared = false;
  // sm_90a only: Hopper warpgroup MMA (templates/wq_gemm_wgmma.cuh), the heuristic's choice at 64 and
  // 128 rows from 8 M weights (2-, 4- and 8-bit, groups of 128 where measured), at 32 rows on the
  // widest layers (4-bit) and over 128 rows in every format it runs (see choose_config). warps_n / 4 MMA
  // warpgroups side by side (warps_n 4 or 8, warps_k 1), each of n_tiles / 2 m64 tiles (n_tiles 2 or 4: 64 or
  // 128 weight columns per warpgroup), plus one warpgroup that loads the stages; 16·m_tiles rows per block
  // (m_tiles 1, 2, 4, 8; m_tiles·n_tiles ≤ 16); x_shared off (the activations are always staged); not in
  // deterministic mode, nor with fp16 accumulation. Its two- and three-way K splits run each tile's blocks as
  // one thread-block cluster, which adds the pieces through distributed shared memory in a fixed order: no
  // workspace (a plan of such configs needs none: workspace_bytes() 0), atomics or counters (the
  // received sums must fit in the stages: can_implement says when they do not). Two-way splits are the
  // heuristic's choice where they make 0.7-1 wave of 128-column blocks (4096², 8192², 6144×4096 and
  // 4096×14336 at 64/128 rows: 7-18 % faster than stream K on the H100). Larger splits add through the
  // workspace: clusters of four ran in two waves on the H100 (1.5-1.8× slower). There each block adds its
  // sums as 16-byte vectors (atomic fp32 adds) into a scratch slot per tile, and the last one to count in
  // writes the output (the tuned choice for K-heavy layers such as 4096×14336 at 64/128 rows, and the
  // heuristic's at 64 rows where four pieces of 128-column blocks make 0.7-1 wave of 16 chunks or more).
  bool wgmma = false;
  // wgmma only, split_k 1: stream K. As many blocks as fit on the device at once (the SMs times the
  // blocks per SM) each take an equal share of the (row block, column block, 128-k chunk) steps, so no
  // SM idles in a last, partial wave, and a tile is cut into at most as many pieces as it needs. A tile
  // that blocks share is summed through a scratch slot of the workspace (plan.workspace_bytes()): two
  // pieces in a fixed order, more with atomic fp32 adds (16-byte vectors). A block may wait for a later one,
  // so the kernel is launched cooperatively: all its blocks resident at once, or the launch fails (e.g. under
  // an MPS SM limit) rather than hang. The heuristic's choice on Hopper where a K split would leave each
  // block 32 chunks or fewer (8192² and 4096×14336 at 64 and 128 rows: 8-13 % faster than the earlier tuned
  // entries on the H100), and at 128 rows on layers of 5-7 column tiles per SM below 48 M weights
  // (6144×4096).
  bool stream_k = false;
  // wgmma only: the activations come into each stage by one bulk copy from an image that a small
  // kernel arranges first, once per call (the stages' permuted, swizzled layout; rows past M and k
  // past K zero), instead of the producer warpgroup loading them into registers and storing them
  // transposed every step. Costs one more launch and M·K·2 bytes read and written; the kernel's loop
  // sheds the loads, stores and proxy fence (H100: the wgmma configs without stream K 1.6-28 % faster
  // with it, 28672×4096 M = 128 75 → 56 µs; stream K on small layers up to 12 % slower). The
  // image lives in a buffer the plan owns (allocated when it is built, ceil(M / 16·m_tiles) ·
  // 16·m_tiles · K rounded up to 128 · 2 bytes), not in args.workspace; plans built without a
  // workspace of their own (WqGemmPlanOptions::allocate_workspace false, the functional API's) run
  // such configs without it. Ahead-of-time builds (compile_wq_gemm, `lowbit compile`) build both.
  bool x_image = false;
  // mma.sync only, where the zero can come after the MMA (integer zeros or symmetric, groups of 128 or
  // more, not bf16 8-bit; fp16 8-bit with 32 or more rows a warp folds the zero in before the MMA unless
  // x_sums is on with x_shared), with an even n_tiles: each chunk's activation sums (Σx, and Σ base·x for
  // the in-place bases) come from a small kernel run first, once per call, instead of Σ MMAs that
  // every column block repeats; 4-bit, which otherwise subtracts the zero before the MMA, then
  // subtracts it after, from the sums (fp16 reading its values in place). The GEMM starts while
  // it runs (programmatic dependent launch) and waits for it before its first chunk's sums. Costs one
  // more launch and an M·K·2-byte read; pays on large layers at up to 16 rows. The sums live in a
  // buffer the plan owns (chunks · rows · 8 bytes), like x_image's image, so plans without a workspace
  // of their own run the config without it. Not in deterministic mode.
  bool x_sums = false;
  std::string str() const;  // WqGemmConfig(m_tiles=1, n_tiles=4, ...)
  bool operator==(const WqGemmConfig&) const = default;
};

// Device pointers to weights in lowbit's layout (see pack.hpp).
struct WqWeights {
  const void* qweight = nullptr;  // packed integers, 16-byte aligned
  const void* scales = nullptr;   // [groups_padded, n_padded] in act dtype, 16-byte aligned
  // (bf16 4- and 8-bit weights: scales under 2^122 in magnitude, not checked; the kernels take the
  // scale times 64, which overflows above that.)
  // [groups_padded, n_padded]: uint8 (8-byte aligned) for SubZeroThenScale, act dtype (16-byte
  // aligned) for the float-zero modes; null for Symmetric.
  const void* zeros = nullptr;
  const int32_t* perm = nullptr;  // [K] for act_order problems (16-byte aligned), else null
};

struct WqGemmArgs {
  const void* x = nullptr;  // [M, K] row-major, act dtype, 16-byte aligned
  WqWeights w;
  const void* bias = nullptr;  // [N] act dtype, or null
  void* y = nullptr;           // [M, N] row-major, out dtype
  // Workspace of workspace_bytes(problem) bytes (or plan.workspace_bytes()), needed to split K (except
  // over a cluster: WqGemmConfig::split_k), for stream K and for act-order layers (their activations are
  // permuted into it first): zero-filled once before its first use; every call leaves it as it must be for
  // the next. One workspace may not serve two calls running at once. An act-order call leaves its permuted
  // activations at the start of it: a workspace an act-order plan uses must not be shared with any other plan
  // (act-order or not: stream-K slots and split-K counters there must start zero); the functional API gives
  // its act-order plans a segment per M bucket.
  void* workspace = nullptr;
};

// Checks the problem for this library version. False (with the reason) if it cannot be run.
bool can_implement(const WqGemmProblem& problem, std::string* why = nullptr);
// Same, for a problem + config on an arch.
bool can_implement(const WqGemmProblem& problem, const WqGemmConfig& config, const Arch& arch,
                   std::string* why = nullptr);
// Bytes of workspace any config may need for this problem (its M included): split-K sums and
// counters, and for act-order the permuted activations. Act-order: one segment per M bucket up to
// M's (a call leaves its permuted activations behind, which must not lie under another bucket's
// counters), each with its own stream-K scratch: up to ~5x one bucket's bytes (6144×4096 at M = 128:
// 32 MiB against 6 MiB without act-order); a workspace sized for the largest M serves every M.
std::size_t workspace_bytes(const WqGemmProblem& problem);

// Options of a functional call.
struct WqGemmCallOptions {
  // Chained: as WqGemmPlanOptions::overlap_previous (its rule for weights written on the device
  // applies). The chained and the plain call of a problem keep a plan each.
  bool overlap_previous = false;
};

// Functional call. Validates everything before launching; throws lowbit::Error.
void wq_gemm(Runtime& rt, const WqGemmProblem& problem, const WqGemmArgs& args, Stream stream,
             const WqGemmCallOptions& options = {});

struct WqGemmPlanOptions {
  std::optional<WqGemmConfig> config;  // force one config for every bucket (tests, tuning)
  // The plan owns a workspace (and, for x_image configs, the activation image): two run() calls of
  // one plan must not overlap (one plan per stream). Otherwise args.workspace is used and the plan
  // owns no buffer: it runs x_image configs without the image (the flag is cleared, forced configs
  // included), so one plan may serve several streams, each call with a workspace of its own (the
  // functional API's plans).
  bool allocate_workspace = true;
  // Chained calls (sm_90): each run() may start while the previous kernel in its stream is still
  // running (programmatic dependent launch), and lets the next kernel in the stream launch early. The
  // kernel issues its first weight, scale and zero copies, then waits for the previous kernel
  // (griddepcontrol.wait) before it reads x or writes y, the workspace or anything else (act-order:
  // the permutation loads args.w.perm first). So its weights, scales, zeros and permutation must not
  // be written by the most recent kernel in the stream launched without
  // programmatic dependent launch, nor by any kernel after it (that kernel may still be finishing its
  // writes when this one starts reading): after writing them (a device pack), launch another kernel
  // or synchronize before the call.
  // Each block asks for the shared memory of 1 / ceil(blocks / SMs) of an SM, so that an early next
  // call cannot crowd some SMs. Pays where calls come back to back and the kernel before lets its
  // dependents launch early (another chained lowbit call): H200, W4 f16 4096² at M = 1 4.26 → 3.51 µs
  // per call; every standard layer at 1 and 16 rows 1-24 % faster on the H200 and H100
  // (docs/perf-notes.md, thirty-fourth session). The plan's own choice may run fewer stages chained
  // (wq::chained_stages); forced configs run as given. x_sums buckets and act-order layers chain
  // through their pre-kernel, which waits for the previous call before it reads x or writes its
  // buffer (act-order blocks take at most 96 KiB of shared memory, L1 for the permutation's gathers,
  // or just enough to keep one more block off an SM). Unchained act-order calls overlap their own
  // permutation the same way (WqGemmProblem::act_order).
  // Buckets on the wgmma kernel (x_image ones too) and archs before sm_90 launch as without it
  // (chained, the wgmma kernel ran slower). Not part of the shared/BENCHMARKS.md
  // protocol: `lowbit bench --chain` measures it (the stream ceiling chained too).
  bool overlap_previous = false;
};

class WqGemmPlan {
 public:
  // Builds (compiles or loads) the kernel of every M bucket needed for the listed M values
  // (e.g. {1, 16, 64}); run() accepts any M up to the largest bucket. Cache misses compile on up to
  // 16 threads at once (one per bucket), started and joined inside the constructor.
  WqGemmPlan(Runtime& rt, const WqGemmProblem& problem, const std::vector<int64_t>& m_values,
             const WqGemmPlanOptions& options = {});
  ~WqGemmPlan();
  WqGemmPlan(WqGemmPlan&&) noexcept;
  WqGemmPlan& operator=(WqGemmPlan&&) noexcept;

  // Validates the arguments, then launches. Never compiles, never allocates.
  void run(const WqGemmArgs& args, int64_t m, Stream stream) const;

  int64_t max_m() const;
  // Workspace this plan's configs need when it does not own one (0 when no bucket splits K through
  // global memory, i.e. none runs split-K but over a cluster, nor stream K, nor act-order).
  std::size_t workspace_bytes() const;
  const WqGemmConfig& config_for(int64_t m) const;
  const std::vector<KernelRecord>& records() const;  // one per bucket, as built

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Compile (no device needed) every kernel the plan above would build, and for an x_image config also
// its kernel without the image (what a plan without its own workspace, e.g. the functional API's,
// runs); for `lowbit compile`.
std::vector<KernelRecord> compile_wq_gemm(Runtime& rt, const WqGemmProblem& problem,
                                          const std::vector<int64_t>& m_values,
                                          const std::optional<WqGemmConfig>& config = std::nullopt);
// The same for several layers, their kernels compiled side by side (up to 16 threads); the records
// come layer by layer, in the order of `problems`.
// chained: also the chained kernels (WqGemmPlanOptions::overlap_previous), after the plain ones; they
// are their own cache entries, which a chained plan would otherwise compile when it is built.
// (Act-order layers on sm_90 run a chained kernel in every call: it is built without `chained`.)
std::vector<KernelRecord> compile_wq_gemm_layers(Runtime& rt, const std::vector<WqGemmProblem>& problems,
                                                 const std::vector<int64_t>& m_values,
                                                 const std::optional<WqGemmConfig>& config = std::nullopt,
                                                 bool chained = false);

// The config the heuristic picks for a problem on an arch with sm_count SMs (plans consult the
// tuning database first).
WqGemmConfig choose_config(const WqGemmProblem& problem, const Arch& arch, int sm_count);
// The safe default, the last step of the choice: one tile, one warp, no split, 2 stages (a few KB
// of shared memory, few registers); it can run every problem can_implement(problem) accepts on
// sm_80 and newer, with at most 65535 · 16 rows.
WqGemmConfig default_config();

}  // namespace lowbit

// Choosing a wq_gemm config per M bucket: the tuning database, else the heuristic (choose_config, fitted
// to `lowbit tune` runs), else the safe default.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <optional>

#include "common/log.hpp"
#include "jit/context.hpp"
#include "kernels/wq_gemm_internal.hpp"

namespace lowbit {

using wq::ceil_div;

namespace wq {

HeuristicShape heuristic_shape(const WqGemmProblem& p, int sm_count) {
  HeuristicShape h;
  h.bucket = m_bucket(p.m);
  h.sms = std::max(sm_count, 1);
  h.tiles = ceil_div(p.n, 8);
  h.tiles_per_sm = static_cast<double>(h.tiles) / h.sms;
  h.chunks = layout(p).chunks;
  return h;
}

WqGemmConfig base_config(int m_tiles, int n_tiles, int warps_k, int stages) {
  WqGemmConfig c;
  c.m_tiles = m_tiles, c.n_tiles = n_tiles, c.warps_n = 1, c.warps_k = warps_k, c.split_k = 1,
  c.stages = stages;
  return c;
}

MmaSyncFlags mma_sync_flags(const WqGemmProblem& p, const HeuristicShape& h, const Arch& arch) {
  MmaSyncFlags f;
  // Per-warp staged activations (v6 rules): wq::may_stage_per_warp.
  f.stage_per_warp = may_stage_per_warp(p, arch);
  // v26's mma.sync rules (forty-third session) were measured on sm_90a only, 3/4-bit where they say
  // so: other arches keep v25's choices (the branches they touch are reached by more layers there).
  f.v26 = has_wgmma(arch) && (p.bits == 3 || p.bits == 4);
  // v27's and v28's rules (forty-fourth and forty-fifth sessions): measured on sm_90a only. (Deterministic
  // problems never reach v28's: each needs activations staged per warp or the 16-row staged branch,
  // which that mode leaves.)
  f.sm90a = has_wgmma(arch);
  // v28's wide band (3/4-bit, over 40 tiles per SM, over 16 chunks), whose rules at 16 rows v33 shares
  // with 8.
  f.v28_band = f.sm90a && (p.bits == 3 || p.bits == 4) && h.tiles_per_sm > 40 && h.chunks > 16;
  return f;
}

int64_t four_warp_register_blocks_per_sm(const WqGemmProblem& p, int64_t bucket) {
  // 8-bit (72-86 registers and 33-37 KiB of rings: 5-6 fit), one row only in effect (from 2 rows the rules
  // before stage these layers up to 5 blocks a SM): H200 bench, µs, 2 → 4 warps along K at one row, fp16 /
  // bf16: 18432×16384 (4.4 blocks a SM) 71.2 → 71.9 / 86.1 → 75.8, 20480×8192 (4.8) 40.8 → 40.4 / 43.3 →
  // 42.4 (fp16 even, bf16 faster); from 5.8 a SM even or slower (24576×8192 47.9 → 48.3 / 49.3 → 52.3), so up
  // to 5.
  if (p.bits == 8) return 5;
  if (p.bits != 3 && p.bits != 4) return 0;
  // 3/4-bit: as many as the format's registers allow (65536 a SM, allocated 8 a thread at a time), at most
  // 7 (8, at up to 64 registers, unmeasured). Past 6 a SM the count decided it in every format measured
  // (sixty-first session, 2 → 4 warps at 28672×8192, 6.8 blocks a SM, one / 8 rows): the formats at up to 72
  // registers gained (fp16 symmetric 0.95 at one row, g256 0.92, fp16 accumulation 0.89, per channel 0.87
  // at 8 rows, bf16 g64 0.85 / 0.82), those at 73-80 lost (1.03-1.35×; float zeros, bound by its own
  // dequantization, aside: 0.98 / 0.95).
  const int regs = four_warp_register_config_registers(p, bucket);
  if (regs == 0) return 0;
  return std::min<int64_t>(7, 65536 / ((regs + 7) / 8 * 8 * 128));
}

namespace {
Choice choose_any(jit::Context& ctx, const WqGemmProblem& problem, int64_t bucket,
                  const std::optional<WqGemmConfig>& forced) {
  if (forced) return {*forced, "forced"};
  WqGemmProblem pb = problem;
  pb.m = bucket;
  const tune::TuningKey key = tuning_key(problem, bucket);
  std::string passed_over;
  if (auto hit = ctx.tuning().lookup("wq_gemm", key)) {
    // Every config read from a file is checked before use: files outlive code changes. The parse
    // is kept with the entry (plans choose per bucket, often; the checks here are cheap).
    const auto& entry = hit->parsed<std::optional<WqGemmConfig>>(config_from_json);
    // A nearest bucket's entry runs with the stages that let its blocks fit and take one wave here, when they
    // took one at its bucket (keep_one_wave: a one-row entry's activation stages grow eightfold at 2 rows, so
    // before this its 4 stages could even exceed shared memory and hand the bucket to the heuristic).
    const std::optional<WqGemmConfig> c =
        entry && hit->step == "nearest M bucket"
            ? std::optional(keep_one_wave(pb, *entry, hit->m, ctx.arch(), ctx.sm_count()))
            : entry;
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
      if (hit->step == "exact") return {*c, join({"tuned (exact, ", hit->file, ")"}), true};
      std::string source = join({"tuned (", hit->step, " ", hit->key, ", ", hit->file, ")"});
      // An entry tuned for another mode may hold more tiles than this mode's registers allow.
      const WqGemmConfig fitted = hit->step == "similar format" ? fit_registers(pb, *c) : *c;
      if (fitted.m_tiles != c->m_tiles)
        source += fmt::format("; m_tiles {} -> {} (registers)", c->m_tiles, fitted.m_tiles);
      if (fitted.n_tiles != c->n_tiles)
        source += fmt::format("; n_tiles {} -> {} (registers)", c->n_tiles, fitted.n_tiles);
      if (fitted.stages != entry->stages)
        source += fmt::format("; stages {} -> {} (one wave)", entry->stages, fitted.stages);
      return {fitted, source};
    }
    // An entry of another format may hold what this problem's mode or flags cannot run (x_sums where every
    // weight is dequantized before the MMA or in a deterministic problem; wgmma in a deterministic or
    // fp16-accumulating one): not a fault of the file, so no warning; --explain says it. A refusal the entry
    // meets in its own format warns, as any other. The message names the bucket and the lookup step: an entry
    // found as the nearest M bucket's may fit its own bucket and not this one (a one-row staged config at 2
    // rows), which is no fault either but worth knowing, since this bucket then runs the heuristic's config.
    if (hit->step == "similar format" && c &&
        can_implement(problem_of_format(pb, hit->key.substr(0, hit->key.find('|'))), *c, ctx.arch())) {
      passed_over = fmt::format(" (the similar format's entry {} cannot serve: {})", hit->key, why);
    } else {
      warn_once(fmt::format("tuning-entry:{}{}:{}", hit->file, hit->key, bucket),
                fmt::format("tuning file '{}': entry wq_gemm/{} ({} match) cannot serve M bucket {} ({}); "
                            "using the heuristic",
                            hit->file, hit->key, hit->step, bucket, why));
    }
  }
  const WqGemmConfig h = choose_config(pb, ctx.arch(), ctx.sm_count());
  std::string why;
  if (can_implement(pb, h, ctx.arch(), &why)) return {h, "heuristic" + passed_over};
  // The last step: the smallest config, which fits every arch this family runs on.
  return {default_config(),
          fmt::format("default (the heuristic's {} cannot run: {}){}", h.str(), why, passed_over)};
}
}  // namespace

// Act-order layers at 64/128 rows on Hopper (pb.m the bucket). Their activations are permuted by a
// pre-kernel whatever the config, and for an x_image config that kernel writes the stage image itself:
// the image, which costs plain layers a launch, comes free, while any other config still pays the
// permutation into the workspace before it starts. The tuning entries and the heuristic are plain
// layers' (one key for both), so where they chose no image: a wgmma config takes it; an mma.sync config
// (of the formats measured: 2-, 4- and 8-bit weights in groups of 128) becomes 128-column wgmma blocks
// of 64 rows with the image, K split in 4, 2 or 1 to make 0.7-1 wave (the most pieces that do, each
// of 6 chunks or more). H200, act-order, two rounds (docs/perf-notes.md, thirty-eighth session):
// 4.4-16.8 % faster on 10 of 20 cases at 64/128 rows, the others unchanged (W4 f16 4096² at 64 rows
// 11.96 → 11.26 µs from the plain entry's mma.sync (2,8,1,4), 8192×1024 at 128 rows 9.55 → 7.95 with
// the image); 8192×1024 at 64 rows, split in two pieces of 4 chunks, lost 2.5 %, while 3584², pieces
// of 7, gained 7 %. H100: 14 cases −0.6 to −16.5 %, none slower.
std::optional<WqGemmConfig> act_order_image_config(const WqGemmProblem& pb, const WqGemmConfig& chosen,
                                                   const Arch& arch, int sm_count, const ChooseFor& plan) {
  if (!plan.own_buffers || plan.chained || !pb.act_order || (pb.m != 64 && pb.m != 128) || chosen.x_image ||
      !has_wgmma(arch) || !may_run_wgmma(pb))
    return std::nullopt;
  WqGemmConfig c = chosen;
  if (!c.wgmma) {
    const bool measured = pb.group_size == 128 && (pb.bits == 2 || pb.bits == 4 || pb.bits == 8);
    if (!measured) return std::nullopt;
    c = WqGemmConfig{4, 2, 8, 1, 1, 3};
    c.wgmma = true;
    const Geometry unsplit = geometry(pb, c, arch, pb.m, pb.m, 0);
    const int64_t blocks = static_cast<int64_t>(unsplit.grid_x) * unsplit.grid_z, chunks = layout(pb).chunks;
    const int splits[] = {4, 2, 1};
    const int* split = std::find_if(std::begin(splits), std::end(splits), [&](int s) {
      return blocks * s >= 0.7 * sm_count && blocks * s <= sm_count && chunks >= 6 * s;
    });
    if (split == std::end(splits)) return std::nullopt;
    c.split_k = *split;
  }
  c.x_image = true;
  if (!can_implement(pb, c, arch)) return std::nullopt;
  return c;
}

Choice choose(jit::Context& ctx, const WqGemmProblem& problem, int64_t bucket,
              const std::optional<WqGemmConfig>& forced, const ChooseFor& plan) {
  Choice choice = choose_any(ctx, problem, bucket, forced);
  if (!forced) {
    WqGemmProblem pb = problem;
    pb.m = bucket;
    if (auto image = act_order_image_config(pb, choice.config, ctx.arch(), ctx.sm_count(), plan)) {
      choice.source += fmt::format("; act-order: {} -> {} (the permutation writes the image)",
                                   choice.config.str(), image->str());
      choice.config = *image;
    }
  }
  if (!problem.deterministic) return choice;
  // Forced configs and entries tuned for this very problem keep their shape (and take the K order below);
  // every other choice may be reshaped for the deterministic kernel.
  const bool may_reshape = !forced && !choice.exact_entry;
  if (may_reshape) {
    const WqGemmConfig capped = deterministic_tile_cap(choice.config);
    if (capped != choice.config)
      choice.source +=
          fmt::format("; n_tiles {} -> {} (deterministic registers)", choice.config.n_tiles, capped.n_tiles);
    choice.config = capped;
  }
  if (bucket == 1) return choice;
  // Deterministic: every bucket sums K in the order of the M = 1 choice (same warps_k and split_k),
  // so a row's result does not depend on how many rows come with it.
  const WqGemmConfig k_order = choose_any(ctx, problem, 1, forced).config;
  WqGemmProblem pb = problem;
  pb.m = bucket;
  // From 16-32 rows the plain problem's block shapes do not suit the one-row K order (v55): deterministic
  // mode takes its own.
  if (may_reshape)
    if (auto d = deterministic_config(pb, k_order, ctx.arch()))
      return {*d, "heuristic (deterministic), K split of the M = 1 choice"};
  WqGemmConfig c = choice.config;
  c.warps_k = k_order.warps_k, c.split_k = k_order.split_k;
  shrink_to_fit(pb, c, ctx.arch(), /*keep_k_split=*/true);
  return {c, choice.source + ", K split of the M = 1 choice (deterministic)"};
}

}  // namespace wq

WqGemmConfig default_config() {
  WqGemmConfig c;
  c.m_tiles = 1, c.n_tiles = 1, c.warps_n = 1, c.warps_k = 1, c.split_k = 1, c.stages = 2;
  return c;
}

namespace {

// The formats v62 and v63 were measured in: 8-bit g128 weights on sm_90a whose zero and scale come after the
// MMA (dequantizes_every_weight: not float zeros, q·s + z or fp16 accumulation), activations staged per warp
// (may_stage_per_warp: not in deterministic mode), from 16 chunks of K.
bool eight_bit_block_format(const WqGemmProblem& p, const Arch& arch, const wq::HeuristicShape& h) {
  return wq::has_wgmma(arch) && p.bits == 8 && p.group_size == 128 && !wq::dequantizes_every_weight(p) &&
         h.chunks >= 16 && wq::may_stage_per_warp(p, arch);
}

// Their one 32-row mma.sync block: 4 tiles, `warps_k` warps along K, 2 stages, staged activations.
WqGemmConfig eight_bit_block(const WqGemmProblem& p, const Arch& arch, int warps_k) {
  WqGemmConfig c = wq::base_config(2, 4, warps_k, 2);  // (fit_registers cuts only formats they exclude)
  c.x_shared = true;
  wq::shrink_to_fit(p, c, arch, /*keep_k_split=*/false);
  return c;
}

// Heuristic v62 (seventy-sixth session): 8-bit weights at 33-64 rows on sm_90a, where one 32-row block of
// 4 tiles × 4 warps along K, 2 stages, staged activations, makes at most 2 blocks a SM with the busiest SM
// at most 1.1× the mean, on K from 2048 to 8192 (16-64 chunks, as measured) with the busiest SM's blocks
// taking at most 96 chunks of K in all (1 block of 64, or 2 of 48): mma.sync instead of the rules before
// (mostly wgmma). Since § 75 (bf16) and § 76 (fp16, the zero folded in at 32-row warps) such a warp's
// 8-bit pairs take 2 instructions and no Σ MMAs. H200 bench, file off, the choice before → this, fp16 /
// bf16: 4096² 0.849 / 0.857 (12.42 → 10.54 µs in fp16), 4224×4096 0.855 / 0.856,
// 3840×4096 0.885 / 0.883, 2048×8192 0.946 / 0.957, 1920×8192 0.943 / 0.948, 4096×6144 0.972 / 0.988,
// 2048×4096 0.970 / 0.967, 4096×2048 0.957 / 0.973, 2048² 1.004 / 1.002. It lost where the blocks fall
// unevenly or make more than 2 a SM (bf16, µs: 2560×8192, 160 blocks: 14.93 → 17.89; 6144×4096, 384: 14.23
// → 18.97), and on longer K: 4096×8192 (2 blocks a SM × 64 chunks) 1.079 / 1.065, hence the 96, drawn after
// that bench; 4096×14336 1.25 / 1.27. 3584² (224 blocks, 1.18× the mean) keeps its mma.sync (2,4,2,4), which
// folds too (docs/perf-notes.md § 76). Integer zeros or symmetric, groups of 128, fp32 accumulation, as
// measured.
std::optional<WqGemmConfig> eight_bit_one_wave_64(const WqGemmProblem& p, const Arch& arch, int sm_count) {
  const wq::HeuristicShape h = wq::heuristic_shape(p, sm_count);
  if (h.bucket != 64 || h.chunks > 64 || !eight_bit_block_format(p, arch, h)) return std::nullopt;
  const int64_t blocks = 2 * ceil_div(h.tiles, 4);  // two 32-row blocks per 4-tile column block
  const int64_t busiest = ceil_div(blocks, h.sms);
  if (busiest > 2 || 10 * busiest * h.sms > 11 * blocks || busiest * h.chunks > 96) return std::nullopt;
  return eight_bit_block(p, arch, 4);
}

// Heuristic v63 (seventy-seventh session): 8-bit weights at 17-32 rows on sm_90a where one 32-row block of
// 4 tiles × 8 warps along K, 2 stages, staged activations, makes one wave of at most one block a SM, and at
// least 0.54 of the SMs' worth on K of 64-80 chunks, 0.7 elsewhere: mma.sync instead of v25/v56's narrow_32
// wgmma (split 8 or stream K) and of v61's 4 warps along K. Such a block has its SM alone (198 KB of shared
// memory), so the warps along K are what keeps bytes in flight. H200 bench, file off, the choice before →
// this, µs or ×, bf16 / fp16:
// - from wgmma: 4096×14336 22.35 → 18.28 / 22.11 → 18.16, 4096×12288 0.813 / 0.808, 3584×14336 0.850 /
//   0.821, 3584×18944 0.882 / 0.852, 3840×16384 0.854 / 0.846, 4096×28672 0.922 / 0.933; 80-84 blocks on
//   64-80 chunks (2560×8192, 2688×8192, 2560×10240) 0.82-0.92, 72-76 blocks on 64 (2304×8192, 2432×8192)
//   0.85-0.91;
// - from v61's (2,4,1,4,1,2): 0.84-0.95 on 3072-4096 columns, K 3584-14336 (4096×11008 17.47 → 15.33),
//   0.99 on K = 2048.
// It lost to stream K on long K with few blocks: 2304×16384 (72 blocks, 128 chunks) 1.14 / 1.10, 2560×16384
// (80) 1.06 / 1.03, 2816×16384 (88) 1.01 / 0.98; hence the 0.7 over 80 chunks, drawn after that bench (the
// 0.54 only where it was measured; under 64 chunks the fewest blocks measured were 96). Over one block a SM
// (5120 columns: two waves) 1.16-1.26×. Integer zeros (symmetric weights were not measured, and ptxas spills
// 4-12 B there), groups of 128, fp32 accumulation, from 16 chunks, as measured (docs/perf-notes.md § 77); the
// H100 unmeasured.
std::optional<WqGemmConfig> eight_bit_one_wave_32(const WqGemmProblem& p, const Arch& arch, int sm_count) {
  const wq::HeuristicShape h = wq::heuristic_shape(p, sm_count);
  if (h.bucket != 32 || p.mode != DequantMode::SubZeroThenScale || !eight_bit_block_format(p, arch, h))
    return std::nullopt;
  const int64_t blocks = ceil_div(h.tiles, 4);  // one 32-row block per 4-tile column block
  const int64_t least_percent = h.chunks >= 64 && h.chunks <= 80 ? 54 : 70;
  if (blocks > h.sms || 100 * blocks < least_percent * h.sms) return std::nullopt;
  return eight_bit_block(p, arch, 8);
}

}  // namespace

WqGemmConfig choose_config(const WqGemmProblem& p, const Arch& arch, int sm_count) {
  // Fitted to `lowbit tune` over the model presets at M 1..128 on the H200 (docs/perf-notes.md,
  // "heuristic v3"); shapes are measured in 8-column tiles per SM so other GPUs scale with them.
  // v72's tiny layers first (wq_gemm_heuristic_tiny_layers.cpp); then v62's and v63's one wave of 32-row
  // mma.sync blocks for 8-bit weights at 17-64 rows (above); then Hopper's warpgroup MMA, where its rules
  // apply (wq_gemm_heuristic_wgmma.cpp); then mma.sync.
  const wq::HeuristicShape h = wq::heuristic_shape(p, sm_count);
  if (auto t = wq::tiny_layer_config(p, h, arch)) return *t;
  if (auto e = eight_bit_one_wave_64(p, arch, sm_count)) return *e;
  if (auto e = eight_bit_one_wave_32(p, arch, sm_count)) return *e;
  if (auto w = wq::choose_wgmma_config(p, arch, sm_count)) {
    // v76 takes v24's few-block wgmma stream K on narrow layers at 64 rows
    // (wq_gemm_heuristic_tiny_layers.cpp).
    if (auto n = wq::narrow_layer_config(p, h, *w, arch)) return *n;
    return *w;
  }
  const int64_t bucket = h.bucket, tiles = h.tiles, chunks = h.chunks;
  const int sms = h.sms;
  const double tiles_per_sm = h.tiles_per_sm;
  auto make = wq::base_config;
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
  const wq::MmaSyncFlags flags = wq::mma_sync_flags(p, h, arch);
  const bool stage_per_warp = flags.stage_per_warp, v26 = flags.v26, sm90a = flags.sm90a;
  // Heuristic v33 (fiftieth session, out of sample at 4 and 8 rows): 1-2-bit weights at 2-8 rows take the
  // 16-row branch's staged configs. The few-row rules (wq_gemm_heuristic_few_rows.cpp) kept them in registers
  // (`staged_bits`: at 2-8 rows only 3/4-bit was ever measured). H200 tune of the seventh set in W2: v32's
  // registers configs ran 1.06-1.58× the best on all 22 problems at M = 4 and 8 (6144×16384 M = 8 19.84 µs
  // against 12.59); the 16-row choice ran within 1.09× wherever the tune timed it (1.00 on 10 of them). 8-bit
  // weights too at 8 rows, and at 2-4 rows up to 20 tiles per SM: the H100's W8 tune of the same set ran
  // v32's registers configs 1.15-1.22× the best on its three smallest layers (2048×1408, 2560², 2816×2048) at
  // 4 and 8 rows; the 16-row choice ran within 1.03× wherever timed (at 4 rows 1.00-1.02 up to 8192×6144;
  // wider at 4 rows the registers' (1,4,1,2) stay, 1.004× the best on 28672×5120 and 1.01× on 32768×6144).
  const bool few_rows_take_16_row_rules =
      sm90a && stage_per_warp && bucket > 1 && bucket <= 8 &&
      (p.bits <= 2 || (p.bits == 8 && (bucket == 8 || tiles_per_sm <= 20)));
  WqGemmConfig c;
  if (bucket <= 8 && !few_rows_take_16_row_rules) {
    c = wq::few_rows_config(p, h, flags);
  } else if (bucket <= 16 && stage_per_warp) {
    c = wq::sixteen_rows_staged_config(p, h, flags);
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
    // v56 refines the 4 × 4 band's choice for 2- and 8-bit weights (below).
    // v70 (seventy-ninth session, out of sample): 8 × 8 only while its blocks (one a SM: 3 stages of 8 tiles,
    // 8 warps) fit in one wave, else 4 × 4: over 4 tiles per SM up to 4.2 (4225-4432 columns on 132 SMs) the
    // last blocks ran in a second wave. H200 tune, W4 fp16 4352×4096 at 32 rows (136 blocks): (1,8,1,8,1,3)
    // 12.92 µs, (1,4,1,4,1,3) 9.70, the best (1,4,1,4,1,2) 9.46.
    // As measured: sm_90a, and not where every weight is dequantized before the MMA (elsewhere 8 × 8 up to
    // 4.2).
    const bool v70 = sm90a && !wq::dequantizes_every_weight(p);
    const bool eight_by_eight =
        tiles_per_sm > 2 && tiles_per_sm <= 4.2 && (!v70 || ceil_div(tiles, 8) * ceil_div(bucket, 16) <= sms);
    const bool four_by_four_band = tiles_per_sm > 2 && !eight_by_eight && tiles_per_sm <= 6;
    c = tiles_per_sm <= 2   ? make(1, 4, 8, 2)
        : eight_by_eight    ? make(1, 8, 8, 3)
        : tiles_per_sm <= 6 ? make(1, 4, 4, 3)
        : tiles_per_sm <= 8 ? make(1, 8, 4, 3)
                            : make(1, 4, 8, 2);
    c.x_shared = true;
    // Heuristic v24: over 6 up to 8 tiles per SM (8192×K, 7168×8192) with 16 chunks or more, 4-bit:
    // one 32-row block instead of two 16-row ones, the tuned best of every such entry of the H100 and
    // of the H200 but 8192×14336's (wgmma there, 1.03× on the H100): H100 8192² 18.89 µs against
    // 20.65 for (1,8,1,4), 8192×7168 17.02 against 18.44 (tuner times); H200 bench (call 8) 8192×14336
    // 29.90 against 33.14 for (1,8,1,4) (call 4), 1.06× its tuned wgmma config (v56 sends it to wgmma: 96
    // chunks or more).
    // v56 (seventieth session), on sm_90a: 2- and 8-bit weights too (1 follows 2). H200 bench, (1,8,1,4) →
    // (2,8,1,4), µs, W2 / W8: 8192² 18.89 → 17.53 / 35.49 → 20.25, 7168×8192 18.89 → 17.56 / 31.17 → 19.33
    // (8-bit: the 32-row block keeps one block a SM where two 16-row ones of 150 KB made two waves).
    if (tiles_per_sm > 6 && tiles_per_sm <= 8 && chunks >= 16 && bucket == 32 &&
        (p.bits == 4 || (sm90a && (p.bits <= 2 || p.bits == 8))))
      c.m_tiles = 2;
    // v56, 2-bit weights (1 follows) at 32 rows over 4.2 (v70: past 8 × 8's one wave) up to 6 tiles per SM:
    // one 32-row block of 6 tiles × 8 warps along K, 2 stages (the H200 tune's best on 6144×4096). H200
    // bench, (1,4,1,4,1,3) → this, µs: 6144×4096 9.99 → 8.36, out of sample 5120×4096 9.90 → 8.40,
    // 4608×3584 8.88 → 7.57, 5120×3072 7.97 → 6.99, 5120×5120 11.84 → 9.79, 5632×2048 (16 chunks) 6.03 → 5.58
    // (4 warps along K 5.42); bf16 6144×4096 10.03 → 8.42. Not where every weight is dequantized before the
    // MMA: fit_registers leaves one row tile of those 6 (2-bit g64 6144×4096 10.75 → 11.66 µs, float
    // zeros 11.86 → 13.18). From 16 chunks, as measured.
    const bool two_bit_32 = sm90a && bucket == 32 && p.bits <= 2 && !wq::dequantizes_every_weight(p);
    if (two_bit_32 && four_by_four_band && chunks >= 16) {
      c = make(2, 6, 8, 2);
      c.x_shared = true;
    }
    // Heuristic v26 (forty-third session): up to 2 tiles per SM with 64 chunks or more, 16 warps along
    // K (as at one row). Tuner times only (not benched as such): within 1.03× of the best on both GPUs
    // on 1280×8192 (shipped files) and 2048×11008 (out of sample), where 8 warps ran 1.07-1.11×; the
    // bench of 2048×11008 with 12 warps: H200 10.25 → 9.13 µs, H100 10.31 → 9.07.
    if (v26 && tiles_per_sm <= 2 && chunks >= 64) c.warps_k = 16;
    // Heuristic v27 (forty-fourth session, out of sample; H200 tune, W4 f16):
    // - 2-4.2 tiles per SM on short K (16 chunks or fewer): 4 tiles × 4 warps along K, twice the blocks of
    //   8 × 8, whose warps would keep 2 chunks each. Llama-3.2-1B's QKV, 3072×2048: 4.49 µs against 5.21.
    // - Over 8 tiles per SM (below the large layers, which take wgmma): 4 warps along K, so the blocks (over
    //   two of 8 warps per SM) fit in one wave, as at 16 rows (v24). Phi-3-mini's QKV, 9216×3072: 12.25 µs
    //   against 14.07 for 8 warps.
    // Both measured at 4 bits (3 follows; v26 is sm_90a at 3/4 bits).
    if (v26 && tiles_per_sm > 2 && tiles_per_sm <= 4.2 && chunks <= 16) c.n_tiles = 4, c.warps_k = 4;
    if (v26 && tiles_per_sm > 8) c.warps_k = 4;
    // v71 (seventy-ninth session, out of sample): 2-bit weights (1 follows) over 8 tiles per SM, where the
    // 8 warps along K left 2.1-2.4 waves of 2 blocks a SM: 6 tiles a warp from 24 chunks, else v27's 4 warps
    // along K. H200 bench, file off, (1,4,1,8,1,2) → (1,6,1,8,1,2) / (1,4,1,4,1,2), fp16 (bf16 alike), µs:
    // 8704×4096 16.95 → 13.63 / 15.15, 9216×4096 16.89 → 13.31 / 15.22, 9216×3072 (Phi-3-mini's QKV) 13.51 →
    // 11.15 / 12.52; 10112×2048 (16 chunks) 10.36 → 10.57 / 9.28. (wgmma stream K (2,2,8,1) 0.80-1.02×.) Not
    // where every weight is dequantized before the MMA (as v56).
    if (sm90a && p.bits <= 2 && tiles_per_sm > 8 && !wq::dequantizes_every_weight(p)) {
      if (chunks >= 24)
        c.n_tiles = 6, c.warps_k = 8, c.stages = 2;
      else
        c.warps_k = 4;
    }
    // v27, out of sample again (H100 tune): under one wave of 2-tile blocks (2 row blocks × ⌈tiles / 2⌉
    // under the SM count: up to 1040 columns on 132 SMs), 2 tiles a warp and 3 stages, twice the blocks.
    // Qwen2.5-0.5B's down, 896×4864 (38 chunks): 4.31 µs against 5.77 for (1,4,1,8,1,2). (1280×8192, 160
    // such blocks, keeps its 4 tiles: both files' best.) Not from 64 chunks, where v26's 16 warps along K
    // apply (unmeasured together); 4-bit weights as measured (3 follows).
    // v84 (eighty-third session): 1/2/8-bit weights at 32 rows too. H200 tune at 32 rows, 768×4096 (0.73
    // tiles a SM): the rules' (1,4,1,8,1,2) 1.24× (W2) and 1.32× (W8) the best, (1,2,1,8,1,2) and
    // (1,2,1,8,1,3). Bench, file off, forced against the rules': (1,2,1,8,1,3) W2 0.775-0.833 on 5 layers of
    // 640-1024 columns, K 2560-4864 (896×4864 5.64 → 4.37 µs), W8 0.740-0.822, 1-bit 0.782-0.790, bf16 0.804
    // (W2) and 0.770 (W8); 2 stages 0.77-0.87.
    // Not fp16 accumulation (unmeasured).
    const bool v84 = sm90a && bucket == 32 && (p.bits <= 2 || p.bits == 8) && p.accum != DType::F16;
    if ((v26 || v84) && 2 * ceil_div(tiles, 2) < sms && chunks < 64) c.n_tiles = 2, c.stages = 3;
    // v56 (seventieth session), as v32 at 64 rows: 8-bit weights over 4.2 (v70: past 8 × 8's one wave) up to
    // 6 tiles per SM (blocks of 4 tiles × 4 warps along K, two row blocks: over 2.1 blocks per SM) take 2
    // stages. Three stages of their 1 KiB tile-chunks per warp take 100 KB of shared memory, 2 blocks a SM,
    // so a second wave ran where 2 stages (67 KB) fit 3. H200 bench, 3 → 2 stages, µs: 6144×4096 15.77
    // → 12.28 (the tune's best), out of sample 5120×4096 14.86 → 11.08, 4608×3584 12.82 → 10.00. fp32
    // accumulation, as measured.
    if (sm90a && p.bits == 8 && p.accum == DType::F32 && four_by_four_band) c.stages = 2;
    // v61 (seventy-fourth session): bf16 8-bit weights over 2 up to 6 tiles per SM: one 32-row block of 4
    // tiles × 4 warps along K, 2 stages. bf16 makes each 8-bit pair in 5 instructions (dequant.cuh), so two
    // 16-row blocks that each dequantize the weights cost more than the blocks they add. H200 bench, file
    // off, the choice before → this (µs, one round of two): 4096² 9.73 → 8.01, 6144×4096 13.07 → 12.05 (the
    // tune's best on both); out of sample 0.79-0.93× in 13 more cases at 20-32 rows (3584×8192 16.90 → 13.30,
    // 4096×11008 22.32 → 17.94, 3072×2048 0.85, 5120×4096 0.93; 4096² at 24 rows 0.84). Not up to 2 tiles per
    // SM (1280-2048 columns: 1.24-1.27×, the blocks halve under one a SM), nor where every weight is
    // dequantized before the MMA (unmeasured). (fp16 then ran it 1.06-1.10× the choice before: its Σ MMAs.)
    // v62 (seventy-sixth session): fp16 too, whose 32-row warps fold the zero in since then (wq_gemm.cuh's
    // kFoldEightBit, 2 instructions a pair and no Σ MMAs). H200 bench, the tuned entry → this, µs: 4096²
    // (1,4,1,4,1,3) 8.14 → 7.68, 6144×4096 (1,4,1,4,1,2) 12.63 → 11.01 (docs/perf-notes.md § 76).
    if (sm90a && bucket == 32 && p.bits == 8 && !wq::dequantizes_every_weight(p) && tiles_per_sm > 2 &&
        tiles_per_sm <= 6) {
      c = make(2, 4, 4, 2);
      c.x_shared = true;
    }
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
      // Heuristic v26 (forty-third session, out of sample): at 64 rows these blocks stage their
      // activations per warp, 3 stages, as v18's narrow layers do (per_warp_64 below). Qwen2.5-3B's
      // QKV, 2560×2048, bench: H200 8.36 → 5.91 µs, H100 8.39 → 5.96. On sm_90a no W4 layer of either
      // shipped file reaches this branch any more (wgmma or the rules above take them).
      // v27 (forty-fourth session, out of sample): 2-bit weights too (1 bit follows 2, unmeasured). H200
      // tune, against v26's registers (1,4,1,4,1,4): 2048², 2048×8192, 3072×2048, 3072² ran 1.31-1.49× the
      // best; this config is the best or within 1.10× on all four (3072×2048 8.44 µs against 6.32).
      // v29 (forty-sixth session, out of sample): 8-bit weights too, so every width on sm_90a. Gemma-2-2B's
      // o_proj, 2304×2048, H200 tune: the registers' config 1.53× the best ((1,4,1,4,1,2) staged), this one
      // 1.11×.
      // v32 (forty-ninth session, out of sample): 8-bit weights with 4 warps along K over 2 blocks per SM
      // keep 2 stages. Three of their 1 KiB tile-chunks per warp take 100 KB of shared memory, 2 blocks per
      // SM, so a second wave runs where two stages fit all in 3. Bench, µs, 3 → 2 stages (H200):
      // 2816×2048 8.53 → 6.67, 2560×2560 9.55 → 7.60, 2304×2048 7.17 → 6.43 (the tunes of both
      // GPUs: 1.11-1.29× → the best). Up to 2 per SM (2048×1408, 1536×2048, 2048×768) 3 stages stay, which
      // the tunes there had ahead by 3-11 %.
      const bool w8_second_wave =
          p.bits == 8 && c.warps_k == 4 && col_blocks * ceil_div(bucket, 16) > 2LL * sms;
      if (sm90a && bucket == 64 && stage_per_warp) c.x_shared = true, c.stages = w8_second_wave ? 2 : 3;
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
    // v29 (forty-sixth session, out of sample): on sm_90a on short K too. Gemma-2-2B's QKV, 4096×2304
    // (18 chunks), H200 tune: (2,4,2,4) the best or within 1.006× in all four formats, v7's (2,4,2,2)
    // 1.03-1.17× (bf16 1.17).
    if ((narrow_long_k || (sm90a && narrow)) && bucket == 64) c.warps_k = 4;
    // Heuristic v18 (twenty-third session): at 64 rows there, 2-, 3- and 4-bit weights stage per warp, one
    // row tile × 8 column tiles × 4 warps along K: the best config in the H100's re-tunes of W4 f16, bf16
    // and W2 and the H200's of W4 f16 and bf16 (H100 bench: W2 4096² M = 64 11.06 µs against 12.87 for
    // (2,4,2,4), bf16 11.48 against 12.86); W8 keeps (2,4,2,4), the H200's best.
    // v24: from 28 chunks at 4 bits (3584² M = 64: (1,8,1,4) st3 the tuned best of both GPUs; H200
    // bench 10.04 µs against 10.16 for v7's (2,4,2,2), the tunes' 12.4-12.5 for it being stale).
    // v31 (forty-eighth session), on sm_90a: 2 row tiles (two 32-row blocks, half the blocks of 16 rows each
    // reading every chunk of weights), and 2-bit weights from 20 chunks. Bench, µs, (1,8,1,4) → (2,8,1,4),
    // H200 / H100: 4096² f16 11.27 → 10.34 / 11.24 → 10.35, bf16 11.58 → 11.37 / 11.66 → 11.44, W2 10.89 →
    // 9.92 / 10.94 → 9.94; 3584×4096 f16 11.19 → 10.50 / 11.20 → 10.54, bf16 -2 / -3 %, W2 -8 / -9 %;
    // 3584² 10.20 → 9.51 / 10.17 → 9.57; 4096×4608 12.21 → 11.28 / 12.23 → 11.26. The tunes had it (or its
    // 4-stage twin) first on 4096² and 3584×4096 (Gemma-2-9B's o_proj) in f16, bf16 and W2,
    // (1,8,1,4) 1.01-1.10× behind. 2-bit: Qwen2-57B-A14B's expert down, 3584×2560 (20 chunks), where v29's
    // (2,4,2,4) ran 1.18× the H100 tune's best: 8.36 → 7.23 / 8.31 → 7.18 ((1,8,1,4) 7.73 / 7.74). W4 f16 and
    // W8 keep (2,4,2,4) at 20 chunks, both files' best (bf16's tunes had this config 1.04× ahead there; not
    // benched).
    const bool two_bit_64 = sm90a && p.bits <= 2 && chunks >= 20;
    const bool per_warp_64 = narrow && (chunks >= 32 || (chunks >= 28 && p.bits == 4) || two_bit_64);
    if (per_warp_64 && bucket == 64 && p.bits != 8 && stage_per_warp) {
      c = make(sm90a ? 2 : 1, 8, 4, 3);
      c.x_shared = true;
    }
    if (narrow_long_k && bucket == 128 && !wide) c.m_tiles = 4;
    // Heuristic v10: 8-bit weights at 64 rows (4-6 tiles per SM) take all 64 rows per block (H200
    // re-tune of 6144×4096 after the fifteenth session: 20.15 µs against 24.08 for 2 row tiles).
    if (eight_bit_x_shared) c.m_tiles = 4;
  }
  if (auto t = wq::three_bit_config(p, h, c, arch)) c = *t;
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
  // Heuristic v25 (forty-second session, out of sample): up to 16 rows on K-heavy layers (96 chunks or
  // more) whose blocks of 4 tiles, staged per warp, fill a quarter (below which fill_split above splits)
  // to 0.7 of the SMs, where the pieces meet in a cluster (sm_90): K split in the fewest pieces that make
  // 1.5 blocks per SM, 8 warps along K up to 8 rows, 4 at 16 (two blocks per SM). Llama-3.1-405B's QKV
  // at TP 8, 2304×16384 (72 blocks), H200 bench, v24's (1,4,1,16) / (1,4,1,8) → split 3: W4 f16 M = 1
  // 9.65 → 7.98 µs, M = 4 10.16 → 8.46, M = 16 12.91 → 9.76; bf16 M = 1 10.28 → 9.48, M = 16 14.49 →
  // 10.72 (the tune's best configs). 3-bit weights follow 4 as in the staged rules; 2- and 8-bit ones (2
  // since v28 on sm_90a, below),
  // 2-tile blocks (1280-wide shards), other group sizes and arches past sm_90 are unmeasured (the last
  // two take the rule).
  // v28 (forty-fifth session, out of sample), on sm_90a: from over 64 chunks (v25: 96), and for 2-bit
  // weights too. Gemma-2-2B's down projection, 2304×9216 (72 chunks, 72 blocks): split 3 was the H200
  // tune's best at one and 16 rows in W4 f16 and bf16 (the unsplit heuristic 1.12-1.26× behind) and in
  // W2 (tuner times, not benched: the rule's configs 5.61 µs at one row against 6.11 unsplit, 7.00 at 16
  // rows against 8.91). Bench, W4, µs, unsplit → split, H200 / H100: f16 M = 16 8.05 → 6.65 / 8.23 →
  // 7.23, bf16 M = 16 9.19 → 7.17 / 9.32 → 7.59; f16 M = 1 6.46 → 5.61 / 6.73 → 6.75. Not at 64 chunks:
  // 2560×8192 (80 blocks of 4 tiles at 2-16 rows) ran best unsplit at 16 rows in the H100's file (its
  // H200 file split it in 2 with 6 tiles, 1.08× ahead of the heuristic).
  const int64_t split_min_chunks = sm90a ? 65 : 96;
  // (Not 8-bit weights: at 16 rows on 2304×9216 this rule's split 3 ran 8.89 µs against 9.75 unsplit on
  // the H200, but 11.06 against 10.24 on the H100; forty-sixth session.)
  const bool split_bits = p.bits == 3 || p.bits == 4 || (sm90a && p.bits == 2);
  const int64_t unsplit_blocks = ceil_div(tiles, c.n_tiles * c.warps_n) * ceil_div(bucket, 16 * c.m_tiles);
  if (bucket <= 16 && split_bits && c.x_shared && c.warps_n == 1 && c.n_tiles == 4 && c.split_k == 1 &&
      chunks >= split_min_chunks && unsplit_blocks >= sms / 4.0 && unsplit_blocks < 0.7 * sms) {
    WqGemmConfig s = c;
    s.warps_k = bucket <= 8 ? 8 : 4;
    s.split_k = 2;
    while (s.split_k < wq::kMaxMmaClusterSplit && unsplit_blocks * s.split_k < 1.5 * sms) ++s.split_k;
    // v67 (seventy-eighth session) and v68 (seventy-ninth): where split 3 covers over 0.595 of the SMs'
    // blocks (79-92 blocks of 4 tiles, 2497-2944 columns on 132 SMs), 4 warps along K, K in 4, 2 stages:
    // (1,4,1,4,4,2). v67 took 4-bit at 9-16 rows, read as split 3's clusters past those that fit at once
    // (cudaOccupancyMaxActiveClusters: 79 clusters of 3 at 2 blocks a SM, v25's 79 KB blocks at 16 rows). v68
    // takes every row count and 2/3-bit: bf16 4-bit at 8 rows, whose 80 registers hold 3 blocks a SM (124
    // clusters of 3 fit), lost all the same, so the fit is not the whole reason; 320-352 blocks of 4 warps
    // spread over the SMs better than 240-264 of 8 (at 72 blocks they do not). H200 bench, file off, split 3
    // → this, on 2560×16384 / 2816×16384 / 2816×9216 (80-88 blocks): 4-bit fp16 at 16 rows 0.60-0.68× (v67,
    // the two K = 16384 layers), at 2-8 0.68-0.75×, at one row 0.85-0.90× (9.68 → 8.32 µs on 2560×16384);
    // bf16 at 16 rows 0.60-0.68× (v67), at 8 0.81-0.87×, at one row 0.85-0.90×; GPTQ-symmetric bf16 at 4 rows
    // 0.86-0.91×; 3-bit at one row 0.80-0.90×, at 8 and 16 rows 0.79-0.87×; 2-bit at one row 0.80-0.89×, at 4
    // and 8 0.77-0.81×, at 16 0.82-0.89×. At the band's edge (2496×16384, 78 blocks) split 3 ran 0.96-0.99×
    // this, on 2304×16384 (72) 0.91-1.00×. (1,4,1,8,2,2) and (1,4,1,4,3,2) ran 0.75-1.00× split 3 in the
    // band. As measured: sm_90a, groups of 128, integer zeros or symmetric (not where every weight is
    // dequantized first).
    if (sm90a && p.group_size == 128 && !wq::dequantizes_every_weight(p) && s.split_k == 3 &&
        unsplit_blocks > 0.595 * sms)
      s.warps_k = 4, s.split_k = 4, s.stages = 2;
    if (wq::mma_cluster_split(s, arch)) c = s;
  }
  // v57 (seventy-first session): bf16 activations at 9-16 rows where the config's own blocks fill under 0.7
  // of the SMs (under a quarter fill_split has split K already) and v25/v28 leave the layer unsplit (64
  // chunks, or 2-tile blocks): 6 tiles × 4 warps along K, K in 4 pieces that meet in a cluster, 2 stages.
  // bf16's heavier dequantization gains more from the split than fp16's (the H200's fp16 tunes ran
  // 1.06-1.07× behind their bests there, the H100 ran fp16 2560×8192 best unsplit: fp16 keeps v25's
  // bounds). H200 tune of the preset layers in W4 bf16 at 16 rows: 1280×8192 (1,2,1,8,1,3) 6.18 µs and
  // 2560×8192 (1,4,1,8,1,3) 8.64 against their bests (1,6,1,8,4,2) 5.22 and (1,6,1,4,4,2) 7.30 (tuner
  // times). Bench (file off), µs: 1280×8192 6.11 → 5.23, 2560×8192 8.16 → 6.91, and out of sample
  // 2304×8192 8.12 → 6.79, 2816×8192 8.20 → 6.98, 1280×16384 10.51 → 7.67; but 1536×8192 6.15 → 6.49 and
  // 2048×8192 6.22 → 6.67, whose 2-tile blocks fill 0.73 and 0.97 of the SMs (2048×16384 10.67 → 10.66):
  // hence the 0.7, drawn after that bench (docs/perf-notes.md, seventy-first session). Integer-zero or
  // symmetric groups of 128 (3-bit g256 too, as v43) and 4-bit weights as measured (3 follows); the H100
  // unmeasured.
  // v66 (seventy-eighth session): 4-bit weights keep the config's own 2 or 4 tiles a warp (4 warps along K, K
  // in 4 pieces; 3 stages with 2 tiles, 2 with 4): more, smaller blocks than v57's 6 tiles (1280×8192: 320
  // blocks against 108). Since § 75's bf16 dequantization the bests of the H200's bf16 and GPTQ-symmetric
  // bf16 tunes there, where v57 ran 1.11-1.13× the served config (bench, file on). Bench, file off, v57 →
  // v66, bf16 / symmetric: 2 tiles, 1280×8192 0.897 / 0.879, 1280×16384 0.915 / 0.919, 1024×8192 0.884 /
  // 0.880; 4 tiles, 2304×8192 0.946 / 0.947, 2560×8192 0.934 / 0.930, 2816×8192 0.937 / 0.930. (2 tiles
  // lost 1.24-1.27× on the 4-tile layers, 4 tiles gained only 2-4 % on the 2-tile ones.) 3-bit keeps v57's 6
  // tiles (unmeasured).
  if (sm90a && bucket > 8 && bucket <= 16 && p.act == DType::BF16 && (p.bits == 3 || p.bits == 4) &&
      wq::eight_tile_groups(p) && !wq::dequantizes_every_weight(p) && !p.deterministic && c.x_shared &&
      c.warps_n == 1 && c.split_k == 1 && chunks >= 64 && unsplit_blocks < 0.7 * sms) {
    WqGemmConfig s = c;
    const bool v66 = p.bits == 4 && (c.n_tiles == 2 || c.n_tiles == 4);
    s.n_tiles = v66 ? c.n_tiles : 6, s.warps_k = 4, s.split_k = 4, s.stages = v66 && c.n_tiles == 2 ? 3 : 2;
    if (wq::mma_cluster_split(s, arch)) c = s;
  }
  // v76-v77 and v80-v83: narrow layers at 64/128 rows (wq_gemm_heuristic_tiny_layers.cpp).
  if (auto n = wq::narrow_layer_config(p, h, c, arch)) c = *n;
  // v74 (eightieth session): 8-bit weights at 17-32 rows whose block-shared (2,4,2,2) blocks number 2-3 a SM
  // take 2 stages: 66 KB of shared memory a block instead of 100 let 3 share an SM (ptxas: 164 registers, 3 a
  // SM), so the grid runs in one wave instead of two. H200 tune of W8 f16 at 32 rows, 3 stages (the heuristic
  // before) against 2 (the best): 17408×2048 (272 blocks) 16.21 µs against 14.82, 18432×1024 (288) 10.34
  // against 9.13, 19456×2048 (304) 17.93 against 15.39. Bench, file off, 3 → 2 stages: 0.888-0.913 on those
  // three, bf16 0.885-0.917 on two. Groups of 128 with integer zeros or symmetric at first; every group and
  // mode since the eighty-second session: an H200 tune had 8-bit per channel 1.18× the best on 22016×2048
  // (3 stages against 2), and 2 stages ran 0.800-0.935× 3 (bench, forced) on 17408/19456/22016×2048 per
  // channel (bf16 too), g64, g32 and HQQ g64; through the heuristic on 18432×2048 and 20480×1536, q·s + z
  // g64, g256, symmetric per channel and bf16 g64 0.767-0.905. Not deterministic or fp16 accumulation
  // (unmeasured).
  const int64_t blocks_of_8_tiles = ceil_div(tiles, 8);  // (2,4,2,2)'s at 17-32 rows: one row block
  if (sm90a && bucket == 32 && p.bits == 8 && !p.deterministic && p.accum != DType::F16 && c.x_shared &&
      c.m_tiles == 2 && c.n_tiles == 4 && c.warps_n == 2 && c.warps_k == 2 && c.split_k == 1 &&
      c.stages == 3 && blocks_of_8_tiles > 2LL * sms && blocks_of_8_tiles <= 3LL * sms)
    c.stages = 2;
  // fp16 accumulation's rules at 32-128 rows (v47-v48, wq_gemm_heuristic_fp16_accum.cpp). They come after
  // fill_split and v25, which would replace their splits.
  if (auto f = wq::fp16_accum_config(p, h, sm90a)) c = *f;
  // A split that meets in a cluster (sm_90) adds its receive region to the block's shared memory:
  // fit again, keeping the split.
  wq::shrink_to_fit(p, c, arch, /*keep_k_split=*/true);
  return c;
}

}  // namespace lowbit

// Choosing a wq_gemm config per M bucket: the tuning database, else the heuristic (choose_config, fitted
// to `lowbit tune` runs), else the safe default.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>

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

WqGemmConfig default_config() {
  WqGemmConfig c;
  c.m_tiles = 1, c.n_tiles = 1, c.warps_n = 1, c.warps_k = 1, c.split_k = 1, c.stages = 2;
  return c;
}

WqGemmConfig choose_config(const WqGemmProblem& p, const Arch& arch, int sm_count) {
  // Fitted to `lowbit tune` over the model presets at M 1..128 on the H200 (docs/perf-notes.md,
  // "heuristic v3"); shapes are measured in 8-column tiles per SM so other GPUs scale with them.
  // Hopper's warpgroup MMA first, where its rules apply (wq_gemm_heuristic_wgmma.cpp); then mma.sync.
  if (auto w = wq::choose_wgmma_config(p, arch, sm_count)) return *w;
  const wq::HeuristicShape h = wq::heuristic_shape(p, sm_count);
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
  // Per-warp staged activations (v6 rules below): wq::may_stage_per_warp.
  const bool stage_per_warp = wq::may_stage_per_warp(p, arch);
  // v26's mma.sync rules (forty-third session) were measured on sm_90a only, 3/4-bit where they say
  // so: other arches keep v25's choices (the branches they touch are reached by more layers there).
  const bool v26 = wq::has_wgmma(arch) && (p.bits == 3 || p.bits == 4);
  // v27's and v28's rules (forty-fourth and forty-fifth sessions): measured on sm_90a only. (Deterministic
  // problems never reach v28's: each needs activations staged per warp or the 16-row staged branch,
  // which that mode leaves.)
  const bool sm90a = wq::has_wgmma(arch);
  // Heuristic v33 (fiftieth session, out of sample at 4 and 8 rows): 1-2-bit weights at 2-8 rows take the
  // 16-row branch's staged configs. The rules below kept them in registers (`staged_bits`: at 2-8 rows
  // only 3/4-bit was ever measured). H200 tune of the seventh set in W2: v32's registers configs ran 1.06-
  // 1.58× the best on all 22 problems at M = 4 and 8 (6144×16384 M = 8 19.84 µs against 12.59); the
  // 16-row choice ran within 1.09× wherever the tune timed it (1.00 on 10 of them). 8-bit weights too at 8
  // rows, and at 2-4 rows up to 20 tiles per SM: the H100's W8 tune of the same set ran v32's registers
  // configs 1.15-1.22× the best on its three smallest layers (2048×1408, 2560², 2816×2048) at 4 and 8 rows;
  // the 16-row choice ran within 1.03× wherever timed (at 4 rows 1.00-1.02 up to 8192×6144; wider at 4 rows
  // the registers' (1,4,1,2) stay, 1.004× the best on 28672×5120 and 1.01× on 32768×6144).
  const bool few_rows_take_16_row_rules =
      sm90a && stage_per_warp && bucket > 1 && bucket <= 8 &&
      (p.bits <= 2 || (p.bits == 8 && (bucket == 8 || tiles_per_sm <= 20)));
  // Blocks of 8 and 16 tiles, which the v32/v33 wave rules count per SM; v28's wide band (3/4-bit, over 40
  // tiles per SM, over 16 chunks), whose rules at 16 rows v33 shares with 8.
  const int64_t blocks8 = ceil_div(tiles, 8), blocks16 = ceil_div(tiles, 16);
  const bool v28_band = sm90a && (p.bits == 3 || p.bits == 4) && tiles_per_sm > 40 && chunks > 16;
  WqGemmConfig c;
  if (bucket <= 8 && !few_rows_take_16_row_rules) {
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
    // Over 12 blocks of 4 tiles per SM (48 tiles): 8 tiles per warp (v31 below stages 8-bit weights there).
    const bool over_12_blocks_per_sm = col_blocks > 12LL * sms;
    if (over_12_blocks_per_sm) c.n_tiles = 8;
    // 3/4-bit: activations staged per warp on layers of up to 8 tiles per SM (v6: 7), with 2 tiles
    // per warp up to 6 unless K-heavy (16 warps along K); at 8 rows up to 10 tiles per SM. v6, H100
    // re-tune of the model presets: staged won on every such layer at M 1-8, by up to 20 % at M = 8
    // (4096² M = 8: 5.50 µs against 6.76 for the v5 choice). v7: 8192×K (7.8 tiles per SM) too,
    // with 4 tiles per warp: the re-tunes of both GPUs with the 3-stage staged candidates picked it
    // for 43 of the 48 (8192×K layer, M 1/2/4, GPU) entries (H200 8192² M = 2: 16 % faster than 2
    // tiles of registers). The 5 others lose 0.3-6 %: 8192×1024 at M 1-2 on both GPUs, and the
    // H100's 8192² at M = 1. (v30 below: at one row 8192×K up to 16 chunks takes 2 tiles × 4 warps.)
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
      // v24: staged 8-warp blocks over two per SM (10240×8192 at 8 rows) run a second wave; 4 warps
      // along K fit in one: both files' best (bench: H200 14.55 µs against 17.07, H100 17.49 against 22.00).
      if (v5 && c.n_tiles == 4 && c.warps_k == 8 && col_blocks > 2LL * sms) c.warps_k = 4;
      // Heuristic v21 (thirty-first session): bf16 4-bit weights at one row from 6 tiles per SM (8192²)
      // take 8 tiles per warp, like 2-bit ones (v19): their zero comes after the MMA, so each chunk
      // carries Σ MMAs that more tiles share. The best of both GPUs' files (H200 (1,8,1,8) 10.70 µs
      // with 3 stages, 11.78 with 2, against 12.29 for v20's 4 tiles; H100 14.50 with 2 stages against
      // 14.78). (v30 below takes 6.5-10 tiles per SM on short K back to 2 tiles.)
      if (v5 && bucket == 1 && p.bits == 4 && p.act == DType::BF16 && p.group_size == 128 &&
          tiles_per_sm > 6 && 2 * col_blocks >= sms)
        c.n_tiles = 8;
    }
    // Heuristic v24: 8 rows on 12-16 tiles per SM (14336×8192, 16384²), 3- and 4-bit: staged per warp,
    // 8 tiles × 4 warps along K, the tuned best of both files (H200 14336×8192 17.75 µs against 20.78
    // for the registers' (1,4,1,4); 1.12× on 16384²; H100 1.03-1.04×).
    if (v5 && bucket == 8 && stage_per_warp && (p.bits == 3 || p.bits == 4) && tiles_per_sm > 12 &&
        tiles_per_sm <= 16)
      c.n_tiles = 8, c.warps_k = 4, c.x_shared = true;
    // Heuristic v26 (forty-third session, out of sample): 1-8 rows on wide layers (over 8 tiles per
    // SM) with short K (16 chunks or fewer), 3- and 4-bit: staged per warp too, 3 stages. Qwen2.5-3B's
    // gate+up, 22016×2048, bench against the registers' (1,4,1,2): H200 M = 1 9.66 → 8.35 µs, M = 4
    // 10.00 → 8.54, M = 8 10.20 → 8.52; H100 11.19 → 10.32, 11.42 → 10.76, 11.58 → 10.76.
    // (After v24's 8-row rule, whose staged configs keep their 2 stages.)
    if (v26 && stage_per_warp && tiles_per_sm > 8 && chunks <= 16 && !c.x_shared)
      c.x_shared = true, c.stages = 3;
    // Heuristic v19 (twenty-sixth session; the W2 M = 1 entries of both GPUs, the H200's re-tuned
    // with the band copies): 2-bit weights at one row, where a tile-chunk is 256 bytes, take 8 tiles
    // per warp from 4.5 tiles per SM (6144×4096, 8192²), with 16 warps along K from 64 chunks: the
    // tuned best or within 0.5 % on both GPUs (H200 8192² 8.68 µs against 10.02 for v18's
    // (1,4,1,8), 6144×4096 5.74 against 6.25). On the wide layers that already take 8 tiles, 4 warps
    // along K up to 32 chunks (28672×4096): the tuned best on both (H200 14.78 against 16.12 for 8
    // warps; H100 16.08 against 18.22). 1 bit follows 2, unmeasured.
    // Heuristic v32 (forty-ninth session, out of sample): on sm_90a over 20 tiles per SM from 33 up to 63
    // chunks too. H100 W2 tune of the seventh set, (1,8,1,8) against the best: 28672×5120 1.17×
    // ((1,8,1,4) 1.04×), 32768×6144 1.14× (1.05×), 40960×7168 1.20× (the best), 73728×4608 1.10× (1.05×); the
    // H200's 51200×5120 1.08× and 1.07×. Bench, µs, H200 / H100: 28672×5120 18.47 → 16.96 / 20.16 → 17.83,
    // 32768×6144 21.52 → 19.84 / 24.22 → 22.29, 40960×7168 29.38 → 27.30 / 36.93 → 30.92, 73728×4608 34.84
    // → 31.80 / 39.38 → 37.42. Not from 64 chunks: 45056×8192 (H200) 37.30 → 40.35 (its tunes' best,
    // (1,16,1,4) staged, 33.18). Up to 20 tiles per SM (16384×K) 8 warps stay, unmeasured here (16384², 128
    // chunks, has its best with 8 on the H100).
    if (v5 && bucket == 1 && p.bits <= 2 && 2 * col_blocks >= sms) {
      if (c.x_shared && tiles_per_sm > 4.5)
        c.n_tiles = 8, c.warps_k = chunks >= 64 ? 16 : 8;
      else if (!c.x_shared && c.n_tiles == 8 && (chunks <= 32 || (sm90a && tiles_per_sm > 20 && chunks < 64)))
        c.warps_k = 4;
    }
    // Heuristic v27 (forty-fourth session, out of sample): v26's staged rule on wide short-K layers,
    // extended to 32 chunks, and at one row to 1-2-bit weights (2-8 rows stay 3/4-bit, as every staged
    // rule here; the stages stay: 2 over 16 chunks, and at 1-2 bits). H200 tune:
    // 9216×3072 and 16384×3072 (24 chunks) ran the registers' configs at 1.10-1.16× the best (all
    // staged) in W4 f16, bf16 and W2, and 16384×2048 W2 at 1.21 (W2 16384×3072: (1,8,1,4,1,2) 8.84 µs,
    // staged 7.20); the shipped files' 28672×4096 and 37888×3584 (28-32 chunks) have staged bests at
    // 1-8 rows (H200 28672×4096 M = 8: 1.09 → 1.00). Not over 32 chunks: 10240×8192 at 2-4 rows kept
    // the registers (staged 1.09-1.10× on the H200), and 8-bit weights are unmeasured.
    if (sm90a && stage_per_warp && staged_bits && p.bits <= 4 && tiles_per_sm > 8 && chunks <= 32)
      c.x_shared = true;
    // v27, out of sample again (H100 tune of a fourth layer set): staged, on 16 chunks or fewer, at most 4
    // warps along K, so each keeps about 2 chunks or more (1.75 at 7 chunks). StableLM-2-1.6B's gate+up
    // 11264×2048 and Qwen2.5-0.5B's 9728×896 (7 chunks), whose blocks of 4 tiles (2.3-2.7 per SM) kept v5's 8
    // warps: 1.33-1.43× the best (11264×2048 8.49 µs against 6.38; (1,4,1,4,1,3) staged 6.62). (v30 below
    // gives 9728×896 at one row 2 tiles × 4 warps.)
    if (sm90a && c.x_shared && tiles_per_sm > 8 && chunks <= 16 && c.warps_k > 4) c.warps_k = 4;
    // v34 (fifty-first session, out of sample at 2-8 rows): v24's rule for staged 8-warp blocks over two per
    // SM (4 warps along K, one wave) at 2-8 rows on the blocks v27 stages (over 8 tiles per SM, 17-32
    // chunks), which skip the staged branch above (8 rows take it up to 10 tiles per SM). Phi-2's fc1,
    // 10240×2560 (320 blocks of 4 tiles, 20 chunks), H200 tune at 2 and 4 rows: (1,4,1,8,1,2) staged 1.29×
    // the best in f16 and 1.10-1.11× in bf16, (1,4,1,4,1,2) 1.01× and 1.02-1.03× (the best: 6 tiles × 4
    // warps, which v28's test below does not give here: 12 tiles on the busiest SM either way).
    if (sm90a && bucket > 1 && c.x_shared && (p.bits == 3 || p.bits == 4) && c.n_tiles == 4 &&
        c.warps_k == 8 && col_blocks > 2LL * sms)
      c.warps_k = 4;
    // Heuristic v28 (forty-fifth session, out of sample): one row, 3/4-bit, staged 2 tiles × 8 warps.
    // - Where 6-tile blocks fill 70-90 % of the SMs in one wave (4424-5664 columns on 132 SMs) and K
    //   has 32 chunks or more: 6 tiles × 12 warps along K. H200 bench, bf16, µs against v27's (1,2,1,8,1,2):
    //   5120×5120 6.49 / 7.54, 5120×7168 7.91 / 9.82, 5120×13824 12.70 / 17.48; H100 5120×13824 15.04 /
    //   17.65. f16: H200 5120×32768 25.53 / 28.22 (its tunes of 5120×K, K 7168-32768, had 6 tiles first,
    //   1.02-1.12× ahead); the H100 1-3 % slower (5120×8192 9.91 / 9.64), its tunes had 2 tiles first.
    // - Otherwise bf16 over 16 chunks: 3 stages. The Σ MMA bf16 carries after the zero (v21) lengthens
    //   each chunk, and a third stage in flight hides it. Bench against 2 stages, µs, H200 / H100:
    //   4608×3584 5.38 / 5.96, 5.84 / 6.22; 4096² 4.72 / 5.06, 5.10 / 5.30; 6144×4096 5.94 / 6.47 on the
    //   H200, 6.86 / 6.70 on the H100 (its one loss, 2.4 %).
    // - Staged 4-tile blocks where 6-tile ones take tiles off the busiest SM (17920×1536, 18432×2304:
    //   18 tiles against 20; on 132 SMs only wide layers, over 8 tiles per SM, which v27 stages up to 32
    //   chunks): 6 tiles × 4 warps along K, 2 stages, as v27 at 16 rows. The tunes' best there in W4 f16
    //   and bf16 (H200; 18432×2304 f16 8.22 µs against 9.20 for (1,4,1,2), bf16 8.67 against 10.27;
    //   17920×1536 f16 6.38 against 6.89 for (1,4,1,2,1,3)).
    // v34 (fifty-first session, out of sample at 2-8 rows): the third item at 2-8 rows too. H200 tune of the
    // fifth set, Gemma-2-2B's gate+up 18432×2304: this config the best at 2, 4 and 8 rows in f16 and bf16,
    // where v33's (1,4,1,2,1,2) staged ran 1.11-1.16× (f16) and 1.17-1.20× (bf16) and
    // (1,4,1,4,1,2) 1.05-1.09×.
    if (sm90a && bucket <= 8 && c.x_shared && (p.bits == 3 || p.bits == 4) && c.n_tiles == 4 &&
        wq::busiest_sm_tiles(h, 6) < wq::busiest_sm_tiles(h, 4))
      c.n_tiles = 6, c.warps_k = 4, c.stages = 2;
    if (sm90a && bucket == 1 && c.x_shared && (p.bits == 3 || p.bits == 4) && c.n_tiles == 2 &&
        c.warps_k == 8) {
      if (chunks >= 32 &&
          wq::blocks_fill_within(h, 6, wq::kSixTileMinFillPercent, wq::kSixTileOneRowMaxFillPercent))
        c.n_tiles = 6, c.warps_k = 12;
      // v32 (forty-ninth session, out of sample): bf16 on 128 chunks or more up to a full wave of 6-tile
      // blocks too. InternLM2-20B's down projection, 6144×16384 (128 blocks of 6 tiles, 97 %), bench, µs,
      // v28's (1,2,1,8,1,3) → this: H200 18.78 → 15.98, H100 21.14 → 21.39. f16 keeps v28's 2 tiles (H200
      // 15.57 → 14.86, H100 19.60 → 20.22); shorter K unmeasured.
      else if (p.act == DType::BF16 && chunks >= 128 &&
               wq::blocks_fill_within(h, 6, wq::kSixTileMinFillPercent, 100))
        c.n_tiles = 6, c.warps_k = 12;
      else if (p.act == DType::BF16 && chunks > 16)
        c.stages = 3;
    }
    // Heuristic v29 (forty-sixth session, out of sample): one row, 1-2-bit weights staged 2 tiles a warp
    // on about 2-4 tiles per SM (the 2-tile rule above; 2088-4224 columns on 132 SMs): 4 tiles, where a 2-bit
    // tile-chunk is half the bytes of a 4-bit one, with 16 warps along K from 32 chunks, else 8 and 3
    // stages. H200 tunes, v28's (1,2,1,8,1,2) against the best (this rule's config, or 1.008× for
    // 4096×7168): 4096×7168 1.26×, 3072×4096 1.14×, 4096×2304 1.13×, 2304×2048 1.06×; the shipped
    // file's 4096² 1.12× (the H100's best there is (1,2,1,16,1,2): this config and v28's both 1.09×).
    if (sm90a && bucket == 1 && c.x_shared && p.bits <= 2 && c.n_tiles == 2 && 2 * col_blocks >= sms &&
        tiles_per_sm <= 4) {
      c.n_tiles = 4;
      if (chunks >= 32)
        c.warps_k = 16;
      else
        c.stages = 3;
    }
    // Heuristic v45 (sixty-third session, out of sample): one row, 1-2-bit weights that v19 stages 8 tiles
    // a warp, where blocks of 6 tiles fill 70-90 % of the SMs in one wave (4424-5664 columns on 132 SMs;
    // up to 100 %, 6336 columns, where the format dequantizes every weight before the MMA): 6 tiles, 3
    // stages, v19's warps along K. Tunes, v19's (1,8,1,8|16,1,2) against the best (6-tile configs in
    // every case): W2 g128 5120×4096 1.13 (H200) / 1.09 (H100), 5120×25600 1.11 / 1.12, 5120×32768 1.12
    // (H200); HQQ 2-bit (float zeros g64) 6144×16384 1.24, 5120×4096 1.07 (H200). W2 g128 keeps 8 tiles
    // on 6144-wide layers (97 % fill): 6144×16384's best on both GPUs. Bench (H200), µs, v19's config →
    // this: g128 5120×4096 5.12 → 4.67, 5120×8192 7.75 → 6.85, 5120×25600 18.87 → 16.71 (bf16 0.88-0.92×);
    // float zeros g64 6144×16384 21.73 → 17.46, 5120×8192 12.19 → 9.83, 6144×4096 7.18 → 6.29; g64
    // 6144×16384 18.77 → 15.18; g32 6144×4096 6.64 → 5.77; 1-bit g128 5120×8192 7.28 → 6.79 (14 of 14
    // faster, 0.80-0.93×).
    if (sm90a && bucket == 1 && c.x_shared && p.bits <= 2 && c.n_tiles == 8 && c.warps_n == 1 &&
        wq::blocks_fill_within(h, 6, wq::kSixTileMinFillPercent,
                               wq::dequantizes_every_weight(p) ? 100 : wq::kSixTileOneRowMaxFillPercent))
      c.n_tiles = 6, c.stages = 3;
    // Heuristic v30 (forty-seventh session, out of sample): one row, 4-bit weights in groups of 128 on
    // 8.5-10 tiles per SM (8977-10560 columns on 132 SMs) up to 40 chunks, and on 6.5-8.5 up to 16:
    // 2 tiles × 4 warps along K, staged, 2 stages (the many small blocks fill the SMs' slots evenly).
    // The tunes' best or within 4 % wherever they timed it, on both GPUs (9216×3072, 9728×896, 10240×2560,
    // 10240×5120, 8192×1024, 8192×2048, 7168×2048), where v29 ran 1.02-1.17×; bench, both GPUs, f16 and bf16:
    // 2-17 % faster than v29 on all seven. Not on longer K (8192×4096: the H200's best is v29's (1,4,1,8),
    // this 1.07×), nor wider (11264×2048, 16384×2048: the H200 bench had v29's (1,4,1,4,1,3) 2-18 % ahead of
    // this tiling with 3 stages, f16 and bf16).
    const bool short_k_one_row_band = (tiles_per_sm > 8.5 && tiles_per_sm <= 10 && chunks <= 40) ||
                                      (tiles_per_sm > 6.5 && tiles_per_sm <= 8.5 && chunks <= 16);
    if (sm90a && stage_per_warp && bucket == 1 && p.bits == 4 && p.group_size == 128 &&
        short_k_one_row_band) {
      c = make(1, 2, 4, 2);
      c.x_shared = true;
    }
    // Heuristic v31 (forty-eighth session, out of sample): one row, 8-bit weights where v5 takes 8 tiles per
    // warp in registers (over 12 blocks of 4 tiles per SM: 48 tiles, 50689 columns on 132 SMs), K of 32
    // chunks or more: staged, 4 tiles × 6 warps along K, 2 stages. Qwen3-32B's gate+up, 51200×5120: the H200
    // tune's best, where (1,8,1,2) ran 1.19× (H100 1.10×). Bench, µs, (1,8,1,2) → this, H200 / H100:
    // 51200×5120 75.42 → 63.83 / 99.47 → 90.82; 65536×5120 86.47 → 80.12 / 118.31 → 115.02; 57344×8192
    // 128.25 → 111.90 / 170.20 → 159.79 ((1,16,1,4) staged: 1 % ahead on the H100, 1-4 % behind on the
    // H200). Not narrower, where v5 keeps 4 tiles × 2 warps: the H200 bench had it within 2 % of this config
    // either way (49152×4096, 40960×5120, 32768×8192).
    // v33 (fiftieth session): at 2-4 rows too (8 rows take the 16-row rules). H200 tune of the sixth set at 2
    // rows: 51200×5120 (1,8,1,2,1,2) 1.23× the best, this config 1.01×; the seventh set's 73728×4608 at 4
    // rows 1.02× (H200; the H100's tune had it within 1.007-1.03×, untimed), where (1,8,1,2,1,2)
    // ran 1.03-1.06×.
    if (sm90a && stage_per_warp && bucket <= 4 && p.bits == 8 && over_12_blocks_per_sm && chunks >= 32) {
      c = make(1, 4, 6, 2);
      c.x_shared = true;
    }
    // Heuristic v32 (forty-ninth session, out of sample): one row, 4-bit f16 where v5 takes 8 tiles × 2 warps
    // in registers and those blocks run past 8 per SM (over 64 tiles; 67584 columns on 132 SMs): their 107
    // registers (112 allocated, 3584 a warp) fit 4 warps in each quarter's 16384, 8 blocks per SM, so a
    // second wave runs. Staged, 4 tiles × 2 warps side by side × 4 along K. Gemma-2-27B's gate+up,
    // 73728×4608, bench, µs: H200 56.62 → 44.60, H100 81.16 → 61.66. bf16's blocks (96 registers) fit 10 per
    // SM and keep v5's: there this config ran 48.19 → 48.93 (H200), 65.83 → 64.98 (H100). Not narrower:
    // 65536×5120 (1024 blocks, 7.8 per SM) H200 44.45 → 46.20, H100 62.17 → 61.72.
    // v33 (fiftieth session): at 2-8 rows too. H200 tune, 73728×4608 f16 at M = 4 / 8: v32's (1,8,1,2,1,2)
    // 1.25× / 1.29× the best, this config 1.03× / 1.03×.
    if (sm90a && stage_per_warp && p.bits == 4 && p.act == DType::F16 && !c.x_shared && c.n_tiles == 8 &&
        ceil_div(tiles, 8) > 8LL * sms) {
      c = make(1, 4, 4, 2);
      c.warps_n = 2;
      c.x_shared = true;
    }
    // Heuristic v33 (fiftieth session, out of sample at 4 and 8 rows): 2-8 rows, 3/4-bit, staged 2 tiles ×
    // 8 warps where 6-tile blocks fill 70-100 % of the SMs in one wave (4424-6336 columns on 132 SMs) and K
    // has 32 chunks or more: 6 tiles, 8 warps along K, 2 stages (v23's 16-row rule; one row has v28's 12
    // warps). H200 tune, v32's choice → this, against the best: 6144×16384 bf16 M = 4 1.30 → 1.00, M = 8
    // 1.24 → 1.00, f16 1.06 → 1.02, 1.11 → 1.03; 5120×4096 bf16 1.12 → 1.01, 1.10 → 1.02, f16 1.03 → 1.00,
    // 1.06 → 1.00. In the shipped files (W4 f16): 5120×8192 at 2-8 rows 1.03-1.10 → 1.00-1.01; 6144×4096
    // (32 chunks) 1.00-1.02 → 1.00-1.04; 4608×3584 (28 chunks) stays: there 6 tiles ran 1.08-1.13×. (The
    // 100 % bound never decides: 2 tiles per warp here means at most 6 tiles per SM, 132 blocks of 6.)
    if (sm90a && bucket > 1 && c.x_shared && (p.bits == 3 || p.bits == 4) && c.n_tiles == 2 &&
        c.warps_k == 8 && chunks >= 32 && wq::blocks_fill_within(h, 6, wq::kSixTileMinFillPercent, 100))
      c.n_tiles = 6, c.stages = 2;
    // Heuristic v34 (fifty-first session, out of sample at 2-8 rows): bf16 at 2-4 rows, 3/4-bit, staged 2
    // tiles × 8 warps on layers of fewer 4-tile blocks than SMs (up to 4192 columns on 132 SMs) from 32
    // chunks: the 8-row choice, 4 tiles × 16 warps along K, 2 stages. bf16's Σ MMA after the zero (v21)
    // lengthens each chunk, and more warps hide it. H200 tunes, bf16, v33's (1,2,1,8,1,2) → this, against
    // the best: 4096×7168 1.18-1.19 → 1.00, 3072×4096 1.10 → 1.03, 3584×4096 1.10-1.11 → 1.03 (the H100's
    // tune had v33's 1.06-1.07×, this one untimed). f16 keeps 2 tiles: there this config ran 1.01-1.13×,
    // v33's 1.00-1.04×.
    if (sm90a && bucket > 1 && bucket <= 4 && p.act == DType::BF16 && c.x_shared &&
        (p.bits == 3 || p.bits == 4) && c.n_tiles == 2 && c.warps_k == 8 && col_blocks < sms && chunks >= 32)
      c.n_tiles = 4, c.warps_k = 16, c.stages = 2;
    // Heuristic v33: 8 rows, 3/4-bit, on the band of v28's 16-row rule (over 40 tiles per SM, over 16
    // chunks) up to 3 blocks of 16 tiles per SM (50688 columns): v32's 16-row config there, (1,8,2,2,1,2)
    // staged. H200 tune, Command-R's gate+up 45056×8192 at M = 8: the best in f16 and bf16, where the
    // registers' (1,4,1,2,1,2) ran 1.10× and 1.17×. (At 4 rows f16's best is (1,4,1,2,1,2); the tune did
    // not time this config there.)
    if (stage_per_warp && bucket == 8 && v28_band && blocks16 <= 3LL * sms) {
      c = make(1, 8, 2, 2);
      c.warps_n = 2;
      c.x_shared = true;
    }
    // Heuristic v35 (fifty-second session, bench of both GPUs): bf16, 3/4-bit, 2-8 rows, on the widest
    // layers, which the rules above leave in the registers' 8 tiles × 2 warps along K (over 12 blocks of 4
    // tiles per SM, up to 5 blocks of 16 per SM: 50689-84480 columns on 132 SMs; measured 51200-73728;
    // over 32 chunks, since v27 stages up to 32): activations staged per warp, in 8 tiles × 2 warps side by
    // side and 3 stages, or v28's six tiles × 4 warps along K where these take a tenth or more off the
    // busiest SM's tiles (K up to 48 chunks). The SM with the most tiles sets the time (16-tile blocks are
    // all resident at once here, six-tile ones run in 2-3 rounds; H200: ~0.0165 and ~0.018 µs per tile-chunk
    // on the busiest SM). Bench, µs, registers → this, H200 / H100, at 2 / 4 / 8 rows:
    // - 51200×5120 (six: 54 tiles against 64): 42.75 → 38.97, 45.38 → 39.52, 46.73 → 38.93 / 50.06 →
    //   51.78, 50.33 → 52.06, 52.42 → 51.93 (the H100's best, 16-tile blocks, 48.4-49.0);
    // - 73728×4608 (72 against 80): 49.17 → 46.45, 51.79 → 46.87, 53.06 → 47.56 / 64.85 → 63.90, 65.12 →
    //   64.31, 66.82 → 64.80 (16-tile blocks: H200 52.8-52.9);
    // - 65536×5120 (16 tiles: 64 against 66): 45.50 → 42.95, 47.62 → 43.25, 50.26 → 43.49 / 63.19 → 60.13,
    //   63.22 → 60.40, 63.62 → 61.02; 57344×5120 at 4 rows 46.10 → 41.79 / 56.01 → 53.34;
    // - 57344×8192 (64 chunks): 69.12 → 64.65, 73.42 → 65.33, 73.64 → 64.66 / 86.07 → 82.90, 86.74 →
    //   83.30, 90.12 → 84.65 (six tiles there: H100 92.7-93.2).
    const bool bf16_wide_registers = sm90a && stage_per_warp && bucket > 1 && p.act == DType::BF16 &&
                                     (p.bits == 3 || p.bits == 4) && !c.x_shared && c.n_tiles == 8 &&
                                     c.warps_k == 2 && blocks16 <= 5LL * sms;
    if (bf16_wide_registers) {
      if (chunks <= 48 && 10 * wq::busiest_sm_tiles(h, 6) <= 9 * wq::busiest_sm_tiles(h, 16)) {
        c = make(1, 6, 4, 2);
      } else {
        c = make(1, 8, 1, 3);
        c.warps_n = 2;
      }
      c.x_shared = true;
    }
    // Heuristic v36 (sixtieth session, out of sample on the H200): 1-8 rows, 4-bit weights in groups of 128
    // with integer zeros, left in v5's registers config of 4 tiles × 2 warps along K (over 4 blocks of 4
    // tiles per SM, K over 32 chunks, where v27 stages nothing): 4 warps along K wherever those 4-warp
    // blocks all fit in one wave. v5 took 2 warps so that the last wave is short; in one wave there is
    // none, and twice the warps keep twice the loads in flight. A block of 4 warps holds 72 registers a
    // thread in fp16 (and bf16 at one row: 68-70, allocated as 72), so 7 fit per SM; bf16 from 2 rows
    // holds 80, so 6. H200 bench, µs, (1,4,1,2,1,2) → (1,4,1,4,1,2) at 1 / 8 rows, fp16: 18432×16384
    // 50.7 → 40.0 / 60.4 → 44.7 (1.35× at 8 rows), 20480×8192 27.8 → 23.2 / 32.3 → 24.8, 24576×8192
    // 29.9 → 26.8 / 34.5 → 28.5, 28672×8192 32.6 → 30.3 / 37.0 → 32.2 (the tuned best at 1-2 rows, 0.99-1.00×
    // it at 4-8: the one shipped entry v35 had over 1.15×), 22528×6144 22.5 → 20.1 / 25.8 → 21.9,
    // 27648×5120 21.7 → 20.1 / 24.3 → 21.7, 28672×6144 25.8 → 24.2 / 28.7 → 25.8; bf16 24576×8192 31.2 →
    // 28.0 / 34.9 → 29.6. Over the wave it loses: bf16 28672×8192 (6.8 blocks per SM) at 2-8 rows 35.8-38.1
    // → 40.6-45.1 (at one row 35.1 → 32.0); fp16 32768×6144 (7.8) 29.2-31.1 → 36.1-39.9, 35840×5120 (8.5)
    // 26.9-28.9 → 33.0-37.5. Unmeasured on the H100 (same SMs and registers; its tunes had v35's choice
    // 1.02-1.05× its best on 28672×8192). Other modes, groups, 3- and 8-bit weights and fp16 accumulation:
    // v37 below. Past that wave, fp16 at 2-8 rows: 3 warps along K where those blocks fit in one (9 per SM at
    // 72 registers). H200 bench, µs, (1,4,1,2,1,2) → (1,4,1,3,1,2) at 2 / 8 rows: 32768×6144 29.2 →
    // 27.3 / 31.1 → 28.8, 35840×5120 27.0 → 25.8 / 28.9 → 27.2, 36864×8192 40.8 → 39.3 / 43.8 → 40.9;
    // one row ±1.6 % (and an 8-byte spill there), so not at one row; past 9 per SM it loses too
    // (40960×7168 39.1-41.1 → 48.2-53.0).
    // Heuristic v37 (sixty-first session, H200 bench, out of sample): the same first rule for every other
    // format that reaches v5's registers config, with the wave each one's registers allow
    // (four_warp_register_blocks_per_sm). (1,4,1,2,1,2) → (1,4,1,4,1,2), µs, over 4 blocks a SM (where v5
    // took 2 warps) and inside the wave: faster in all 68 cases of 11 formats at 1 and 8 rows, by 2-31 %
    // (geomean 0.85×; 18432×16384 at 8 rows per channel 58.8 → 40.8, symmetric 57.5 → 42.2; 25344×8192,
    // exactly 6 blocks a SM, at 1 / 8 rows: g64 33.6 → 29.9 / 36.8 → 32.9, bf16 symmetric 31.5 → 27.8 /
    // 35.5 → 29.2, float zeros 35.8 → 34.8 / 38.3 → 36.8). Just past it (25600×8192) the formats at 73-80
    // registers ran −5 to +15 % (per channel at one row 29.5 → 33.9, bf16 symmetric at 8 rows 36.3 → 41.0;
    // float zeros, 79, gained: −10 / −12 %); those at up to 72 (7 blocks fit) gained there and at 28672×8192.
    // Seven are counted for v36's format and, at one row, for 4-bit g128 with integer or no zeros.
    // Heuristic v38 (sixty-second session): seven for every 3/4-bit format whose 4-warp config holds up to 72
    // registers (the table in wq_gemm_registers.cpp), as the sixty-first session's runs past the wave
    // sorted them.
    const bool v5_two_warps = sm90a && v5 && !c.x_shared && c.warps_n == 1 && c.warps_k == 2 && chunks > 32;
    const bool v5_registers = v5_two_warps && c.n_tiles == 4;
    const bool v36 = v5_registers && p.bits == 4 && p.group_size == 128 &&
                     p.mode == DequantMode::SubZeroThenScale && p.accum == DType::F32;
    // Past the wave, 3 warps stay v36's (fp16): in six other formats at 2 / 8 rows on 28672×8192 and
    // 32768×8192 they ran 0.92-1.02× (0.99 median), on 35840×5120 1.10-1.32×.
    if (v5_registers && col_blocks <= wq::four_warp_register_blocks_per_sm(p, bucket) * sms)
      c.warps_k = 4;
    else if (v36 && p.act == DType::F16 && bucket > 1 && col_blocks <= 9LL * sms)
      c.warps_k = 3;
    // Heuristic v40 (sixty-second session, out of sample: an H200 tune of the seventh set in 3-bit g128,
    // fp16): 3-bit weights at one row, where v5's 2-warp config stays (past the 4-warp wave), take 8 tiles
    // a warp staged per warp, 4 warps along K. Tuner times, that config against the best: 28672×5120 1.05×,
    // 32768×6144 1.04×, 40960×7168 and 73728×4608 the best, 45056×8192 1.06×; v5's (1,4,1,2,1,2) 1.11-1.21×
    // (on 73728×4608, over 40 tiles a SM, its 8-tile form (1,8,1,2,1,2): 1.20×).
    // (A 3-bit tile is 12 bytes a lane where a 4-bit one is 16: a warp needs more tiles to keep as many
    // bytes in flight.)
    else if (v5_two_warps && (c.n_tiles == 4 || c.n_tiles == 8) && p.bits == 3 && bucket == 1) {
      c = make(1, 8, 4, 2);
      c.x_shared = true;
    }
  } else if (bucket <= 16 && stage_per_warp) {
    // Activations staged per warp (x_shared with one warp along N; docs/perf-notes.md, "wq_gemm
    // v9"): 4 tiles × 8 warps along K (~124 registers before the 16-row operand swap, ~99 since;
    // with 2 stages two blocks fit per SM, with 3 one), 3 stages up to 4 tiles per SM, else 2 (re-tuned after
    // the swap: the heuristic within 10 % of the best on the six standard layers of the H200 at 16 rows).
    // Wide layers (over 12 tiles per SM): 8 tiles × 4 warps (over 20: 4 × 4; v26/v30 below: 2 × 2 warps on
    // short K). Few column blocks (1280-wide shards): 2 tiles per warp for twice the blocks. Re-tunes of both
    // GPUs: 4-23 % faster than the per-warp registers of v5. Measured on W4; at 2 bits 8192² the registers
    // still won (H100 14.6 µs against 16.0).

    // Heuristic v9: 8-bit weights up to 12 tiles per SM: 4 warps along K (a chunk is twice the bytes of 4-bit
    // ones), the best config of the H200's W8 re-tunes at 16 rows on 4096², 6144×4096 and 8192²
    // (6144×4096: 9.34 µs against 11.58 with 8 warps).
    c = make(1, 4, 8, tiles_per_sm <= 4 ? 3 : 2);
    // v26 (forty-third session, out of sample): short K (16 chunks or fewer) shares each chunk's
    // activations between 2 warps side by side, 2 along K (22016×2048 bench: H100 10.65 µs against
    // 12.29 for (1,4,1,4), H200 9.90 against 10.65; on the long-K wide layers of the shipped files
    // it lost: H100 37888×3584 35.46 against 28.38 for the tuned (1,4,2,1)).
    // v30 (forty-seventh session, out of sample): up to 32 chunks on 20-24 tiles per SM (21121-25344
    // columns on 132 SMs), where the 8-tile blocks of 2 warps side by side put no more tiles on the busiest
    // SM than v9's 4-tile blocks (3 blocks of 8 against 6 of 4). Qwen3-8B's gate+up, 24576×4096 (23.3): the
    // H100 tune's best, 1.02× the H200's (its best had 3 stages), where (1,4,1,4) ran 1.16× (H100) and
    // 1.06× (H200); bench, µs, H200 18.60 → 17.43 (bf16 19.80 → 19.75), H100 24.12 → 20.72 (bf16 23.67 →
    // 21.19). Not 25600×4096 (24.2: 4 blocks of 8 against 7 of 4): H200 bench 19.62 → 21.24 (bf16 22.32 →
    // 24.22), though the H100's tune had it 1.07 → 1.00. Not wider: in the shipped files this config ran
    // 28672×4096 1.02× (H100) and 1.06× (H200) the best. Like v26, any group size and 3-bit weights too
    // (measured: 4-bit, groups of 128).
    // v34's exception to v9's 8-bit rule below: 2-8 rows under one 4-tile block per SM, from 32 chunks.
    const bool eight_bit_few_blocks_long_k = sm90a && bucket <= 8 && ceil_div(tiles, 4) < sms && chunks >= 32;
    const bool pair_sharing_chunks = chunks <= 16 || (tiles_per_sm <= 24 && chunks <= 32);
    if (v26 && tiles_per_sm > 20 && pair_sharing_chunks)
      c.warps_n = 2, c.warps_k = 2;
    else if (tiles_per_sm > 20)
      c.warps_k = 4;
    else if (tiles_per_sm > 12)
      c.n_tiles = 8, c.warps_k = 4;
    else if (2 * ceil_div(tiles, 4) < sms)
      c.n_tiles = 2;
    // v34 (fifty-first session, out of sample): not 8-bit weights at 2-8 rows (v33 sends them here) on layers
    // of fewer 4-tile blocks than SMs from 32 chunks, which keep 8 warps along K (and v9's 3 stages). H200
    // tune of the fifth set, Gemma-2-2B's down 2304×9216 (72 blocks): (1,4,1,4,1,3) staged 1.17-1.22× the
    // best at 2, 4 and 8 rows, this config the best; on the other such layers tuned at 2-8 rows (3072×4096,
    // 3584×4096, 4096×7168, 4096×12288, 4096×12800; both GPUs) within 1.044× wherever timed.
    else if (p.bits == 8 && !eight_bit_few_blocks_long_k)
      c.warps_k = 4;
    // Heuristic v24: more than two blocks of 4 tiles per SM (10240×8192): 4 warps along K. Two 8-warp
    // blocks fit per SM, so a third runs in a second wave; 4-warp blocks fit in one. The tuned best of
    // both GPUs at 16 rows (bench: H100 18.48 µs against 25.33 for 8 warps, H200 16.77 against 18.67).
    // (Not 1- and 2-bit weights: v13 below gives them 8 tiles per warp, whose blocks fit in one wave;
    // v27's 6-tile rule below may then take a quarter off the busiest SM with 6.)
    else if (ceil_div(tiles, 4) > 2LL * sms && p.bits > 2)
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
    // Heuristic v29 (forty-sixth session, out of sample; H200 tune, 8-bit weights at 16 rows):
    // - Over 12 up to 20 tiles per SM: 8 tiles × 2 warps along K (v9's 4 warps keep 4.5 chunks each on
    //   Gemma-2-2B's gate+up, 18432×2304: 1.25× the best, (1,4,2,2,1,2); this config 1.05×). The best of
    //   both shipped files on 16384², where 4 warps ran 1.015-1.017× it.
    // - Over 40 tiles per SM: v22's config with 2 stages. Mistral-Small-24B's gate+up, 65536×5120 (62
    //   tiles per SM): 3 stages 1.26× the best, this config; 25600×4096 (24) keeps 3, its best.
    if (sm90a && p.bits == 8 && tiles_per_sm > 12 && tiles_per_sm <= 20) c.warps_k = 2;
    if (sm90a && p.bits == 8 && tiles_per_sm > 40) c.stages = 2;
    // v32 (forty-ninth session, out of sample): over 4 of v22's 16-tile blocks per SM (67584 columns on 132
    // SMs), whose 4 warps (121 registers) fit 4 per SM, so a second wave runs: 8 tiles × 2 warps side by
    // side, 2 stages. Gemma-2-27B's gate+up, 73728×4608, tunes: v22/v29's (1,4,4,1,1,2) 1.22× (H200)
    // and 1.28× (H100) the best; this config the H200's best, 1.012× the H100's. H200 bench 102.90 → 84.55
    // µs.
    if (sm90a && p.bits == 8 && blocks16 > 4LL * sms) c.n_tiles = 8, c.warps_n = 2, c.stages = 2;
    // Heuristic v28 (forty-fifth session, out of sample): 3/4-bit over 40 tiles per SM and 16 chunks
    // (Mistral-Small-24B's gate+up, 65536×5120; Llama-3-70B's, 57344×8192): 8 tiles × 2 warps side by
    // side sharing each chunk's activations, one along K, 3 stages. H200 tune, 65536×5120: the best in
    // W4 f16 (bf16's best took 2 stages), v27's (1,4,1,4) 1.13× / 1.21× behind. Bench against v27's, µs,
    // H200 / H100: f16 47.56 / 54.69, 62.55 / 65.55; bf16 52.35 / 60.74, 62.83 / 66.15; 57344×8192 f16
    // 71.42 / 75.32, 88.14 / 92.29.
    // v31 (forty-eighth session, out of sample): bf16 with 2 stages, its tunes' best on 65536×5120 (H200).
    // Bench, µs, 3 → 2 stages, H200 / H100: 51200×5120 51.85 → 48.13 / 52.56 → 52.90; 65536×5120 52.39 →
    // 49.48 / 63.05 → 62.42; 57344×8192 81.40 → 75.22 / 87.58 → 87.90; 49152×4096 (H200) 42.01 → 38.81.
    // Qwen3-32B's gate+up (51200×5120) ran 1.17× the H200 tune's best with 3 stages (an x_sums config, 45.14
    // µs; 2 stages benched 48.13). 4 stages ran 2-3 % ahead of 2 on the H200 and up to 8 % behind 3 on the
    // H100.
    if (v28_band) c.n_tiles = 8, c.warps_n = 2, c.warps_k = 1, c.stages = p.act == DType::BF16 ? 2 : 3;
    // Heuristic v32 (forty-ninth session, out of sample): v28's 2-warp blocks of 16 tiles run near a fixed
    // time per block, so they lose at both ends of its band. Bench, µs, v31 → v32, H200 / H100:
    // - Up to 3 of those blocks per SM (up to 48 tiles; 50688 columns on 132 SMs): 2 warps along K as well,
    //   (1,8,2,2,1,2), whose 168 registers fit 3 four-warp blocks per SM in one wave. Command-R's gate+up,
    //   45056×8192: f16 70.34 → 55.72 / 71.36 → 72.03, bf16 74.17 → 59.90 / 77.14 → 72.32; 49152×4096 f16
    //   36.81 → 30.05 / 39.30 → 40.12, bf16 38.98 → 32.09 / 42.10 → 40.68. Not 51200×5120 (past one wave):
    //   H100 f16 50.18 → 58.10.
    // - Over 4 per SM (over 64 tiles; 67584 columns), where bf16's 2-stage blocks (178 registers: 2 warps in
    //   each quarter, 4 blocks per SM) run a second wave: 6 tiles × 2 warps along K, 2 stages, the best of
    //   both GPUs' bench in both dtypes (within 0.7 %). Gemma-2-27B's gate+up, 73728×4608: f16 59.26 → 53.93
    //   / 71.50 → 66.39, bf16 71.46 → 56.56 / 81.54 → 66.53. Between the two (50689-67584 columns; measured
    //   51200, 57344, 65536) v28/v31 stay the best.
    if (v28_band) {
      if (blocks16 <= 3LL * sms)
        c.warps_k = 2, c.stages = 2;
      else if (blocks16 > 4LL * sms)
        c = make(1, 6, 2, 2);
    }
    // v32: 3.5-4 blocks of 8 tiles per SM (28-32 tiles; 29569-33792 columns on 132 SMs) from 48 chunks:
    // 8 tiles × 2 warps along K, 3 stages; its 176-180 registers fit 2 warps in each quarter of the
    // SM's registers, 4 such blocks per SM, one wave.
    // InternLM2-20B's gate+up, 32768×6144: H200 tunes' best in f16 (v31 1.08×) and bf16, bench bf16 37.54 →
    // 32.06; H100 f16 40.60 → 40.41, bf16 41.24 → 40.69. Not past 4 blocks: 40960×7168 on the H100 f16 60.66
    // → 74.30 (a second wave).
    if (sm90a && (p.bits == 3 || p.bits == 4) && 2 * blocks8 > 7LL * sms && blocks8 <= 4LL * sms &&
        chunks >= 48)
      c = make(1, 8, 2, 3);
    // Heuristic v23 (thirty-ninth session): 6 tiles per warp (48-column blocks, 8 warps along K) where
    // those blocks fill 70-100 % of the SMs once and the rules above put more tiles on
    // the busiest SM: 4608-6336 columns on 132 SMs (Qwen2.5-7B's 4608×3584, Llama-3-70B's 5120×8192
    // at TP 2, 6144×K), whose 32-column blocks leave some SMs with twice the others' work. H200, 16
    // rows, µs against the tuned entries: 6144×4096 W4 f16 6.43 / 7.25, bf16 6.74 / 7.55, W2 6.06 /
    // 6.87, W8 8.72 / 8.94; 5120×8192 10.12 / 11.70; 4608×3584 5.76 / 6.49. (Not beyond one wave:
    // 28672×4096 ran 21.70 µs with (1,6,1,4) against 20.15 with its tuned (1,4,1,4).) The stages stay
    // the rule's (2 on these layers): the H100's tunes took 2 on all three (3 ran 2.4-6 % slower), the
    // H200's 3 on some (2 ran 1-2 % slower).
    const auto busiest = [&](int nt) { return wq::busiest_sm_tiles(h, nt); };
    const int64_t blocks6 = ceil_div(tiles, 6);
    // v27 (forty-fourth session, out of sample): beyond one wave too where 6 tiles take at least a
    // quarter off the busiest SM's tiles, keeping the warps along K. Qwen2.5-1.5B's gate+up,
    // 17920×1536 (2240 tiles): 3 blocks of 6 tiles on the busiest SM against 3 of 8; H200 tune, W4
    // f16 7.43 µs against 9.62 for (1,8,1,4), bf16 7.67 against 9.79; W2 9216×3072 (2 blocks of 6
    // against 2 of 8) 7.91 against 10.55 in the bench. (28672×4096 and the other shipped wide layers gain
    // no quarter: 4 tiles × 7 blocks against 6 × 5.) Measured at 2 and 4 bits (1 and 3 follow); within
    // one wave v23's rule alone decides (the tuner has not timed 6 tiles under its 70 % fill).
    const bool one_wave6 = wq::blocks_fill_within(h, 6, wq::kSixTileMinFillPercent, 100);
    const bool quarter_off6 =
        sm90a && p.bits <= 4 && blocks6 > sms && 4 * busiest(6) <= 3 * busiest(c.n_tiles);
    if (c.warps_n == 1 && c.n_tiles >= 4) {
      if (busiest(6) < busiest(c.n_tiles) && one_wave6)
        c.n_tiles = 6, c.warps_k = 8;
      else if (quarter_off6)
        c.n_tiles = 6;
    }
    // Heuristic v43 (sixty-third session, out of sample): 3/4-bit weights in groups of 128 (integer zeros
    // or symmetric) where the rules above leave 4 tiles × 8 warps and blocks of 8 tiles fill 70-100 % of the
    // SMs in one wave (6337-8448 columns on 132 SMs: v23's 6 tiles take those up to 6336), 48 chunks or
    // more: 8 tiles a warp. Not where the format dequantizes every weight before the MMA (its ALU bounds
    // it: 3-bit g64 8192² ran this config 1.026×), nor per channel or 4-bit g256 (4-bit 8192²: 1.049× /
    // 1.010×). 3-bit g256 takes it (sixty-fourth session: 8192×6144 tune 1.16×, the best (1,8,1,8,1,3)).
    // - 3-bit, H200 tunes, (1,4,1,8,1,2) against the best: 8192×14336 1.22, 8192×6144 1.16-1.18,
    //   7168×8192 1.15, 8192² 1.12 (this config 1.00-1.04 where timed). Bench, µs, f16 / bf16: 8192×14336
    //   23.05 → 19.38 / 22.56 → 19.78, 8192² 14.03 → 12.14 / 13.77 → 12.52, 7168×8192 14.00 → 12.11 /
    //   13.77 → 12.42, 8192×6144 11.19 → 9.91, 8192×28672 44.10 → 35.86.
    // - 4-bit: the H200 file's f16 entries on such layers from 56 chunks hold this config (8192², 7168×8192,
    //   8192×14336; 8192×7168 and 8192×28672 with 3 stages), where (1,4,1,8,1,2) ran 1.05-1.14× (H100
    //   1.03-1.06×, its bests 4 tiles × 4 warps: this config 1.02-1.04×); GPTQ symmetric bf16 8192×6144
    //   tune (H200): 1.12×, this config the best. Bench (H200, call 4), µs, f16: 8192×28672 38.59 → 34.38,
    //   7168×20480 27.99 → 25.13, 8192×14336 20.59 → 18.99, 8192² 12.78 → 12.05, 7168×8192 12.70 → 11.90,
    //   8192×6144 10.32 → 9.83; bf16 0.87-0.91× (8192×14336 22.81 → 19.74); symmetric 0.91-0.96×.
    const bool v43 = sm90a && (p.bits == 3 || p.bits == 4) && wq::eight_tile_groups(p) &&
                     !wq::dequantizes_every_weight(p) && c.warps_n == 1 && c.n_tiles == 4 && c.warps_k == 8 &&
                     wq::blocks_fill_within(h, 8, 70, 100) && chunks >= 48;
    if (v43) c.n_tiles = 8;
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
    // Heuristic v24: over 6 up to 8 tiles per SM (8192×K, 7168×8192) with 16 chunks or more, 4-bit:
    // one 32-row block instead of two 16-row ones, the tuned best of every such entry of the H100 and
    // of the H200 but 8192×14336's (wgmma there, 1.03× on the H100): H100 8192² 18.89 µs against
    // 20.65 for (1,8,1,4), 8192×7168 17.02 against 18.44 (tuner times); H200 bench (call 8) 8192×14336
    // 29.90 against 33.14 for (1,8,1,4) (call 4), 1.06× its tuned wgmma config.
    if (tiles_per_sm > 6 && tiles_per_sm <= 8 && chunks >= 16 && p.bits == 4 && bucket == 32) c.m_tiles = 2;
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
    // v27, out of sample again (H100 tune): under one wave of 2-tile blocks (2 row blocks × ⌈tiles / 2⌉
    // under the SM count: under 1056 columns on 132 SMs), 2 tiles a warp and 3 stages, twice the blocks.
    // Qwen2.5-0.5B's down, 896×4864 (38 chunks): 4.31 µs against 5.77 for (1,4,1,8,1,2). (1280×8192, 160
    // such blocks, keeps its 4 tiles: both files' best.) Not from 64 chunks, where v26's 16 warps along K
    // apply (unmeasured together); 4-bit weights as measured (3 follows).
    if (v26 && 2 * ceil_div(tiles, 2) < sms && chunks < 64) c.n_tiles = 2, c.stages = 3;
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
    if (wq::mma_cluster_split(s, arch)) c = s;
  }
  // Heuristic v47 (sixty-fourth session, out of sample): 4-bit fp16 accumulation, which cannot run wgmma, at
  // 64 rows on sm_90a over 4.2 up to 6 tiles a SM (4440-6336 columns on 132 SMs) from 32 chunks: block-shared
  // activations in 2 × 2 warps of 2 × 4 tiles, K split in two, 2 stages. H200 tune of 6144×16384: v9's
  // register config (1,8,1,4,1,4) 1.46× the best, which is this one. Bench (H200, both forced), µs, the
  // heuristic before → this: 6144×4096 23.71 → 15.11, 6144×8192 40.06 → 26.43, 6144×16384 71.05 → 49.13,
  // 6144×28672 119.59 → 83.00, 5120×16384 (1,4,1,2,1,3) staged 69.42 → 48.79. Both changes count: 3 stages
  // unsplit 69.20 at 6144×16384, split 2 with 3 stages 57.12. Unmeasured: 5120×4096 (its tune's best
  // (1,4,1,4,1,2) staged, the heuristic before 1.107×), and 4096-wide layers (v18/v31's 8 tiles, left alone).
  // 4-bit weights as measured; not other widths or deterministic problems (unmeasured; v9 leaves the latter
  // too). scripts/inputs/benches-session64-v47.txt holds the next checks.
  if (sm90a && p.accum == DType::F16 && p.bits == 4 && !p.deterministic && bucket == 64 &&
      tiles_per_sm > 4.2 && tiles_per_sm <= 6 && chunks >= 32) {
    c = make(2, 4, 2, 2);
    c.warps_n = 2, c.split_k = 2, c.x_shared = true;
  }
  // A split that meets in a cluster (sm_90) adds its receive region to the block's shared memory:
  // fit again, keeping the split.
  wq::shrink_to_fit(p, c, arch, /*keep_k_split=*/true);
  return c;
}

}  // namespace lowbit

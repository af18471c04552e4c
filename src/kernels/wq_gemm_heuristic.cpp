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
  // - Not at 32 rows any more (v24: again on the widest large layers, below): wgmma (one 32-row tile) was
  // best on 7 of 9 large layers there until
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
  // Heuristic v18's four-way K split of 128-column blocks of 64 rows (below), where it makes 0.7-1 wave
  // and each piece keeps 16 chunks or more.
  const int64_t four_way_blocks = 4 * blocks_128(4);
  const bool four_way_64 =
      bucket == 64 && four_way_blocks >= 0.7 * sms && four_way_blocks <= sms && chunks >= 4 * 16;
  // Heuristic v24 (forty-first session, docs/perf-notes.md: fitted to the tuned entries of both shipped
  // files where v23 ran over 1.15× them, then benched): the layers of 8-48 M weights under 5 tiles per
  // SM (most of which no rule above sends to wgmma; v4's K-heavy 128-row rule did, with the image)
  // ran mma.sync at 1.2-2.0× the tuned best at 64 and 128 rows,
  // whose every tuned best was a wgmma config: four-way splits where v18's apply (3584×8192 at 64
  // rows), else mostly stream K over 128-column blocks. Bench, v23's config → v24's, H200 (H100), µs:
  // 5120×8192 M = 64 38.12 → 19.53 (36.16 → 19.87), M = 128 44.07 → 27.35 (43.83 → 27.16); 2560×8192
  // M = 64 22.96 → 13.41; 1280×8192 M = 64 14.97 → 10.06, M = 128 20.64 → 13.11; 4608×3584 M = 64
  // 18.44 → 12.45, M = 128 20.80 → 17.22; 3584×8192 M = 64 19.78 → 15.24 (W8 on the H100 21.15 →
  // 18.13). Not 3584² and 4096² at 64 rows (under 64 chunks), whose best is mma.sync. 4-bit weights
  // of every group size, as v4's large-layer rule (measured on groups of 128; per-channel compiles
  // without spills), and 2/8-bit with groups of 128 at the four-way split.
  const bool few_blocks_wgmma = rows_64_128 && weights >= 8e6 && !large && tiles_per_sm < 5 && chunks >= 28 &&
                                !(bucket == 64 && tiles_per_sm <= 4 && chunks < 64) &&
                                (p.bits == 4 || (four_way_64 && p.group_size == 128));
  // Heuristic v24: 32 rows on large layers of 9 or more tiles per SM or 144 chunks or more (10240×8192 and
  // wider; 8192×28672, 3584×18944, and out of sample 5120×27648), one 32-row tile per block of two MMA
  // warpgroups: the tuned best of every such entry on both GPUs (3584×18944's on the H100 1.03×; 5120×27648
  // 1.01× in an H200 tune, against 1.40× for the mma.sync config). Bench against v23's block-shared
  // mma.sync, H200 (H100): 28672×8192 61.53 → 51.18 µs (61.66 → 52.52), 16384² 62.02 → 52.70,
  // 14336×8192 32.08 → 28.94, 10240×8192 29.39 → 24.39 (35.70 → 25.08). (v4 had left wgmma at 32
  // rows when the mma.sync kernel swapped its operands; the image and the cluster and stream-K splits
  // came after.) 4-bit weights, as measured.
  const bool wide_32 = bucket == 32 && large && (tiles_per_sm >= 9 || chunks >= 144) && p.bits == 4;
  const bool wgmma_rows = (rows_64_128 && large) || one_wave_128 || k_heavy_128 || mid_wgmma || pair_wave ||
                          narrow_w8_64 || few_blocks_wgmma || wide_32;
  const bool measured_format =
      p.bits == 4 || ((p.bits == 2 || p.bits == 8) && p.group_size == 128 && bucket >= 64);
  if (wq::has_wgmma(arch) && wq::may_run_wgmma(p) && measured_format && wgmma_rows) {
    // v24: all 128 rows per block also on the few-block layers from 4 tiles per SM (5120×8192 M = 128:
    // the seven best configs of both GPUs' tunes all take the 128 rows per block, stream K first: 27.7
    // µs on the H200, 64-row blocks over 1.13× that).
    const bool all_rows_128 = bucket == 128 && (large || (few_blocks_wgmma && tiles_per_sm >= 4));
    WqGemmConfig w = make(wide_32        ? 2
                          : all_rows_128 ? 8
                                         : 4,
                          one_wave_128 || mid_wgmma || all_rows_128 ? 2 : 4, 1, 3);
    w.warps_n = 8, w.wgmma = true;
    w.split_k = wq::fill_split(p, w, sms / 2.0);
    const int64_t w_blocks =
        ceil_div(tiles, w.n_tiles * w.warps_n) * ceil_div(bucket, 16 * w.m_tiles) * w.split_k;
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
    //   128-column blocks over all of K won where it makes 0.7-1.5 blocks per SM (v24: at most 1): at 128
    //   rows 64 rows per block on 8192² (W4 f16 36.7 µs against 43.1 for v14's stream K) and 6144×4096 (20.6
    //   against 22.8), all of them on 16384²; at 64 rows on 16384² (70.6 against 79.7 for two m64 tiles, K
    //   split in 2).
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
    // Heuristic v24: at 128 rows on K-heavy layers (96 chunks or more) where four-way K splits of
    // 128-column blocks of all 128 rows make 0.7-1 wave (4096×14336, 3584×18944), that split: the
    // tuned best of both files on 4096×14336 in every format but the H100's W8 (1.02× there), 1.02-1.04×
    // on 3584×18944, where the pair below ran 1.12-1.21× the best (H100 bench, bf16 47.81 µs against 39.68).
    const int64_t four_way_128 = 4 * blocks_128(8);
    if (bucket == 128 && four_way_128 >= 0.7 * sms && four_way_128 <= sms && chunks >= 96) {
      WqGemmConfig s = blocks_128_config(8, 3);
      s.split_k = 4;
      if (can_implement(p, s, arch)) return s;
    }
    for (int mt : {8, 4}) {
      if (!pair_wave_at(mt)) continue;
      WqGemmConfig pair = blocks_128_config(mt, 3);
      pair.split_k = 2;
      if (can_implement(p, pair, arch)) return pair;
    }
    // v24: one wave at most (was up to 1.5 blocks per SM): one block fits per SM, so more run in two
    // waves (10240×8192 M = 128, 160 blocks of 64 rows: 68.50 µs on the H200, 68.59 on the H100; the
    // stream K below 43.46 and 43.17).
    for (int mt : {8, 4}) {
      const int64_t blocks = blocks_128(mt);
      if (mt * 16 > bucket || blocks < 0.7 * sms || blocks > sms) continue;
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
    //   cluster pair of 64-row blocks is within 6 % there, and stream K won on 3584×18944. (v24 splits
    //   128-row blocks four ways there, above.)
    if (narrow_w8_64) {  // v21, above: 3 stages, no image (both files' entry)
      WqGemmConfig s = blocks_128_config(4, 3);
      s.split_k = 4, s.x_image = false;
      if (can_implement(p, s, arch)) return s;
    }
    if (four_way_64) {
      WqGemmConfig s = blocks_128_config(4, 4);
      s.split_k = 4;
      if (can_implement(p, s, arch)) return s;
    }
    if (mid_wgmma && bucket == 128) {
      WqGemmConfig s = blocks_128_config(8, 3);
      s.stream_k = true;
      if (can_implement(p, s, arch)) return s;
    }
    // v24: the image only from 4 tiles per SM on the few-block layers: with few column blocks the
    // activations are read by few blocks and the image's launch is not repaid (tunes: 1280×8192 M = 128
    // 13.4 µs without, 14.4 with; 2560×8192 M = 64 13.8 / 14.4; 5120×8192 M = 64 20.6 / 20.1; H200).
    // This takes it from v4's K-heavy 128-row layers under 4 tiles per SM too (2560×8192: H100 19.65
    // without, 20.61 with).
    const bool image = !few_blocks_wgmma || tiles_per_sm >= 4;
    // (v24: at 32 rows only where the split leaves the grid under 0.7 wave: 10240×8192, 80 blocks,
    // took stream K, 14336×8192, 112, kept its split of 2, both files' best.)
    if (w.split_k > 1 && chunks / w.split_k <= 32 && (!wide_32 || w_blocks < 0.7 * sms)) {
      WqGemmConfig s = w;
      s.split_k = 1, s.n_tiles = 2, s.stream_k = true, s.x_image = image;
      if (can_implement(p, s, arch)) return s;
    }
    // v24: stream K also where the unsplit grid is under 0.7 wave (10240×8192 M = 128, 80 blocks of 128
    // rows: 42.7 µs against 49.3 in the H200's tune) or between one and 1.5 (37888×3584 M = 64, 148
    // blocks of 256 columns: bench 47.24 µs against 58.58 on the H200), keeping the block's tiles there;
    // and up to 64 rows where the K split still leaves it under 0.7 wave with over 32 chunks a piece
    // (5120×27648, out of sample, H200 tune: M = 32 37.0 µs against 51.4 for the mma.sync config the
    // heuristic ran; M = 64 48.2 against 59.6 for (4,4,8,1) split 4; not at 128 rows, where stream K
    // was not within 1.2× of the best).
    const bool under_wave = w_blocks < 0.7 * sms && (w.split_k == 1 || bucket <= 64);
    if (under_wave || (w.split_k == 1 && w_blocks > sms && w_blocks <= 1.5 * sms)) {
      WqGemmConfig s = w;
      s.split_k = 1, s.stream_k = true, s.x_image = image;
      if (w_blocks < 0.7 * sms) s.n_tiles = 2;
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
      // v24: staged 8-warp blocks over two per SM (10240×8192 at 8 rows) run a second wave; 4 warps
      // along K fit in one: both files' best (bench: H200 14.55 µs against 17.07, H100 17.49 against 22.00).
      if (v5 && c.n_tiles == 4 && c.warps_k == 8 && col_blocks > 2LL * sms) c.warps_k = 4;
      // Heuristic v21 (thirty-first session): bf16 4-bit weights at one row from 6 tiles per SM (8192²)
      // take 8 tiles per warp, like 2-bit ones (v19): their zero comes after the MMA, so each chunk
      // carries Σ MMAs that more tiles share. The best of both GPUs' files (H200 (1,8,1,8) 10.70 µs
      // with 3 stages, 11.78 with 2, against 12.29 for v20's 4 tiles; H100 14.50 with 2 stages against
      // 14.78).
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
    // Heuristic v24: more than two blocks of 4 tiles per SM (10240×8192): 4 warps along K. Two 8-warp
    // blocks fit per SM, so a third runs in a second wave; 4-warp blocks fit in one. The tuned best of
    // both GPUs at 16 rows (bench: H100 18.48 µs against 25.33 for 8 warps, H200 16.77 against 18.67).
    // (Not 1- and 2-bit weights: v13 below gives them 8 tiles per warp, whose blocks fit in one wave.)
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
    // Heuristic v23 (thirty-ninth session): 6 tiles per warp (48-column blocks, 8 warps along K) where
    // those blocks fill 70-100 % of the SMs once and the rules above put more tiles on
    // the busiest SM: 4608-6336 columns on 132 SMs (Qwen2.5-7B's 4608×3584, Llama-3-70B's 5120×8192
    // at TP 2, 6144×K), whose 32-column blocks leave some SMs with twice the others' work. H200, 16
    // rows, µs against the tuned entries: 6144×4096 W4 f16 6.43 / 7.25, bf16 6.74 / 7.55, W2 6.06 /
    // 6.87, W8 8.72 / 8.94; 5120×8192 10.12 / 11.70; 4608×3584 5.76 / 6.49. (Not beyond one wave:
    // 28672×4096 ran 21.70 µs with (1,6,1,4) against 20.15 with its tuned (1,4,1,4).) The stages stay
    // the rule's (2 on these layers): the H100's tunes took 2 on all three (3 ran 2.4-6 % slower), the
    // H200's 3 on some (2 ran 1-2 % slower).
    const auto busiest = [&](int nt) { return ceil_div(ceil_div(tiles, nt), sms) * nt; };
    const int64_t blocks6 = ceil_div(tiles, 6);
    if (c.warps_n == 1 && c.n_tiles >= 4 && busiest(6) < busiest(c.n_tiles) && blocks6 <= sms &&
        100 * blocks6 >= wq::kSixTileMinFillPercent * sms)
      c.n_tiles = 6, c.warps_k = 8;
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
    // v24: from 28 chunks at 4 bits (3584² M = 64: (1,8,1,4) st3 the tuned best of both GPUs; H200
    // bench 10.04 µs against 10.16 for v7's (2,4,2,2), the tunes' 12.4-12.5 for it being stale).
    const bool per_warp_64 = narrow && (chunks >= 32 || (chunks >= 28 && p.bits == 4));
    if (per_warp_64 && bucket == 64 && p.bits != 8 && stage_per_warp) {
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
  // A split that meets in a cluster (sm_90) adds its receive region to the block's shared memory:
  // fit again, keeping the split.
  wq::shrink_to_fit(p, c, arch, /*keep_k_split=*/true);
  return c;
}

}  // namespace lowbit

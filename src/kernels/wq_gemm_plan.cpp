// wq_gemm plans (compile a layer's kernels per M bucket, own the workspace, check and launch a call) and
// the functional API, which runs one cached plan per problem.
#include <algorithm>
#include <cstdint>

#include "common/check.hpp"
#include "common/env.hpp"
#include "common/log.hpp"
#include "jit/context.hpp"
#include "jit/driver.hpp"
#include "jit/launch.hpp"
#include "kernels/wq_gemm_internal.hpp"

namespace lowbit {

using wq::ceil_div;

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

// `variant` names a second choice for the same bucket in LOWBIT_PRINT_CONFIGS (ahead-of-time builds
// also compile the config of plans without buffers of their own).
WqGemmConfig config_for_bucket(jit::Context& ctx, const WqGemmProblem& problem, int64_t bucket,
                               const std::optional<WqGemmConfig>& forced, bool allow_own_buffers, bool chain,
                               std::string* source = nullptr, const char* variant = "") {
  WqGemmProblem pb = problem;
  pb.m = bucket;
  wq::Choice choice = wq::choose(ctx, problem, bucket, forced, {allow_own_buffers, chain});
  if (!allow_own_buffers) choice.config.x_image = choice.config.x_sums = false;
  std::string why;
  LOWBIT_CHECK(can_implement(pb, choice.config, ctx.arch(), &why), "wq_gemm cannot run {} with {}: {}",
               pb.str(), choice.config.str(), why);
  if (env_flag("LOWBIT_PRINT_CONFIGS"))
    info(fmt::format("wq_gemm {} m-bucket {}{} -> {} ({})", problem.str(), bucket, variant,
                     choice.config.str(), choice.source));
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
      bk.config = config_for_bucket(ctx, problems[l], bucket, forced, own != OwnBuffers::kCleared, chain,
                                    &bk.config_source);
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
        // What a plan without buffers of its own runs (its choice may differ beyond the flags: an
        // act-order bucket keeps the plain layer's config there, wq::act_order_image_config).
        WqGemmConfig plain = config_for_bucket(ctx, problems[l], bucket, forced, false, chain, nullptr,
                                               " (plans without buffers of their own)");
        if (!forced) plain = wq::config_as_run(problems[l], plain, ctx.arch(), chain);
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
                                         : static_cast<int>(wq::smem_bytes(pb, c, ctx.arch()))));
    int64_t resident = 0;
    if (c.stream_k) {
      const wq::Geometry geo = wq::geometry(problem, c, ctx.arch(), bucket, bucket, 1);
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
        std::max(impl_->workspace_bytes, wq::adds_in_scratch(c) ? wq::counter_bytes(pb.n, pb.m)
                                         : wq::needs_split_workspace(c, ctx.arch())
                                             ? wq::workspace_bytes(pb, c.split_k)
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
  if (wq::needs_split_workspace(b->config, im.ctx->arch()) || b->config.stream_k || permutes_into_workspace) {
    if (ws == nullptr) ws = im.workspace.get();
    LOWBIT_CHECK(
        ws != nullptr,
        "args.workspace is null, but {} needs plan.workspace_bytes() = {} bytes (zero-filled once) {}",
        b->config.str(), im.workspace_bytes,
        permutes_into_workspace ? "for the permuted activations of act-order" : "to split K");
    LOWBIT_CHECK(aligned(ws, 256), "args.workspace = {}: must be 256-byte aligned", ws);
  }
  const wq::Geometry geo = wq::geometry(p, b->config, im.ctx->arch(), m, b->max_m, b->resident_blocks);
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
  // The wgmma kernel's two- and three-way K splits, and the mma.sync kernel's of up to eight pieces
  // (sm_90), add their pieces through a cluster's shared memory.
  if (wq::adds_in_cluster(b->config, im.ctx->arch()))
    options.cluster_y = static_cast<unsigned>(b->config.split_k);
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

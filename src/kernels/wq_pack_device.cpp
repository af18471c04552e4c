// pack_on_device: the packer of wq_pack.cpp as one JIT kernel launch (templates/wq_pack.cuh; act-order:
// two, the permutation first), for weights that are already on the device. Everything that can be checked
// without reading the tensors is checked here first, with pack()'s rules, so a bad view never reaches the
// device.
#include <cstdint>
#include <limits>

#include "common/check.hpp"
#include "jit/context.hpp"
#include "jit/driver.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "kernels/wq_pack_checks.hpp"
#include "lowbit/pack.hpp"

namespace lowbit {
namespace {

constexpr unsigned kThreads = 256;  // kPackThreads in templates/wq_pack.cuh
// Which zero points a launch writes: kPack*Zeros in templates/wq_pack.cuh.
enum class ZeroKind : int { None = 0, Int = 1, Float = 2 };

enum class SourceFormat { Unpacked, Gptq, Awq, Hqq };

// Per SourceFormat, in its order: the name in messages and kernel names, and the Source type of
// templates/wq_pack.cuh.
struct FormatNames {
  const char* name;
  const char* source_type;
};
constexpr FormatNames kFormatNames[] = {{"unpacked", "lowbit::kern::UnpackedSource"},
                                        {"gptq", "lowbit::kern::GptqSource"},
                                        {"awq", "lowbit::kern::AwqSource"},
                                        {"hqq", "lowbit::kern::HqqSource"}};

const char* format_name(SourceFormat f) {
  return kFormatNames[static_cast<int>(f)].name;
}
const char* source_type(SourceFormat f) {
  return kFormatNames[static_cast<int>(f)].source_type;
}
// The bit widths a format's kernel reads (GPTQ: 2, 3, 4, 8; check_gptq_packing refuses the others).
bool reads_bits(SourceFormat f, int bits) {
  return f == SourceFormat::Gptq ? bits != 1 : f == SourceFormat::Awq ? bits == 4 : true;
}

// One kernel per (format, bits): shapes and modes are run-time arguments, so a model's layers
// share a handful of compiles.
jit::KernelSpec pack_kernel_spec(SourceFormat f, int bits) {
  return jit::header_instance_spec("wq_pack", fmt::format("wq_pack_{}_w{}", format_name(f), bits),
                                   "wq_pack.cuh",
                                   fmt::format("lowbit::kern::wq_pack_kernel<{}, {}>", source_type(f), bits),
                                   {{"format", format_name(f)}, {"bits", bits}}, {{"threads", kThreads}});
}

// Act-order: g_idx → perm (wq_pack_perm_kernel; one for every format and width).
jit::KernelSpec perm_kernel_spec() {
  return jit::header_instance_spec("wq_pack", "wq_pack_perm", "wq_pack.cuh",
                                   "lowbit::kern::wq_pack_perm_kernel", nlohmann::json::object(),
                                   {{"threads", kThreads}});
}

// One checked launch: the layout fields of the problem and the source tensors.
struct PackJob {
  SourceFormat format = SourceFormat::Unpacked;
  WqGemmProblem problem;  // n, k, bits, group_size, mode
  const void* q = nullptr;
  const void* zeros = nullptr;  // int or float zeros as the mode says; null for Symmetric
  const uint16_t* scales = nullptr;
  const int32_t* g_idx = nullptr;  // act-order: the permutation is computed into out.perm first
  int zero_offset = 0;             // added to each integer zero (GPTQ v1 stores z − 1)
};

WqGemmProblem layout_problem(int64_t n, int64_t k, int bits, int group_size, DequantMode mode) {
  WqGemmProblem p;
  p.n = n, p.k = k, p.bits = bits, p.group_size = group_size, p.mode = mode;
  return p;
}

void check_shape(const WqGemmProblem& p, const char* what) {
  std::string why;
  LOWBIT_CHECK(can_implement(p, &why), "pack_on_device({}): {}", what, why);
}

bool aligned(const void* p, std::size_t a) {
  return reinterpret_cast<std::uintptr_t>(p) % a == 0;
}

// `field` of pack_on_device(what) is `a`-byte aligned (null passes: the callers check presence).
void check_aligned(const void* p, std::size_t a, const char* what, const char* field) {
  LOWBIT_CHECK(aligned(p, a), "pack_on_device({}): {} = {}: must be {}-byte aligned", what, field, p, a);
}
// ... and not null.
void check_buffer(const void* p, std::size_t a, const char* what, const char* field) {
  LOWBIT_CHECK(p != nullptr, "pack_on_device({}): {} is null", what, field);
  check_aligned(p, a, what, field);
}

// Act-order: pack()'s rule for the group size (the values of g_idx are not checked on the device).
void check_act_order(const int32_t* g_idx, int group_size, const char* what) {
  if (g_idx == nullptr) return;
  check_aligned(g_idx, 4, what, "g_idx");
  LOWBIT_CHECK(group_size != 0,
               "pack_on_device({}): g_idx is set but group_size = 0 (per-channel scales have no groups)",
               what);
}

// The buffers wq_gemm will read: the same alignment rules as WqGemmPlan::run.
void check_outputs(const DevicePackedWeights& out, DequantMode mode, bool act_order, const char* what) {
  check_buffer(out.qweight, 16, what, "out.qweight");
  check_buffer(out.scales, 16, what, "out.scales");
  if (act_order) {
    LOWBIT_CHECK(out.perm != nullptr, "pack_on_device({}): g_idx is set but out.perm is null (K int32)",
                 what);
    check_aligned(out.perm, 16, what, "out.perm");
  }
  if (has_int_zeros(mode) || has_float_zeros(mode)) {
    LOWBIT_CHECK(out.zeros != nullptr,
                 "pack_on_device({}): out.zeros is null but mode = {} writes zero points", what,
                 to_string(mode));
    check_aligned(out.zeros, has_int_zeros(mode) ? 8 : 16, what, "out.zeros");
  }
}

PackJob unpacked_job(const UnpackedWeightsView& v) {
  const char* what = "unpacked";
  const DequantMode mode = unpacked_mode(v, "pack_on_device(unpacked)");
  PackJob job;
  job.format = SourceFormat::Unpacked;
  job.problem = layout_problem(v.n, v.k, v.bits, v.group_size, mode);
  check_shape(job.problem, what);
  check_counts(v, "pack_on_device(unpacked)");
  check_buffer(v.q, 1, what, "q");
  check_buffer(v.scales, 2, what, "scales");
  LOWBIT_CHECK(!has_int_zeros(mode) || v.zeros, "pack_on_device(unpacked): mode = {} needs integer zeros",
               to_string(mode));
  LOWBIT_CHECK(!has_float_zeros(mode) || v.float_zeros,
               "pack_on_device(unpacked): mode = {} needs float zeros", to_string(mode));
  check_aligned(v.float_zeros, 2, what, "float_zeros");
  job.q = v.q;
  job.zeros =
      has_int_zeros(mode) ? static_cast<const void*>(v.zeros) : static_cast<const void*>(v.float_zeros);
  job.scales = v.scales;
  check_act_order(v.g_idx, v.group_size, what);
  job.g_idx = v.g_idx;
  return job;
}

// GPTQ and AWQ: weights and zeros packed in int32 (no zeros: symmetric), fp scales. check_format
// checks the format's bits, packing and element counts.
template <class View, class CheckFormat>
PackJob int32_packed_job(SourceFormat f, const View& v, CheckFormat&& check_format) {
  const char* what = format_name(f);
  PackJob job;
  job.format = f;
  job.problem = layout_problem(v.n, v.k, v.bits, v.group_size,
                               v.qzeros ? DequantMode::SubZeroThenScale : DequantMode::Symmetric);
  check_shape(job.problem, what);
  check_format();
  check_buffer(v.qweight, 4, what, "qweight");
  check_buffer(v.scales, 2, what, "scales");
  check_aligned(v.qzeros, 4, what, "qzeros");
  job.q = v.qweight;
  job.zeros = v.qzeros;
  job.scales = v.scales;
  return job;
}

PackJob gptq_job(const GptqWeightsView& v) {
  PackJob job = int32_packed_job(SourceFormat::Gptq, v, [&] {
    check_gptq_packing(v, "pack_on_device(gptq)", v.qzeros != nullptr);  // bits first, as pack() checks
    check_counts(v, "pack_on_device(gptq)");
  });
  job.zero_offset = v.qzeros && v.zeros_format == GptqZeros::StoredMinusOne ? 1 : 0;
  check_act_order(v.g_idx, v.group_size, "gptq");
  job.g_idx = v.g_idx;
  return job;
}

PackJob awq_job(const AwqWeightsView& v) {
  return int32_packed_job(SourceFormat::Awq, v, [&] {
    check_awq_packing(v, "pack_on_device(awq)");
    check_counts(v, "pack_on_device(awq)");
  });
}

PackJob hqq_job(const HqqWeightsView& v) {
  const char* what = "hqq";
  PackJob job;
  job.format = SourceFormat::Hqq;
  job.problem = layout_problem(v.n, v.k, v.bits, v.group_size, DequantMode::SubFloatZeroThenScale);
  check_shape(job.problem, what);
  check_counts(v, "pack_on_device(hqq)");
  check_buffer(v.w_q, 1, what, "w_q");
  check_buffer(v.scales, 2, what, "scales");
  check_buffer(v.zeros, 2, what, "zeros");
  job.q = v.w_q;
  job.zeros = v.zeros;
  job.scales = v.scales;
  return job;
}

int64_t blocks_for(std::size_t items) {
  return static_cast<int64_t>((items + kThreads - 1) / kThreads);
}

ZeroKind zero_kind(DequantMode m) {
  return has_int_zeros(m) ? ZeroKind::Int : has_float_zeros(m) ? ZeroKind::Float : ZeroKind::None;
}

void launch(Runtime& rt, const PackJob& job, const DevicePackedWeights& out, Stream stream) {
  const WqGemmProblem& p = job.problem;
  const char* what = format_name(job.format);
  check_outputs(out, p.mode, job.g_idx != nullptr, what);
  if (job.g_idx) {
    // The permutation kernel reads all of g_idx while it writes perm: in place, it would read what it
    // wrote.
    const auto a = reinterpret_cast<std::uintptr_t>(job.g_idx),
               b = reinterpret_cast<std::uintptr_t>(out.perm);
    const std::uintptr_t bytes = static_cast<std::uintptr_t>(p.k) * 4;
    LOWBIT_CHECK(
        a + bytes <= b || b + bytes <= a,
        "pack_on_device({}): out.perm = {} overlaps g_idx = {} ({} bytes each): the permutation cannot "
        "be computed in place",
        what, static_cast<const void*>(out.perm), static_cast<const void*>(job.g_idx), bytes);
  }
  const wq::Layout l = wq::layout(p);
  // Blocks [0, qweight_blocks) write qweight words, the rest the [groups_pad][n_pad] entries.
  const int64_t qweight_blocks = blocks_for(l.qweight_bytes / 4);
  const int64_t blocks = qweight_blocks + blocks_for(static_cast<std::size_t>(l.groups_pad * l.n_pad));
  LOWBIT_CHECK(blocks <= std::numeric_limits<int32_t>::max(),
               "pack_on_device({}): n = {}, k = {}: {} blocks of {} threads, over the grid limit of 2^31 - 1",
               what, p.n, p.k, blocks, kThreads);
  const jit::LoadedKernel& k =
      rt.context().load(pack_kernel_spec(job.format, p.bits));  // makes the context current
  int n = static_cast<int>(p.n), kk = static_cast<int>(p.k);
  const int32_t* perm = nullptr;
  if (job.g_idx) {  // the permutation first: the packer reads it
    const jit::LoadedKernel& pk = rt.context().load(perm_kernel_spec());
    int group_size = p.group_size;
    const void* pargs[] = {&job.g_idx, &out.perm, &kk, &group_size};
    const int64_t warps = p.k / p.group_size, per_block = kThreads / 32;
    LOWBIT_CU_CHECK(
        jit::driver().cuLaunchKernel(pk.function, static_cast<unsigned>((warps + per_block - 1) / per_block),
                                     1, 1, kThreads, 1, 1, 0, stream, const_cast<void**>(pargs), nullptr));
    perm = out.perm;
  }
  int groups = p.group_size == 0 ? 1 : static_cast<int>(p.k / p.group_size);
  int groups_pad = static_cast<int>(l.groups_pad);
  int zeros = static_cast<int>(zero_kind(p.mode)), zero_offset = job.zero_offset;
  unsigned qblocks = static_cast<unsigned>(qweight_blocks);
  const void* args[] = {&job.q, &job.zeros, &job.scales, &perm,       &out.qweight, &out.scales,  &out.zeros,
                        &n,     &kk,        &groups,     &groups_pad, &zeros,       &zero_offset, &qblocks};
  LOWBIT_CU_CHECK(jit::driver().cuLaunchKernel(k.function, static_cast<unsigned>(blocks), 1, 1, kThreads, 1,
                                               1, 0, stream, const_cast<void**>(args), nullptr));
}

}  // namespace

PackedSizes packed_sizes(const WqGemmProblem& problem) {
  // Only the fields that shape the layout: M, dtypes and flags do not change it.
  const WqGemmProblem p =
      layout_problem(problem.n, problem.k, problem.bits, problem.group_size, problem.mode);
  std::string why;
  LOWBIT_CHECK(can_implement(p, &why), "packed_sizes: {}", why);
  const wq::Layout l = wq::layout(p);
  return {l.qweight_bytes, l.scales_bytes, l.zeros_bytes};
}

void pack_on_device(Runtime& rt, const UnpackedWeightsView& device_view, const DevicePackedWeights& out,
                    Stream stream) {
  launch(rt, unpacked_job(device_view), out, stream);
}

void pack_on_device(Runtime& rt, const GptqWeightsView& device_view, const DevicePackedWeights& out,
                    Stream stream) {
  launch(rt, gptq_job(device_view), out, stream);
}

void pack_on_device(Runtime& rt, const AwqWeightsView& device_view, const DevicePackedWeights& out,
                    Stream stream) {
  launch(rt, awq_job(device_view), out, stream);
}

void pack_on_device(Runtime& rt, const HqqWeightsView& device_view, const DevicePackedWeights& out,
                    Stream stream) {
  launch(rt, hqq_job(device_view), out, stream);
}

std::vector<KernelRecord> compile_pack_on_device(Runtime& rt, int bits) {
  LOWBIT_CHECK(bits == 1 || bits == 2 || bits == 3 || bits == 4 || bits == 8,
               "compile_pack_on_device: bits = {}: weights must have 1, 2, 3, 4 or 8 bits", bits);
  std::vector<KernelRecord> out;
  std::vector<jit::KernelSpec> specs;
  for (SourceFormat f : {SourceFormat::Unpacked, SourceFormat::Gptq, SourceFormat::Awq, SourceFormat::Hqq})
    if (reads_bits(f, bits)) specs.push_back(pack_kernel_spec(f, bits));
  specs.push_back(perm_kernel_spec());  // act-order, every format
  for (const jit::KernelSpec& spec : specs) {
    KernelRecord rec;
    rt.context().compile(spec, &rec);
    rec.config = fmt::format("threads={}", kThreads);
    out.push_back(rec);
  }
  return out;
}

}  // namespace lowbit

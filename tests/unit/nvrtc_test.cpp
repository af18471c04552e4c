// Real NVRTC compiles of wq_gemm for several archs, offline (no GPU, no driver), and the memory and
// disk caches serving them afterwards. Each compile costs seconds: this file does five.
#include "jit/nvrtc.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "jit/context.hpp"
#include "jit/disk_cache.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "support/test_support.hpp"
#include "unit/unit_helpers.hpp"

namespace {

using lowbit::KernelRecord;
using Source = lowbit::KernelRecord::Source;

using lowbit::test::problem_4096;
const auto offline = lowbit::test::offline_options;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string source_name(Source s) {
  return std::string(lowbit::to_string(s));
}

}  // namespace

TEST_CASE("offline Runtime: options are checked", "[nvrtc]") {
  lowbit::test::TempDir dir;
  SECTION("device -1 needs an arch") {
    const std::string msg = lowbit::test::error_of([&] { lowbit::Runtime rt(offline("", dir.path)); });
    INFO(msg);
    CHECK(msg.rfind("<", 0) != 0);
    CHECK(lowbit::test::contains(msg, "arch"));
  }
  SECTION("an unknown arch is named") {
    const std::string msg = lowbit::test::error_of([&] { lowbit::Runtime rt(offline("sm_42", dir.path)); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "sm_42"));
  }
  SECTION("an offline runtime reports itself and cannot reach a device") {
    lowbit::Runtime rt(offline("sm_90a", dir.path));
    CHECK(rt.offline());
    CHECK(rt.arch().str() == "sm_90a");
    CHECK(rt.cache_dir() == dir.path);
    CHECK(!rt.nvrtc_version().empty());
    const std::string msg = lowbit::test::error_of([&] { (void)rt.device(); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "offline"));
  }
  SECTION("a problem the kernel cannot run is rejected before compiling") {
    lowbit::Runtime rt(offline("sm_90a", dir.path));
    lowbit::WqGemmProblem p = problem_4096();
    p.k = 4100;
    const std::string msg = lowbit::test::error_of([&] { (void)lowbit::compile_wq_gemm(rt, p, {1}); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "k = 4100"));
    CHECK(lowbit::jit::DiskCache(dir.path).list().empty());
  }
  SECTION("sm_75 is refused for wq_gemm") {
    lowbit::Runtime rt(offline("sm_75", dir.path));
    const std::string msg =
        lowbit::test::error_of([&] { (void)lowbit::compile_wq_gemm(rt, problem_4096(), {1}); });
    INFO(msg);
    CHECK(lowbit::test::contains(msg, "sm_80"));
  }
}

TEST_CASE("NVRTC compiles wq_gemm for sm_80, sm_89 and sm_90a; the caches serve it after", "[nvrtc]") {
  lowbit::test::TempDir dir;
  const lowbit::WqGemmProblem p = problem_4096();
  std::set<std::string> digests;

  for (const char* arch : {"sm_80", "sm_89", "sm_90a"}) {
    INFO("arch " << arch);
    lowbit::Runtime rt(offline(arch, dir.path));
    const std::vector<KernelRecord> recs = lowbit::compile_wq_gemm(rt, p, {1, 16});
    // M values {1, 16} cover the buckets 1, 2, 4, 8, 16: one record per bucket.
    REQUIRE(recs.size() == 5);
    CHECK(source_name(recs[0].source) == "compiled");
    CHECK(recs[0].compile_ms > 0);
    for (const KernelRecord& r : recs) {
      INFO(r.name << " " << r.digest << " " << source_name(r.source));
      CHECK(r.name.rfind("wq_gemm_", 0) == 0);
      CHECK(lowbit::test::is_hex32(r.digest));
      CHECK(r.arch == arch);
      CHECK(r.config.rfind("WqGemmConfig(", 0) == 0);
      CHECK(r.total_ms >= 0);
      // A kernel is compiled once per runtime: later buckets that share its config are memory hits.
      if (&r != &recs[0] && r.digest == recs[0].digest) {
        CHECK(source_name(r.source) == "memory-cache");
        CHECK(r.compile_ms == 0);
      }
      digests.insert(r.digest);
    }
  }
  CHECK(digests.size() >= 3);  // one kernel per arch at least, never shared across archs

  // One published entry per compiled kernel, each valid, a real ELF cubin, under its own arch.
  const auto entries = lowbit::jit::DiskCache(dir.path).list();
  CHECK(entries.size() == digests.size());
  std::set<std::string> archs;
  for (const auto& e : entries) {
    INFO(e.path << ": " << e.problem);
    CHECK(e.valid);
    CHECK(e.family == "wq_gemm");
    archs.insert(e.arch);
    const std::string cubin = slurp(std::filesystem::path(e.path) / "kernel.cubin");
    REQUIRE(cubin.size() > 4);
    CHECK(cubin.substr(0, 4) == std::string("\x7f"
                                            "ELF"));
    CHECK(std::filesystem::exists(std::filesystem::path(e.path) / "kernel.cu"));
    CHECK(!e.meta.value("lowered_name", std::string()).empty());
  }
  CHECK(archs == std::set<std::string>{"sm_80", "sm_89", "sm_90a"});

  // A second runtime on the same directory loads from disk; asking it again hits memory.
  lowbit::Runtime rt2(offline("sm_90a", dir.path));
  const auto disk = lowbit::compile_wq_gemm(rt2, p, {1, 16});
  REQUIRE(disk.size() == 5);
  CHECK(source_name(disk[0].source) == "disk-cache");
  CHECK(disk[0].compile_ms == 0);
  const auto again = lowbit::compile_wq_gemm(rt2, p, {1, 16});
  REQUIRE(again.size() == 5);
  for (std::size_t i = 0; i < again.size(); ++i) {
    CAPTURE(i);
    CHECK(source_name(again[i].source) == "memory-cache");
    CHECK(again[i].digest == disk[i].digest);
    CHECK(again[i].name == disk[i].name);
    CHECK(again[i].compile_ms == 0);
  }
  CHECK(lowbit::jit::DiskCache(dir.path).list().size() == entries.size());  // nothing new written
  CHECK(lowbit::test::find_named(dir.path, ".tmp-") == "");
}

TEST_CASE("NVRTC compiles the wgmma kernel for sm_90a, every mode", "[nvrtc]") {
  lowbit::test::TempDir dir;
  lowbit::Runtime rt(offline("sm_90a", dir.path));
  lowbit::WqGemmConfig c;
  c.m_tiles = 2, c.n_tiles = 4, c.warps_n = 8, c.warps_k = 1, c.split_k = 2, c.stages = 4, c.wgmma = true;
  for (auto mode : {lowbit::DequantMode::SubZeroThenScale, lowbit::DequantMode::ScaleThenAddZero}) {
    lowbit::WqGemmProblem p = problem_4096();
    p.mode = mode;
    p.act = mode == lowbit::DequantMode::ScaleThenAddZero ? lowbit::DType::BF16 : lowbit::DType::F16;
    p.out = p.act;
    const auto recs = lowbit::compile_wq_gemm(rt, p, {32}, c);
    REQUIRE(!recs.empty());
    CHECK(lowbit::test::contains(recs.back().name, "wg"));
    CHECK(lowbit::test::contains(recs.back().config, "wgmma"));
  }
  // ... and with the activations from an image: the kernel, the one that arranges them, and the
  // kernel without the image (for plans without a workspace of their own, e.g. the functional API's).
  c.x_image = true;
  const auto recs = lowbit::compile_wq_gemm(rt, problem_4096(), {32}, c);
  std::set<std::string> with, without;  // kernel names (buckets may share a kernel)
  int images = 0;
  for (const auto& r : recs) {
    if (lowbit::test::contains(r.name, "wq_x_image_k4096_r32")) ++images;
    if (lowbit::test::contains(r.name, "wgxi"))
      with.insert(r.name.substr(0, r.name.size() - 2));  // the name ends in "xi"
    else if (lowbit::test::contains(r.name, "wg"))
      without.insert(r.name);
  }
  CHECK(images == 1);
  CHECK(!with.empty());
  CHECK(with == without);
}

TEST_CASE("a kernel compiled ahead for one M serves another M of the same bucket config", "[nvrtc]") {
  // `lowbit compile` (or a plan built for M = 1) and a later request for M = 16 pick the same config
  // for every bucket up to 16; the kernel takes M at run time, so the second request must find the
  // first one's cubin, even when compiling is forbidden (LOWBIT_NO_COMPILE deployments).
  lowbit::test::TempDir dir;
  lowbit::WqGemmProblem p1 = problem_4096();
  {
    lowbit::Runtime rt(offline("sm_90a", dir.path));
    const auto recs = lowbit::compile_wq_gemm(rt, p1, {1, 16});
    REQUIRE(!recs.empty());
    CHECK(source_name(recs[0].source) == "compiled");
  }
  lowbit::RuntimeOptions o = offline("sm_90a", dir.path);
  o.no_compile = true;
  lowbit::Runtime rt(o);
  lowbit::WqGemmProblem p16 = p1;
  p16.m = 16;
  std::vector<KernelRecord> recs;
  const std::string msg = lowbit::test::error_of([&] { recs = lowbit::compile_wq_gemm(rt, p16, {16}); });
  INFO(msg);
  CHECK(msg == "<no exception>");
  REQUIRE(recs.size() == 5);
  CHECK(source_name(recs[0].source) == "disk-cache");
}

TEST_CASE("compile_all: specs compile side by side, each error stays with its spec", "[nvrtc]") {
  lowbit::test::TempDir dir;
  lowbit::Runtime rt(offline("sm_90a", dir.path));
  const lowbit::WqGemmProblem p = problem_4096();
  const auto a = lowbit::wq::kernel_spec(p, lowbit::WqGemmConfig{1, 4, 1, 4, 1}, 1);
  const auto b = lowbit::wq::kernel_spec(p, lowbit::WqGemmConfig{1, 2, 1, 8, 1}, 1);
  auto bad = a;
  bad.name = "wq_gemm_no_such_kernel";
  bad.name_expression = "lowbit::kern::no_such_kernel<1>";
  bad.source += "// no_such_kernel\n";
  std::vector<KernelRecord> recs;
  const auto errors = rt.context().compile_all({a, bad, b, a, bad}, &recs);
  REQUIRE(errors.size() == 5);
  REQUIRE(recs.size() == 5);
  CHECK_FALSE(errors[0]);
  CHECK(errors[1]);
  CHECK_FALSE(errors[2]);
  // The same kernel twice: the first request compiles, the repeat is served after it (whatever the
  // threads' timing); a repeated failure is the same error, not a second compile.
  CHECK_FALSE(errors[3]);
  CHECK(errors[4] == errors[1]);
  CHECK(recs[0].name == a.name);
  CHECK(source_name(recs[0].source) == "compiled");
  CHECK(recs[2].name == b.name);
  CHECK(recs[3].digest == recs[0].digest);
  CHECK(source_name(recs[3].source) == "memory-cache");
  const std::string msg = lowbit::test::error_of([&] { std::rethrow_exception(errors[1]); });
  INFO(msg);
  CHECK(lowbit::test::contains(msg, "no_such_kernel"));
  // Afterwards every good kernel is a memory-cache hit, and an empty list is fine.
  KernelRecord again;
  rt.context().compile(b, &again);
  CHECK(source_name(again.source) == "memory-cache");
  CHECK(rt.context().compile_all({}).empty());
}

TEST_CASE("compile_wq_gemm_layers: one batch for several layers, records in layer order", "[nvrtc]") {
  lowbit::test::TempDir dir;
  lowbit::Runtime rt(offline("sm_90a", dir.path));
  lowbit::WqGemmProblem plain = problem_4096(), permuted = problem_4096();
  permuted.act_order = true;  // the GEMM kernel on permuted activations, plus the permutation
  const auto recs = lowbit::compile_wq_gemm_layers(rt, {plain, permuted, plain}, {1});
  REQUIRE(recs.size() == 4);
  CHECK(recs[0].m_bucket == 1);
  CHECK(source_name(recs[0].source) == "compiled");
  // On sm_90 the act-order layer runs the chained kernel (the permutation's dependent; compiled once
  // and its own cache entry); the third layer is the first one again.
  CHECK(recs[1].name == recs[0].name + "ch");
  CHECK(recs[1].digest != recs[0].digest);
  CHECK(recs[1].m_bucket == 1);
  CHECK(lowbit::test::contains(recs[2].name, "permute"));
  CHECK(recs[2].config.empty());
  CHECK(recs[3].digest == recs[0].digest);
  CHECK(source_name(recs[3].source) == "memory-cache");
  // Elsewhere (no griddepcontrol): the plain kernel on permuted activations, the same cache entry.
  lowbit::Runtime rt80(offline("sm_80", dir.path));
  const auto on80 = lowbit::compile_wq_gemm_layers(rt80, {plain, permuted}, {1});
  REQUIRE(on80.size() == 3);
  CHECK(on80[1].digest == on80[0].digest);
  CHECK(source_name(on80[1].source) == "memory-cache");
}

TEST_CASE("chained kernels: their own name and cache entry, only where the launch order allows", "[nvrtc]") {
  lowbit::test::TempDir dir;
  lowbit::Runtime rt(offline("sm_90a", dir.path));
  const lowbit::WqGemmProblem p = problem_4096();
  const lowbit::WqGemmConfig c{1, 2, 1, 8, 1, 2, true};
  const auto plain = lowbit::wq::kernel_spec(p, c, 1);
  const auto chained = lowbit::wq::kernel_spec(p, c, 1, true);
  CHECK(plain.name != chained.name);
  CHECK(lowbit::test::contains(chained.name_expression, ", true>"));
  CHECK_FALSE(lowbit::test::contains(plain.name_expression, ", true>"));
  // Compiles (griddepcontrol needs sm_90), and is not the plain kernel's cache entry.
  KernelRecord a, b;
  rt.context().compile(plain, &a);
  rt.context().compile(chained, &b);
  CHECK(a.digest != b.digest);
  CHECK(source_name(b.source) == "compiled");
  // Eligible on sm_90: the mma.sync kernel, with or without a pre-kernel (x_sums; act-order's
  // permutation); not the wgmma kernel (chained, it ran slower).
  const auto arch90 = lowbit::Arch::parse("sm_90a"), arch80 = lowbit::Arch::parse("sm_80");
  CHECK(lowbit::wq::chain_eligible(c, arch90));
  CHECK_FALSE(lowbit::wq::chain_eligible(c, arch80));
  lowbit::WqGemmConfig sums = c, wg{4, 2, 8, 1, 1, 3};
  sums.x_sums = true;
  wg.wgmma = true;
  CHECK(lowbit::wq::chain_eligible(sums, arch90));
  CHECK_FALSE(lowbit::wq::chain_eligible(sums, arch80));
  CHECK_FALSE(lowbit::wq::chain_eligible(wg, arch90));
  // (The rule takes no problem: act-order layers chain as any; the GPU chained test checks their kernels.)
  // Unchained, act-order layers run the chained kernel wherever it may chain.
  lowbit::WqGemmProblem permuted = p;
  permuted.act_order = true;
  CHECK(lowbit::wq::overlaps_permutation(permuted, c, arch90));
  CHECK_FALSE(lowbit::wq::overlaps_permutation(p, c, arch90));
  CHECK_FALSE(lowbit::wq::overlaps_permutation(permuted, c, arch80));
  CHECK_FALSE(lowbit::wq::overlaps_permutation(permuted, wg, arch90));
  CHECK(lowbit::wq::uses_chained_kernel(permuted, c, arch90, false));
  CHECK(lowbit::wq::uses_chained_kernel(p, c, arch90, true));
  CHECK_FALSE(lowbit::wq::uses_chained_kernel(p, c, arch90, false));
  CHECK_FALSE(lowbit::wq::uses_chained_kernel(permuted, c, arch80, true));
}

TEST_CASE("lowbit compile --chain builds the chained kernels after the plain ones, on sm_90 only",
          "[nvrtc]") {
  lowbit::test::TempDir dir;
  auto count_chained = [](const std::vector<KernelRecord>& recs) {
    return std::count_if(recs.begin(), recs.end(), [](const KernelRecord& r) {
      return r.name.size() > 2 && r.name.compare(r.name.size() - 2, 2, "ch") == 0;
    });
  };
  lowbit::Runtime rt90(offline("sm_90a", dir.path));
  const auto plain = lowbit::compile_wq_gemm_layers(rt90, {problem_4096()}, {1});
  const auto both = lowbit::compile_wq_gemm_layers(rt90, {problem_4096()}, {1}, std::nullopt, true);
  CHECK(count_chained(plain) == 0);
  REQUIRE(both.size() == 2 * plain.size());
  CHECK(count_chained(both) == static_cast<std::ptrdiff_t>(plain.size()));
  CHECK(both[0].name == plain[0].name);
  CHECK(both[plain.size()].name == plain[0].name + "ch");
  lowbit::Runtime rt80(offline("sm_80", dir.path));
  const auto on80 = lowbit::compile_wq_gemm_layers(rt80, {problem_4096()}, {1}, std::nullopt, true);
  CHECK(count_chained(on80) == 0);
  // An act-order layer's chained kernel is in the first pass already: listed once.
  lowbit::WqGemmProblem permuted = problem_4096();
  permuted.act_order = true;
  const auto ordered = lowbit::compile_wq_gemm_layers(rt90, {permuted}, {1}, std::nullopt, true);
  CHECK(ordered.size() == 2);  // the GEMM (chained) and the permutation
  CHECK(count_chained(ordered) == 1);
  // One record per layer and bucket, as the first pass lists them, even where two layers share kernels.
  const auto twice =
      lowbit::compile_wq_gemm_layers(rt90, {problem_4096(), problem_4096()}, {1}, std::nullopt, true);
  CHECK(twice.size() == 4);
  CHECK(count_chained(twice) == 2);
}

TEST_CASE("chained plans keep one chunk per warp out of the prologue", "[nvrtc]") {
  lowbit::WqGemmProblem p = problem_4096();  // 32 chunks of 128
  // (1,4,1,8): 4 chunks per warp. 5 stages would hold all 4 in the prologue: 4 stages instead.
  CHECK(lowbit::wq::chained_stages(p, lowbit::WqGemmConfig{1, 4, 1, 8, 1, 5}) == 4);
  CHECK(lowbit::wq::chained_stages(p, lowbit::WqGemmConfig{1, 4, 1, 8, 1, 8}) == 4);
  CHECK(lowbit::wq::chained_stages(p, lowbit::WqGemmConfig{1, 4, 1, 8, 1, 4}) == 4);
  CHECK(lowbit::wq::chained_stages(p, lowbit::WqGemmConfig{1, 4, 1, 8, 1, 2}) == 2);
  // K split and warps along K divide the chunks: 32 / 2 / 8 = 2 per warp, so at most 2 stages.
  CHECK(lowbit::wq::chained_stages(p, lowbit::WqGemmConfig{1, 4, 1, 8, 2, 3}) == 2);
  // One chunk per warp: nothing to keep back, the stages stay.
  CHECK(lowbit::wq::chained_stages(p, lowbit::WqGemmConfig{1, 4, 1, 16, 2, 3}) == 3);
}

TEST_CASE("fp16 accumulation's 16-tile configs (heuristic v48) compile without spills for sm_90a",
          "[nvrtc]") {
  // fit_registers caps modes that dequantize every weight at 8 accumulator tiles a warp: 2 × 8 tiles spill
  // with activations in registers or staged per warp (fp16 accumulation holds more registers than fp32:
  // (2,8,1,4,1,3) staged spills 12-92 B here). v48's blocks of warps side by side, 4 × 4 and 2 × 8 tiles with
  // block-shared activations, fit: 226-255 registers and no spills in every format (sixty-fifth session,
  // `lowbit inspect`). The tightest formats, and q·s + z.
  const lowbit::Arch arch = lowbit::Arch::parse("sm_90a");
  struct Format {
    int bits, group;
    lowbit::DequantMode mode;
  };
  for (const Format f : {Format{4, 128, lowbit::DequantMode::SubZeroThenScale},
                         Format{3, 32, lowbit::DequantMode::SubZeroThenScale},
                         Format{8, 0, lowbit::DequantMode::SubZeroThenScale},
                         Format{2, 64, lowbit::DequantMode::SubFloatZeroThenScale},
                         Format{4, 128, lowbit::DequantMode::ScaleThenAddZero}}) {
    for (const lowbit::WqGemmConfig& c :
         {lowbit::WqGemmConfig{4, 4, 4, 1, 2, 2}, lowbit::WqGemmConfig{2, 8, 2, 4, 1, 2}}) {
      lowbit::WqGemmProblem p = problem_4096();
      p.m = 128, p.bits = f.bits, p.group_size = f.group, p.mode = f.mode, p.accum = lowbit::DType::F16;
      lowbit::WqGemmConfig shared = c;
      shared.x_shared = true;
      INFO(p.str() << " " << shared.str());
      REQUIRE(lowbit::can_implement(p, shared, arch));
      const auto spec = lowbit::wq::kernel_spec(p, shared, 128, false);
      const auto r = lowbit::jit::nvrtc_compile({spec.source, spec.name_expression, arch});
      INFO(r.log);
      // ptxas -v: "N bytes stack frame, N bytes spill stores, N bytes spill loads" (-1: line missing).
      CHECK(lowbit::jit::ptxas_log_number(r.log, R"((\d+) bytes spill stores)") == 0);
      CHECK(lowbit::jit::ptxas_log_number(r.log, R"((\d+) bytes spill loads)") == 0);
      CHECK(lowbit::jit::ptxas_log_number(r.log, R"((\d+) bytes stack frame)") == 0);
    }
  }
}

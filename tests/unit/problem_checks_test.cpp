// Problem and config validation, Arch parsing, M buckets, and the config heuristic.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "tune/wq_tune.hpp"
#include "unit/unit_helpers.hpp"

namespace {

using lowbit::Arch;
using lowbit::DType;
using lowbit::WqGemmConfig;
using lowbit::WqGemmProblem;

WqGemmProblem normal_problem() {
  WqGemmProblem p;
  p.m = 1, p.n = 4096, p.k = 4096, p.bits = 4, p.group_size = 128;
  return p;
}

lowbit::jit::KernelSpec spec_of(const WqGemmProblem& p, const WqGemmConfig& c, int64_t bucket) {
  return lowbit::wq::kernel_spec(p, c, bucket);
}

// can_implement(problem) must reject and its reason must contain `needle`.
void check_rejected(const WqGemmProblem& p, const std::string& needle) {
  std::string why;
  INFO(p.str() << " expected reason containing: " << needle);
  CHECK_FALSE(lowbit::can_implement(p));
  CHECK_FALSE(lowbit::can_implement(p, &why));
  INFO("why: " << why);
  CHECK(lowbit::test::contains(why, needle));
}

void check_rejected(const WqGemmProblem& p, const WqGemmConfig& c, const Arch& arch,
                    const std::string& needle) {
  std::string why;
  INFO(p.str() << " " << c.str() << " " << arch.str() << " expected reason containing: " << needle);
  CHECK_FALSE(lowbit::can_implement(p, c, arch, &why));
  INFO("why: " << why);
  CHECK(lowbit::test::contains(why, needle));
}

}  // namespace

TEST_CASE("can_implement(problem) accepts a normal problem", "[checks]") {
  std::string why = "untouched";
  CHECK(lowbit::can_implement(normal_problem(), &why));
  WqGemmProblem p = normal_problem();
  p.act = DType::BF16, p.out = DType::F32, p.group_size = 0, p.mode = lowbit::DequantMode::Symmetric;
  p.m = 300, p.n = 20, p.k = 200;  // odd N and K are padded, not rejected
  CHECK(lowbit::can_implement(p, &why));
  // Every supported width, every mode, act-order and deterministic split-K.
  for (int bits : {1, 2, 3, 4, 8})
    for (lowbit::DequantMode mode :
         {lowbit::DequantMode::SubZeroThenScale, lowbit::DequantMode::Symmetric,
          lowbit::DequantMode::SubFloatZeroThenScale, lowbit::DequantMode::ScaleThenAddZero}) {
      WqGemmProblem q = normal_problem();
      q.bits = bits, q.mode = mode, q.act_order = true, q.deterministic = true;
      INFO(q.str());
      CHECK(lowbit::can_implement(q, &why));
      INFO("why: " << why);
      CHECK(lowbit::can_implement(q, WqGemmConfig{1, 4, 1, 4, 1}, Arch::parse("sm_90a"), &why));
    }
}

TEST_CASE("can_implement(problem) rejects and names the field", "[checks]") {
  WqGemmProblem p;
  p = normal_problem(), p.m = 0;
  check_rejected(p, "m = 0");
  p = normal_problem(), p.n = -1;
  check_rejected(p, "n = -1");
  p = normal_problem(), p.k = 100;
  check_rejected(p, "k = 100");
  check_rejected(p, "multiple of 8");
  p = normal_problem(), p.k = 0;
  check_rejected(p, "k = 0");
  // Weights have 1, 2, 3, 4 or 8 bits; anything else is refused by name.
  for (int bits : {0, 5, 6, 7, 16, -4}) {
    p = normal_problem(), p.bits = bits;
    check_rejected(p, "bits = " + std::to_string(bits));
  }
  p = normal_problem(), p.mode = static_cast<lowbit::DequantMode>(9);
  check_rejected(p, "mode = 9");
  p = normal_problem(), p.act_order = true, p.group_size = 0;
  check_rejected(p, "act_order");
  check_rejected(p, "group_size = 0");
  p = normal_problem(), p.group_size = 48;
  check_rejected(p, "group_size = 48");
  p = normal_problem(), p.k = 4160, p.group_size = 128;
  check_rejected(p, "multiple of group_size");
  check_rejected(p, "k = 4160");
  p = normal_problem(), p.act = DType::F32, p.out = DType::F32;
  check_rejected(p, "act = f32");
  p = normal_problem(), p.act = DType::F16, p.out = DType::BF16;
  check_rejected(p, "out = bf16");
  p = normal_problem(), p.n = int64_t{1} << 31;
  check_rejected(p, "2^30");
  p = normal_problem(), p.accum = DType::BF16;
  check_rejected(p, "accum = bf16");
  p = normal_problem(), p.act = DType::BF16, p.out = DType::BF16, p.accum = DType::F16;
  check_rejected(p, "accum = f16 with act = bf16");
}

TEST_CASE("fp16 accumulation: accepted for f16, its own tuning key, never wgmma", "[checks]") {
  WqGemmProblem p = normal_problem();
  p.accum = DType::F16;
  REQUIRE(can_implement(p));
  CHECK(p.str().find("accum=f16") != std::string::npos);
  CHECK(lowbit::wq::tuning_key(p, 1).format == "w4.g128.f16.zp.a16");
  p.accum = DType::F32;
  CHECK(lowbit::wq::tuning_key(p, 1).format == "w4.g128.f16.zp");
  // The kernel gets the flag (its second-to-last template argument; x_sums is the last) and a name of its
  // own.
  const WqGemmConfig plain{1, 4, 1, 4, 1};
  CHECK(lowbit::test::contains(spec_of(p, plain, 1).name_expression, ", false, false>"));
  CHECK_FALSE(lowbit::test::contains(spec_of(p, plain, 1).name, "a16"));
  p.accum = DType::F16;
  CHECK(lowbit::test::contains(spec_of(p, plain, 1).name_expression, ", true, false>"));
  CHECK(lowbit::test::contains(spec_of(p, plain, 1).name, "f16a16_"));
  const Arch hopper = Arch::parse("sm_90a");
  WqGemmConfig w;
  w.m_tiles = 4, w.n_tiles = 4, w.warps_n = 8, w.warps_k = 1, w.stages = 3, w.wgmma = true;
  check_rejected(p, w, hopper, "accum = f16");
  // The heuristic, which takes wgmma for this layer at 64 rows in fp32, picks mma.sync.
  p.n = 28672, p.k = 4096;
  for (int64_t m : {1, 16, 64, 128}) {
    p.m = m;
    const WqGemmConfig c = lowbit::choose_config(p, hopper, 132);
    INFO(m << ": " << c.str());
    CHECK(!c.wgmma);
    CHECK(can_implement(p, c, hopper));
  }
}

TEST_CASE("can_implement(problem, config, arch) rejects bad configs and archs", "[checks]") {
  const WqGemmProblem p = normal_problem();  // K_pad / 128 = 32 chunks
  const Arch sm90a = Arch::parse("sm_90a");
  const WqGemmConfig good{1, 4, 1, 4, 1};
  std::string why;
  CHECK(lowbit::can_implement(p, good, sm90a, &why));
  CHECK(lowbit::can_implement(p, good, Arch::parse("sm_80"), &why));

  WqGemmConfig c = good;
  c.n_tiles = 3;
  check_rejected(p, c, sm90a, "n_tiles = 3");
  c = good, c.n_tiles = 32;
  check_rejected(p, c, sm90a, "n_tiles = 32");
  c = good, c.n_tiles = 12;
  check_rejected(p, c, sm90a, "n_tiles = 12");
  c = good, c.n_tiles = 6;  // 48-column warps (heuristic v23)
  CHECK(lowbit::can_implement(p, c, sm90a, &why));
  c.wgmma = true, c.warps_n = 8, c.warps_k = 1;  // the wgmma kernel's m64 tiles: 2 or 4
  check_rejected(p, c, sm90a, "n_tiles = 6");
  c = good, c.n_tiles = 16;  // 16 tiles: one scale row per lane and chunk up to groups of 64
  CHECK(lowbit::can_implement(p, c, sm90a, &why));
  {
    WqGemmProblem g = p;
    g.group_size = 64;
    CHECK(lowbit::can_implement(g, c, sm90a, &why));
    g.group_size = 32;
    check_rejected(g, c, sm90a, "over 32 scale rows");
    c.n_tiles = 8;
    CHECK(lowbit::can_implement(g, c, sm90a, &why));
  }
  c = good, c.split_k = 0;
  check_rejected(p, c, sm90a, "split_k = 0");
  c = good, c.split_k = 33;
  check_rejected(p, c, sm90a, "split_k = 33");
  c = good, c.split_k = 32;  // exactly K_pad / 128 is fine
  CHECK(lowbit::can_implement(p, c, sm90a, &why));
  c = good, c.m_tiles = 9;
  check_rejected(p, c, sm90a, "m_tiles = 9");
  c = good, c.warps_n = 3;
  check_rejected(p, c, sm90a, "warps_n = 3");
  c = good, c.warps_k = 17;
  check_rejected(p, c, sm90a, "warps_k = 17");
  c = good, c.warps_k = 0;
  check_rejected(p, c, sm90a, "warps_k = 0");
  c = good, c.warps_k = 3;  // any count along K (the warps interleave chunks)
  CHECK(lowbit::can_implement(p, c, sm90a, &why));
  c = WqGemmConfig{8, 8, 1, 1, 1};  // 64 accumulator tiles per warp
  check_rejected(p, c, sm90a, "32");
  c = WqGemmConfig{8, 4, 4, 8, 1};  // warps_k reduction far over 48 KiB
  check_rejected(p, c, sm90a, "shared memory");
  check_rejected(p, good, Arch::parse("sm_75"), "sm_80");
  // wgmma's two- and three-way K splits add through a cluster's shared memory: the other pieces' sums
  // (2 × 8 vectors of 16 B per MMA thread here, 64 KiB) must fit in the stages (2-bit, 64 rows, two
  // m64 tiles per warpgroup: 25 KiB a stage); four-way splits add through the workspace.
  WqGemmProblem w2 = p;
  w2.bits = 2, w2.m = 64;
  c = WqGemmConfig{4, 4, 8, 1, 2, 2, false, true};
  check_rejected(w2, c, sm90a, "partial sums");
  c.stages = 3;
  CHECK(lowbit::can_implement(w2, c, sm90a, &why));
  c.stages = 2, c.split_k = 4;
  CHECK(lowbit::can_implement(w2, c, sm90a, &why));
  CHECK(lowbit::wq::cluster_split(WqGemmConfig{4, 4, 8, 1, 3, 3, false, true}));
  CHECK_FALSE(lowbit::wq::cluster_split(c));
  CHECK(lowbit::wq::needs_split_workspace(c, sm90a));  // four wgmma pieces: the scratch slots
  // mma.sync K splits of 2..8 pieces meet in a cluster on sm_90 (no workspace); larger ones, and
  // every split before sm_90, add through the workspace.
  const Arch sm80 = Arch::parse("sm_80");
  for (int split : {2, 3, 8, 9, 16}) {
    const WqGemmConfig m{1, 4, 1, 8, split, 3};
    CAPTURE(split);
    CHECK(lowbit::wq::mma_cluster_split(m, sm90a) == (split <= 8));
    CHECK(lowbit::wq::needs_split_workspace(m, sm90a) == (split > 8));
    CHECK_FALSE(lowbit::wq::mma_cluster_split(m, sm80));
    CHECK(lowbit::wq::needs_split_workspace(m, sm80));
    CHECK_FALSE(lowbit::wq::cluster_split(m));
  }
  // What `lowbit inspect` says about it.
  CHECK(std::string(lowbit::wq::k_split_path(WqGemmConfig{1, 4, 1, 8, 3, 3}, sm90a)) == "cluster");
  CHECK(std::string(lowbit::wq::k_split_path(WqGemmConfig{1, 4, 1, 8, 3, 3}, sm80)) == "workspace");
  CHECK(std::string(lowbit::wq::k_split_path(WqGemmConfig{1, 4, 1, 8, 1, 3}, sm90a)) == "none");
  CHECK(std::string(lowbit::wq::k_split_path(c, sm90a)) == "workspace");  // four wgmma pieces
  // Rank 0 receives the other ranks' values in its shared memory: 2 more ranks × ceil(16·4 / 8) × 256
  // threads × 4 B, under its rings.
  CHECK(lowbit::wq::mma_cluster_sums_bytes(WqGemmConfig{1, 16, 1, 8, 3, 2}, sm90a) == 2 * 8 * 256 * 4);
  CHECK(lowbit::wq::mma_cluster_sums_bytes(WqGemmConfig{1, 16, 1, 8, 9, 2}, sm90a) == 0);
  // ... and only where the split meets in a cluster: before sm_90 the block has no such region.
  CHECK(lowbit::wq::mma_cluster_sums_bytes(WqGemmConfig{1, 16, 1, 8, 3, 2}, sm80) == 0);
  WqGemmProblem narrow = p;
  narrow.m = 16, narrow.n = 1280, narrow.k = 8192;
  const WqGemmConfig split3{1, 16, 1, 8, 3, 2};
  CHECK(lowbit::wq::smem_bytes(narrow, split3, sm90a) ==
        lowbit::wq::smem_bytes(narrow, split3, sm80) + 2 * 8 * 256 * 4);
  // A bad problem is reported even with a good config.
  WqGemmProblem bad = p;
  bad.bits = 6;
  check_rejected(bad, good, sm90a, "bits = 6");
}

TEST_CASE("Arch::parse", "[checks]") {
  CHECK(Arch::parse("sm_90a").str() == "sm_90a");
  CHECK(Arch::parse("sm_90a").arch_specific);
  CHECK(Arch::parse("sm_90").str() == "sm_90");
  CHECK_FALSE(Arch::parse("sm_90").arch_specific);
  CHECK(Arch::parse("sm_80").major == 8);
  CHECK(Arch::parse("sm_80").minor == 0);
  CHECK(Arch::parse("sm_89").sm() == 89);
  CHECK(Arch::parse("sm_100a").str() == "sm_100a");
  CHECK(Arch::parse("sm_100a").sm() == 100);
  CHECK(Arch::parse("sm_120").str() == "sm_120");
  CHECK(Arch::parse("sm_90") != Arch::parse("sm_90a"));

  for (const char* bad :
       {"sm_91", "compute_90", "sm_80a", "sm_42", "", "sm_", "sm_9", "sm_9x", "90", "SM_90"}) {
    const std::string msg = lowbit::test::error_of([&] { (void)Arch::parse(bad); });
    INFO("input: '" << bad << "' message: " << msg);
    CHECK(msg.rfind("<", 0) != 0);  // a lowbit::Error was thrown
    CHECK(lowbit::test::contains(msg, std::string("'") + bad + "'"));
  }
}

TEST_CASE("m_bucket", "[checks]") {
  CHECK(lowbit::m_bucket(1) == 1);
  CHECK(lowbit::m_bucket(2) == 2);
  CHECK(lowbit::m_bucket(3) == 4);
  CHECK(lowbit::m_bucket(4) == 4);
  CHECK(lowbit::m_bucket(5) == 8);
  CHECK(lowbit::m_bucket(8) == 8);
  CHECK(lowbit::m_bucket(9) == 16);
  CHECK(lowbit::m_bucket(130) == 256);
  CHECK(lowbit::m_bucket(256) == 256);
  const std::string msg = lowbit::test::error_of([] { (void)lowbit::m_bucket(0); });
  INFO(msg);
  CHECK(lowbit::test::contains(msg, "m = 0"));
  CHECK_THROWS_AS(lowbit::m_bucket(-5), lowbit::Error);
}

TEST_CASE("choose_config picks a runnable config for the standard shapes", "[checks]") {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{4096, 4096},  {8192, 8192},  {16384, 16384},
                                                           {28672, 4096}, {4096, 14336}, {6144, 4096}};
  int checked = 0;
  for (const auto& [n, k] : shapes)
    for (int64_t m : {1, 2, 4, 8, 16, 32, 64, 128, 256})
      for (int sm_count : {132, 114})
        for (const char* arch : {"sm_80", "sm_89", "sm_90a", "sm_120"})
          for (int bits : {4, 8}) {
            WqGemmProblem p = normal_problem();
            p.n = n, p.k = k, p.m = m, p.bits = bits;
            const WqGemmConfig c = lowbit::choose_config(p, Arch::parse(arch), sm_count);
            std::string why;
            INFO(p.str() << " sm_count=" << sm_count << " " << arch << " -> " << c.str());
            const bool ok = lowbit::can_implement(p, c, Arch::parse(arch), &why);
            INFO("why: " << why);
            CHECK(ok);
            // 99 KiB archs shrink the config; they must not fall back to the one-warp default.
            CHECK_FALSE(c == lowbit::default_config());
            ++checked;
          }
  CHECK(checked == 6 * 9 * 2 * 4 * 2);
}

TEST_CASE("choose_config fits the layers it splits K for, on every arch", "[checks]") {
  // Narrow layers, where the heuristic splits K: on sm_90 and later a split of 2..8 pieces adds a
  // receive region to the block's shared memory (a cluster's), so the config must fit again after the
  // split; elsewhere the split adds nothing. Never the one-warp default.
  int splits = 0;
  for (const char* arch : {"sm_80", "sm_86", "sm_89", "sm_90a", "sm_120"})
    for (int64_t n : {128, 256, 512, 1032})
      for (int64_t k : {1024, 4096, 8192})
        for (int64_t m : {1, 16, 32, 64, 128})
          for (int bits : {2, 4, 8})
            for (DType act : {DType::F16, DType::BF16}) {
              WqGemmProblem p = normal_problem();
              p.n = n, p.k = k, p.m = m, p.bits = bits, p.act = act, p.out = act;
              const Arch a = Arch::parse(arch);
              const WqGemmConfig c = lowbit::choose_config(p, a, 132);
              std::string why;
              INFO(p.str() << " " << arch << " -> " << c.str());
              const bool ok = lowbit::can_implement(p, c, a, &why);
              INFO("why: " << why);
              CHECK(ok);
              CHECK_FALSE(c == lowbit::default_config());
              splits += c.split_k > 1;
            }
  CHECK(splits > 100);  // the heuristic does split these
}

TEST_CASE("deterministic plans keep the M = 1 K split and still fit, on every arch", "[config]") {
  for (const char* arch : {"sm_86", "sm_90a"}) {
    lowbit::RuntimeOptions o;
    o.device = -1, o.arch = arch, o.no_disk_cache = true, o.no_tuning_db = true;
    lowbit::Runtime rt(o);
    for (int bits : {2, 4, 8})
      for (int64_t n : {4096, 14336, 28672})
        for (int64_t m : {16, 32, 64, 128}) {
          WqGemmProblem p = normal_problem();
          p.n = n, p.bits = bits, p.m = m, p.deterministic = true;
          const auto one = lowbit::wq::choose(rt.context(), p, 1, std::nullopt).config;
          const auto c = lowbit::wq::choose(rt.context(), p, lowbit::m_bucket(m), std::nullopt).config;
          WqGemmProblem pb = p;
          pb.m = lowbit::m_bucket(m);
          std::string why;
          INFO(arch << " " << p.str() << " -> " << c.str());
          CHECK(lowbit::can_implement(pb, c, Arch::parse(arch), &why));
          INFO("why: " << why);
          CHECK(c.warps_k == one.warps_k);
          CHECK(c.split_k == one.split_k);
        }
  }
}

TEST_CASE("choose_config: x_shared at 64 rows for 3-4 tiles per SM, not in deterministic mode", "[config]") {
  const Arch sm90a = Arch::parse("sm_90a");
  WqGemmProblem p = normal_problem();
  p.m = 64, p.n = 4096, p.k = 4096;
  CHECK(lowbit::choose_config(p, sm90a, 132).x_shared);
  // Deterministic plans force the M = 1 K order onto every bucket, which would turn this x_shared
  // config into a spilling one: the per-warp config instead.
  p.deterministic = true;
  CHECK_FALSE(lowbit::choose_config(p, sm90a, 132).x_shared);
}

TEST_CASE("choose_config: per-warp staged activations only where 8-warp blocks fit, not deterministic",
          "[config]") {
  auto staged_per_warp = [](const WqGemmConfig& c) { return c.x_shared && c.warps_n == 1; };
  WqGemmProblem p = normal_problem();
  // Hopper: the v6 rules stage at 16 and 32 rows on 4096² and keep blocks of at least 4 warps.
  for (int64_t m : {1, 16, 32}) {
    p.m = m, p.n = 4096, p.k = 4096;
    const WqGemmConfig c = lowbit::choose_config(p, Arch::parse("sm_90a"), 132);
    INFO("M = " << m << " -> " << c.str());
    CHECK(staged_per_warp(c));
    CHECK(c.warps_n * c.warps_k >= 4);
  }
  // 99 KiB of shared memory per block (sm_86, sm_89) would cut staged blocks to 2 warps; deterministic
  // plans take their K order from M = 1. Neither stages per warp, on any layer or bucket up to 32 rows.
  int checked = 0;
  for (const auto& [arch, sms] : {std::pair{"sm_86", 84}, {"sm_89", 128}, {"sm_90a", 132}})
    for (int64_t n : {1280, 4096, 8192, 28672})
      for (int64_t m : {1, 8, 16, 32})
        for (bool deterministic : {false, true}) {
          if (std::string(arch) == "sm_90a" && !deterministic) continue;
          p.n = n, p.k = 4096, p.m = m, p.deterministic = deterministic;
          const WqGemmConfig c = lowbit::choose_config(p, Arch::parse(arch), sms);
          INFO(arch << " " << p.str() << " -> " << c.str());
          CHECK_FALSE(staged_per_warp(c));
          ++checked;
        }
  CHECK(checked == 2 * 4 * 4 * 2 + 4 * 4);
}

TEST_CASE("choose_config v13: 2-bit weights take 8 tiles per warp at 16 rows over 4 tiles per SM",
          "[config]") {
  WqGemmProblem p = normal_problem();
  p.m = 16;
  const Arch hopper = Arch::parse("sm_90a");
  for (const auto& [n, k] :
       {std::pair{8192, 8192}, {6144, 4096}, {28672, 4096}, {16384, 16384}, {4096, 4096}}) {
    p.n = n, p.k = k;
    p.bits = 2;
    const WqGemmConfig w2 = lowbit::choose_config(p, hopper, 132);
    p.bits = 4;
    const WqGemmConfig w4 = lowbit::choose_config(p, hopper, 132);
    INFO(n << "x" << k << ": W2 " << w2.str() << ", W4 " << w4.str());
    // (6144×4096: v23's 6 tiles for every width, below.)
    CHECK(w2.n_tiles == (n == 6144 ? 6 : n / 8.0 / 132 > 4 ? 8 : w4.n_tiles));
    CHECK(w2.warps_k == w4.warps_k);
    CHECK(w2.x_shared);
  }
}

TEST_CASE("choose_config v22: 8-bit weights at 16 rows over 20 tiles per SM, 4 warps side by side",
          "[config]") {
  WqGemmProblem p = normal_problem();
  p.m = 16, p.bits = 8, p.n = 28672, p.k = 4096;
  const Arch hopper = Arch::parse("sm_90a");
  const WqGemmConfig c = lowbit::choose_config(p, hopper, 132);
  INFO(c.str());
  CHECK(c.n_tiles == 4);
  CHECK(c.warps_n == 4);
  CHECK(c.warps_k == 1);
  CHECK(c.stages == 3);
  CHECK(c.x_shared);
  CHECK(lowbit::can_implement(p, c, hopper));
  // 4 bits, and 8 bits on narrower layers, keep one warp along N.
  p.bits = 4;
  CHECK(lowbit::choose_config(p, hopper, 132).warps_n == 1);
  p.bits = 8, p.n = 8192, p.k = 8192;
  CHECK(lowbit::choose_config(p, hopper, 132).warps_n == 1);
}

TEST_CASE(
    "choose_config v23: 6 tiles per warp at 16 rows where 48-column blocks fill 70-100 % of the SMs once",
    "[config]") {
  WqGemmProblem p = normal_problem();
  p.m = 16;
  const Arch hopper = Arch::parse("sm_90a");
  for (int bits : {2, 4, 8})
    for (DType act : {DType::F16, DType::BF16}) {
      p.bits = bits, p.act = p.out = act, p.n = 6144, p.k = 4096;
      const WqGemmConfig c = lowbit::choose_config(p, hopper, 132);
      INFO(bits << " bits: " << c.str());
      CHECK(c.n_tiles == 6);  // 128 blocks of 48 columns on 132 SMs; 32-column ones: 192
      CHECK(c.warps_k == 8);
      CHECK(c.stages == 2);  // the rule's for over 4 tiles per SM
      CHECK(c.x_shared);
      CHECK(lowbit::can_implement(p, c, hopper));
      // 4608 and 5120 columns too (96 and 107 blocks); other widths keep their rules: too many SMs
      // idle (3584: 75 blocks), one block of 4 tiles per SM already (4096), two waves of 6 (8192: 171
      // blocks), many blocks (28672).
      for (int64_t n : {4608, 5120}) {
        p.n = n;
        CHECK(lowbit::choose_config(p, hopper, 132).n_tiles == 6);
      }
      for (int64_t n : {3584, 4096, 8192, 28672}) {
        p.n = n;
        CHECK(lowbit::choose_config(p, hopper, 132).n_tiles != 6);
      }
      // At one row, and on 114 SMs (6144 is then 2 blocks of 6 tiles on some SMs), not either.
      p.n = 6144, p.m = 1;
      CHECK(lowbit::choose_config(p, hopper, 132).n_tiles != 6);
      p.m = 16;
      CHECK(lowbit::choose_config(p, hopper, 114).n_tiles != 6);
    }
}

TEST_CASE("choose_config v19: 2-bit weights at one row, 8 tiles per warp from 4.5 tiles per SM", "[config]") {
  WqGemmProblem p = normal_problem();
  p.m = 1, p.bits = 2;
  const Arch hopper = Arch::parse("sm_90a");
  struct Case {
    int n, k, n_tiles, warps_k;
    bool x_shared;
  };
  for (const Case& e : {Case{8192, 8192, 8, 16, true}, Case{6144, 4096, 8, 8, true},
                        Case{28672, 4096, 8, 4, true}, Case{16384, 16384, 8, 8, false},
                        Case{4096, 4096, 4, 16, true} /* v29 */, Case{4096, 14336, 4, 16, true}}) {
    p.n = e.n, p.k = e.k;
    const WqGemmConfig c = lowbit::choose_config(p, hopper, 132);
    INFO(e.n << "x" << e.k << ": " << c.str());
    CHECK(c.n_tiles == e.n_tiles);
    CHECK(c.warps_k == e.warps_k);
    CHECK(c.x_shared == e.x_shared);
    CHECK(lowbit::can_implement(p, c, hopper));
  }
  // 4 bits keep the v18 choices; 2 rows too on sm_80 (on sm_90a 2-bit weights at 2-8 rows take the 16-row
  // rules since v33).
  p.n = 8192, p.k = 8192;
  p.bits = 4;
  CHECK(lowbit::choose_config(p, hopper, 132).n_tiles == 4);
  p.bits = 2, p.m = 2;
  CHECK(lowbit::choose_config(p, Arch::parse("sm_80"), 132).n_tiles != 8);
}

TEST_CASE("choose_config splits K only when the grid leaves most SMs idle", "[config]") {
  const Arch sm90a = Arch::parse("sm_90a");
  WqGemmProblem p = normal_problem();
  p.m = 1, p.n = 512, p.k = 8192;  // 16 blocks of 32 columns on 132 SMs
  const WqGemmConfig small = lowbit::choose_config(p, sm90a, 132);
  INFO(small.str());
  CHECK(small.split_k > 1);
  std::string why;
  CHECK(lowbit::can_implement(p, small, sm90a, &why));
  p.n = 8192;  // 256 blocks: no split
  CHECK(lowbit::choose_config(p, sm90a, 132).split_k == 1);
}

TEST_CASE("can_implement refuses more row blocks than a grid holds", "[config]") {
  WqGemmProblem p = normal_problem();
  p.m = int64_t{1} << 30;
  WqGemmConfig c;
  c.m_tiles = 1;
  std::string why;
  CHECK_FALSE(lowbit::can_implement(p, c, Arch::parse("sm_90a"), &why));
  CHECK(why.find("65535") != std::string::npos);
}

TEST_CASE("default_config runs every problem can_implement accepts, on every arch from sm_80", "[problem]") {
  for (const char* arch_name : {"sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a", "sm_120"})
    for (int bits : {1, 2, 3, 4, 8})
      for (int group : {32, 64, 128, 256, 0})
        for (auto mode : {lowbit::DequantMode::SubZeroThenScale, lowbit::DequantMode::Symmetric,
                          lowbit::DequantMode::SubFloatZeroThenScale, lowbit::DequantMode::ScaleThenAddZero})
          for (int64_t m : {1, 17, 4096}) {
            lowbit::WqGemmProblem p;
            p.m = m, p.n = 20, p.k = 256 * 3, p.bits = bits, p.group_size = group, p.mode = mode;
            p.deterministic = bits == 3;
            std::string why;
            INFO(arch_name << " " << p.str() << ": " << why);
            CHECK(lowbit::can_implement(p, lowbit::default_config(), lowbit::Arch::parse(arch_name), &why));
          }
}

TEST_CASE(
    "modes that dequantize before the MMA get more than 8 accumulator tiles a warp only in v48's blocks",
    "[wq_gemm]") {
  const Arch sm90a = Arch::parse("sm_90a");
  for (auto mode : {lowbit::DequantMode::SubFloatZeroThenScale, lowbit::DequantMode::ScaleThenAddZero,
                    lowbit::DequantMode::SubZeroThenScale}) {
    for (int group : {32, 128}) {
      for (int64_t m : {1, 16, 32, 64, 128})
        for (DType accum : {DType::F32, DType::F16}) {  // fp16 accumulation always dequantizes first
          lowbit::WqGemmProblem p;
          p.m = m, p.n = 28672, p.k = 8192, p.group_size = group, p.mode = mode, p.accum = accum;
          const bool full_dequant =
              mode != lowbit::DequantMode::SubZeroThenScale || group < 128 || accum == DType::F16;
          const WqGemmConfig c = lowbit::choose_config(p, sm90a, 132);
          INFO("mode " << static_cast<int>(mode) << " group " << group << " m " << m << " accum "
                       << to_string(accum) << ": " << c.str());
          // (wgmma keeps its accumulators per warpgroup; can_implement bounds them.)
          // fp16 accumulation's v48 blocks of warps side by side hold 16 ((4,4,4,1) and (2,8,2,4) with
          // block-shared activations; nvrtc_test.cpp compiles them without spills); nothing else passes 8.
          const bool v48_block = accum == DType::F16 && c.x_shared &&
                                 ((c.m_tiles == 4 && c.n_tiles == 4 && c.warps_n == 4) ||
                                  (c.m_tiles == 2 && c.n_tiles == 8 && c.warps_n == 2));
          if (full_dequant && !c.wgmma) CHECK(c.m_tiles * c.n_tiles <= (v48_block ? 16 : 8));
          // A config tuned for the scale-after mode is cut down the same way, and only then.
          WqGemmConfig wide = c;
          wide.m_tiles = 2, wide.n_tiles = 8, wide.wgmma = false;
          if (c.wgmma) CHECK(lowbit::wq::fit_registers(p, c) == c);  // wgmma configs are left alone
          const WqGemmConfig fitted = lowbit::wq::fit_registers(p, wide);
          CHECK(fitted.m_tiles == (full_dequant ? 1 : 2));
          CHECK(fitted.n_tiles == 8);
          // One row tile of 16 column tiles (the widest layers' integer-zero entries at 1-8 rows) goes to 8
          // where every weight is dequantized first, and stays elsewhere; a wgmma config of 16 stays.
          WqGemmConfig sixteen = wide;
          sixteen.m_tiles = 1, sixteen.n_tiles = 16;
          CHECK(lowbit::wq::fit_registers(p, sixteen).n_tiles == (full_dequant ? 8 : 16));
          CHECK(lowbit::wq::fit_registers(p, sixteen).m_tiles == 1);
          WqGemmConfig wgmma_sixteen = sixteen;
          wgmma_sixteen.wgmma = true;
          CHECK(lowbit::wq::fit_registers(p, wgmma_sixteen) == wgmma_sixteen);
        }
    }
  }
}

TEST_CASE("x_shared: JSON round trip, name, shared memory, and a malformed field", "[wq_gemm]") {
  WqGemmProblem p = normal_problem();
  p.m = 64;
  WqGemmConfig c;
  // 4 stages: the rings (4 × 8 warps × 4352 B) outgrow the reduction buffer (every warp's 128
  // accumulators per lane, 128 KiB), so the activation stages show in smem_bytes.
  c.m_tiles = 4, c.n_tiles = 8, c.warps_n = 4, c.warps_k = 2, c.split_k = 2, c.stages = 4;
  const WqGemmConfig plain = c;
  c.x_shared = true;
  // Old files have no "x_shared" field: they read as false, and false configs are written without it.
  CHECK_FALSE(lowbit::wq::to_json(plain).contains("x_shared"));
  CHECK(lowbit::wq::config_from_json(lowbit::wq::to_json(plain)) == plain);
  CHECK(lowbit::wq::config_from_json(lowbit::wq::to_json(c)) == c);
  auto bad = lowbit::wq::to_json(c);
  bad["x_shared"] = 1;  // must be a boolean
  CHECK_FALSE(lowbit::wq::config_from_json(bad).has_value());
  // The activation stages: 4 stages × 64 rows × 2 chunks of 128 values × 2 bytes, before the rings.
  CHECK(lowbit::wq::smem_bytes(p, c, lowbit::test::kArch90) ==
        lowbit::wq::smem_bytes(p, plain, lowbit::test::kArch90) + 4 * 64 * 256 * 2);
  // Up to 8 rows with one row tile the kernel skips rows 8..15 and stages only the 8 rows it reads;
  // the kernel of M = 1 stages its one row.
  WqGemmProblem one_row = p, two_rows = p;
  one_row.m = 1, two_rows.m = 2;
  WqGemmConfig swapped = c;
  swapped.m_tiles = 1;
  WqGemmConfig swapped_plain = swapped;
  swapped_plain.x_shared = false;
  CHECK(lowbit::wq::smem_bytes(two_rows, swapped, lowbit::test::kArch90) ==
        lowbit::wq::smem_bytes(two_rows, swapped_plain, lowbit::test::kArch90) + 4 * 8 * 256 * 2);
  CHECK(lowbit::wq::smem_bytes(one_row, swapped, lowbit::test::kArch90) ==
        lowbit::wq::smem_bytes(one_row, swapped_plain, lowbit::test::kArch90) + 4 * 1 * 256 * 2);
  // The launch takes the bucket's size, whatever M the plan's problem has.
  CHECK(lowbit::wq::geometry(one_row, swapped, lowbit::test::kArch90, 16, 16).smem ==
        lowbit::wq::smem_bytes(p, swapped, lowbit::test::kArch90));
  CHECK(lowbit::wq::geometry(p, swapped, lowbit::test::kArch90, 1, 1).smem ==
        lowbit::wq::smem_bytes(one_row, swapped, lowbit::test::kArch90));
  CHECK(lowbit::wq::geometry(p, swapped, lowbit::test::kArch90, 2, 2).smem ==
        lowbit::wq::smem_bytes(two_rows, swapped, lowbit::test::kArch90));
  // The one-row kernel (staged or not) has a name of its own and runs M = 1 only.
  CHECK(lowbit::wq::one_row_kernel(swapped, 1));
  CHECK_FALSE(lowbit::wq::one_row_kernel(swapped, 2));
  CHECK(lowbit::wq::one_row_kernel(swapped_plain, 1));
  CHECK(lowbit::test::contains(spec_of(p, swapped, 1).name, "_mt1rnt8"));
  CHECK(lowbit::test::contains(spec_of(p, swapped, 2).name, "_mt1hnt8"));
  CHECK(lowbit::test::contains(spec_of(p, swapped_plain, 1).name, "_mt1rnt8"));
  CHECK(lowbit::test::contains(spec_of(p, swapped_plain, 2).name, "_mt1hnt8"));
  CHECK(lowbit::test::contains(spec_of(p, swapped, 1).name_expression, ", false, true, false,"));
  std::string what;
  try {
    lowbit::wq::geometry(p, swapped, lowbit::test::kArch90, 2, 1);
  } catch (const lowbit::Error& e) {
    what = e.what();
  }
  CHECK(lowbit::test::contains(what, "runs M = 1 only"));
  const auto spec = spec_of(p, c, 64);
  CHECK(lowbit::test::contains(spec.name, "xs"));
  CHECK(lowbit::test::contains(spec.name_expression,
                               "true, false, false>"));  // x_shared, fp16 accumulation, x_sums
  CHECK_FALSE(lowbit::test::contains(spec_of(p, plain, 64).name, "xs"));
  CHECK(lowbit::test::contains(c.str(), "x_shared"));
}

TEST_CASE("wgmma: rules, JSON round trip, name, shared memory, and the fallback off sm_90a", "[wq_gemm]") {
  WqGemmProblem p = normal_problem();
  p.m = 64;
  const Arch hopper = Arch::parse("sm_90a");
  WqGemmConfig c;
  c.m_tiles = 4, c.n_tiles = 2, c.warps_n = 4, c.warps_k = 1, c.split_k = 2, c.stages = 4, c.wgmma = true;
  std::string why;
  CHECK(lowbit::can_implement(p, c, hopper, &why));
  INFO(why);
  check_rejected(p, c, Arch::parse("sm_90"), "sm_90a");
  check_rejected(p, c, Arch::parse("sm_89"), "sm_90a");
  auto with = [&](auto&& edit) {
    WqGemmConfig e = c;
    edit(e);
    return e;
  };
  check_rejected(p, with([](WqGemmConfig& e) { e.warps_k = 2; }), hopper, "warpgroup");
  check_rejected(p, with([](WqGemmConfig& e) { e.warps_n = 2; }), hopper, "warpgroup");
  CHECK(lowbit::can_implement(p, with([](WqGemmConfig& e) { e.stages = 2; }), hopper));
  CHECK(lowbit::can_implement(p, with([](WqGemmConfig& e) { e.warps_n = 8; }), hopper));
  check_rejected(p, with([](WqGemmConfig& e) { e.warps_n = 8, e.wgmma = false; }), hopper, "warps_n = 8");
  check_rejected(p, with([](WqGemmConfig& e) { e.n_tiles = 8; }), hopper, "n_tiles = 8");
  check_rejected(p, with([](WqGemmConfig& e) { e.m_tiles = 3; }), hopper, "m_tiles = 3");
  check_rejected(p, with([](WqGemmConfig& e) { e.m_tiles = 8, e.n_tiles = 4; }), hopper, "over 16");
  check_rejected(p, with([](WqGemmConfig& e) { e.x_shared = true; }), hopper, "x_shared");
  WqGemmProblem det = p;
  det.deterministic = true;
  check_rejected(det, c, hopper, "deterministic");

  // Optional in files: absent reads as false, false is not written.
  WqGemmConfig plain = c;
  plain.wgmma = false;
  CHECK_FALSE(lowbit::wq::to_json(plain).contains("wgmma"));
  CHECK(lowbit::wq::config_from_json(lowbit::wq::to_json(c)) == c);
  auto bad = lowbit::wq::to_json(c);
  bad["wgmma"] = "yes";
  CHECK_FALSE(lowbit::wq::config_from_json(bad).has_value());
  // 4 stages × ((64 rows × 128 k × 2 B + 8 tiles × 128 × 4 bits + 2 × 8 rows of 16 B), each rounded
  // up to 1 KiB, and two 8-byte mbarriers) + 1 KiB to align the first.
  auto kib = [](int bytes) { return (bytes + 1023) / 1024 * 1024; };
  CHECK(lowbit::wq::smem_bytes(p, c, lowbit::test::kArch90) ==
        4 * (kib(64 * 256 + 8 * 128 * 4 + 2 * 8 * 16) + 16) + 1024);
  CHECK(lowbit::wq::smem_bytes(p, with([](WqGemmConfig& e) { e.warps_n = 8; }), lowbit::test::kArch90) ==
        4 * (kib(64 * 256 + 16 * 128 * 4 + 2 * 16 * 16) + 16) + 1024);
  const auto spec = spec_of(p, c, 64);
  CHECK(lowbit::test::contains(spec.name, "wg"));
  CHECK(lowbit::test::contains(spec.name_expression, "wq_gemm_wgmma_kernel<"));
  CHECK(lowbit::test::contains(spec.source, "wq_gemm_wgmma.cuh"));
  CHECK(lowbit::test::contains(c.str(), "wgmma"));
  CHECK_FALSE(lowbit::wq::skips_upper_rows(with([](WqGemmConfig& e) { e.m_tiles = 1; }), 1));

  // x_image: wgmma only; in files, names and str(); its own arranging kernel per K and rows per
  // block; the image holds whole row blocks of K rounded up to 128.
  const WqGemmConfig img = with([](WqGemmConfig& e) { e.x_image = true; });
  CHECK(lowbit::can_implement(p, img, hopper));
  check_rejected(p, with([](WqGemmConfig& e) { e.x_image = true, e.wgmma = false, e.warps_n = 4; }), hopper,
                 "x_image needs wgmma");
  CHECK_FALSE(lowbit::wq::to_json(c).contains("x_image"));
  CHECK(lowbit::wq::config_from_json(lowbit::wq::to_json(img)) == img);
  CHECK(lowbit::test::contains(spec_of(p, img, 64).name, "xi"));
  CHECK_FALSE(lowbit::test::contains(spec_of(p, c, 64).name, "xi"));
  CHECK(spec_of(p, img, 64).name_expression != spec_of(p, c, 64).name_expression);
  CHECK(lowbit::test::contains(img.str(), "x_image"));
  CHECK(lowbit::test::contains(lowbit::wq::x_image_spec(p, img).name_expression,
                               "wq_x_image_kernel<4096, 64>"));
  CHECK(lowbit::wq::x_image_bytes(p, img, 65) == 128 * 4096 * 2);
  CHECK(lowbit::wq::x_image_bytes(p, c, 65) == 0);
  // Act-order: the permutation writes the image (one kernel per K and rows per block, not the x_image
  // kernel), and without an image into the workspace (one per K).
  WqGemmProblem ordered = p;
  ordered.act_order = true;
  CHECK(lowbit::wq::x_image_spec(ordered, img).name_expression ==
        "lowbit::kern::wq_permute_x_kernel<4096, 64>");
  CHECK(lowbit::wq::x_image_spec(ordered, img).name == "wq_permute_x_k4096_r64");
  CHECK(lowbit::wq::permute_spec(ordered).name_expression == "lowbit::kern::wq_permute_x_kernel<4096, 0>");
  CHECK(lowbit::wq::permute_spec(ordered).name != lowbit::wq::x_image_spec(ordered, img).name);

  // Off sm_90a (and for deterministic problems) shrink_to_fit turns it into the mma.sync config of
  // the same block shape; on sm_90a it only trims stages and tiles until the shared memory fits.
  for (const char* arch : {"sm_89", "sm_80", "sm_90"}) {
    WqGemmConfig f = img;  // x_image goes with wgmma
    lowbit::wq::shrink_to_fit(p, f, Arch::parse(arch), false);
    CHECK_FALSE(f.wgmma);
    CHECK_FALSE(f.x_image);
    CHECK(lowbit::can_implement(p, f, Arch::parse(arch)));
  }
  WqGemmConfig f = c;
  lowbit::wq::shrink_to_fit(det, f, hopper, true);
  CHECK_FALSE(f.wgmma);
  // The heuristic picks it on sm_90a for large layers at 64 and 128 rows and over 128 rows (v51,
  // heuristic_large_m_test.cpp), not at 1-16.
  WqGemmProblem big = p;
  big.n = 16384, big.k = 16384;
  for (int64_t m : {64, 128, 256}) {
    big.m = m;
    const WqGemmConfig h = lowbit::choose_config(big, hopper, 132);
    INFO(m << " " << h.str());
    CHECK(h.wgmma);
    CHECK(lowbit::can_implement(big, h, hopper));
    CHECK_FALSE(lowbit::choose_config(big, Arch::parse("sm_89"), 128).wgmma);
    WqGemmProblem big_det = big;
    big_det.deterministic = true;
    CHECK_FALSE(lowbit::choose_config(big_det, hopper, 132).wgmma);
  }
  for (int64_t m : {1, 16}) {
    big.m = m;
    CHECK_FALSE(lowbit::choose_config(big, hopper, 132).wgmma);
  }
  big.m = 32;  // v24: 32 rows on large layers from 9 tiles per SM (tests/unit/heuristic_v24_test.cpp)
  CHECK(lowbit::choose_config(big, hopper, 132).wgmma);
  big.n = 8192, big.k = 8192;  // ... not on 8192² (7.8 tiles per SM, 64 chunks), where mma.sync won
  CHECK_FALSE(lowbit::choose_config(big, hopper, 132).wgmma);
  big.n = 16384, big.k = 16384;
  CHECK_FALSE(lowbit::choose_config(p, hopper, 132).wgmma);  // 4096², 64 rows
  WqGemmProblem k_heavy = p;                                 // 32 rows, K-heavy: wgmma again (v56)
  k_heavy.m = 32, k_heavy.n = 4096, k_heavy.k = 14336;
  CHECK(lowbit::choose_config(k_heavy, hopper, 132).wgmma);
  big.m = 64, big.bits = 8;
  CHECK(lowbit::choose_config(big, hopper, 132).wgmma);  // measured for 2, 4 and 8 bits
  big.bits = 3;  // v39: 3-bit as 4-bit, 8-bit per channel as g128 (tests/unit/heuristic_v39_test.cpp)
  CHECK(lowbit::choose_config(big, hopper, 132).wgmma);
  big.bits = 8, big.group_size = 0;
  CHECK(lowbit::choose_config(big, hopper, 132).wgmma);
  big.group_size = 64;  // v41: every 8-bit group
  CHECK(lowbit::choose_config(big, hopper, 132).wgmma);
  big.group_size = 128, big.m = 32;  // 2 and 8 bits at 32 rows: v56
  CHECK(lowbit::choose_config(big, hopper, 132).wgmma);
  // Heuristic v10. 128 rows from 48 M weights: all 128 rows per block, 128 columns, every format.
  for (int bits : {2, 4, 8}) {
    big.bits = bits, big.m = 128;
    const WqGemmConfig h = lowbit::choose_config(big, hopper, 132);
    INFO(bits << " " << h.str());
    CHECK((h.wgmma && h.m_tiles == 8 && h.n_tiles == 2 && h.warps_n == 8));
  }
  // 5-7 tiles per SM below 48 M weights (6144×4096): 128-column wgmma blocks at 64 and 128 rows, K
  // split in two over a cluster pair, 96 blocks, all of the bucket's rows per block, the activations
  // from an image (v17; v15 ran 64 rows per block over all of K at 128 rows, v12 stream K); 8-bit at
  // 64 rows too since v20 (it staged all 64 rows per block with mma.sync before).
  WqGemmProblem mid = p;
  mid.n = 6144, mid.k = 4096;
  for (int bits : {2, 4, 8})
    for (int64_t m : {64, 128}) {
      mid.bits = bits, mid.m = m;
      const WqGemmConfig h = lowbit::choose_config(mid, hopper, 132);
      INFO(bits << " " << m << " " << h.str());
      CHECK((h.wgmma && !h.stream_k && h.x_image && h.split_k == 2 && h.m_tiles == m / 16 && h.n_tiles == 2 &&
             h.warps_n == 8));
      CHECK(lowbit::can_implement(mid, h, hopper));
    }
  // 8-bit at 64 rows where the pair is under 0.7 waves (3584×4096, 32 chunks): not the pair but the
  // four-way split of 64-row blocks, 3 stages, no image (v21; 4096² takes v62's mma.sync block).
  mid.bits = 8, mid.m = 64, mid.n = 3584;
  {
    const WqGemmConfig h = lowbit::choose_config(mid, hopper, 132);
    INFO(h.str());
    CHECK((h.wgmma && h.split_k == 4 && h.m_tiles == 4 && h.n_tiles == 2 && h.stages == 3 && !h.x_image &&
           !h.stream_k));
  }
  mid.n = 6144;
  mid.bits = 4, mid.m = 32;
  CHECK_FALSE(lowbit::choose_config(mid, hopper, 132).wgmma);
  // The tuner tries it from 32 rows on sm_90a only.
  auto count_wgmma = [](const std::vector<WqGemmConfig>& cs) {
    return std::count_if(cs.begin(), cs.end(), [](const WqGemmConfig& x) { return x.wgmma; });
  };
  CHECK(count_wgmma(lowbit::tune::wq_candidates(p, hopper, 132)) >= 2);
  CHECK(count_wgmma(lowbit::tune::wq_candidates(p, Arch::parse("sm_89"), 128)) == 0);
  CHECK(count_wgmma(lowbit::tune::wq_candidates(normal_problem(), hopper, 132)) == 0);  // M = 1
  CHECK(count_wgmma(lowbit::tune::wq_candidates(det, hopper, 132)) == 0);
  WqGemmConfig deep = with([](WqGemmConfig& e) { e.m_tiles = 8, e.n_tiles = 2, e.stages = 8; });
  lowbit::wq::shrink_to_fit(p, deep, hopper, false);
  CHECK(deep.wgmma);
  CHECK(deep.stages < 8);
  CHECK(lowbit::can_implement(p, deep, hopper));
}

TEST_CASE("permute_shape: a thread per output vector, few blocks per row, every SM busy", "[wq_gemm]") {
  WqGemmProblem p;
  p.n = 4096, p.k = 14336, p.act_order = true;
  auto check = [&](int image_rows, int64_t m, unsigned grid_x, unsigned grid_y, unsigned block) {
    const lowbit::jit::LaunchShape s = lowbit::wq::permute_shape(p, image_rows, m, 132);
    INFO("image_rows " << image_rows << ", m " << m);
    CHECK(s.grid_x == grid_x);
    CHECK(s.grid_y == grid_y);
    CHECK(s.block == block);
    // Every output vector of a row has a thread: K / 8 into the workspace, 16 per 128-k chunk (K
    // rounded up) into an image.
    const int64_t vectors = image_rows ? (p.k + 127) / 128 * 16 : p.k / 8;
    CHECK(static_cast<int64_t>(s.grid_x) * s.block >= vectors);
    CHECK(static_cast<int64_t>(s.grid_x - 1) * s.block < vectors);
    CHECK(s.block % 32 == 0);
    CHECK(s.block <= 1024);
    // Shared memory only for the row a block copies (gathers from global memory hold none).
    CHECK(s.smem == (lowbit::wq::permute_in_shared(p, m) ? p.k * 2 : 0));
  };
  // Up to 16 rows the gathers go to global memory, blocks of 256 threads.
  CHECK_FALSE(lowbit::wq::permute_in_shared(p, 16));
  check(0, 1, 7, 1, 256);
  check(0, 16, 7, 16, 256);
  // From 17 rows a block copies its row into shared memory: as few per row as fill the SMs.
  CHECK(lowbit::wq::permute_in_shared(p, 17));
  check(0, 17, 8, 17, 224);        // ceil(132 / 17) = 8 blocks per row, 224 threads
  check(0, 20, 7, 20, 256);        // 7 blocks per row
  check(0, 70000, 2, 65535, 896);  // grid y at most 65535: blocks loop over the rows past it
  check(128, 97, 2, 128, 896);     // an image of 128 rows: the fewest blocks per row (1792 vectors)
  p.k = 4096;
  check(64, 64, 3, 64, 192);   // 512 vectors: 3 blocks per row fill 132 SMs
  check(0, 140, 1, 140, 512);  // more rows than SMs: one block per row
  p.k = 2080;                  // K rounded up to 17 chunks of 16 vectors in an image
  check(64, 1, 2, 64, 256);    // one row: gathers from global memory, all 64 rows of the block
  check(64, 17, 3, 64, 96);
  p.k = 24704;  // past the shared-memory row: gathers from global memory at any M
  CHECK_FALSE(lowbit::wq::permute_in_shared(p, 128));
  check(128, 128, 13, 128, 256);  // 193 chunks × 16 vectors
}

TEST_CASE("fill_split: the smallest power of 2 that fills the grid, keeping 2 chunks per warp", "[wq_gemm]") {
  WqGemmProblem p = normal_problem();  // 4096 x 4096: 512 tiles, 32 chunks
  p.m = 64;
  WqGemmConfig c;
  c.m_tiles = 4, c.n_tiles = 8, c.warps_n = 4, c.warps_k = 1, c.x_shared = true;  // 16 blocks
  CHECK(lowbit::wq::fill_split(p, c, 16) == 1);
  CHECK(lowbit::wq::fill_split(p, c, 17) == 2);
  CHECK(lowbit::wq::fill_split(p, c, 132) == 16);  // 32 chunks / 16 = 2 per warp
  c.warps_k = 2;
  CHECK(lowbit::wq::fill_split(p, c, 132) == 8);  // 2 chunks per warp of 2
}

TEST_CASE("x_sums: where the zero comes after the MMA, JSON round trip, name, buffer, tuner", "[wq_gemm]") {
  WqGemmProblem p = normal_problem();  // W4 g128 f16: the zero after the MMA only with the sums
  const Arch hopper = Arch::parse("sm_90a");
  WqGemmConfig c{1, 8, 1, 4, 1};
  c.stages = 3, c.x_shared = true, c.x_sums = true;
  std::string why;
  CHECK(lowbit::can_implement(p, c, hopper, &why));
  p.bits = 2;
  CHECK(lowbit::can_implement(p, c, hopper, &why));
  for (auto [bits, act] : {std::pair{1, DType::F16}, {3, DType::F16}, {4, DType::BF16}, {8, DType::F16}}) {
    WqGemmProblem q = p;
    q.bits = bits, q.act = q.out = act;
    CAPTURE(bits);
    CHECK(lowbit::can_implement(q, c, hopper, &why));
  }
  {
    WqGemmProblem q = p;
    q.bits = 8, q.act = q.out = DType::BF16;
    check_rejected(q, c, hopper, "takes the zero before the MMA");
    q = p, q.group_size = 64;
    check_rejected(q, c, hopper, "groups of 128");
    q = p, q.group_size = 0;  // per channel: the scale comes at the end, the zero before the MMA
    check_rejected(q, c, hopper, "groups of 128");
    q = p, q.mode = lowbit::DequantMode::SubFloatZeroThenScale;
    check_rejected(q, c, hopper, "integer zeros");
    q = p, q.deterministic = true;
    check_rejected(q, c, hopper, "deterministic");
    WqGemmConfig odd = c;
    odd.n_tiles = 1;
    check_rejected(p, odd, hopper, "even n_tiles");
    WqGemmConfig w{4, 2, 8, 1, 1};
    w.stages = 3, w.wgmma = true, w.x_sums = true;
    check_rejected(p, w, hopper, "mma.sync");
  }
  // JSON: absent means false; the kernel's name and last template argument carry it.
  CHECK(lowbit::wq::config_from_json(lowbit::wq::to_json(c)) == c);
  WqGemmConfig plain = c;
  plain.x_sums = false;
  CHECK_FALSE(lowbit::wq::to_json(plain).contains("x_sums"));
  CHECK(lowbit::test::contains(c.str(), "x_sums"));
  const auto spec = spec_of(p, c, 16);
  CHECK(lowbit::test::contains(spec.name, "xz"));
  CHECK(lowbit::test::contains(spec.name_expression, ", true>"));
  CHECK(lowbit::test::contains(spec_of(p, plain, 16).name_expression, ", false>"));
  CHECK(
      lowbit::test::contains(lowbit::wq::x_sums_spec(p).name_expression, "wq_x_sums_kernel<4096, 2, false>"));
  // The sums buffer: the GEMM grid's rows (16 per row tile) × chunks × (Σx, Σ base·x).
  CHECK(lowbit::wq::grid_rows(c, 1) == 16);
  CHECK(lowbit::wq::grid_rows(c, 17) == 32);
  CHECK(lowbit::wq::x_sums_bytes(p, c, 16) == 16u * 32 * 8);
  CHECK(lowbit::wq::x_sums_bytes(p, plain, 16) == 0u);
  // The tuner tries it up to 16 rows where it applies, never where it does not.
  auto with_sums = [](const std::vector<WqGemmConfig>& cs) {
    return std::count_if(cs.begin(), cs.end(), [](const WqGemmConfig& x) { return x.x_sums; });
  };
  p.m = 16;
  CHECK(with_sums(lowbit::tune::wq_candidates(p, hopper, 132)) > 0);
  const auto around_sums = lowbit::tune::wq_neighbours(p, c, hopper);  // one of them toggles it off
  CHECK(static_cast<std::size_t>(with_sums(around_sums)) + 1 == around_sums.size());
  CHECK(with_sums(lowbit::tune::wq_neighbours(p, plain, hopper)) == 1);
  p.m = 64;
  CHECK(with_sums(lowbit::tune::wq_candidates(p, hopper, 132)) == 0);
  p.m = 16, p.bits = 4;  // fp16 4-bit: tried too
  CHECK(with_sums(lowbit::tune::wq_candidates(p, hopper, 132)) > 0);
  p.bits = 8, p.act = p.out = DType::BF16;
  CHECK(with_sums(lowbit::tune::wq_candidates(p, hopper, 132)) == 0);
}

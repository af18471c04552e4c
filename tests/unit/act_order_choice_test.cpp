// Act-order layers at 64/128 rows on Hopper take a config with the activation image (wq::choose):
// the permutation they run anyway writes it.
#include "jit/context.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "support/catch.hpp"
#include "support/test_support.hpp"
#include "tune/wq_tune.hpp"
#include "unit/unit_helpers.hpp"

using lowbit::WqGemmConfig;
using lowbit::WqGemmProblem;

namespace {
WqGemmProblem layer(int64_t n, int64_t k, bool act_order) {
  WqGemmProblem p;
  p.m = 128, p.n = n, p.k = k, p.act_order = act_order;
  return p;
}
}  // namespace

TEST_CASE("act-order at 64/128 rows on sm_90a: a config with the image, as the permutation writes it",
          "[heuristic]") {
  lowbit::test::TempDir dir;
  lowbit::RuntimeOptions o = lowbit::test::offline_options("sm_90a", dir.path);
  o.sm_count = 132;
  lowbit::Runtime rt(o);
  auto choose = [&](const WqGemmProblem& p, int64_t bucket, std::optional<WqGemmConfig> forced = {}) {
    return lowbit::wq::choose(rt.context(), p, bucket, forced);
  };
  // 4096² at 64 rows: the plain layer runs mma.sync; act-order 128-column wgmma blocks of 64 rows, K
  // in four pieces of 8 chunks (128 blocks: 0.97 wave), with the image.
  const auto plain = choose(layer(4096, 4096, false), 64);
  REQUIRE_FALSE(plain.config.wgmma);
  const auto ordered = choose(layer(4096, 4096, true), 64);
  INFO(ordered.source);
  CHECK(ordered.config.wgmma);
  CHECK(ordered.config.x_image);
  CHECK(ordered.config.split_k == 4);
  CHECK((ordered.config.m_tiles == 4 && ordered.config.n_tiles == 2 && ordered.config.warps_n == 8));
  CHECK(lowbit::test::contains(ordered.source, "act-order"));
  // A choice with the image already is kept, as are choices below 64 rows, off sm_90a and forced ones.
  for (int64_t bucket : {128, 16, 1}) {
    INFO("bucket " << bucket);
    const auto p = choose(layer(4096, 4096, false), bucket), a = choose(layer(4096, 4096, true), bucket);
    CHECK(a.config == p.config);
  }
  WqGemmConfig forced{2, 8, 1, 4, 1, 3};
  forced.x_shared = true;
  CHECK(choose(layer(4096, 4096, true), 64, forced).config == forced);
  // 8192×1024: two pieces of 4 chunks would make the wave; too short (H200: 2.5 % slower), so the
  // plain layer's choice stays.
  CHECK(choose(layer(8192, 1024, true), 64).config == choose(layer(8192, 1024, false), 64).config);
  // Deterministic layers never run wgmma: the plain deterministic layer's choice.
  WqGemmProblem det = layer(4096, 4096, true), det_plain = layer(4096, 4096, false);
  det.deterministic = det_plain.deterministic = true;
  CHECK(choose(det, 64).config == choose(det_plain, 64).config);
  // Plans without buffers of their own (no image) and chained plans (not measured) keep the plain choice.
  for (const lowbit::wq::ChooseFor plan_kind :
       {lowbit::wq::ChooseFor{false, false}, lowbit::wq::ChooseFor{true, true}}) {
    INFO("own buffers " << plan_kind.own_buffers << ", chained " << plan_kind.chained);
    const auto a = lowbit::wq::choose(rt.context(), layer(4096, 4096, true), 64, std::nullopt, plan_kind);
    CHECK(a.config == plain.config);
    CHECK_FALSE(lowbit::test::contains(a.source, "act-order"));
  }
}

TEST_CASE("act_order_image_config: which choices change, and into what", "[heuristic]") {
  const auto hopper = lowbit::Arch::parse("sm_90a");
  auto image_for = [&](WqGemmProblem p, int64_t bucket, const WqGemmConfig& chosen) {
    p.m = bucket;
    return lowbit::wq::act_order_image_config(p, chosen, hopper, 132);
  };
  WqGemmConfig mma{2, 8, 1, 4, 1, 3};
  mma.x_shared = true;
  WqGemmConfig wg{4, 2, 8, 1, 1, 3};
  wg.wgmma = true, wg.stream_k = true;
  // A wgmma choice keeps its shape and takes the image (8192×1024 at 128 rows, stream K included).
  auto w = image_for(layer(8192, 1024, true), 128, wg);
  REQUIRE(w.has_value());
  WqGemmConfig want = wg;
  want.x_image = true;
  CHECK(*w == want);
  // mma.sync choices: the most K pieces that make 0.7-1 wave of 128-column, 64-row blocks.
  struct Case {
    int64_t n, k, bucket;
    int split;  // 0: no change
  };
  for (const Case& c : {Case{4096, 4096, 64, 4},      // 32 blocks × 4, pieces of 8 chunks
                        Case{8192, 2048, 64, 2},      // 64 × 2 (× 4 = 256 is over one wave)
                        Case{14336, 4096, 64, 1},     // 112 blocks
                        Case{4096, 4096, 128, 2},     // 2 row blocks: 64 × 2
                        Case{8192, 1024, 64, 0},      // 64 × 2 in pieces of 4 chunks: too short
                        Case{1280, 8192, 64, 0},      // 10 × 4 = 40 blocks: under 0.7 wave
                        Case{28672, 4096, 64, 0}}) {  // 224 blocks: over one wave
    INFO(c.n << "x" << c.k << " bucket " << c.bucket);
    const auto r = image_for(layer(c.n, c.k, true), c.bucket, mma);
    REQUIRE(r.has_value() == (c.split != 0));
    if (!r) continue;
    CHECK((r->wgmma && r->x_image && r->m_tiles == 4 && r->n_tiles == 2 && r->warps_n == 8));
    CHECK(r->split_k == c.split);
  }
  // Not: plain layers, other buckets, an image already, formats the change was not measured on (3-bit,
  // groups of 64), other archs.
  CHECK_FALSE(image_for(layer(4096, 4096, false), 64, mma).has_value());
  for (int64_t bucket : {1, 16, 32}) CHECK_FALSE(image_for(layer(4096, 4096, true), bucket, mma).has_value());
  CHECK_FALSE(image_for(layer(4096, 4096, true), 64, want).has_value());
  WqGemmProblem w3 = layer(4096, 4096, true), g64 = w3;
  w3.bits = 3, g64.group_size = 64;
  CHECK_FALSE(image_for(w3, 64, mma).has_value());
  CHECK_FALSE(image_for(g64, 64, mma).has_value());
  CHECK(image_for(g64, 64, wg).has_value());  // a wgmma choice takes the image in any format
  WqGemmProblem p = layer(4096, 4096, true);
  p.m = 64;
  CHECK_FALSE(lowbit::wq::act_order_image_config(p, mma, lowbit::Arch::parse("sm_90"), 132).has_value());
}

TEST_CASE("lowbit tune refuses act-order layers (their entry is the plain layer's)", "[heuristic]") {
  const std::string msg =
      lowbit::test::error_of([] { lowbit::tune::check_tunable(layer(4096, 4096, true)); });
  CHECK(lowbit::test::contains(msg, "act_order = true"));
  CHECK(lowbit::test::contains(msg, "tune the plain layer"));
  lowbit::tune::check_tunable(layer(4096, 4096, false));
}

TEST_CASE("act-order on sm_80: the plain layer's choice", "[heuristic]") {
  lowbit::test::TempDir dir;
  lowbit::Runtime rt(lowbit::test::offline_options("sm_80", dir.path));
  for (int64_t bucket : {1, 16, 64, 128}) {
    INFO("bucket " << bucket);
    CHECK(lowbit::wq::choose(rt.context(), layer(4096, 4096, true), bucket, std::nullopt).config ==
          lowbit::wq::choose(rt.context(), layer(4096, 4096, false), bucket, std::nullopt).config);
  }
}

// Act-order layers at 64/128 rows on Hopper take a config with the activation image (wq::choose):
// the permutation they run anyway writes it.
#include "jit/context.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "support/catch.hpp"
#include "support/test_support.hpp"
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
  // Deterministic layers never run wgmma.
  WqGemmProblem det = layer(4096, 4096, true);
  det.deterministic = true;
  CHECK_FALSE(choose(det, 64).config.wgmma);
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

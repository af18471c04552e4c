// Heuristic v55 (docs/perf-notes.md, sixty-eighth session, H200 bench): deterministic problems from 32 rows
// (16 with more than 8 warps along K) take their own block shape for the one-row choice's warps along K
// (wq::deterministic_config), in place of the plain problem's, which spilled or, past 128 rows, ran the wgmma
// choice cut to mma.sync.
#include <optional>
#include <string>

#include "jit/context.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "support/catch.hpp"
#include "support/test_support.hpp"
#include "tune/tuning_db.hpp"
#include "unit/heuristic_helpers.hpp"
#include "unit/unit_helpers.hpp"

using lowbit::WqGemmConfig;
using lowbit::WqGemmProblem;
using lowbit::test::g128_problem;

namespace {
// m_tiles,n_tiles,warps_n,warps_k,split_k,stages, "+xs" with staged activations.
std::string shape(const WqGemmConfig& c) {
  std::string s;
  for (int v : {c.m_tiles, c.n_tiles, c.warps_n, c.warps_k, c.split_k, c.stages})
    s += std::to_string(v) + ",";
  s.pop_back();
  return c.x_shared ? s + "+xs" : s;
}

WqGemmProblem det_problem(int64_t n, int64_t k) {
  WqGemmProblem p = g128_problem(n, k, 1);
  p.deterministic = true;
  return p;
}

lowbit::RuntimeOptions hopper_options(const std::string& dir) {
  lowbit::RuntimeOptions o = lowbit::test::offline_options("sm_90a", dir);
  o.sm_count = 132, o.no_tuning_db = true;
  return o;
}
}  // namespace

TEST_CASE("deterministic v55: a block shape for each one-row K order, from 16 rows", "[heuristic]") {
  lowbit::test::TempDir dir;
  lowbit::Runtime rt(hopper_options(dir.path));
  auto choose = [&](int64_t n, int64_t k, int64_t bucket) {
    const auto c = lowbit::wq::choose(rt.context(), det_problem(n, k), bucket, std::nullopt);
    INFO(n << "x" << k << " bucket " << bucket << ": " << c.config.str() << " (" << c.source << ")");
    if (bucket > 1) CHECK(lowbit::test::contains(c.source, "deterministic"));
    return shape(c.config);
  };
  // The one-row K orders (no tuning file, 132 SMs): 16 warps along K on 4096² and 4096×14336, 8 on 8192²,
  // 4 on 12288×4096, 2 on 28672×4096.
  CHECK(choose(4096, 4096, 1) == "1,4,1,16,1,2");
  CHECK(choose(8192, 8192, 1) == "1,4,1,8,1,2");
  CHECK(choose(12288, 4096, 1) == "1,4,1,4,1,2");
  CHECK(choose(28672, 4096, 1) == "1,4,1,2,1,2");
  for (int64_t bucket : {16, 32, 64, 128, 256, 1024}) {
    CHECK(choose(4096, 4096, bucket) == "1,4,1,16,1,2+xs");
    CHECK(choose(4096, 14336, bucket) == "1,4,1,16,1,2+xs");
    // (At 16 rows up to 8 warps along K the plain choice's shape stays.)
    CHECK(choose(8192, 8192, bucket) == (bucket == 16 ? "1,8,1,8,1,2" : "2,4,1,8,1,2+xs"));
    CHECK(choose(12288, 4096, bucket) == (bucket == 16   ? "1,8,1,4,1,2"
                                          : bucket == 64 ? "2,4,2,4,1,3+xs"
                                                         : "1,8,1,4,1,3"));
    CHECK(choose(28672, 4096, bucket) == (bucket == 16 ? "1,8,1,2,1,2" : "2,4,2,2,1,3+xs"));
  }
  // A K split of the one-row choice stays (512×8192: 16 warps along K, two pieces).
  const auto split = lowbit::wq::choose(rt.context(), det_problem(512, 8192), 1, std::nullopt).config;
  REQUIRE(split.split_k > 1);
  CHECK(lowbit::wq::choose(rt.context(), det_problem(512, 8192), 64, std::nullopt).config.split_k ==
        split.split_k);
  // Under 16 rows, and at 16 rows up to 8 warps along K, the plain choice keeps its shape (with the one-row K
  // order).
  for (int64_t bucket : {2, 8, 16})
    CHECK_FALSE(lowbit::test::contains(
        lowbit::wq::choose(rt.context(), det_problem(8192, 8192), bucket, std::nullopt).source,
        "heuristic (det"));
  CHECK(lowbit::test::contains(
      lowbit::wq::choose(rt.context(), det_problem(4096, 4096), 16, std::nullopt).source, "heuristic (det"));
}

TEST_CASE("deterministic v55 leaves forced configs and exact tuning entries", "[heuristic]") {
  lowbit::test::TempDir dir;
  const WqGemmProblem p = det_problem(8192, 8192);
  // A forced config is every bucket's, its K order included.
  const WqGemmConfig forced{2, 2, 2, 2, 1, 3};
  lowbit::Runtime plain_rt(hopper_options(dir.path));
  CHECK(lowbit::wq::choose(plain_rt.context(), p, 64, forced).config == forced);

  // An entry tuned for this deterministic problem and bucket serves it, in the one-row K order (8 warps
  // along K here, where the entries hold 4) and without the tile cap; any other entry (the same key's at the
  // nearest M bucket, the plain problem's as a similar format) does not.
  lowbit::tune::TuningDb db;
  db.meta.arch = "sm_90a", db.meta.device = "NVIDIA H200", db.meta.sm_count = 132;
  auto entry = [](int n_tiles) {
    return nlohmann::json{{"config",
                           {{"m_tiles", 1},
                            {"n_tiles", n_tiles},
                            {"warps_n", 1},
                            {"warps_k", 4},
                            {"split_k", 1},
                            {"stages", 2}}},
                          {"us", 1.0}};
  };
  db.put("wq_gemm", lowbit::wq::tuning_key(p, 64), entry(2));
  db.put("wq_gemm", lowbit::wq::tuning_key(p, 32), entry(16));
  db.put("wq_gemm", lowbit::wq::tuning_key(p, 1024), entry(2));
  WqGemmProblem plain = p;
  plain.deterministic = false;
  db.put("wq_gemm", lowbit::wq::tuning_key(plain, 256), entry(2));
  db.save(dir.path + "/h200.json");
  lowbit::RuntimeOptions o = hopper_options(dir.path);
  o.no_tuning_db = false, o.tuning_dir = dir.path;
  lowbit::Runtime rt(o);
  REQUIRE(lowbit::wq::choose(rt.context(), p, 1, std::nullopt).config.warps_k == 8);
  const auto exact = lowbit::wq::choose(rt.context(), p, 64, std::nullopt);
  INFO(exact.source);
  CHECK(lowbit::test::contains(exact.source, "tuned (exact"));
  CHECK(shape(exact.config) == "1,2,1,8,1,2");
  const auto exact16 = lowbit::wq::choose(rt.context(), p, 32, std::nullopt);
  INFO(exact16.source);
  CHECK(shape(exact16.config) == "1,16,1,8,1,2");
  REQUIRE(lowbit::test::contains(lowbit::wq::choose(rt.context(), plain, 256, std::nullopt).source, "exact"));
  // (The lookup does find those two for the deterministic key.)
  const auto nearest = rt.context().tuning().lookup("wq_gemm", lowbit::wq::tuning_key(p, 512));
  const auto similar = rt.context().tuning().lookup("wq_gemm", lowbit::wq::tuning_key(p, 256));
  REQUIRE((nearest && similar));
  CHECK(nearest->step == "nearest M bucket");
  CHECK(similar->step == "similar format");
  for (int64_t bucket : {512, 256}) {  // the det key's 1024-row entry as the nearest; the plain one's at 256
    const auto other = lowbit::wq::choose(rt.context(), p, bucket, std::nullopt);
    INFO(bucket << ": " << other.source);
    CHECK(lowbit::test::contains(other.source, "heuristic (deterministic)"));
    CHECK(shape(other.config) == "2,4,1,8,1,2+xs");
  }
}

TEST_CASE("deterministic v55 fits every arch and format, keeping the one-row K order", "[heuristic]") {
  for (const char* arch : {"sm_80", "sm_86", "sm_89", "sm_90a"}) {
    lowbit::test::TempDir dir;
    lowbit::RuntimeOptions o = lowbit::test::offline_options(arch, dir.path);
    o.sm_count = 108, o.no_tuning_db = true;
    lowbit::Runtime rt(o);
    for (int bits : {1, 2, 3, 4, 8})
      for (lowbit::DType act : {lowbit::DType::F16, lowbit::DType::BF16})
        for (int group : {32, 128, 0})
          for (int64_t n : {1024, 4096, 8192, 12288, 28672}) {
            WqGemmProblem p = det_problem(n, 4096);
            p.bits = bits, p.act = p.out = act, p.group_size = group;
            const WqGemmConfig one = lowbit::wq::choose(rt.context(), p, 1, std::nullopt).config;
            for (int64_t bucket : {16, 64, 256}) {
              const auto c = lowbit::wq::choose(rt.context(), p, bucket, std::nullopt);
              WqGemmProblem pb = p;
              pb.m = bucket;
              INFO(arch << " " << pb.str() << " -> " << c.config.str() << " (" << c.source << ")");
              CHECK(lowbit::can_implement(pb, c.config, lowbit::Arch::parse(arch)));
              CHECK(c.config.warps_k == one.warps_k);
              CHECK(c.config.split_k == one.split_k);
              CHECK_FALSE(c.config.wgmma);
            }
          }
  }
}

TEST_CASE("deterministic problems cut a similar format's 16 tiles a warp to 8 (registers), every bucket",
          "[heuristic]") {
  lowbit::test::TempDir dir;
  const WqGemmProblem p = det_problem(16384, 16384);
  WqGemmProblem plain = p;
  plain.deterministic = false;
  lowbit::tune::TuningDb db;
  db.meta.arch = "sm_90a", db.meta.device = "NVIDIA H200", db.meta.sm_count = 132;
  const nlohmann::json sixteen = {{"config",
                                   {{"m_tiles", 1},
                                    {"n_tiles", 16},
                                    {"warps_n", 1},
                                    {"warps_k", 4},
                                    {"split_k", 1},
                                    {"stages", 3},
                                    {"x_shared", true}}},
                                  {"us", 1.0}};
  for (int64_t bucket : {1, 4}) db.put("wq_gemm", lowbit::wq::tuning_key(plain, bucket), sixteen);
  db.save(dir.path + "/h200.json");
  lowbit::RuntimeOptions o = hopper_options(dir.path);
  o.no_tuning_db = false, o.tuning_dir = dir.path;
  lowbit::Runtime rt(o);
  for (int64_t bucket : {1, 4}) {
    const auto c = lowbit::wq::choose(rt.context(), p, bucket, std::nullopt);
    INFO(bucket << ": " << c.source);
    CHECK(shape(c.config) == "1,8,1,4,1,3+xs");
    CHECK(lowbit::test::contains(c.source, "n_tiles 16 -> 8 (deterministic registers)"));
  }
  // Every count stays one can_implement takes (6 tiles go to 4).
  for (int mt : {1, 2, 4, 8})
    for (int nt : {1, 2, 4, 6, 8, 16}) {
      const WqGemmConfig c = lowbit::wq::deterministic_tile_cap(WqGemmConfig{mt, nt, 1, 4, 1, 2});
      INFO(mt << " x " << nt << " -> " << c.str());
      CHECK((c.m_tiles * c.n_tiles <= 8 || c.n_tiles == 1));
      CHECK((c.n_tiles == 1 || c.n_tiles == 2 || c.n_tiles == 4 || c.n_tiles == 6 || c.n_tiles == 8));
      CHECK(c.m_tiles == mt);
    }
  // The plain problem keeps them; so does a forced config.
  CHECK(lowbit::wq::choose(rt.context(), plain, 1, std::nullopt).config.n_tiles == 16);
  const WqGemmConfig forced{1, 16, 1, 4, 1, 3, true};
  CHECK(lowbit::wq::choose(rt.context(), p, 1, forced).config == forced);
}

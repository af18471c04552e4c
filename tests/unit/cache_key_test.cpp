// The cache key of a wq_gemm kernel: deterministic, canonical, and sensitive to every field that is
// baked into the kernel (and to nothing that is not, like M).
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "jit/kernel_spec.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/unit_helpers.hpp"

namespace {

using lowbit::Arch;
using lowbit::DequantMode;
using lowbit::DType;
using lowbit::WqGemmConfig;
using lowbit::WqGemmProblem;

WqGemmProblem base_problem() {
  WqGemmProblem p;
  p.m = 1, p.n = 4096, p.k = 4096, p.bits = 4, p.group_size = 128;
  p.mode = DequantMode::SubZeroThenScale, p.act = DType::F16, p.out = DType::F16;
  return p;
}

WqGemmConfig base_config() {
  return WqGemmConfig{1, 4, 1, 4, 1};
}

struct Key {
  std::string name, json, digest;
};

Key key_of(const WqGemmProblem& p, const WqGemmConfig& c, const Arch& arch) {
  const lowbit::jit::KernelSpec spec = lowbit::wq::kernel_spec(p, c, lowbit::m_bucket(p.m));
  Key k;
  k.name = spec.name;
  k.json = lowbit::jit::cache_key_json(spec, arch);
  k.digest = lowbit::jit::cache_key_digest(k.json);
  return k;
}

}  // namespace

TEST_CASE("cache key: the same problem and config give the same key", "[cache_key]") {
  const Arch arch = Arch::parse("sm_90a");
  const Key a = key_of(base_problem(), base_config(), arch);
  const Key b = key_of(base_problem(), base_config(), arch);
  CHECK(a.json == b.json);
  CHECK(a.digest == b.digest);
  CHECK(a.name == b.name);
  CHECK(lowbit::test::is_hex32(a.digest));
  CHECK(lowbit::jit::cache_key_digest(a.json) == a.digest);
  CHECK(a.name.rfind("wq_gemm_", 0) == 0);
}

TEST_CASE("cache key: canonical JSON holding the documented fields", "[cache_key]") {
  const Key k = key_of(base_problem(), base_config(), Arch::parse("sm_90a"));
  const nlohmann::json j = nlohmann::json::parse(k.json);
  CHECK(j.dump() == k.json);  // sorted keys, no spaces: re-dumping changes nothing
  CHECK(j.at("family").get<std::string>() == "wq_gemm");
  CHECK(j.at("arch").get<std::string>() == "sm_90a");
  CHECK(j.at("specialization").at("n").get<int64_t>() == 4096);
  CHECK(j.at("specialization").at("k").get<int64_t>() == 4096);
  CHECK(j.at("specialization").at("group_size").get<int>() == 128);
  CHECK(j.at("config").at("n_tiles").get<int>() == 4);
  CHECK(!j.at("nvrtc").get<std::string>().empty());
  CHECK(!j.at("lowbit").get<std::string>().empty());
  CHECK(lowbit::test::is_hex32(j.at("templates").get<std::string>()));
  CHECK(j.at("options").is_array());
  CHECK(!j.at("name_expression").get<std::string>().empty());
}

TEST_CASE("cache key: every baked-in field changes the digest", "[cache_key]") {
  const Arch sm90a = Arch::parse("sm_90a");
  const Key base = key_of(base_problem(), base_config(), sm90a);

  std::map<std::string, Key> variants;
  auto with_problem = [&](const std::string& what, auto edit) {
    WqGemmProblem p = base_problem();
    edit(p);
    variants.emplace(what, key_of(p, base_config(), sm90a));
  };
  auto with_config = [&](const std::string& what, auto edit) {
    WqGemmConfig c = base_config();
    edit(c);
    variants.emplace(what, key_of(base_problem(), c, sm90a));
  };
  with_problem("n", [](WqGemmProblem& p) { p.n = 4104; });
  with_problem("k", [](WqGemmProblem& p) { p.k = 4224; });
  with_problem("bits", [](WqGemmProblem& p) { p.bits = 8; });  // not runnable, but must not alias bits = 4
  with_problem("group_size 64", [](WqGemmProblem& p) { p.group_size = 64; });
  with_problem("group_size 0", [](WqGemmProblem& p) { p.group_size = 0; });
  with_problem("mode", [](WqGemmProblem& p) { p.mode = DequantMode::Symmetric; });
  with_problem("act bf16", [](WqGemmProblem& p) { p.act = DType::BF16, p.out = DType::BF16; });
  with_problem("out f32", [](WqGemmProblem& p) { p.out = DType::F32; });
  with_problem("act bf16 out f32", [](WqGemmProblem& p) { p.act = DType::BF16, p.out = DType::F32; });
  with_problem("accum f16", [](WqGemmProblem& p) { p.accum = DType::F16; });
  with_config("m_tiles", [](WqGemmConfig& c) { c.m_tiles = 2; });
  with_config("n_tiles", [](WqGemmConfig& c) { c.n_tiles = 8; });
  with_config("warps_n", [](WqGemmConfig& c) { c.warps_n = 2; });
  with_config("warps_k", [](WqGemmConfig& c) { c.warps_k = 8; });
  with_config("split_k", [](WqGemmConfig& c) { c.split_k = 4; });
  with_config("stages", [](WqGemmConfig& c) { c.stages = 3; });
  variants.emplace("arch sm_80", key_of(base_problem(), base_config(), Arch::parse("sm_80")));
  variants.emplace("arch sm_89", key_of(base_problem(), base_config(), Arch::parse("sm_89")));
  variants.emplace("arch sm_90", key_of(base_problem(), base_config(), Arch::parse("sm_90")));

  std::set<std::string> digests{base.digest};
  for (const auto& [what, key] : variants) {
    INFO("changed: " << what);
    CHECK(key.digest != base.digest);
    CHECK(key.json != base.json);
    CHECK(lowbit::test::is_hex32(key.digest));
    digests.insert(key.digest);
  }
  CHECK(digests.size() == variants.size() + 1);  // all pairwise different too

  // The readable names differ wherever the kernel does (arch lives in the cache path instead).
  std::set<std::string> names{base.name};
  int named = 0;
  for (const auto& [what, key] : variants)
    if (what.rfind("arch", 0) != 0) {
      INFO("changed: " << what << " name: " << key.name);
      CHECK(key.name != base.name);
      names.insert(key.name);
      ++named;
    }
  CHECK(names.size() == static_cast<std::size_t>(named) + 1);
}

TEST_CASE("cache key: M is not baked in (a kernel serves its whole bucket)", "[cache_key]") {
  const Arch arch = Arch::parse("sm_90a");
  WqGemmProblem p = base_problem();
  const Key k1 = key_of(p, base_config(), arch);  // M = 1: the one-row kernel (wq::one_row_kernel)
  p.m = 2;
  const Key k2 = key_of(p, base_config(), arch);
  p.m = 5;  // buckets 2..8 with one 16-row tile share the kernel that skips rows 8..15
  const Key k5 = key_of(p, base_config(), arch);
  CHECK(k2.digest == k5.digest);
  CHECK(k2.name == k5.name);
  CHECK(k1.digest != k2.digest);
  p.m = 9;
  const Key k9 = key_of(p, base_config(), arch);
  p.m = 13;
  const Key k13 = key_of(p, base_config(), arch);
  CHECK(k9.digest == k13.digest);
  CHECK(k1.digest != k9.digest);
}

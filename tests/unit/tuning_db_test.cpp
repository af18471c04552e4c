// The tuning database: round trip, merge, lookup order, arch filter, bad files and bad entries.
#include "tune/tuning_db.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "jit/context.hpp"
#include "kernels/wq_gemm_internal.hpp"
#include "support/catch.hpp"
#include "support/test_support.hpp"
#include "tune/wq_tune.hpp"

using lowbit::Arch;
using lowbit::tune::TuningDb;
using lowbit::tune::TuningKey;

namespace {

const Arch kSm90a = Arch::parse("sm_90a");

TuningKey key(int64_t m, int64_t n = 8192, int64_t k = 8192) {
  return *TuningKey::parse("w4.g128.f16.zp|m" + std::to_string(m) + ".n" + std::to_string(n) + ".k" +
                           std::to_string(k));
}

nlohmann::json entry(int split_k, double us = 1.0) {
  return {
      {"config",
       {{"m_tiles", 1}, {"n_tiles", 4}, {"warps_n", 1}, {"warps_k", 8}, {"split_k", split_k}, {"stages", 3}}},
      {"us", us}};
}

TuningDb db_for(const char* arch) {
  TuningDb db;
  db.meta.arch = arch;
  db.meta.device = "NVIDIA H200";
  db.meta.sm_count = 132;
  return db;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("tuning keys are built from and parsed into named fields", "[tuning]") {
  const auto k = TuningKey::parse("w4.g128.f16.zp|m16.n8192.k8192");
  REQUIRE(k.has_value());
  CHECK(k->format == "w4.g128.f16.zp");
  CHECK(k->field("m") == 16);
  CHECK(k->field("n") == 8192);
  CHECK(k->field("k") == 8192);
  CHECK(k->str() == "w4.g128.f16.zp|m16.n8192.k8192");
  for (const char* bad : {"", "w4", "|m1", "w4|", "w4|m", "w4|16", "w4|m1x", "w4|m-1"}) {
    INFO(bad);
    CHECK_FALSE(TuningKey::parse(bad).has_value());
  }
  lowbit::WqGemmProblem p;
  p.n = 4096, p.k = 14336, p.group_size = 0, p.out = lowbit::DType::F32,
  p.mode = lowbit::DequantMode::Symmetric;
  CHECK(lowbit::wq::tuning_key(p, 32).str() == "w4.pc.f16.o32.sym|m32.n4096.k14336");
}

TEST_CASE("tuning file: save, load, merge", "[tuning]") {
  lowbit::test::TempDir dir;
  const std::string path = dir.path + "/h200.json";
  TuningDb a = db_for("sm_90a");
  a.put("wq_gemm", key(1), entry(1));
  a.save(path);
  TuningDb b = db_for("sm_90a");
  b.put("wq_gemm", key(16), entry(2));
  b.save(path);  // merges into the file: both entries stay
  std::vector<std::string> warnings;
  const TuningDb loaded = TuningDb::load(path, kSm90a, &warnings);
  CHECK(warnings.empty());
  CHECK(loaded.size() == 2);
  CHECK(loaded.meta.device == "NVIDIA H200");
  CHECK(loaded.meta.sm_count == 132);
  REQUIRE(loaded.lookup("wq_gemm", key(1)).has_value());
  CHECK(loaded.lookup("wq_gemm", key(1))->config["split_k"] == 1);
  CHECK(loaded.lookup("wq_gemm", key(16))->config["split_k"] == 2);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp-" + std::to_string(::getpid())));
}

TEST_CASE("tuning lookup: exact, nearest M bucket, nearest layer, similar format, then nothing", "[tuning]") {
  TuningDb db = db_for("sm_90a");
  db.put("wq_gemm", key(1), entry(1));
  db.put("wq_gemm", key(64), entry(4));
  db.put("wq_gemm", key(16, 4096, 4096), entry(8));
  db.put("wq_gemm", key(16, 28672, 4096), entry(16));
  auto exact = db.lookup("wq_gemm", key(64));
  REQUIRE(exact.has_value());
  CHECK(exact->step == "exact");
  // The same layer at another M bucket beats any other layer: 32 is one doubling from 64, five from 1.
  auto near = db.lookup("wq_gemm", key(32));
  REQUIRE(near.has_value());
  CHECK(near->step == "nearest M bucket");
  CHECK(near->key == key(64).str());
  CHECK(db.lookup("wq_gemm", key(2))->key == key(1).str());
  // A layer never tuned: the nearest layer (log distance over N and K) of the same format and M bucket.
  auto layer = db.lookup("wq_gemm", key(16, 5120, 4096));
  REQUIRE(layer.has_value());
  CHECK(layer->step == "nearest layer");
  CHECK(layer->key == key(16, 4096, 4096).str());
  CHECK(db.lookup("wq_gemm", key(16, 24576, 4096))->key == key(16, 28672, 4096).str());
  // No entry at that M bucket for that format: nothing from other buckets of other layers.
  CHECK_FALSE(db.lookup("wq_gemm", key(8, 1024, 1024)).has_value());
  // Another dtype or mode of the same bits and group: the similar format, same M bucket.
  auto similar = db.lookup("wq_gemm", *TuningKey::parse("w4.g128.bf16.sym|m16.n4096.k4096"));
  REQUIRE(similar.has_value());
  CHECK(similar->step == "similar format");
  CHECK(similar->key == key(16, 4096, 4096).str());
  CHECK_FALSE(db.lookup("wq_gemm", *TuningKey::parse("w2.g128.f16.zp|m16.n4096.k4096")).has_value());
  CHECK_FALSE(db.lookup("fp8_block_gemm", key(1)).has_value());
}

TEST_CASE("tuning files: other arch ignored; garbage, truncated, wrong schema reported and skipped",
          "[tuning]") {
  lowbit::test::TempDir dir;
  TuningDb other = db_for("sm_80");
  other.put("wq_gemm", key(1), entry(1));
  other.save(dir.path + "/a100.json");
  std::vector<std::string> warnings;
  CHECK(TuningDb::load(dir.path + "/a100.json", kSm90a, &warnings).size() == 0);
  CHECK(warnings.empty());  // not wrong, just not ours

  write(dir.path + "/garbage.json", "this is not json");
  write(dir.path + "/truncated.json", R"({"schema": 1, "meta": {"arch": "sm_90a"}, "wq_gemm": {"w4.g128)");
  write(dir.path + "/schema.json", R"({"schema": 99, "meta": {"arch": "sm_90a"}})");
  write(
      dir.path + "/entries.json",
      R"({"schema": 1, "meta": {"arch": "sm_90a"}, "wq_gemm": {"not a key": {"config": {}}, )"
      R"("w4.g128.f16.zp|m1.n8.k128": {"us": 1}, "w4.g128.f16.zp|m2.n8.k128": {"config": {"split_k": 1}}}})");
  for (const char* name : {"garbage", "truncated", "schema"}) {
    warnings.clear();
    const std::string path = dir.path + "/" + name + ".json";
    CHECK(TuningDb::load(path, kSm90a, &warnings).size() == 0);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find(path) != std::string::npos);
  }
  warnings.clear();
  const TuningDb partial = TuningDb::load(dir.path + "/entries.json", kSm90a, &warnings);
  CHECK(partial.size() == 1);  // the third entry is well-formed JSON; its config is checked at use
  CHECK(warnings.size() == 2);
  warnings.clear();
  CHECK(TuningDb::load(dir.path + "/missing.json", kSm90a, &warnings).size() == 0);
  CHECK(warnings.size() == 1);
}

TEST_CASE("plans use a valid tuned entry, and skip one that fails can_implement", "[tuning]") {
  lowbit::test::TempDir dir;
  lowbit::WqGemmProblem p;
  p.m = 1, p.n = 4096, p.k = 4096;
  TuningDb db = db_for("sm_90a");
  db.put("wq_gemm", lowbit::wq::tuning_key(p, 1), entry(2));  // valid
  nlohmann::json bad = entry(1);
  bad["config"]["n_tiles"] = 3;  // fails can_implement
  db.put("wq_gemm", lowbit::wq::tuning_key(p, 16), bad);
  db.save(dir.path + "/h200.json");

  lowbit::RuntimeOptions o;
  o.device = -1, o.arch = "sm_90a", o.no_disk_cache = true, o.tuning_dir = dir.path;
  lowbit::Runtime rt(o);
  REQUIRE(rt.context().tuning().files.size() == 1);
  const auto tuned = lowbit::wq::choose(rt.context(), p, 1, std::nullopt);
  CHECK(tuned.source.find("tuned (exact") == 0);
  CHECK(tuned.config.split_k == 2);
  const auto near = lowbit::wq::choose(rt.context(), p, 2, std::nullopt);  // nearest bucket: 1
  CHECK(near.source.find("nearest M bucket") != std::string::npos);
  const auto fallback = lowbit::wq::choose(rt.context(), p, 16, std::nullopt);
  CHECK(fallback.source == "heuristic");
  CHECK(fallback.config.n_tiles != 3);
  lowbit::WqGemmConfig forced;
  CHECK(lowbit::wq::choose(rt.context(), p, 1, forced).source == "forced");

  o.no_tuning_db = true;
  lowbit::Runtime plain(o);
  CHECK(lowbit::wq::choose(plain.context(), p, 1, std::nullopt).source == "heuristic");
}

TEST_CASE("tune candidates: the heuristic first, then distinct configs that can run", "[tuning]") {
  const lowbit::Arch arch = lowbit::Arch::parse("sm_90a");
  for (int64_t m : {1, 8, 16, 32, 64, 128})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {1280, 8192}, {28672, 4096}}) {
      lowbit::WqGemmProblem p;
      p.m = m, p.n = n, p.k = k;
      const auto cands = lowbit::tune::wq_candidates(p, arch, 132);
      INFO("m=" << m << " n=" << n << " k=" << k);
      REQUIRE(!cands.empty());
      CHECK(cands.front() == lowbit::choose_config(p, arch, 132));
      for (std::size_t i = 0; i < cands.size(); ++i) {
        std::string why;
        CHECK(lowbit::can_implement(p, cands[i], arch, &why));
        for (std::size_t j = 0; j < i; ++j) CHECK_FALSE(cands[i] == cands[j]);
      }
      CHECK(cands.size() >= 10);
      // Block-shared activations are tried from M = 16 on.
      const bool any_shared =
          std::any_of(cands.begin(), cands.end(), [](const auto& c) { return c.x_shared; });
      CHECK(any_shared == (m >= 16));
    }
}

TEST_CASE("shipped files of one arch: the one naming the device wins (offline: RuntimeOptions::device_name)",
          "[tuning]") {
  lowbit::test::TempDir dir;
  lowbit::WqGemmProblem p;
  p.m = 1, p.n = 4096, p.k = 4096;
  TuningDb h100 = db_for("sm_90a"), h200 = db_for("sm_90a");
  h100.meta.device = "NVIDIA H100 80GB HBM3";
  h100.put("wq_gemm", lowbit::wq::tuning_key(p, 1), entry(2));
  h200.put("wq_gemm", lowbit::wq::tuning_key(p, 1), entry(4));  // h200.meta.device = "NVIDIA H200"
  h100.save(dir.path + "/nvidia-h100.json");
  h200.save(dir.path + "/nvidia-h200.json");
  auto split_for = [&](const std::string& device_name) {
    lowbit::RuntimeOptions o;
    o.device = -1, o.arch = "sm_90a", o.no_disk_cache = true, o.tuning_dir = dir.path,
    o.device_name = device_name;
    lowbit::Runtime rt(o);
    REQUIRE(rt.context().tuning().files.size() == 2);
    return lowbit::wq::choose(rt.context(), p, 1, std::nullopt).config.split_k;
  };
  CHECK(split_for("NVIDIA H100 80GB HBM3") == 2);
  CHECK(split_for("NVIDIA H200") == 4);
  CHECK(split_for("") == 4);  // no name: name order, the last file (nvidia-h200.json) wins
}

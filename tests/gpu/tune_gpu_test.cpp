// `lowbit tune` end to end on the GPU: a tiny run (two layers, a small budget) writes a tuning
// file, and a second process picks its entries up through LOWBIT_TUNING_DB.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gpu/gpu_fixture.hpp"
#include "support/catch.hpp"
#include "tune/tuning_db.hpp"

using namespace lowbit;
using namespace lowbit::test;

namespace {
std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST_CASE("lowbit tune: a tiny run writes a file that a second process uses", "[gpu][tune]") {
  const std::string cli = LOWBIT_CLI_PATH;
  REQUIRE(std::filesystem::exists(cli));
  TempDir dir;
  const std::string db = dir.path + "/tuned.json", shapes = dir.path + "/shapes.txt",
                    log = dir.path + "/log.txt";
  std::ofstream(shapes) << "# two small layers\n264 1024\n520 2048\n";
  const std::string tune =
      cli + " tune wq_gemm --shapes " + shapes + " --m 1,16 --budget 3 --db " + db + " > " + log + " 2>&1";
  const int rc = std::system(tune.c_str());
  INFO(tune << "\n" << read_all(log));
  REQUIRE(rc == 0);

  std::vector<std::string> warnings;
  const tune::TuningDb loaded = tune::TuningDb::load(db, gpu_runtime().arch(), &warnings);
  CHECK(warnings.empty());
  CHECK(loaded.size() == 4);  // 2 layers × 2 M buckets
  CHECK(loaded.meta.device == gpu_runtime().device().name);
  CHECK(loaded.meta.sm_count == gpu_runtime().sm_count());
  for (const auto& [key, entry] : loaded.to_json()["wq_gemm"].items()) {
    INFO(key);
    CHECK(entry.contains("runners_up"));
  }

  // --resume: both layers have every bucket in the file, so nothing is left to tune.
  const std::string again =
      cli + " tune wq_gemm --shapes " + shapes + " --m 1,16 --db " + db + " --resume > " + log + " 2>&1";
  REQUIRE(std::system(again.c_str()) == 0);
  CHECK(read_all(log).find("--resume: 0 layer(s) left to tune, 0 problem(s)") != std::string::npos);

  // --resume with one more M bucket tunes only that bucket of each layer.
  const std::string more = cli + " tune wq_gemm --shapes " + shapes + " --m 1,4,16 --budget 3 --db " + db +
                           " --resume > " + log + " 2>&1";
  REQUIRE(std::system(more.c_str()) == 0);
  const std::string resumed = read_all(log);
  INFO(resumed);
  CHECK(resumed.find("--resume: 2 layer(s) left to tune, 2 problem(s)") != std::string::npos);
  std::size_t timed = 0;  // one " best " line per problem tuned
  for (std::size_t at = resumed.find(" best "); at != std::string::npos; at = resumed.find(" best ", at + 1))
    ++timed;
  CHECK(timed == 2);
  CHECK(tune::TuningDb::load(db, gpu_runtime().arch(), &warnings).size() == 6);

  const std::string out = dir.path + "/inspect.json";
  const std::string inspect = "LOWBIT_TUNING_DB=" + db + " " + cli +
                              " inspect wq_gemm --n 520 --k 2048 --m 16 --explain --json > " + out + " 2>&1";
  const int rc2 = std::system(inspect.c_str());
  const std::string text = read_all(out);
  INFO(inspect << "\n" << text);
  REQUIRE(rc2 == 0);
  CHECK(text.find("tuned (exact, " + db) != std::string::npos);
}

TEST_CASE("lowbit tune: neighbour rounds and re-timed finalists agree with the file", "[gpu][tune]") {
  const std::string cli = LOWBIT_CLI_PATH;
  TempDir dir;
  const std::string db = dir.path + "/tuned.json", out = dir.path + "/out.json", err = dir.path + "/err.txt";
  const std::string tune = cli + " tune wq_gemm --n 520 --k 2048 --m 1 --refine 2 --final 2 --json --db " +
                           db + " > " + out + " 2> " + err;
  const int rc = std::system(tune.c_str());
  const std::string text = read_all(out);
  INFO(tune << "\n" << text << "\n" << read_all(err));
  REQUIRE(rc == 0);
  const auto report = nlohmann::json::parse(text);
  REQUIRE(report["results"].size() == 1);
  const auto& r = report["results"][0];
  CHECK(r["failed"].get<int>() == 0);
  CHECK(r["best_us"].get<double>() < 1e6);  // a time, not a failure's marker
  CHECK(r["finalists"].get<int>() != 1);    // none, or at least two re-timed against each other
  CHECK(r["finalists"].get<int>() <= 4);
  // The file holds the result's winner and its time (a median where it was re-timed).
  std::vector<std::string> warnings;
  const auto file = tune::TuningDb::load(db, gpu_runtime().arch(), &warnings).to_json()["wq_gemm"];
  REQUIRE(file.size() == 1);
  const nlohmann::json entry = file.begin().value();  // a copy: the iterator is a temporary
  CHECK(entry["us"].get<double>() == r["best_us"].get<double>());
  CHECK(entry["config"] == r["best"]);
  CHECK(entry["runners_up"].size() <= 6);
  for (const auto& ru : entry["runners_up"]) {
    CHECK(ru["config"] != entry["config"]);  // the winner is not its own runner-up
    CHECK(ru["us"].get<double>() <= 1.2 * entry["us"].get<double>());
  }
  // The first run served the heuristic (the layer is in no shipped file); a second run with that
  // file loaded serves its entry, times it beside the heuristic and reports both.
  CHECK(r["served_by"].get<std::string>().rfind("heuristic", 0) == 0);
  const std::string again = "LOWBIT_TUNING_DB=" + db + " " + cli +
                            " tune wq_gemm --n 520 --k 2048 --m 1 --json --db " + dir.path +
                            "/again.json > " + out + " 2> " + err;
  const int rc2 = std::system(again.c_str());
  const std::string text2 = read_all(out);
  INFO(again << "\n" << text2 << "\n" << read_all(err));
  REQUIRE(rc2 == 0);
  const auto report2 = nlohmann::json::parse(text2);
  REQUIRE(report2["results"].size() == 1);
  const auto& r2 = report2["results"][0];
  CHECK(r2["served"] == entry["config"]);
  CHECK(r2["served_by"].get<std::string>().rfind("tuned (exact, ", 0) == 0);
  CHECK(r2["served_us"].get<double>() > 0);
}

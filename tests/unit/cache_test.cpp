// The disk cache: entry checks, rebuilding corrupt entries, LOWBIT_NO_COMPILE, an unwritable
// directory, and four processes publishing the same kernel at once.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "jit/disk_cache.hpp"
#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "support/test_support.hpp"
#include "unit/unit_helpers.hpp"

extern char** environ;

namespace fs = std::filesystem;

namespace {

using lowbit::jit::CacheEntryInfo;
using lowbit::jit::DiskCache;
using Source = lowbit::KernelRecord::Source;

lowbit::RuntimeOptions offline(const std::string& dir) {
  return lowbit::test::offline_options("sm_90a", dir);
}
using lowbit::test::problem_4096;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write(const fs::path& p, const std::string& data) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << data;
}

std::string source_name(Source s) {
  return std::string(lowbit::to_string(s));
}

std::string fake_cubin() {
  static const char raw[] =
      "\x7f"
      "ELF fake cubin bytes\0\1\2\3";
  return std::string(raw, sizeof raw - 1);  // embedded NULs included
}

// A fake entry written through DiskCache::store (no NVRTC involved).
struct FakeEntry {
  lowbit::test::TempDir dir;
  std::string key = R"({"fake":1})";
  std::string digest = "0123456789abcdef0123456789abcdef";
  std::string cubin = fake_cubin();
  std::string path;
  FakeEntry() {
    DiskCache cache(dir.path);
    REQUIRE(cache.enabled());
    path =
        cache.store("sm_90a", "wq_gemm", "wq_gemm_fake", digest, key, "// source", cubin, "_Z4fakev", 12.5);
  }
};

std::string why_invalid(const std::string& dir, const std::string* expected_key = nullptr) {
  std::string why;
  const auto e = DiskCache::verify_dir(dir, expected_key, &why);
  return e ? std::string("<valid>") : why;
}

}  // namespace

TEST_CASE("DiskCache: store, load, list", "[cache]") {
  FakeEntry f;
  CHECK(f.path == DiskCache::entry_dir(f.dir.path, "sm_90a", "wq_gemm", "wq_gemm_fake", f.digest));
  CHECK(f.path ==
        (fs::path(f.dir.path) / "v1" / "sm_90a" / "wq_gemm" / ("wq_gemm_fake-" + f.digest)).string());
  DiskCache cache(f.dir.path);
  const auto hit = cache.load("sm_90a", "wq_gemm", "wq_gemm_fake", f.digest, f.key);
  REQUIRE(hit.has_value());
  CHECK(hit->cubin == f.cubin);
  CHECK(hit->lowered_name == "_Z4fakev");
  CHECK(hit->compile_ms == 12.5);
  CHECK(hit->path == f.path);
  CHECK(slurp(fs::path(f.path) / "kernel.cu") == "// source");
  CHECK(!cache.load("sm_80", "wq_gemm", "wq_gemm_fake", f.digest, f.key).has_value());  // other arch: miss

  const auto entries = cache.list();
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].valid);
  CHECK(entries[0].arch == "sm_90a");
  CHECK(entries[0].family == "wq_gemm");
  CHECK(entries[0].bytes >= f.cubin.size());
  CHECK(cache.total_bytes() >= f.cubin.size());

  // Publishing the same key again (a process that lost the race) keeps one valid entry, no temp dir.
  const std::string again = cache.store("sm_90a", "wq_gemm", "wq_gemm_fake", f.digest, f.key, "// source",
                                        f.cubin, "_Z4fakev", 1.0);
  CHECK(again == f.path);
  CHECK(cache.list().size() == 1);
  CHECK(cache.list()[0].valid);
  CHECK(lowbit::test::find_named(f.dir.path, ".tmp-") == "");
  CHECK(lowbit::test::find_named(f.dir.path, ".probe-") == "");
}

TEST_CASE("DiskCache: an empty or unwritable root disables the cache", "[cache]") {
  DiskCache off("");
  CHECK_FALSE(off.enabled());
  CHECK(off.list().empty());
  CHECK(off.store("sm_90a", "wq_gemm", "n", "d", "{}", "", "x", "y", 0) == "");
  DiskCache proc("/proc/lowbit-not-writable");
  CHECK_FALSE(proc.enabled());
  CHECK(proc.store("sm_90a", "wq_gemm", "n", "d", "{}", "", "x", "y", 0) == "");
  CHECK(!proc.load("sm_90a", "wq_gemm", "n", "d", "{}").has_value());
}

TEST_CASE("DiskCache::verify_dir catches every kind of damage", "[cache]") {
  FakeEntry f;
  const fs::path dir = f.path;
  REQUIRE(why_invalid(f.path, &f.key) == "<valid>");

  SECTION("truncated cubin") {
    fs::resize_file(dir / "kernel.cubin", f.cubin.size() / 2);
    CHECK(lowbit::test::contains(why_invalid(f.path), "truncated"));
  }
  SECTION("same size, different bytes") {
    std::string bad = f.cubin;
    bad[5] ^= 0x20;
    write(dir / "kernel.cubin", bad);
    CHECK(lowbit::test::contains(why_invalid(f.path), "digest"));
  }
  SECTION("missing cubin") {
    fs::remove(dir / "kernel.cubin");
    CHECK(lowbit::test::contains(why_invalid(f.path), "kernel.cubin missing"));
  }
  SECTION("missing meta.json") {
    fs::remove(dir / "meta.json");
    CHECK(lowbit::test::contains(why_invalid(f.path), "meta.json missing"));
  }
  SECTION("junk meta.json") {
    write(dir / "meta.json", "\x01\x02 this is not json {{{");
    CHECK(lowbit::test::contains(why_invalid(f.path), "not a lowbit cache record"));
  }
  SECTION("JSON that is not a cache record") {
    write(dir / "meta.json", "[1, 2, 3]");
    CHECK(lowbit::test::contains(why_invalid(f.path), "not a lowbit cache record"));
  }
  SECTION("meta.json fields of the wrong type") {
    write(dir / "meta.json", R"({"key": 5, "cubin_bytes": "many", "cubin_digest": [], "lowered_name": {}})");
    const std::string why = why_invalid(f.path);
    INFO(why);
    CHECK(why != "<valid>");
    CHECK(lowbit::test::contains(why, "wrong type"));
  }
  SECTION("a different key") {
    const std::string other = R"({"fake":2})";
    CHECK(lowbit::test::contains(why_invalid(f.path, &other), "key differs"));
  }
  SECTION("load() moves a damaged entry aside and reports a miss") {
    fs::resize_file(dir / "kernel.cubin", 3);
    DiskCache cache(f.dir.path);
    CHECK(!cache.load("sm_90a", "wq_gemm", "wq_gemm_fake", f.digest, f.key).has_value());
    CHECK(!fs::exists(dir));
    CHECK(lowbit::test::find_named(f.dir.path, ".trash-") == "");
    // ... after which a fresh store is served again.
    cache.store("sm_90a", "wq_gemm", "wq_gemm_fake", f.digest, f.key, "// source", f.cubin, "_Z4fakev", 1.0);
    CHECK(cache.load("sm_90a", "wq_gemm", "wq_gemm_fake", f.digest, f.key).has_value());
  }
}

TEST_CASE("a corrupt cache entry is rebuilt by the next runtime", "[cache][nvrtc]") {
  lowbit::test::TempDir dir;
  const lowbit::WqGemmProblem p = problem_4096();
  // A fresh runtime compiles the kernel (it finds no usable entry) and stores it.
  auto compile_fresh = [&] {
    lowbit::Runtime rt(offline(dir.path));
    const auto recs = lowbit::compile_wq_gemm(rt, p, {1});
    REQUIRE(recs.size() == 1);
    CHECK(source_name(recs[0].source) == "compiled");
  };
  compile_fresh();
  auto entries = DiskCache(dir.path).list();
  REQUIRE(entries.size() == 1);
  REQUIRE(entries[0].valid);
  const fs::path entry = entries[0].path;
  const auto cubin_size = fs::file_size(entry / "kernel.cubin");

  // (a) kernel.cubin cut to half its size.
  fs::resize_file(entry / "kernel.cubin", cubin_size / 2);
  entries = DiskCache(dir.path).list();
  REQUIRE(entries.size() == 1);
  CHECK_FALSE(entries[0].valid);
  CHECK(lowbit::test::contains(entries[0].problem, "truncated"));
  compile_fresh();
  entries = DiskCache(dir.path).list();
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].valid);
  CHECK(fs::path(entries[0].path) == entry);
  CHECK(fs::file_size(entry / "kernel.cubin") == cubin_size);

  // (b) junk in meta.json.
  write(entry / "meta.json", "garbage\n\xff\xfe not a record");
  entries = DiskCache(dir.path).list();
  REQUIRE(entries.size() == 1);
  CHECK_FALSE(entries[0].valid);
  compile_fresh();
  entries = DiskCache(dir.path).list();
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].valid);
  CHECK(lowbit::test::find_named(dir.path, ".trash-") == "");
  CHECK(lowbit::test::find_named(dir.path, ".tmp-") == "");

  // The rebuilt entry serves a runtime that may not compile.
  lowbit::RuntimeOptions o = offline(dir.path);
  o.no_compile = true;
  lowbit::Runtime rt(o);
  const auto recs = lowbit::compile_wq_gemm(rt, p, {1});
  REQUIRE(recs.size() == 1);
  CHECK(source_name(recs[0].source) == "disk-cache");
}

TEST_CASE("no_compile on an empty cache names the kernel and LOWBIT_NO_COMPILE", "[cache]") {
  lowbit::test::TempDir dir;
  lowbit::RuntimeOptions o = offline(dir.path);
  o.no_compile = true;
  lowbit::Runtime rt(o);
  const std::string msg =
      lowbit::test::error_of([&] { (void)lowbit::compile_wq_gemm(rt, problem_4096(), {1}); });
  INFO(msg);
  CHECK(lowbit::test::contains(msg, "LOWBIT_NO_COMPILE"));
  CHECK(lowbit::test::contains(msg, "wq_gemm_"));
  CHECK(lowbit::test::contains(msg, dir.path));
  CHECK(DiskCache(dir.path).list().empty());
  // A second request fails the same way (the failure is not cached as a success).
  const std::string msg2 =
      lowbit::test::error_of([&] { (void)lowbit::compile_wq_gemm(rt, problem_4096(), {1}); });
  CHECK(lowbit::test::contains(msg2, "LOWBIT_NO_COMPILE"));
}

TEST_CASE("an unwritable cache dir leaves a working memory-only runtime", "[cache][nvrtc]") {
  const std::string bad = "/proc/lowbit-not-writable";
  lowbit::Runtime rt(offline(bad));
  CHECK(rt.cache_dir().empty());
  const auto recs = lowbit::compile_wq_gemm(rt, problem_4096(), {1});
  REQUIRE(recs.size() == 1);
  CHECK(source_name(recs[0].source) == "compiled");
  const auto again = lowbit::compile_wq_gemm(rt, problem_4096(), {1});
  REQUIRE(again.size() == 1);
  CHECK(source_name(again[0].source) == "memory-cache");
  CHECK(!fs::exists(bad));

  lowbit::RuntimeOptions o = offline("");
  o.no_disk_cache = true;
  lowbit::Runtime off(o);
  CHECK(off.cache_dir().empty());
}

TEST_CASE("four CLI processes compiling the same kernel publish one valid entry", "[cache][nvrtc][cli]") {
  const std::string cli = LOWBIT_CLI_PATH;
  INFO("CLI: " << cli);
  REQUIRE(fs::exists(cli));
  lowbit::test::TempDir cache_dir, logs;

  std::vector<pid_t> pids;
  for (int i = 0; i < 4; ++i) {
    std::vector<std::string> args = {cli,      "compile",     "wq_gemm",     "--n", "4096",
                                     "--k",    "4096",        "--m-buckets", "1",   "--arch",
                                     "sm_90a", "--cache-dir", cache_dir.path};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string log = (fs::path(logs.path) / ("child-" + std::to_string(i) + ".log")).string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, cli.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    INFO("posix_spawn: " << std::strerror(rc));
    REQUIRE(rc == 0);
    pids.push_back(pid);
  }
  for (std::size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    pid_t r;
    do {
      r = ::waitpid(pids[i], &status, 0);
    } while (r < 0 && errno == EINTR);
    const std::string log = slurp(fs::path(logs.path) / ("child-" + std::to_string(i) + ".log"));
    INFO("child " << i << " output:\n" << log);
    REQUIRE(r == pids[i]);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }

  const auto entries = DiskCache(cache_dir.path).list();
  REQUIRE(entries.size() == 1);
  INFO(entries[0].path << ": " << entries[0].problem);
  CHECK(entries[0].valid);
  CHECK(entries[0].arch == "sm_90a");
  CHECK(entries[0].family == "wq_gemm");
  CHECK(lowbit::test::find_named(cache_dir.path, ".tmp-") == "");
  CHECK(lowbit::test::find_named(cache_dir.path, ".trash-") == "");

  // This process agrees on the key: it loads the entry the children wrote.
  lowbit::RuntimeOptions o = offline(cache_dir.path);
  o.no_compile = true;
  lowbit::Runtime rt(o);
  const auto recs = lowbit::compile_wq_gemm(rt, problem_4096(), {1});
  REQUIRE(recs.size() == 1);
  CHECK(source_name(recs[0].source) == "disk-cache");
}

// Small helpers shared by the unit tests (header only; tests/unit/*.cpp are globbed, this is not).
#pragma once
#include <exception>
#include <filesystem>
#include <string>
#include <utility>

#include "lowbit/error.hpp"
#include "lowbit/runtime.hpp"
#include "lowbit/wq_gemm.hpp"

namespace lowbit::test {

// Runtime options for compiling offline (no GPU) for `arch` into cache dir `dir`.
inline lowbit::RuntimeOptions offline_options(const std::string& arch, const std::string& dir) {
  lowbit::RuntimeOptions o;
  o.device = -1;
  o.arch = arch;
  o.cache_dir = dir;
  return o;
}

// The arch of the shared-memory and launch-shape checks (Hopper: K splits of 2..8 pieces meet in a
// cluster there, and every side of each comparison takes the same arch).
inline const lowbit::Arch kArch90 = lowbit::Arch::parse("sm_90a");

// The 4096×4096 W4 g128 layer at M=1 most compile tests build.
inline lowbit::WqGemmProblem problem_4096() {
  lowbit::WqGemmProblem p;
  p.m = 1, p.n = 4096, p.k = 4096;
  return p;
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Runs f and returns the what() of the lowbit::Error it throws. A call that does not throw, or
// throws anything else, yields a marker string that no CHECK on a message text will accept.
template <class F>
std::string error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const lowbit::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<not a lowbit::Error: ") + e.what() + ">";
  } catch (...) {
    return "<not a lowbit::Error: unknown exception>";
  }
  return "<no exception>";
}

inline bool is_hex32(const std::string& s) {
  if (s.size() != 32) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// Names (relative to root) of every file or directory below root whose own name starts with prefix.
inline std::string find_named(const std::string& root, const std::string& prefix) {
  std::string found;
  std::error_code ec;
  if (!std::filesystem::exists(root, ec)) return found;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->path().filename().string().rfind(prefix, 0) == 0) found += it->path().string() + "\n";
  }
  return found;
}

}  // namespace lowbit::test

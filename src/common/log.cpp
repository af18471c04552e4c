#include "common/log.hpp"

#include <cstdio>
#include <mutex>
#include <set>

namespace lowbit {

void warn(const std::string& message) {
  std::fprintf(stderr, "lowbit: warning: %s\n", message.c_str());
}

void warn_once(const std::string& key, const std::string& message) {
  static std::mutex mu;
  static std::set<std::string> seen;
  {
    std::lock_guard lock(mu);
    if (!seen.insert(key).second) return;
  }
  warn(message);
}

void info(const std::string& message) {
  std::fprintf(stderr, "lowbit: %s\n", message.c_str());
}

}  // namespace lowbit

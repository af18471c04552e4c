#include "common/env.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace lowbit {

std::optional<std::string> env_string(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

bool env_flag(const char* name) {
  auto v = env_string(name);
  if (!v) return false;
  std::string s = *v;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

}  // namespace lowbit

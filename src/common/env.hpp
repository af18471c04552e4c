// LOWBIT_* environment switches (all listed in the README).
#pragma once
#include <optional>
#include <string>

namespace lowbit {
// "1", "true", "yes", "on" (any case) are true; unset or anything else is false.
bool env_flag(const char* name);
std::optional<std::string> env_string(const char* name);
}  // namespace lowbit

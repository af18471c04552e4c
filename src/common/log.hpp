// Warnings go to stderr, prefixed "lowbit: warning:"; warn_once prints a given key only once per process.
#pragma once
#include <string>

namespace lowbit {
void warn(const std::string& message);
void warn_once(const std::string& key, const std::string& message);
void info(const std::string& message);  // "lowbit: ..." on stderr (dumps, printed configs)
}  // namespace lowbit

// Checking macros. Every failure becomes a lowbit::Error with file:line.
#pragma once
#include <fmt/format.h>

#include "lowbit/error.hpp"

// LOWBIT_CHECK(cond, "fmt", args...): throw if cond is false. The message should name the field,
// the value and the rule.
#define LOWBIT_CHECK(cond, ...)                                                         \
  do {                                                                                  \
    if (!(cond)) throw ::lowbit::Error(::fmt::format(__VA_ARGS__), __FILE__, __LINE__); \
  } while (0)

#define LOWBIT_FAIL(...) throw ::lowbit::Error(::fmt::format(__VA_ARGS__), __FILE__, __LINE__)

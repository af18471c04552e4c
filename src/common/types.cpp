#include "lowbit/types.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "common/check.hpp"
#include "lowbit/runtime.hpp"

namespace lowbit {

std::string_view to_string(DType d) {
  switch (d) {
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
    case DType::F32:
      return "f32";
  }
  return "?";
}

DType parse_dtype(std::string_view s) {
  if (s == "f16" || s == "fp16" || s == "half" || s == "float16") return DType::F16;
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  if (s == "f32" || s == "fp32" || s == "float32") return DType::F32;
  LOWBIT_FAIL("dtype '{}' is not one of f16, bf16, f32", s);
}

std::size_t dtype_bytes(DType d) {
  return d == DType::F32 ? 4 : 2;
}

Arch Arch::parse(std::string_view s) {
  // Accepted: sm_XY or sm_XYa with a compute capability NVRTC 13 can target (7.5 and newer).
  static constexpr int known[] = {75, 80, 86, 87, 89, 90, 100, 103, 110, 120, 121};
  auto fail = [&]() -> Arch {
    LOWBIT_FAIL(
        "arch '{}' is not an architecture lowbit can compile for: expected sm_75, sm_80, sm_86, "
        "sm_87, sm_89, sm_90, sm_90a, sm_100(a), sm_103(a), sm_110(a), sm_120(a), sm_121(a)",
        s);
  };
  if (s.size() < 5 || s.substr(0, 3) != "sm_") return fail();
  std::string_view rest = s.substr(3);
  Arch a;
  if (!rest.empty() && rest.back() == 'a') {
    a.arch_specific = true;
    rest.remove_suffix(1);
  }
  if (rest.size() < 2 || rest.size() > 3 || rest[0] == '0' ||
      !std::all_of(rest.begin(), rest.end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return fail();
  int v = std::stoi(std::string(rest));
  if (std::find(std::begin(known), std::end(known), v) == std::end(known)) return fail();
  if (a.arch_specific && v < 90) return fail();
  a.major = v / 10;
  a.minor = v % 10;
  return a;
}

std::string Arch::str() const {
  return "sm_" + std::to_string(sm()) + (arch_specific ? "a" : "");
}

int64_t m_bucket(int64_t m) {
  LOWBIT_CHECK(m >= 1 && m <= (int64_t{1} << 30), "m = {} is not a valid row count: M must be 1..2^30", m);
  int64_t b = 1;
  while (b < m) b *= 2;
  return b;
}

std::string_view to_string(KernelRecord::Source s) {
  switch (s) {
    case KernelRecord::Source::Compiled:
      return "compiled";
    case KernelRecord::Source::DiskCache:
      return "disk-cache";
    case KernelRecord::Source::MemoryCache:
      return "memory-cache";
  }
  return "?";
}

}  // namespace lowbit

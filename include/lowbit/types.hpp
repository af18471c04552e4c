// Vocabulary types shared by every family: dtypes, GPU architectures, streams.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

struct CUstream_st;  // the driver's stream type; cudaStream_t and CUstream are both CUstream_st*

namespace lowbit {

using Stream = CUstream_st*;  // nullptr = the legacy default stream

enum class DType : uint8_t { F16, BF16, F32 };
std::string_view to_string(DType);
DType parse_dtype(std::string_view);  // "f16"/"fp16"/"half", "bf16", "f32"/"fp32"; throws Error
std::size_t dtype_bytes(DType);

// A GPU architecture as NVRTC names it: sm_<major><minor>[a].
struct Arch {
  int major = 0;
  int minor = 0;
  bool arch_specific = false;           // the "a" suffix: sm_90a unlocks wgmma/setmaxnreg
  static Arch parse(std::string_view);  // throws Error naming the string and the accepted list
  std::string str() const;              // "sm_90a"
  int sm() const { return major * 10 + minor; }
  bool operator==(const Arch&) const = default;
};

// The M buckets of DESIGN.md: 1, 2, 3-4, 5-8, ... ; a kernel is built per bucket and takes the exact
// M at run time. Returns the bucket's upper bound (1, 2, 4, 8, 16, ...).
int64_t m_bucket(int64_t m);

}  // namespace lowbit

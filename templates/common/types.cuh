// Fixed-width names for device code. NVRTC gets no standard headers here, so lowbit defines its own.
#pragma once

namespace lowbit::kern {
using u8 = unsigned char;
using u16 = unsigned short;
using u32 = unsigned int;
using u64 = unsigned long long;
using i64 = long long;

// Word i (0..3) of a 16-byte vector; i is a compile-time constant in unrolled loops, so this folds.
__device__ __forceinline__ u32 word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
}  // namespace lowbit::kern

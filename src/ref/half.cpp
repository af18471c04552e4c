#include "ref/half.hpp"

#include <cmath>
#include <cstring>

namespace lowbit::ref {

float f16_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
    return sign ? -f : f;
  }
  uint32_t bits = exp == 31 ? sign | 0x7f800000u | (mant << 13) : sign | ((exp + 112) << 23) | (mant << 13);
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  if (std::isnan(f)) return sign | 0x7e00;
  const float a = std::fabs(f);
  if (a >= 65520.f) return sign | 0x7c00;  // rounds to infinity
  if (a < std::ldexp(1.f, -14)) {          // subnormal: multiples of 2^-24, round to nearest even
    const float q = a * 16777216.f;        // exact scaling by 2^24
    return sign | static_cast<uint16_t>(std::nearbyint(q));
  }
  uint32_t ax = x & 0x7fffffffu;
  uint32_t exp = (ax >> 23) - 112;
  uint32_t mant = ax & 0x7fffff;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // carries into the exponent correctly
  return sign | static_cast<uint16_t>(h);
}

float bf16_to_float(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40);
  const uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace lowbit::ref

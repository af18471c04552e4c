#include "common/digest.hpp"

namespace lowbit {

Digest128& Digest128::update(std::string_view bytes) {
  // FNV-1a 128 prime: 2^88 + 2^8 + 0x3b
  const u128 prime = (static_cast<u128>(1) << 88) + 0x13b;
  for (unsigned char c : bytes) {
    state_ ^= c;
    state_ *= prime;
  }
  return *this;
}

std::string Digest128::hex() const {
  static const char* digits = "0123456789abcdef";
  std::string out(32, '0');
  u128 v = state_;
  for (int i = 31; i >= 0; --i) {
    out[i] = digits[static_cast<unsigned>(v & 0xf)];
    v >>= 4;
  }
  return out;
}

}  // namespace lowbit

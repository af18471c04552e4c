// 128-bit FNV-1a digest: stable across platforms and runs; used for cache keys and file checks.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace lowbit {

__extension__ typedef unsigned __int128 u128;  // GCC/Clang builtin; __extension__ keeps -pedantic quiet

class Digest128 {
 public:
  Digest128& update(std::string_view bytes);
  Digest128& update(const void* data, std::size_t size) {
    return update(std::string_view(static_cast<const char*>(data), size));
  }
  std::string hex() const;  // 32 lowercase hex digits

 private:
  u128 state_ =
      (static_cast<u128>(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;  // FNV-1a 128 offset basis
};

inline std::string digest_hex(std::string_view bytes) {
  return Digest128().update(bytes).hex();
}

}  // namespace lowbit

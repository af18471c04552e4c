// lowbit::Error: the one exception type of the library. Every message names what was wrong (the
// field, the value, the rule it broke, or the driver/NVRTC call and its status) and where it was
// detected.
#pragma once
#include <stdexcept>
#include <string>

namespace lowbit {

class Error : public std::runtime_error {
 public:
  Error(std::string message, const char* file = nullptr, int line = 0)
      : std::runtime_error(file ? message + " [" + short_file(file) + ":" + std::to_string(line) + "]"
                                : message),
        message_(std::move(message)) {}
  // The message without the source location.
  const std::string& message() const noexcept { return message_; }

 private:
  static std::string short_file(const char* f) {
    std::string s(f);
    auto pos = s.rfind("/src/");
    return pos == std::string::npos ? s : s.substr(pos + 1);
  }
  std::string message_;
};

}  // namespace lowbit

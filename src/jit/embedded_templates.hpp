// The device templates (templates/**/*.cuh), embedded into the library at build time by
// cmake/embed_templates.cmake and handed to NVRTC as in-memory headers.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::jit {

struct EmbeddedTemplate {
  const char* name;        // path relative to templates/, e.g. "common/mma.cuh"
  std::string_view bytes;  // the file's contents
};

const std::vector<EmbeddedTemplate>& embedded_templates();  // generated
const std::string& templates_digest();                      // digest of every name and byte

}  // namespace lowbit::jit

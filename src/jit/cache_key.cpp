#include "common/digest.hpp"
#include "jit/embedded_templates.hpp"
#include "jit/kernel_spec.hpp"
#include "jit/nvrtc.hpp"

#ifndef LOWBIT_VERSION_STRING
#define LOWBIT_VERSION_STRING "0.0.0"
#endif

namespace lowbit::jit {

std::string lowbit_version() {
  return LOWBIT_VERSION_STRING;
}

std::string cache_key_json(const KernelSpec& spec, const Arch& arch) {
  static const std::string nvrtc = nvrtc_version();
  nlohmann::json key = {
      {"family", spec.family},
      {"name_expression", spec.name_expression},
      {"specialization", spec.specialization},
      {"config", spec.config},
      {"arch", arch.str()},
      {"nvrtc", nvrtc},
      {"options", nvrtc_options(arch, CompileOutput::Cubin)},
      {"lowbit", lowbit_version()},
      {"templates", templates_digest()},
      {"source_digest", digest_hex(spec.source)},
  };
  return key.dump();  // nlohmann::json objects keep keys sorted: the dump is canonical
}

std::string cache_key_digest(const std::string& key_json) {
  return digest_hex(key_json);
}

}  // namespace lowbit::jit

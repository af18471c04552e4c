#include <utility>

#include "common/digest.hpp"
#include "jit/embedded_templates.hpp"
#include "jit/kernel_spec.hpp"
#include "jit/nvrtc.hpp"

#ifndef LOWBIT_VERSION_STRING
#define LOWBIT_VERSION_STRING "0.0.0"
#endif

namespace lowbit::jit {

KernelSpec header_instance_spec(std::string family, std::string name, const std::string& header,
                                std::string name_expression, nlohmann::json specialization,
                                nlohmann::json config) {
  KernelSpec s;
  s.family = std::move(family);
  s.name = std::move(name);
  s.name_expression = std::move(name_expression);
  s.source = "// " + s.name + "\n#include \"" + header +
             "\"\n// instantiated through the name expression:\n// " + s.name_expression + "\n";
  s.specialization = std::move(specialization);
  s.config = std::move(config);
  return s;
}

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

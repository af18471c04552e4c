// What a family hands the runtime for one kernel: the instantiation source and the facts that
// make up its cache key.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "lowbit/types.hpp"

namespace lowbit::jit {

struct KernelSpec {
  std::string family;             // "wq_gemm"
  std::string name;               // procedural, readable: wq_gemm_w4g128zp_n4096k4096_m16_...
  std::string source;             // the instantiation source given to NVRTC
  std::string name_expression;    // the kernel template instance to look up
  nlohmann::json specialization;  // the problem fields baked in
  nlohmann::json config;          // the tile configuration
};

// A spec whose source includes one template header and instantiates the kernel through its name
// expression (the source names both, for people reading the cache).
KernelSpec header_instance_spec(std::string family, std::string name, const std::string& header,
                                std::string name_expression, nlohmann::json specialization,
                                nlohmann::json config = nlohmann::json::object());

// The full cache key: {family, specialization, config, arch, NVRTC version, options, lowbit
// version, templates digest} as canonical JSON (sorted keys, no spaces).
std::string cache_key_json(const KernelSpec& spec, const Arch& arch);
std::string cache_key_digest(const std::string& key_json);  // 32 hex digits

std::string lowbit_version();

}  // namespace lowbit::jit

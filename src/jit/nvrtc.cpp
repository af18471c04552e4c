#include "jit/nvrtc.hpp"

#include <nvrtc.h>

#include <chrono>
#include <regex>

#include "common/check.hpp"
#include "common/digest.hpp"
#include "jit/embedded_templates.hpp"

#define LOWBIT_NVRTC_CHECK(call, log)                                                                \
  do {                                                                                               \
    nvrtcResult lowbit_nvrtc_result_ = (call);                                                       \
    if (lowbit_nvrtc_result_ != NVRTC_SUCCESS)                                                       \
      throw ::lowbit::Error(                                                                         \
          ::fmt::format("{} failed: {}{}", #call, nvrtcGetErrorString(lowbit_nvrtc_result_), (log)), \
          __FILE__, __LINE__);                                                                       \
  } while (0)

namespace lowbit::jit {

const std::string& templates_digest() {
  static const std::string digest = [] {
    Digest128 d;
    for (const auto& t : embedded_templates()) {
      d.update(std::string_view(t.name)).update("\0", 1).update(t.bytes).update("\0", 1);
    }
    return d.hex();
  }();
  return digest;
}

std::vector<std::string> nvrtc_options(const Arch& arch, CompileOutput output) {
  std::string target = output == CompileOutput::Cubin ? arch.str() : "compute_" + arch.str().substr(3);
  return {"--gpu-architecture=" + target, "-std=c++17", "-default-device", "--ptxas-options=-v",
          "-DLOWBIT_NVRTC=1"};
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  LOWBIT_NVRTC_CHECK(nvrtcVersion(&major, &minor), "");
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {
struct Program {
  nvrtcProgram prog = nullptr;
  ~Program() {
    if (prog) nvrtcDestroyProgram(&prog);
  }
};

std::string program_log(nvrtcProgram prog) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  nvrtcGetProgramLog(prog, log.data());
  log.resize(size - 1);
  return log;
}
}  // namespace

CompileResult nvrtc_compile(const CompileRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  const auto& templates = embedded_templates();
  std::vector<std::string> contents;
  std::vector<const char*> header_sources, header_names;
  contents.reserve(templates.size());
  for (const auto& t : templates) {
    contents.emplace_back(t.bytes);
    header_sources.push_back(contents.back().c_str());
    header_names.push_back(t.name);
  }
  Program p;
  LOWBIT_NVRTC_CHECK(
      nvrtcCreateProgram(&p.prog, request.source.c_str(), "lowbit_kernel.cu",
                         static_cast<int>(header_sources.size()), header_sources.data(), header_names.data()),
      "");
  LOWBIT_NVRTC_CHECK(nvrtcAddNameExpression(p.prog, request.name_expression.c_str()), "");
  const auto options = nvrtc_options(request.arch, request.output);
  std::vector<const char*> opts;
  for (const auto& o : options) opts.push_back(o.c_str());
  nvrtcResult r = nvrtcCompileProgram(p.prog, static_cast<int>(opts.size()), opts.data());
  CompileResult out;
  out.log = program_log(p.prog);
  if (r != NVRTC_SUCCESS) {
    LOWBIT_FAIL("NVRTC could not compile {} for {}: {}\n--- NVRTC log ---\n{}\n--- source ---\n{}",
                request.name_expression, request.arch.str(), nvrtcGetErrorString(r), out.log, request.source);
  }
  const char* lowered = nullptr;
  LOWBIT_NVRTC_CHECK(nvrtcGetLoweredName(p.prog, request.name_expression.c_str(), &lowered), "");
  out.lowered_name = lowered;
  size_t size = 0;
  if (request.output == CompileOutput::Cubin) {
    LOWBIT_NVRTC_CHECK(nvrtcGetCUBINSize(p.prog, &size), "");
    out.binary.resize(size);
    LOWBIT_NVRTC_CHECK(nvrtcGetCUBIN(p.prog, out.binary.data()), "");
  } else {
    LOWBIT_NVRTC_CHECK(nvrtcGetPTXSize(p.prog, &size), "");
    out.binary.resize(size);
    LOWBIT_NVRTC_CHECK(nvrtcGetPTX(p.prog, out.binary.data()), "");
    if (!out.binary.empty() && out.binary.back() == '\0') out.binary.pop_back();
  }
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

long ptxas_log_number(const std::string& log, const char* pattern) {
  std::smatch m;
  return std::regex_search(log, m, std::regex(pattern)) ? std::stol(m[1]) : -1;
}

}  // namespace lowbit::jit

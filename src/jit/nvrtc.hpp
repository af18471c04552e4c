// NVRTC: compiles an instantiation source (which includes the embedded templates) for one arch and
// finds the kernel's mangled name through a name expression.
#pragma once
#include <string>
#include <vector>

#include "lowbit/types.hpp"

namespace lowbit::jit {

enum class CompileOutput { Cubin, Ptx };

struct CompileRequest {
  std::string source;           // the tiny instantiation source
  std::string name_expression;  // e.g. "lowbit::kern::wq_gemm_kernel<4, 128, ...>"
  Arch arch;
  CompileOutput output = CompileOutput::Cubin;
};

struct CompileResult {
  std::string binary;        // cubin or PTX text
  std::string lowered_name;  // mangled kernel name to look up in the module
  std::string log;           // NVRTC + ptxas log (ptxas -v: registers, smem, spills)
  double compile_ms = 0;
};

// Throws Error with the NVRTC log when the compile fails.
CompileResult nvrtc_compile(const CompileRequest& request);

// The options every compile uses (part of every cache key).
std::vector<std::string> nvrtc_options(const Arch& arch, CompileOutput output);

std::string nvrtc_version();  // "13.0"

// A number from the ptxas -v lines of a compile's log: `pattern` is a regex with one group of digits
// (R"(Used (\d+) registers)", R"((\d+) bytes spill stores)"); -1 when the log has no such line.
long ptxas_log_number(const std::string& log, const char* pattern);

}  // namespace lowbit::jit

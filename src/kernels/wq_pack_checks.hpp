// Checks shared by the host packer (pack()) and the device packer (pack_on_device()).
#pragma once
#include <string>

#include "lowbit/pack.hpp"

namespace lowbit {

// The caller-given element counts of a view (0 = unknown) against its shape; `who` prefixes the
// error ("pack(gptq)"). Needs a shape can_implement accepts (bits, group size checked first).
void check_counts(const UnpackedWeightsView& view, const std::string& who);
void check_counts(const GptqWeightsView& view, const std::string& who);
void check_counts(const AwqWeightsView& view, const std::string& who);
void check_counts(const HqqWeightsView& view, const std::string& who);

// The mode an unpacked view packs to (named, or following from its pointers), checked against them.
DequantMode unpacked_mode(const UnpackedWeightsView& view, const std::string& who);
// GPTQ's int32 packing: bits 2, 3, 4 or 8, K a multiple of 32/bits (32 for 3 bits) and, when its
// zeros are read, N too. (pack_on_device also refuses 3 bits: its kernel reads whole values per word.)
void check_gptq_packing(const GptqWeightsView& view, const std::string& who, bool with_zeros);
// AutoAWQ's GEMM packing: 4 bits, N a multiple of 8.
void check_awq_packing(const AwqWeightsView& view, const std::string& who);

}  // namespace lowbit

// Checks shared by the host packer (pack()) and the device packer (pack_on_device()).
#pragma once
#include <string>

#include "lowbit/pack.hpp"

namespace lowbit {

// The caller-given element counts of a view (0 = unknown) against its shape; `who` prefixes the
// error ("pack(gptq)"). Needs a shape can_implement accepts (bits, group size checked first).
void check_counts(const UnpackedWeightsView& view, const std::string& who);
void check_counts(const GptqWeightsView& view, const std::string& who);

}  // namespace lowbit

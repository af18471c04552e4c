// Host fp16/bf16 <-> float conversions (round to nearest even), for references, tests and packing.
#pragma once
#include <cstdint>

namespace lowbit::ref {
float f16_to_float(uint16_t h);
uint16_t float_to_f16(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);
}  // namespace lowbit::ref

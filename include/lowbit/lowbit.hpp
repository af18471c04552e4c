// Umbrella header: the whole public API.
#pragma once
#include "lowbit/error.hpp"
#include "lowbit/pack.hpp"
#include "lowbit/runtime.hpp"
#include "lowbit/types.hpp"
#include "lowbit/wq_gemm.hpp"

// One include for Catch2 v2 (Debian 12) and v3 (Ubuntu 24.04).
#pragma once
#if defined(LOWBIT_CATCH2_V3)
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif

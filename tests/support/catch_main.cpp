// main() for both test binaries. The GPU binary first checks for a device: without one it says why
// and exits 77, which ctest reports as "Skipped" (never as passed).
#if defined(LOWBIT_CATCH2_V3)
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#include <stdlib.h>  // unsetenv

#include <cstdio>
#include <cstdlib>
#include <string>

#include "lowbit/runtime.hpp"

namespace {
// Switches that change which configs and files the library uses. The tests check the defaults and set
// these themselves where they test them, so a caller's environment (a bench script's
// LOWBIT_NO_TUNING_DB=1, say) must not fail them: each one set is named and cleared.
void clear_behaviour_switches() {
  for (const char* name : {"LOWBIT_NO_TUNING_DB", "LOWBIT_TUNING_DB", "LOWBIT_NO_COMPILE",
                           "LOWBIT_NO_DISK_CACHE", "LOWBIT_NO_PDL"}) {
    if (const char* value = std::getenv(name)) {
      std::fprintf(stderr,
                   "tests: clearing %s=%s from the environment (the tests set it where they need it)\n", name,
                   value);
      ::unsetenv(name);
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  clear_behaviour_switches();
#if defined(LOWBIT_GPU_TESTS)
  // Listing the test cases needs no device (tests/gpu_shards.sh checks its shards that way).
  bool listing = false;
  for (int i = 1; i < argc; ++i)
    listing = listing || std::string(argv[i]).rfind("--list", 0) == 0 || std::string(argv[i]) == "-l";
  std::string why;
  if (!listing && !lowbit::cuda_device_available(&why)) {
    std::printf("SKIPPED: GPU tests need a CUDA device: %s\n", why.c_str());
    return 77;
  }
#endif
  return Catch::Session().run(argc, argv);
}

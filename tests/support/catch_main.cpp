// main() for both test binaries. The GPU binary first checks for a device: without one it says why
// and exits 77, which ctest reports as "Skipped" (never as passed).
#if defined(LOWBIT_CATCH2_V3)
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#include <cstdio>
#include <string>

#include "lowbit/runtime.hpp"

int main(int argc, char** argv) {
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

#!/usr/bin/env bash
# Builds everything and runs the tests. Without a GPU the gpu suite reports itself "Skipped".
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
lowbit_build
cd "$BUILD_DIR"
ctest -j "$(nproc)" --output-on-failure "$@"  # the GPU suite is several shards (tests/gpu_shards.sh)
# Say why a suite was skipped (ctest alone only says "Skipped").
grep -h "^SKIPPED:" "$BUILD_DIR/Testing/Temporary/LastTest.log" 2>/dev/null | sort -u || true

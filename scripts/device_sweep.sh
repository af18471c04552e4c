#!/usr/bin/env bash
# Performance sweep on the GPU machine: build the CLI and GPU tests, run the sharded GPU suite (a kernel
# change must be checked before it is timed), then bench each "--n N --k K --m M --config C" line of
# $SWEEP (one per line; an empty config means the library's choice). Results under $OUT.
# With AB_PATCH=file (as for device_ab.sh) each line also runs on the tree with the patch reversed,
# "base" before "new", so both sides of a template change are timed in one call.
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
if [ -n "${AB_PATCH:-}" ]; then
  PATCH=$(ab_patch_path) || exit 1
  build_base_cli "$PATCH" &
  base_build=$!
fi
device_build lowbit_cli lowbit_gpu_tests lowbit_unit_tests
if [ -n "${AB_PATCH:-}" ]; then wait "$base_build" || exit 1; fi
export LOWBIT_CACHE_DIR=$B/cache-sweep
if [ "${SKIP_TESTS:-0}" != 1 ]; then  # the sharded suite, side by side
  (cd "$B" && timeout ${TEST_TIMEOUT:-420} ctest -j 8 --output-on-failure >"$OUT/gpu_tests.log" 2>&1)
  echo "ctest rc=$?" | tee -a "$S"
  grep -E "tests passed|tests failed|Test +#|\*\*\*" "$OUT/gpu_tests.log" | tail -12 | tee -a "$S"
  grep -B3 -A12 "FAILED" "$OUT/gpu_tests.log" | head -40 | tee -a "$S"
fi
while IFS= read -r line; do
  [ -z "$line" ] && continue
  if [ -n "${AB_PATCH:-}" ]; then
    echo "base:" | tee -a "$S"
    LOWBIT_CACHE_DIR=/tmp/lowbit-ab-cache-base "$BASE_SRC/build-dev/lowbit" bench wq_gemm $line 2>&1 |
      grep -v "^device\|^case" | tee -a "$S"
    echo "new:" | tee -a "$S"
  fi
  "$B/lowbit" bench wq_gemm $line 2>&1 | grep -v "^device\|^case" | tee -a "$S"
done <<<"${SWEEP:-}"

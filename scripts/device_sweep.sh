#!/usr/bin/env bash
# Performance sweep on the GPU machine: build the CLI and GPU tests, run the GPU tests (a kernel
# change must be checked before it is timed), then bench each "--n N --k K --m M --config C" line of
# $SWEEP (one per line; an empty config means the library's choice). Results under $OUT.
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
device_build lowbit_cli lowbit_gpu_tests
export LOWBIT_CACHE_DIR=$B/cache-sweep
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout ${TEST_TIMEOUT:-420} "$B/tests/lowbit_gpu_tests" >"$OUT/gpu_tests.log" 2>&1; echo "gpu tests rc=$?" | tee -a "$S"
  tail -4 "$OUT/gpu_tests.log" | tee -a "$S"
  grep -B3 -A12 "FAILED" "$OUT/gpu_tests.log" | head -40 | tee -a "$S"
fi
while IFS= read -r line; do
  [ -z "$line" ] && continue
  "$B/lowbit" bench wq_gemm $line 2>&1 | grep -v "^device\|^case" | tee -a "$S"
done <<<"${SWEEP:-}"

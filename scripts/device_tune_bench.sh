#!/usr/bin/env bash
# One call on the GPU machine: build, the GPU tests (unless SKIP_TESTS=1), tune the layers of
# $SHAPES ("N K" per line; default: the standard cases) at the M values of $TUNE_M into a fresh
# file, then bench the standard cases at $BENCH_M with that file over the shipped one.
# Everything lands in $OUT (summary.txt, tuned.json, tune.log, bench.txt).
# Usage: [TUNE_M=16,32,64,128] [BENCH_M=16,64] [SHAPES="8192 8192"] [LIMIT_S=300] scripts/device_tune_bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
device_build lowbit_cli lowbit_gpu_tests
export LOWBIT_CACHE_DIR=$B/cache-tune-bench
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout 360 "$B/tests/lowbit_gpu_tests" >"$OUT/gpu_tests.log" 2>&1; echo "gpu tests rc=$?" | tee -a "$S"
  tail -4 "$OUT/gpu_tests.log" | tee -a "$S"
  grep -B3 -A12 "FAILED" "$OUT/gpu_tests.log" | head -60 | tee -a "$S"
fi
if [ -n "${SHAPES:-}" ]; then
  printf '%s\n' "$SHAPES" >"$OUT/shapes.txt"
  layers=(--shapes "$OUT/shapes.txt")
else
  layers=(--model standard)
fi
timeout -s INT "${LIMIT_S:-300}" "$B/lowbit" tune wq_gemm "${layers[@]}" --m "${TUNE_M:-16,32,64,128}" \
  --db "$OUT/tuned.json" >"$OUT/tune.log" 2>&1
echo "tune rc=$?" | tee -a "$S"
grep " best " "$OUT/tune.log" | tee -a "$S"
LOWBIT_TUNING_DB=$OUT/tuned.json "$B/lowbit" bench wq_gemm --cases standard --m "${BENCH_M:-16,64}" 2>&1 |
  tee "$OUT/bench.txt" | tee -a "$S"

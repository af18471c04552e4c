#!/usr/bin/env bash
# One call on a machine of two GPUs: build everything once, then `lowbit tune wq_gemm` with $TUNE_ARGS on
# GPU 1 in the background (its own kernel cache, stopped with SIGINT after TUNE_LIMIT_S seconds, default 400:
# the tuner writes what it has) while GPU 0 runs the GPU test suite (unless SKIP_TESTS=1) and then one
# `lowbit bench wq_gemm` per non-empty line of $BENCH_FILE (leading VAR=value words set for that bench only).
# The tune never shares a GPU with the timed benches. Results in $OUT: summary.txt, tests.log, tuned.json,
# tune.log. Usage: TUNE_ARGS="--cases standard --m 32,64 --bits 8" [BENCH_FILE=path] [SKIP_TESTS=1]
# [TUNE_LIMIT_S=400] scripts/device_suite_bench_tune.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
: "${TUNE_ARGS:?the lowbit tune wq_gemm arguments}"
[ "$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)" -ge 2 ] || { echo "needs 2 GPUs" | tee -a "$S"; exit 1; }
device_build lowbit_cli lowbit_gpu_tests lowbit_unit_tests
read -r -a tune_args <<<"$TUNE_ARGS"
CUDA_VISIBLE_DEVICES=1 LOWBIT_CACHE_DIR=$B/cache-tune timeout -s INT -k 20 "${TUNE_LIMIT_S:-400}" \
  "$B/lowbit" tune wq_gemm "${tune_args[@]}" --db "$OUT/tuned.json" >"$OUT/tune.log" 2>&1 </dev/null &
tune_pid=$!
export CUDA_VISIBLE_DEVICES=0 LOWBIT_CACHE_DIR=$B/cache-run
[ "${SKIP_TESTS:-0}" = 1 ] || device_ctest
BENCHES=$(cat "${BENCH_FILE:-/dev/null}")
echo "== benches (GPU 0): ${BENCH_FILE:-none}" | tee -a "$S"
bench_lines "$B/cache-run"
wait "$tune_pid"
echo "== tune (GPU 1) rc=$?: $TUNE_ARGS" | tee -a "$S"
grep " best " "$OUT/tune.log" | tee -a "$S"

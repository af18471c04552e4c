#!/usr/bin/env bash
# One call on a machine of two GPUs or more: build everything once, then tune on GPUs 1..n-1 in the background
# while GPU 0 runs the GPU test suite (unless SKIP_TESTS=1) and then one `lowbit bench wq_gemm` per non-empty
# line of $BENCH_FILE (leading VAR=value words set for that bench only). The tunes never share a GPU with the
# timed benches. Each non-empty line of $TUNE_ARGS (at most 3: the device returns at most 8 files) is one
# `lowbit tune wq_gemm`, run in turn over all the tune GPUs with --devices, into tuned-<i>.json (one kernel
# cache for all of them). TUNE_LIMIT_S seconds after the build (default 400) the tune running is stopped with
# SIGINT (the tuner writes what it has; --resume in a later call goes on from it) and the lines left are
# skipped. TUNE_SEED_DIR (relative to the repo, or absolute) holds an earlier call's tuned-<i>.json, copied in
# first. SPLIT_SUITE=1 (3 GPUs or more): the suite on GPU 0 beside the benches on GPU 1, the tunes on GPUs
# 2..n-1. Results in $OUT: summary.txt, tests.log, tuned-<i>.json, tune-<i>.log.
# Usage: TUNE_ARGS=$'--cases standard --m 32,64 --bits 8\n...' [BENCH_FILE=path] [SKIP_TESTS=1]
# [SPLIT_SUITE=0|1] [TUNE_LIMIT_S=400] [TUNE_SEED_DIR=dir] scripts/device_suite_bench_tune.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
: "${TUNE_ARGS:?the lowbit tune wq_gemm arguments, one tune a line}"
[ "$(grep -c '[^[:space:]]' <<<"$TUNE_ARGS")" -le 3 ] || { echo "at most 3 TUNE_ARGS lines" | tee -a "$S"; exit 1; }
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
[ "$gpus" -ge 2 ] || { echo "needs 2 GPUs" | tee -a "$S"; exit 1; }
split=${SPLIT_SUITE:-0}
case $split in 0 | 1) ;; *) echo "SPLIT_SUITE is 0 or 1, not '$split'" | tee -a "$S"; exit 1 ;; esac
[ "$split" = 1 ] && [ "$gpus" -lt 3 ] && { echo "SPLIT_SUITE=1 needs 3 GPUs" | tee -a "$S"; exit 1; }
tune_devices=$(seq -s, $((1 + split)) $((gpus - 1)))
if [ -n "${TUNE_SEED_DIR:-}" ]; then
  seeds=$TUNE_SEED_DIR
  [[ $seeds = /* ]] || seeds=$ROOT/$seeds
  cp "$seeds"/tuned-*.json "$OUT"/ 2>/dev/null || { echo "no tuned-<i>.json in $seeds" | tee -a "$S"; exit 1; }
fi
device_build lowbit_cli lowbit_gpu_tests lowbit_unit_tests
end=$((SECONDS + ${TUNE_LIMIT_S:-400}))
# run_tunes: the lines of $TUNE_ARGS in turn on the tune GPUs, each bounded by what is left of TUNE_LIMIT_S.
run_tunes() {
  local i=0 line left tune_args
  while IFS= read -r line; do
    read -r -a tune_args <<<"$line"
    [ ${#tune_args[@]} -eq 0 ] && continue
    i=$((i + 1))
    left=$((end - SECONDS))
    [ "$left" -le 0 ] && { echo "== tune $i skipped (out of time): $line" >>"$OUT/tunes-skipped.txt"; continue; }
    echo "tune $i: $line" >"$OUT/tune-$i.log"
    LOWBIT_CACHE_DIR=$B/cache-tune timeout -s INT -k 20 "$left" "$B/lowbit" tune wq_gemm "${tune_args[@]}" \
      --devices "$tune_devices" --db "$OUT/tuned-$i.json" >>"$OUT/tune-$i.log" 2>&1 </dev/null
    echo "rc=$?" >>"$OUT/tune-$i.log"
  done <<<"$TUNE_ARGS"
}
run_tunes &
tune_pid=$!
suite_pid=
if [ "${SKIP_TESTS:-0}" != 1 ] && [ "$split" = 1 ]; then
  # The suite's summary lines go to their own file, so they do not interleave with the benches'.
  (CUDA_VISIBLE_DEVICES=0 S=$OUT/suite-summary.txt device_ctest) &
  suite_pid=$!
elif [ "${SKIP_TESTS:-0}" != 1 ]; then
  CUDA_VISIBLE_DEVICES=0 device_ctest
fi
export CUDA_VISIBLE_DEVICES=$split LOWBIT_CACHE_DIR=$B/cache-run
BENCHES=$(cat "${BENCH_FILE:-/dev/null}")
echo "== benches (GPU $split): ${BENCH_FILE:-none}" | tee -a "$S"
bench_lines "$B/cache-run"
if [ -n "$suite_pid" ]; then
  wait "$suite_pid"
  cat "$OUT/suite-summary.txt" >>"$S" && rm -f "$OUT/suite-summary.txt"
fi
wait "$tune_pid"
for log in "$OUT"/tune-*.log; do
  [ -f "$log" ] || continue
  echo "== $(head -1 "$log") (GPUs $tune_devices, $(tail -1 "$log"))" | tee -a "$S"
  grep " best " "$log" | tee -a "$S"
done
[ -f "$OUT/tunes-skipped.txt" ] && tee -a "$S" <"$OUT/tunes-skipped.txt" && rm -f "$OUT/tunes-skipped.txt"
rm -f "$OUT"/*.tmp-*  # a save the SIGINT cut short

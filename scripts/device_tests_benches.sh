#!/usr/bin/env bash
# One call on the GPU machine: build, the GPU test suite (unless SKIP_TESTS=1), then one
# `lowbit bench wq_gemm` per non-empty line of $BENCH_FILE (ROUNDS times, default 1; unset: no benches).
# A line may start with VAR=value words: set for that bench only (probes' switches).
# NO_BUILD=1: build-dev is already built (device_build in device_common.sh).
# Everything in $OUT (summary.txt; tests.log). Usage: [BENCH_FILE=path] [SKIP_TESTS=1] [ROUNDS=n] [NO_BUILD=1]
# scripts/device_tests_benches.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
BENCH_FILE=${BENCH_FILE:-/dev/null}
[[ $BENCH_FILE = /* ]] || BENCH_FILE=$ROOT/$BENCH_FILE
echo "== gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)" | tee -a "$S"
if [ "${SKIP_TESTS:-0}" = 1 ]; then device_build lowbit_cli; else device_build lowbit_cli lowbit_gpu_tests lowbit_unit_tests; fi
export LOWBIT_CACHE_DIR=$B/cache-run
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  device_ctest
fi
for round in $(seq "${ROUNDS:-1}"); do
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    read -r -a args <<<"$line"
    vars=()
    while [ ${#args[@]} -gt 0 ] && [[ ${args[0]} == [A-Z_]*=* ]]; do vars+=("${args[0]}"); args=("${args[@]:1}"); done
    echo "-- round $round: $line" | tee -a "$S"
    env "${vars[@]}" "$B/lowbit" bench wq_gemm "${args[@]}" 2>&1 | tee -a "$S"
  done <"$BENCH_FILE"
done

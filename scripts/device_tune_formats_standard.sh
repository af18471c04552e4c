#!/usr/bin/env bash
# Tune the standard layers (shared/BENCHMARKS.md) at the M buckets $TUNE_M for each format of $FORMATS
# (lowbit flags, ';'-separated; "" is W4 g128 f16) into $OUT/tuned-<i>.json, one fresh file per format,
# for scripts/merge_retune.py. Builds the CLI; no tests (run them in the call that changed a template).
# SHAPES=<file of 'N K' lines, relative to the repo> tunes those layers instead of the standard ones.
# Usage: [TUNE_M=64,128] FORMATS=";--act bf16" [LIMIT_S=540] [SHAPES=file] scripts/device_tune_formats_standard.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-tune-formats
end=$((SECONDS + ${LIMIT_S:-540}))
i=0
IFS=';' read -ra fmts <<<"${FORMATS:-}"
[ ${#fmts[@]} -eq 0 ] && fmts=("")
for flags in "${fmts[@]}"; do
  i=$((i + 1))
  left=$((end - SECONDS))
  [ "$left" -le 0 ] && { echo "out of time before: '$flags'" | tee -a "$S"; break; }
  # shellcheck disable=SC2086  # flags is a list
  layers=(--model standard)
  [ -n "${SHAPES:-}" ] && layers=(--shapes "$ROOT/$SHAPES")
  timeout -s INT "$left" "$B/lowbit" tune wq_gemm "${layers[@]}" --m "${TUNE_M:-64,128}" $flags \
    --db "$OUT/tuned-$i.json" >"$OUT/tune-$i.log" 2>&1
  echo "tune '$flags' rc=$? -> tuned-$i.json" | tee -a "$S"
  grep " best " "$OUT/tune-$i.log" | tee -a "$S"
done

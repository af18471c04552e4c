#!/usr/bin/env bash
# Out-of-sample check of the heuristic: `lowbit tune` of layers in no shipped file; each line of
# $OUT/tune.log says "best X us (heuristic Y, ...)" and $OUT/oos.json keeps `heuristic_us` beside the
# best found (the tuner's times: 2 rounds of copies, 10 replays). Forty-first session: three
# Qwen2.5-32B layers at M 32/64/128 (the defaults below).
# Usage: [SHAPES=scripts/shapes-....txt] [TUNE_M=32,64,128] [BUDGET=30] [FORMAT_ARGS="--act bf16"] scripts/device_oos_tune.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
echo "== gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)" | tee -a "$S"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-run
read -r -a format_args <<<"${FORMAT_ARGS:-}"
"$B/lowbit" tune wq_gemm --shapes "$ROOT/${SHAPES:-scripts/shapes-session41-out-of-sample.txt}" \
  --m "${TUNE_M:-32,64,128}" "${format_args[@]}" --db "$OUT/oos.json" --budget "${BUDGET:-30}" \
  --refine 1 --final 1 >"$OUT/tune.log" 2>&1
echo "tune rc=$?" | tee -a "$S"
grep -E " best " "$OUT/tune.log" | tee -a "$S"

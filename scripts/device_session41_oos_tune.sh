#!/usr/bin/env bash
# Out-of-sample check of the heuristic (forty-first session): `lowbit tune` of layers in no shipped
# file (Qwen2.5-32B: QKV 7168×5120, down 5120×27648, gate/up at TP 4 13824×5120) at M 32/64/128;
# each entry of $OUT/oos.json records the heuristic's time (`heuristic_us`) beside the best found.
# Usage: [BUDGET=35] scripts/device_session41_oos_tune.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
echo "== gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)" | tee -a "$S"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-run
"$B/lowbit" tune wq_gemm --shapes "$ROOT/scripts/shapes-session41-out-of-sample.txt" --m 32,64,128 \
  --db "$OUT/oos.json" --budget "${BUDGET:-35}" --refine 1 --final 1 >"$OUT/tune.log" 2>&1
echo "tune rc=$?" | tee -a "$S"

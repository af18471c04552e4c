#!/usr/bin/env bash
# Re-tune every layer of a shipped tuning file on the GPU machine (to refresh its entries, e.g. to
# add runners-up), resumable across calls: the result goes to $RETUNE (default: $OUT/retuned.json);
# pass the partial file of an interrupted call back in the working tree and the run goes on where
# it stopped (--resume). MS=16,32 re-tunes only those M buckets (default: every bucket of the file).
# DEVICES=0,1,2,3 tunes on several GPUs at once (lowbit tune --devices). KEYS='regex' keeps the layers
# of the keys it matches (re.search), e.g. KEYS='n8192\.k8192|n28672\.k4096'.
# Usage: [RETUNE=file] [MS=...] [KEYS=regex] [LIMIT_S=540] [DEVICES=...] scripts/device_retune.sh tuning_db/<gpu>.json
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
SRC=${1:?usage: scripts/device_retune.sh tuning_db/<gpu>.json}
DB=${RETUNE:-$OUT/retuned.json}
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-retune
# The layers (N K) of the file's keys, and its M buckets.
python3 - "$SRC" "$OUT/layers.txt" "$OUT/ms.txt" <<'PY'
import json, os, re, sys
d = json.load(open(sys.argv[1]))["wq_gemm"]
only = os.environ.get("KEYS", "")
keys = [re.search(r"\|m(\d+)\.n(\d+)\.k(\d+)", k) for k in d if not only or re.search(only, k)]
layers = sorted({(int(k[2]), int(k[3])) for k in keys if k})
open(sys.argv[2], "w").write("".join(f"{n} {k}\n" for n, k in layers))
open(sys.argv[3], "w").write(",".join(str(m) for m in sorted({int(k[1]) for k in keys if k})))
PY
[ -n "${MS:-}" ] && echo "$MS" >"$OUT/ms.txt"
echo "$(wc -l <"$OUT/layers.txt") layers, M buckets $(cat "$OUT/ms.txt")" | tee -a "$S"
timeout -s INT "${LIMIT_S:-540}" "$B/lowbit" tune wq_gemm --shapes "$OUT/layers.txt" --m "$(cat "$OUT/ms.txt")" \
  --db "$DB" --resume ${DEVICES:+--devices "$DEVICES"} >"$OUT/tune.log" 2>&1
echo "tune rc=$? ($(grep -c ' best ' "$OUT/tune.log") problems this call)" | tee -a "$S"
[ "$DB" != "$OUT/retuned.json" ] && cp "$DB" "$OUT/retuned.json"
python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['wq_gemm']), 'entries in', sys.argv[1])" \
  "$OUT/retuned.json" | tee -a "$S"

#!/usr/bin/env bash
# Re-tune every layer of a shipped tuning file on the GPU machine (to refresh its entries, e.g. to
# add runners-up), resumable across calls: the result goes to $RETUNE (default: $OUT/retuned.json);
# pass the partial file of an interrupted call back in the working tree and the run goes on where
# it stopped (--resume). MS=16,32 re-tunes only those M buckets (default: every bucket of the file).
# DEVICES=0,1,2,3 tunes on several GPUs at once (lowbit tune --devices). KEYS='regex' keeps the keys
# it matches (re.search), e.g. KEYS='n8192\.k8192|n28672\.k4096' or KEYS='^w4\.g128\.bf16.*\|m1\.'.
# Each format of the kept keys (W4 f16, bf16, W2, W8, ...) is tuned as that format.
# Usage: [RETUNE=file] [MS=...] [KEYS=regex] [LIMIT_S=540] [DEVICES=...] scripts/device_retune.sh tuning_db/<gpu>.json
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
SRC=${1:?usage: scripts/device_retune.sh tuning_db/<gpu>.json}
DB=${RETUNE:-$OUT/retuned.json}
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-retune
# For each format of the file's (KEYS-matching) keys: its layers (N K) into layers-FORMAT.txt, and a
# line of plan.txt: FORMAT <tab> its `lowbit tune` format flags <tab> its M buckets. Each format is
# tuned with its own flags (before the fifty-ninth session every layer was tuned as W4 f16 here, and the
# other formats by device_retune_formats.sh, now gone: KEYS='^(?!w4\.g128\.f16\.zp\|)' does its job).
python3 - "$SRC" "$OUT" "$ROOT/scripts" "${MS:-}" <<'PY'
import collections, json, os, re, sys
sys.path.insert(0, sys.argv[3])
from heuristic_config import format_args
d = json.load(open(sys.argv[1]))["wq_gemm"]
only = os.environ.get("KEYS", "")
layers, ms = collections.defaultdict(set), collections.defaultdict(set)
for key in d:
    k = re.fullmatch(r"(.+)\|m(\d+)\.n(\d+)\.k(\d+)", key)
    if k and (not only or re.search(only, key)):
        layers[k[1]].add((int(k[3]), int(k[4])))
        ms[k[1]].add(int(k[2]))
with open(f"{sys.argv[2]}/plan.txt", "w") as plan:
    for fmt in sorted(layers):
        open(f"{sys.argv[2]}/layers-{fmt}.txt", "w").write("".join(f"{n} {k}\n" for n, k in sorted(layers[fmt])))
        buckets = sys.argv[4] or ",".join(str(m) for m in sorted(ms[fmt]))
        plan.write(f"{fmt}\t{' '.join(format_args(fmt))}\t{buckets}\n")
        print(f"{fmt}: {len(layers[fmt])} layers, M buckets {buckets}")
PY
[ -s "$OUT/plan.txt" ] || { echo "no key matches KEYS" | tee -a "$S"; exit 1; }
cat "$OUT/plan.txt" >>"$S"
# One time limit for the whole plan; its formats run in order, each in the time the earlier ones left.
deadline=$((SECONDS + ${LIMIT_S:-540}))
while IFS=$'\t' read -r fmt flags buckets; do
  left=$((deadline - SECONDS))
  [ "$left" -le 0 ] && { echo "$fmt: no time left" | tee -a "$S"; continue; }
  # shellcheck disable=SC2086  # flags is a list
  timeout -s INT "$left" "$B/lowbit" tune wq_gemm --shapes "$OUT/layers-$fmt.txt" --m "$buckets" $flags \
    --db "$DB" --resume ${DEVICES:+--devices "$DEVICES"} >>"$OUT/tune.log" 2>&1
  echo "$fmt: tune rc=$? ($(grep -c "^$fmt|.* best " "$OUT/tune.log") problems this call)" | tee -a "$S"
done <"$OUT/plan.txt"
[ "$DB" != "$OUT/retuned.json" ] && cp "$DB" "$OUT/retuned.json"
python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['wq_gemm']), 'entries in', sys.argv[1])" \
  "$OUT/retuned.json" | tee -a "$S"

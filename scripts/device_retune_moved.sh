#!/usr/bin/env bash
# One call on the GPU machine: re-tune M buckets of a shipped tuning file (scripts/device_retune.sh),
# then bench every entry whose config the re-tune moved: the shipped config against the re-tuned one,
# both forced, in turns, ROUNDS times (default 2), because the tuner's few replays and the bench's
# protocol disagree by a few % on some configs (fifty-third session). Keep an entry's move only where
# the bench agrees. Results: $OUT/retuned.json, $OUT/moved.txt (key, shipped config, re-tuned config,
# the tuner's µs of each), the bench lines in $OUT/summary.txt ("-- round R: KEY shipped|retuned").
# Then, here: scripts/retune_moved_verdict.py SUMMARY MOVED RETUNED.json AGREED.json and
# scripts/merge_retune.py tuning_db/<gpu>.json AGREED.json (or MERGE=1, below, on the device).
# Usage: [MS=2,4,8] [KEYS=regex] [LIMIT_S=300] [ROUNDS=2] [MERGE=1] scripts/device_retune_moved.sh tuning_db/<gpu>.json
# (KEYS: only the matching keys, each format tuned as itself; see scripts/device_retune.sh)
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
SRC=${1:?usage: scripts/device_retune_moved.sh tuning_db/<gpu>.json}
R=$OUT
OUT=$R/retune LIMIT_S=${LIMIT_S:-300} bash "$ROOT/scripts/device_retune.sh" "$SRC"
cat "$R/retune/summary.txt" >>"$S"
cp "$R/retune/retuned.json" "$R/retuned.json" 2>/dev/null || { echo "no retuned.json" | tee -a "$S"; exit 1; }
# moved.txt: one line per re-tuned key whose config differs from the shipped one:
# KEY <tab> bench args of the shipped config <tab> of the re-tuned one <tab> tuner µs shipped <tab> re-tuned.
python3 - "$SRC" "$R/retuned.json" "$R/moved.txt" "$ROOT/scripts" <<'PY'
import json, re, sys
sys.path.insert(0, sys.argv[4])
from heuristic_config import config_arg as forced, format_args
old = json.load(open(sys.argv[1]))["wq_gemm"]
new = json.load(open(sys.argv[2]))["wq_gemm"]
def args(key):
    fmt, m, n, k = re.fullmatch(r"(.+)\|m(\d+)\.n(\d+)\.k(\d+)", key).groups()
    return " ".join([f"--n {n} --k {k} --m {m}", *format_args(fmt)])
with open(sys.argv[3], "w") as f:
    for key, e in sorted(new.items()):
        o = old.get(key)
        if o and forced(o["config"]) != forced(e["config"]):
            f.write(f"{key}\t{args(key)} --config {forced(o['config'])}\t{args(key)} --config {forced(e['config'])}"
                    f"\t{o['us']:.2f}\t{e['us']:.2f}\n")
PY
echo "$(wc -l <"$R/moved.txt") entries moved" | tee -a "$S"
export LOWBIT_CACHE_DIR=$B/cache-run
for round in $(seq "${ROUNDS:-2}"); do
  while IFS=$'\t' read -r key shipped retuned _ _; do
    for side in shipped retuned; do
      read -r -a a <<<"${!side}"
      echo "-- round $round: $key $side" | tee -a "$S"
      "$B/lowbit" bench wq_gemm "${a[@]}" 2>&1 | grep -v "^#" | tee -a "$S"
    done
  done <"$R/moved.txt"
done
# MERGE=1: settle it here too: the verdicts into $OUT/verdict.txt (and the summary), the agreed entries merged
# into the device's copy of the tuning file (so later commands of the same call run it), which comes back
# as $OUT/merged.json: copy that over tuning_db/<gpu>.json here.
if [ "${MERGE:-0}" = 1 ]; then
  { python3 "$ROOT/scripts/retune_moved_verdict.py" "$S" "$R/moved.txt" "$R/retuned.json" "$R/agreed.json" &&
    python3 "$ROOT/scripts/merge_retune.py" "$SRC" "$R/agreed.json"; } >"$R/verdict.txt" 2>&1
  echo "verdict and merge rc=$?" >>"$R/verdict.txt"
  cat "$R/verdict.txt" >>"$S"
  cp "$SRC" "$R/merged.json"
fi

#!/usr/bin/env bash
# Tune jobs side by side, one GPU each (a machine of several GPUs tunes that many formats in the time of
# one): each non-empty line of $JOBS is the arguments of one `lowbit tune wq_gemm` (layers, --m, format
# flags); job i runs on GPU (i - 1) % GPUs into tuned-<i>.json, its log in tune-<i>.log, and its " best "
# lines go to the summary; those files then go into $OUT/tunes.tar (the device returns at most 8 files).
# Jobs past the GPU count wait for theirs. LIMIT_S (default 480) bounds all of it: a job still running then
# is stopped with SIGINT (the tuner writes what it has; --resume goes on from it). Builds the CLI only.
# Usage: JOBS=$'--cases standard --m 2,4 --mode sym\n...' [LIMIT_S=480] scripts/device_tune_jobs.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
: "${JOBS:?one tune argument line per job}"
device_build lowbit_cli
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
echo "== $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x $gpus" | tee -a "$S"
end=$((SECONDS + ${LIMIT_S:-480}))
# run_job I GPU ARGS...: one tune in its own kernel cache (two tuners compiling into one cache race on it).
run_job() {
  local i=$1 gpu=$2
  shift 2
  local left=$((end - SECONDS))
  [ "$left" -le 0 ] && { echo "job $i: out of time" >"$OUT/tune-$i.log"; return; }
  LOWBIT_CACHE_DIR=$B/cache-tune-$gpu timeout -s INT "$left" "$B/lowbit" tune wq_gemm "$@" --device "$gpu" \
    --db "$OUT/tuned-$i.json" >"$OUT/tune-$i.log" 2>&1
  echo "rc=$?" >>"$OUT/tune-$i.log"
}
i=0
declare -A busy  # gpu -> pid
while IFS= read -r line; do
  [ -z "$line" ] && continue
  i=$((i + 1))
  gpu=$(((i - 1) % gpus))
  [ -n "${busy[$gpu]:-}" ] && wait "${busy[$gpu]}"
  read -r -a args <<<"$line"
  echo "job $i on GPU $gpu: ${args[*]}" | tee -a "$S"
  run_job "$i" "$gpu" "${args[@]}" &
  busy[$gpu]=$!
done <<<"$JOBS"
wait
for j in $(seq "$i"); do
  echo "== job $j ($(tail -1 "$OUT/tune-$j.log"))" | tee -a "$S"
  grep " best " "$OUT/tune-$j.log" | tee -a "$S"
done
(cd "$OUT" && tar -cf tunes.tar tuned-*.json tune-*.log 2>/dev/null && rm -f tuned-*.json tune-*.log)

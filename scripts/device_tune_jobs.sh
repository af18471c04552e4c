#!/usr/bin/env bash
# Tune jobs side by side, one GPU each (a machine of several GPUs tunes that many formats in the time of
# one): each non-empty line of $JOBS is the arguments of one `lowbit tune wq_gemm` (layers, --m, format
# flags); job i runs on the next free GPU into tuned-<i>.json, its log in tune-<i>.log, and its " best "
# lines go to the summary; those files then go into $OUT/tunes.tar (the device returns at most 8 files).
# LIMIT_S (default 480, counted from the start, build included) bounds the tunes: a job still running then
# is stopped with SIGINT (the tuner writes what it has; --resume goes on from it), and killed 20 s later.
# Usage: JOBS=$'--cases standard --m 2,4 --mode sym\n...' [LIMIT_S=480] scripts/device_tune_jobs.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
: "${JOBS:?one tune argument line per job}"
end=$((SECONDS + ${LIMIT_S:-480}))
device_build lowbit_cli
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
[ "$gpus" -ge 1 ] || { echo "no GPU found" | tee -a "$S"; exit 1; }
echo "== $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x $gpus" | tee -a "$S"
# run_job I GPU ARGS...: one tune in its own kernel cache (two tuners compiling into one cache race on it).
run_job() {
  local i=$1 gpu=$2
  shift 2
  local left=$((end - SECONDS))
  [ "$left" -le 0 ] && { echo "job $i: out of time" >"$OUT/tune-$i.log"; return; }
  LOWBIT_CACHE_DIR=$B/cache-tune-$gpu timeout -s INT -k 20 "$left" "$B/lowbit" tune wq_gemm "$@" --device "$gpu" \
    --db "$OUT/tuned-$i.json" >"$OUT/tune-$i.log" 2>&1 </dev/null
  echo "rc=$?" >>"$OUT/tune-$i.log"
}
declare -A pid_of  # gpu -> pid of its running job
take_free_gpu() {  # sets gpu to one with no running job, waiting for one to finish if need be
  while true; do
    for ((gpu = 0; gpu < gpus; ++gpu)); do
      [ -z "${pid_of[$gpu]:-}" ] || ! kill -0 "${pid_of[$gpu]}" 2>/dev/null && return
    done
    wait -n
  done
}
i=0
while IFS= read -r line; do
  read -r -a args <<<"$line"
  [ ${#args[@]} -eq 0 ] && continue
  i=$((i + 1))
  take_free_gpu
  echo "job $i on GPU $gpu: ${args[*]}" | tee -a "$S"
  run_job "$i" "$gpu" "${args[@]}" &
  pid_of[$gpu]=$!
done <<<"$JOBS"
wait
for j in $(seq "$i"); do
  echo "== job $j ($(tail -1 "$OUT/tune-$j.log"))" | tee -a "$S"
  grep " best " "$OUT/tune-$j.log" | tee -a "$S"
done
shopt -s nullglob
files=("$OUT"/tuned-*.json "$OUT"/tune-*.log)
[ ${#files[@]} -gt 0 ] && (cd "$OUT" && tar -cf tunes.tar "${files[@]##*/}" && rm -f "${files[@]##*/}")

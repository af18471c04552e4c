#!/usr/bin/env bash
# Out-of-sample check of the heuristic: `lowbit tune` of layers in no shipped file; each line of
# $OUT/tune.log says "best X us (heuristic Y, ...)" and $OUT/oos.json keeps `heuristic_us` beside the
# best found (the tuner's times: 2 rounds of copies, 10 replays). Forty-first session: three
# Qwen2.5-32B layers at M 32/64/128 (the defaults below).
# Several formats in one call (forty-fourth session: one format's tune can take the whole call):
# FORMAT_LIST="|--act bf16|--bits 2|--bits 8" (an empty item is W4 f16), each tune stopped after
# FORMAT_TIMEOUT seconds if set; the tuner saves after every problem, so a stopped one keeps what it
# timed. Score it offline with scripts/heuristic_vs_tuned.py $OUT/oos.json.
# RESUME_DB=path (a stopped call's oos.json, committed): start from it and tune only what it lacks
# (`lowbit tune --resume`), so a set larger than one call goes on in the next (forty-fifth session).
# Usage: [SHAPES=scripts/inputs/shapes-....txt] [TUNE_M=32,64,128] [BUDGET=30] [FORMAT_ARGS="--act bf16" |
#        FORMAT_LIST="|--act bf16|--bits 2" [FORMAT_TIMEOUT=s]] [RESUME_DB=path] scripts/device_oos_tune.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
echo "== gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)" | tee -a "$S"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-run
IFS='|' read -r -a formats <<<"${FORMAT_LIST-${FORMAT_ARGS:-}}"
[ ${#formats[@]} -eq 0 ] && formats=("")
: >"$OUT/tune.log"
resume=()
if [ -n "${RESUME_DB:-}" ]; then
  cp "$ROOT/$RESUME_DB" "$OUT/oos.json" || { echo "no $RESUME_DB" | tee -a "$S"; exit 1; }
  resume=(--resume)
fi
for format in "${formats[@]}"; do
  read -r -a format_args <<<"$format"
  echo "== format: ${format:-W4 f16}" | tee -a "$S" >>"$OUT/tune.log"
  limit=()
  [ -n "${FORMAT_TIMEOUT:-}" ] && limit=(timeout "$FORMAT_TIMEOUT")
  "${limit[@]}" "$B/lowbit" tune wq_gemm --shapes "$ROOT/${SHAPES:-scripts/inputs/shapes-session41-out-of-sample.txt}" \
    --m "${TUNE_M:-32,64,128}" "${format_args[@]}" --db "$OUT/oos.json" --budget "${BUDGET:-30}" \
    --refine 1 --final 1 "${resume[@]}" >>"$OUT/tune.log" 2>&1
  echo "tune rc=$?" | tee -a "$S"
done
grep -E " best " "$OUT/tune.log" | tee -a "$S"

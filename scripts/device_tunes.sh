#!/usr/bin/env bash
# One call on one GPU: build the CLI, then one `lowbit tune wq_gemm` per non-empty line of $TUNE_FILE into
# $OUT/tuned-<i>.json; the tuner's "best" lines (best, heuristic and served times) into $OUT/summary.txt.
# DEVICES=0,1 spreads each tune's problems over those GPUs (`lowbit tune --devices`; eightieth session).
# Usage: TUNE_FILE=path [DEVICES=0,1] [NO_BUILD=1] scripts/device_tunes.sh (seventy-ninth session)
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
TUNE_FILE=${TUNE_FILE:?one lowbit tune argument list a line}
[[ $TUNE_FILE = /* ]] || TUNE_FILE=$ROOT/$TUNE_FILE
device_build lowbit_cli  # NO_BUILD=1: build-dev is built already (device_common.sh)
export LOWBIT_CACHE_DIR=$B/cache-tune
i=0
while IFS= read -r line; do
  [ -z "$line" ] && continue; i=$((i+1))
  read -r -a a <<<"$line"
  echo "== tune $i: $line" | tee -a "$S"
  "$B/lowbit" tune wq_gemm "${a[@]}" ${DEVICES:+--devices "$DEVICES"} --db "$OUT/tuned-$i.json" 2>&1 | grep -E "best|error|Error" | tee -a "$S"
done <"$TUNE_FILE"

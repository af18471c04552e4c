#!/usr/bin/env bash
# Out-of-sample check of the tuning lookup: each layer of $SHAPES benched at $MS twice, with the shipped
# file and with LOWBIT_NO_TUNING_DB=1 (the heuristic). Forty-third session: the file's nearest-layer
# entries then served layers it lacked, up to 1.40× slower, and the step was removed; since, the two
# runs should agree but for layers the file holds (a regression check of the lookup).
# Usage: [SHAPES=scripts/inputs/shapes-out-of-sample-next.txt] [MS=1,16,32,64,128] scripts/device_lookup_vs_heuristic.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
echo "== gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)" | tee -a "$S"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-run
grep -v '^#' "$ROOT/${SHAPES:-scripts/inputs/shapes-out-of-sample-next.txt}" | while read -r n k _; do
  [ -z "$n" ] && continue
  for db in shipped none; do
    echo "-- $n x $k, tuning file: $db" | tee -a "$S"
    if [ $db = none ]; then export LOWBIT_NO_TUNING_DB=1; else unset LOWBIT_NO_TUNING_DB; fi
    "$B/lowbit" bench wq_gemm --n "$n" --k "$k" --m "${MS:-1,16,32,64,128}" 2>&1 | grep -v "^#" | tee -a "$S"
  done
done

#!/usr/bin/env bash
# Probe (session 35): chained act-order at 16 rows, the permutation's grid one block per row (as
# shipped) or one row of blocks looping over the rows. Needs the probe patch (LOWBIT_PROBE_AO,
# LOWBIT_PROBE_ROWS1 in src/kernels/wq_gemm.cpp).
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-bench LOWBIT_PROBE_AO=1
for round in 1 2; do
  for v in "plain" "chain" "plain ROWS1" "chain ROWS1"; do
    echo "== $v, round $round" | tee -a "$S"
    env_args=(); [[ $v == *ROWS1* ]] && env_args=(LOWBIT_PROBE_ROWS1=1)
    c=""; [[ $v == chain* ]] && c="--chain"
    # shellcheck disable=SC2086
    env "${env_args[@]}" "$B/lowbit" bench wq_gemm --cases standard --m 16 --act-order $c 2>&1 | grep -v "^#" | tee -a "$S"
  done
done

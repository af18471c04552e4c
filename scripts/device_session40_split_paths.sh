#!/usr/bin/env bash
# Session 40 probe (needs the WQ_SPLIT_PATH / WQ_PROBE_NO_CLUSTER probe patch in the tree): the mma.sync
# K split's three reductions — 0 cluster (DSMEM), 1 workspace with one acq_rel count, 2 workspace with
# __threadfence — each with and without cluster launch where valid, on the lines of $BENCH_FILE.
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
F=$ROOT/templates/wq_gemm.cuh
for v in ${VARIANTS:-0 1 2}; do
  sed -i "s/^#define WQ_SPLIT_PATH .*/#define WQ_SPLIT_PATH $v/" "$F"
  device_build lowbit_cli
  for cl in on off; do
    [ "$v" = 0 ] && [ "$cl" = off ] && continue  # the cluster path needs its cluster launch
    [ "$v" = 2 ] && [ "$cl" = on ] && continue
    nc=""; [ "$cl" = off ] && nc=1
    echo "== path $v, cluster launch $cl" | tee -a "$S"
    while IFS= read -r line; do
      [ -z "$line" ] && continue
      read -r -a args <<<"$line"
      echo "-- $line" | tee -a "$S"
      env ${nc:+WQ_PROBE_NO_CLUSTER=1} LOWBIT_CACHE_DIR=/tmp/lowbit-sp-$v "$B/lowbit" bench wq_gemm "${args[@]}" 2>&1 | grep -v '^#' | tee -a "$S"
    done <"$ROOT/$BENCH_FILE"
  done
done

#!/usr/bin/env bash
# ncu metrics of kernel variants in one device call: for each value v of $VARIANTS, sets the line
# `#define $MACRO ...` of $FILE to `#define $MACRO v`, rebuilds the CLI and profiles the first
# wq_gemm launch of each "bench args" line of $PROFILE (as device_metrics.sh) into
# $OUT/metrics-v<v>-<N>.txt (the nonzero metrics also into the summary). NO_CHECK=1 as in
# device_variants.sh (ablations). Usage: FILE=templates/x.cuh MACRO=WQ_V VARIANTS="0 1" PROFILE=$'args\nargs'
#        [METRICS=...] [NO_CHECK=1] scripts/device_variant_metrics.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
variant_setup
METRICS=${METRICS:-gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__warps_active.avg.per_cycle_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,regex:sm__pipe_(tensor|alu|fma|fmaheavy|lsu).*_cycles_active.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio}
for v in $VARIANTS; do
  sed -i "s/^#define $MACRO .*/#define $MACRO $v/" "$ROOT/$FILE"
  device_build lowbit_cli
  export LOWBIT_CACHE_DIR=/tmp/lowbit-metrics-$v
  profile_one() {  # N, bench arguments
    ncu --clock-control none -k regex:wq_gemm --launch-skip 0 --launch-count 1 --page raw --metrics "$METRICS" \
      "$B/lowbit" bench wq_gemm $2 --replays 3 >"$OUT/metrics-v$v-$1.txt" 2>&1
    grep -E "^\s+[a-z]" "$OUT/metrics-v$v-$1.txt" | awk '$NF != 0 && $NF != "0"' | tee -a "$S"
  }
  echo "== $MACRO=$v" | tee -a "$S"
  for_each_profile profile_one
done

#!/usr/bin/env bash
# ncu metric breakdowns on the GPU machine: for each "bench args" line of $PROFILE, the first
# wq_gemm launch's $METRICS (default: the L1/TEX and shared-memory throughput breakdowns and the
# tensor pipe's activity), into $OUT/metrics-N.txt and the summary.
# Usage: PROFILE='--n 8192 --k 8192 --m 64 --config ...' [METRICS=...] scripts/device_metrics.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-metrics
METRICS=${METRICS:-breakdown:l1tex__throughput.avg.pct_of_peak_sustained_active,breakdown:sm__throughput.avg.pct_of_peak_sustained_active,regex:sm__pipe_.*_cycles_active.avg.pct_of_peak_sustained_active,regex:smsp__inst_executed_pipe_.*.sum,gpu__time_duration.sum,regex:l1tex__data_pipe_lsu_wavefronts_mem_shared.*.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio}
profile_one() {  # N, bench arguments
  local i=$1 line=$2
  ncu --clock-control none -k regex:wq_gemm --launch-skip 0 --launch-count 1 --page raw --metrics "$METRICS" \
    "$B/lowbit" bench wq_gemm $line --replays 3 >"$OUT/metrics-$i.txt" 2>&1
  grep -E "^\s+[a-z]" "$OUT/metrics-$i.txt" | awk '$NF != 0 && $NF != "0"' | tee -a "$S"
}
for_each_profile profile_one

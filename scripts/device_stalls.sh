#!/usr/bin/env bash
# Warp stall breakdown on the GPU machine: for each "bench args" line of $PROFILE, ncu's average
# stalled warps per issued instruction, by reason, for the first wq_gemm launch (plus duration and
# issue rate). Usage: PROFILE='--n 8192 --k 8192 --m 64 --config ...' scripts/device_stalls.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-stalls
profile_one() {  # N, bench arguments
  local i=$1 line=$2
  ncu --clock-control none -k regex:wq_gemm --launch-skip 0 --launch-count 1 --page raw \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,smsp__inst_executed.sum" \
    "$B/lowbit" bench wq_gemm $line --replays 3 >"$OUT/stalls-$i.txt" 2>&1
  grep -E "stalled|duration|issue_active|warps_active|inst_executed" "$OUT/stalls-$i.txt" |
    awk '{print $1, $(NF)}' | sort -k2 -g -r | tee -a "$S"
}
for_each_profile profile_one

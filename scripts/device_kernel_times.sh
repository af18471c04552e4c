#!/usr/bin/env bash
# The wq_ kernels of the first bench calls under ncu: name, duration, grid, cluster and occupancy
# lines (the image kernel and the GEMM of each call), for each "bench args" line of $PROFILE,
# into $OUT/kernels-N.txt and the summary. Usage: PROFILE='--n 4096 --k 4096 --m 64 --config ...'
# [LAUNCHES=6] scripts/device_kernel_times.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-kernel-times
profile_one() {  # N, bench arguments
  local i=$1 line=$2
  ncu --clock-control none -k regex:wq_ --launch-skip 0 --launch-count "${LAUNCHES:-6}" --section LaunchStats \
    --section Occupancy --section SpeedOfLight --page details "$B/lowbit" bench wq_gemm $line --replays 1 \
    >"$OUT/kernels-$i.txt" 2>&1
  grep -E "^  [a-z_].*\(|Duration|Grid Size|Cluster|Waves Per SM|Registers Per|Dynamic Shared|Achieved Occupancy|Block Limit (Registers|Shared)" \
    "$OUT/kernels-$i.txt" | tee -a "$S"
}
for_each_profile profile_one

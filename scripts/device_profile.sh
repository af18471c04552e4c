#!/usr/bin/env bash
# Profile on the GPU machine: for each "bench args" line of $PROFILE, one ncu report of the first
# wq_gemm launch (speed of light, occupancy, warp stalls, instruction mix) and the SASS of every
# kernel compiled, all under $OUT. Usage: PROFILE='--n 8192 --k 8192 --m 1' scripts/device_profile.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-profile
rm -rf "$LOWBIT_CACHE_DIR"
profile_one() {  # N, bench arguments
  local i=$1 line=$2
  ncu --clock-control none -k regex:wq_gemm --launch-skip 0 --launch-count 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis \
    --page details "$B/lowbit" bench wq_gemm $line --replays 3 >"$OUT/ncu-$i.txt" 2>&1
  grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issued Ipc|No Eligible|Executed Instructions  |Memory Throughput|DRAM Throughput|Block Limit Reg|Warp Cycles Per Issued|Local" "$OUT/ncu-$i.txt" | tee -a "$S"
}
for_each_profile profile_one
for f in $(find "$LOWBIT_CACHE_DIR" -name kernel.cubin); do
  name=$(basename "$(dirname "$f")")
  cuobjdump -sass "$f" >"$OUT/sass-${name:0:80}.txt" 2>&1
done
ls "$OUT" | tee -a "$S"

#!/usr/bin/env bash
# Per-instruction stall samples on the GPU machine: for each "bench args" line of $PROFILE, ncu's
# source counters of the first wq_gemm launch as a SASS listing (CSV: address, instruction, stall
# samples, executed instructions, ...) and the 60 instructions with the most samples, under $OUT.
# Usage: PROFILE='--n 8192 --k 8192 --m 64 --config ...' scripts/device_sass_stalls.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-sass-stalls
profile_one() {  # N, bench arguments
  local i=$1 line=$2
  ncu --clock-control none -k regex:wq_gemm --launch-skip 0 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight -f -o "$OUT/rep-$i" \
    "$B/lowbit" bench wq_gemm $line --replays 3 >"$OUT/ncu-$i.log" 2>&1
  ncu -i "$OUT/rep-$i.ncu-rep" --page details >"$OUT/details-$i.txt" 2>&1
  grep -E "Duration|Warp Cycles Per Issued|Issued Ipc|Compute \(SM\) Throughput|Memory Throughput" \
    "$OUT/details-$i.txt" | tee -a "$S"
  ncu -i "$OUT/rep-$i.ncu-rep" --page source --print-source sass --csv >"$OUT/sass-$i.csv" 2>&1
  python3 - "$OUT/sass-$i.csv" <<'PY' | tee -a "$S"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if any("Samples" in c for c in r))
cols = rows[head]
src = next(i for i, c in enumerate(cols) if c.strip() == "Source")
smp = next(i for i, c in enumerate(cols) if "Warp Stall Sampling (All" in c)
body = [r for r in rows[head + 1:] if len(r) > smp and r[smp].replace(".", "").isdigit()]
total = sum(float(r[smp]) for r in body) or 1
print(f"{len(body)} instructions, {total:.0f} samples; columns: {cols}")
for r in sorted(body, key=lambda r: -float(r[smp]))[:60]:
    print(f"{100 * float(r[smp]) / total:5.1f}%  {r[0]:>6}  {r[src]}")
PY
}
for_each_profile profile_one
rm -f "$OUT"/rep-*.ncu-rep

#!/usr/bin/env bash
# Time under sustained load, with the SM clock and board power sampled: for each "bench args" line
# of $CASES and each replay count of $REPLAYS (default 3000), one `lowbit bench wq_gemm` while
# nvidia-smi samples GPU $DEVICE (default 0) every 20 ms; the summary gets the case's line and the
# median SM clock and power over the last 60 % of the samples. Only long runs (≥ 1000 replays, about
# a second) are mostly timed replays there; in short ones the tail is the reference check and the
# ceilings. On the H200 the 1/16-row kernels reach the 700 W cap after ~1000 replays and lose clock
# (docs/perf-notes.md, thirtieth session; nvidia-smi does not show the MMAs' own clock drop, ncu does).
# Usage: CASES=$'--n 8192 --k 8192 --m 16\n...' [REPLAYS="30 3000"] [DEVICE=0] scripts/device_power.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
: "${CASES:?one bench argument list per line}"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-power
while IFS= read -r cfg; do
  [ -z "$cfg" ] && continue
  for r in ${REPLAYS:-3000}; do
    nvidia-smi -i "${DEVICE:-0}" --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 20 \
      >"$OUT/smi.txt" &
    pid=$!
    # shellcheck disable=SC2086  # cfg is a list
    line=$("$B/lowbit" bench wq_gemm $cfg --replays "$r" --device "${DEVICE:-0}" </dev/null 2>&1 |
      grep "^w[0-9]g" | sed "s/WqGemmConfig(\([^)]*\))/[\1]/")
    kill "$pid"
    wait "$pid" 2>/dev/null
    echo "== $cfg --replays $r: $line" | tee -a "$S"
    n=$(wc -l <"$OUT/smi.txt")
    tail -n $((n * 6 / 10 + 1)) "$OUT/smi.txt" | python3 -c "
import sys, statistics as st
r = []
for l in sys.stdin:
    f = l.replace(' ', '').strip().split(',')
    try:
        if len(f) == 2: r.append((float(f[0]), float(f[1])))
    except ValueError:
        pass  # '[N/A]', '[Not Supported]', a line cut short by the kill
if r:
    c = [x[0] for x in r]; p = [x[1] for x in r]
    print('   %d samples: SM clock median %.0f MHz (min %.0f), power median %.0f W (max %.0f)'
          % (len(r), st.median(c), min(c), st.median(p), max(p)))
else:
    print('   no clock/power samples')" | tee -a "$S"
  done
done <<<"$CASES"

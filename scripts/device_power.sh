#!/usr/bin/env bash
# Time under sustained load, with the SM clock and board power sampled: for each "bench args" line
# of $CASES and each replay count of $REPLAYS (default "30 3000"), one `lowbit bench wq_gemm` while
# nvidia-smi samples every 20 ms; the summary gets the case's line and the median SM clock and
# power over the last 60 % of the samples (the timed replays). On the H200 the 1/16-row kernels
# reach the 700 W cap after ~1000 replays and lose clock (docs/perf-notes.md, thirtieth session).
# Usage: CASES=$'--n 8192 --k 8192 --m 16\n...' [REPLAYS="30 3000"] scripts/device_power.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
: "${CASES:?one bench argument list per line}"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-power
while IFS= read -r cfg; do
  [ -z "$cfg" ] && continue
  for r in ${REPLAYS:-30 3000}; do
    nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 20 >"$OUT/smi.txt" &
    pid=$!
    # shellcheck disable=SC2086  # cfg is a list
    line=$("$B/lowbit" bench wq_gemm $cfg --replays "$r" 2>&1 | grep "^w" | sed "s/WqGemmConfig(\([^)]*\))/[\1]/")
    kill "$pid"
    wait "$pid" 2>/dev/null
    echo "== $cfg --replays $r: $line" | tee -a "$S"
    n=$(wc -l <"$OUT/smi.txt")
    tail -n $((n * 6 / 10 + 1)) "$OUT/smi.txt" | python3 -c "
import sys, statistics as st
r = [[float(x) for x in l.replace(' ', '').split(',')] for l in sys.stdin if l.strip() and 'N/A' not in l]
if r:
    c = [x[0] for x in r]; p = [x[1] for x in r]
    print('   %d samples: SM clock median %.0f MHz (min %.0f), power median %.0f W (max %.0f)'
          % (len(r), st.median(c), min(c), st.median(p), max(p)))" | tee -a "$S"
  done
done <<<"$CASES"

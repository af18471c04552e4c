#!/usr/bin/env bash
# Forty-third session, one call: the out-of-sample tune of the layer whose budget the compiles ate
# (checks the tuner's budget fix), then the GPU suite and the v26 benches. Summaries under $OUT.
set -u
here=$(dirname "${BASH_SOURCE[0]}")
SHAPES=scripts/inputs/shapes-session43-first-layer.txt TUNE_M=1,16,32,64,128 BUDGET=30 "$here/device_oos_tune.sh"
cp "$OUT/summary.txt" "$OUT/summary-tune.txt"; cp "$OUT/tune.log" "$OUT/tune-first-layer.log"
BENCH_FILE=${BENCH_FILE:-scripts/inputs/benches-session43-v26.txt} "$here/device_tests_benches.sh"

#!/usr/bin/env bash
# Kernel variants (ablations, alternatives) in one device call: for each value v of $VARIANTS, sets
# the line `#define $MACRO ...` of $FILE to `#define $MACRO v`, rebuilds the CLI and benches with
# "$@" (default: the standard cases at M 64,128), each variant in its own kernel cache. Variants that
# compute wrong results on purpose (ablations) need NO_CHECK=1, which turns the bench's reference and finiteness checks
# off in this copy of the tree only (the device's copy is thrown away). Results in $OUT/summary.txt.
# Usage: FILE=templates/x.cuh MACRO=WQ_V VARIANTS="0 1 2" [NO_CHECK=1] [ROUNDS=1] [BENCHES=$'args\nargs']
#        scripts/device_variants.sh [bench args]
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
variant_setup
[ $# -eq 0 ] && set -- --cases standard --m 64,128
for round in $(seq "${ROUNDS:-1}"); do
  for v in $VARIANTS; do
    sed -i "s/^#define $MACRO .*/#define $MACRO $v/" "$ROOT/$FILE"
    device_build lowbit_cli
    echo "== $MACRO=$v, round $round" | tee -a "$S"
    if [ -n "${BENCHES:-}" ]; then  # one bench argument list per line, instead of "$@"
      bench_lines "/tmp/lowbit-variant-$v"
    else
      LOWBIT_CACHE_DIR=/tmp/lowbit-variant-$v "$B/lowbit" bench wq_gemm "$@" 2>&1 | tee -a "$S"
    fi
  done
done

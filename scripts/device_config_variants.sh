#!/usr/bin/env bash
# Kernel variants × forced configs in one device call: for each value v of $VARIANTS, sets the line
# `#define $MACRO ...` of $FILE to `#define $MACRO v`, rebuilds the CLI and benches every line of
# $CASES ("N K M CONFIG", CONFIG as `lowbit bench --config` takes it, or "-" for the shipped one),
# one summary line per case (shape, M, config, µs, % of floor). NO_CHECK=1 turns the bench's reference
# and finiteness checks off in this copy of the tree (ablations that compute wrong results on purpose).
# Usage: FILE=templates/x.cuh MACRO=WQ_V VARIANTS="0 1" CASES="$(cat cases.txt)" [NO_CHECK=1]
#        [BENCH_ARGS="--bits 2"] scripts/device_config_variants.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
: "${CASES:?}"
variant_setup
for v in $VARIANTS; do
  sed -i "s/^#define $MACRO .*/#define $MACRO $v/" "$ROOT/$FILE"
  device_build lowbit_cli
  echo "== $MACRO=$v" | tee -a "$S"
  while read -r n k m cfg; do
    [ -z "$n" ] && continue
    extra=()
    [ "$cfg" != "-" ] && extra=(--config "$cfg")
    # shellcheck disable=SC2086  # BENCH_ARGS is a list of flags
    LOWBIT_CACHE_DIR=/tmp/lowbit-variant-$v "$B/lowbit" bench wq_gemm --n "$n" --k "$k" --m "$m" "${extra[@]}" \
      ${BENCH_ARGS:-} 2>&1 | grep -E "^w[0-9]|FAIL|rror" |
      awk -v c="$cfg" '{printf "%-16s %4s %-20s us=%8s %%floor=%5s\n", $3, $4, c, $(NF-8), $(NF-4)}' | tee -a "$S"
  done <<<"$CASES"
done

#!/usr/bin/env bash
# Session 36: the GPU suite, then an A/B of the act-order overlap (the GEMM as the permutation's
# dependent): "base" = the tree with $AB_PATCH reversed, "new" = the tree. Each line of $BENCHES is one
# `lowbit bench wq_gemm` argument list, run on both sides in turn for $ROUNDS rounds (default 1).
# Usage: AB_PATCH=ab.patch BENCHES=$'--cases standard --m 1,16 --act-order\n...' [ROUNDS=2] [SKIP_TESTS=1]
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
PATCH=$(ab_patch_path) || exit 1
echo "== gpu" | tee -a "$S"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee -a "$S"
targets=(lowbit_cli)
[ "${SKIP_TESTS:-0}" = 1 ] || targets+=(lowbit_gpu_tests lowbit_unit_tests)
device_build "${targets[@]}" &
new_build=$!
build_base_cli "$PATCH"
wait "$new_build" || { echo "new build failed" | tee -a "$S"; exit 1; }
[ "${SKIP_TESTS:-0}" = 1 ] || device_ctest
declare -A CLI=([base]=$BASE_SRC/build-dev/lowbit [new]=$B/lowbit)
for round in $(seq "${ROUNDS:-1}"); do
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    read -r -a args <<<"$line"
    for side in base new; do
      echo "== $side, round $round: $line" | tee -a "$S"
      LOWBIT_CACHE_DIR=/tmp/lowbit-ab-cache-$side "${CLI[$side]}" bench wq_gemm "${args[@]}" 2>&1 | grep -v "^#" | tee -a "$S"
    done
  done <<<"${BENCHES:?}"
done

#!/usr/bin/env bash
# Session 36, call 1: the GPU suite on the act-order overlap (the GEMM as the permutation's dependent),
# then an A/B of it: "base" = the tree with $AB_PATCH reversed (the GEMM launched after the
# permutation, the plain kernel), "new" = the tree; W4 f16 act-order at M 1, 16, 64 on the standard
# layers, two alternating rounds; then W4 bf16, W2, and W4 f16/bf16 chained, act-order at M 1, 16 once per side.
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
PATCH=$(ab_patch_path) || exit 1
echo "== gpu" | tee -a "$S"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee -a "$S"
device_build lowbit_cli lowbit_gpu_tests lowbit_unit_tests &
new_build=$!
build_base_cli "$PATCH"
wait "$new_build" || { echo "new build failed" | tee -a "$S"; exit 1; }
device_ctest
declare -A CLI=([base]=$BASE_SRC/build-dev/lowbit [new]=$B/lowbit)
for round in 1 2; do
  for side in base new; do
    echo "== $side, round $round: --act-order" | tee -a "$S"
    LOWBIT_CACHE_DIR=/tmp/lowbit-ab-cache-$side "${CLI[$side]}" bench wq_gemm --cases standard --m 1,16,64 --act-order 2>&1 |
      grep -v "^#" | tee -a "$S"
  done
done
for side in base new; do
  for fmt in "--act bf16" "--bits 2" "--chain" "--act bf16 --chain"; do
    echo "== $side: $fmt --act-order" | tee -a "$S"
    # shellcheck disable=SC2086
    LOWBIT_CACHE_DIR=/tmp/lowbit-ab-cache-$side "${CLI[$side]}" bench wq_gemm --cases standard --m 1,16 $fmt --act-order 2>&1 |
      grep -v "^#" | tee -a "$S"
  done
done

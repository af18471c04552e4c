#!/usr/bin/env bash
# Session 35's closing call: the GPU suite, `lowbit compile --chain` on the device, then W4 f16 plain
# and chained at 1 and 16 rows, with and without act-order (the chained permutation pre-kernel).
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
device_build lowbit_cli lowbit_gpu_tests lowbit_unit_tests
device_ctest
echo "== compile --chain" | tee -a "$S"
LOWBIT_CACHE_DIR=$B/cache-compile "$B/lowbit" compile wq_gemm --n 4096 --k 4096 --m 1,16 --chain 2>&1 | tail -3 | tee -a "$S"
for flags in "" "--act-order"; do
  for c in "" "--chain"; do
    echo "== bench $flags $c" | tee -a "$S"
    # shellcheck disable=SC2086
    LOWBIT_CACHE_DIR=$B/cache-bench "$B/lowbit" bench wq_gemm --cases standard --m 1,16 $flags $c 2>&1 | grep -v "^#" | tee -a "$S"
  done
done

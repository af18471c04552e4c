#!/usr/bin/env bash
# A/B of a runtime switch on the GPU machine, in one call: "base" runs each bench with the
# environment assignments of $AB_ENV (e.g. "LOWBIT_NO_PDL=1"), "new" without them; same build, same
# cache. Unless SKIP_TESTS=1 the GPU and unit tests run first (as in device_run.sh). Each line of
# $BENCHES is one `lowbit bench wq_gemm` argument list (default: the standard cases at M 64,128);
# base and new alternate for $ROUNDS rounds (default 2), so drift shows. Results in $OUT/summary.txt.
# Usage: AB_ENV="LOWBIT_NO_PDL=1" [SKIP_TESTS=1] [ROUNDS=2] [BENCHES=$'args\nargs'] scripts/device_env_ab.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
: "${AB_ENV:?set AB_ENV to the environment assignments of the base side}"
echo "== gpu" | tee -a "$S"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee -a "$S"
if [ "${SKIP_TESTS:-0}" = 1 ]; then device_build lowbit_cli; else device_build lowbit_cli lowbit_gpu_tests lowbit_unit_tests; fi
export LOWBIT_CACHE_DIR=$B/cache-ab
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  echo "== tests" | tee -a "$S"
  device_ctest
fi
BENCHES=${BENCHES:---cases standard --m 64,128}
read -r -a base_env <<<"$AB_ENV"
for round in $(seq "${ROUNDS:-2}"); do
  for side in base new; do
    while IFS= read -r line; do
      [ -z "$line" ] && continue
      echo "== $side, round $round: $line" | tee -a "$S"
      read -r -a args <<<"$line"
      if [ $side = base ]; then
        env "${base_env[@]}" "$B/lowbit" bench wq_gemm "${args[@]}" 2>&1 | tee -a "$S"
      else
        "$B/lowbit" bench wq_gemm "${args[@]}" 2>&1 | tee -a "$S"
      fi
    done <<<"$BENCHES"
  done
done

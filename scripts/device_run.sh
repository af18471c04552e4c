#!/usr/bin/env bash
# One call on the GPU machine: build, GPU + unit tests, compile timings, benchmark. Everything lands
# in $OUT (summary.txt last). SKIP_TESTS=1 runs only the benchmark; TEST_TIMEOUT (seconds, default
# 480) bounds ctest. Usage: [FORMATS=1] [SKIP_TESTS=1] [TEST_TIMEOUT=s] [NO_BUILD=1 RUN_CACHE_DIR=dir]
# scripts/device_run.sh [bench args...]
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
step() { echo "== $*" | tee -a "$S"; }
step "gpu"; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee -a "$S"
step "build"
# NO_BUILD=1 (device_build): build-dev is already built (a run beside another device script on a second GPU);
# RUN_CACHE_DIR then keeps this run's kernel cache, which it empties first, apart from the other's.
if [ "${SKIP_TESTS:-0}" = 1 ]; then device_build lowbit_cli; else device_build lowbit_cli lowbit_gpu_tests; fi
export LOWBIT_CACHE_DIR=${RUN_CACHE_DIR:-$B/cache-run}
rm -rf "$LOWBIT_CACHE_DIR"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
step "info"; "$B/lowbit" info | tee -a "$S"
step "cold compile (empty cache), then warm (disk hits)"
"$B/lowbit" compile wq_gemm --model llama-3-8b --m-buckets 1,16,64 | tee -a "$S"
"$B/lowbit" compile wq_gemm --model llama-3-8b --m-buckets 1,16,64 | tail -3 | tee -a "$S"
step "resources"
for m in 1 16 64 128; do "$B/lowbit" inspect wq_gemm --n 8192 --k 8192 --m $m --resources | tee -a "$S"; done
step "tests"
ninja -C "$B" lowbit_unit_tests >>"$OUT/build.log" 2>&1 || echo "unit tests did not build (see build.log)" | tee -a "$S"
# The GPU suite runs as shards side by side (tests/gpu_shards.sh): mostly NVRTC compiles.
device_ctest
fi
step "bench"
[ $# -eq 0 ] && set -- --cases standard --m 1,16,64
"$B/lowbit" bench wq_gemm "$@" --save "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt" | tee -a "$S"
# FORMATS=1: the same cases for the other formats the closing table of issue 3 asks for (fp16 and bf16,
# bits 2/4/8; W2/W8 bf16 since the seventy-third session).
if [ "${FORMATS:-0}" = 1 ]; then
  for fmt in "--act bf16" "--bits 2" "--bits 8" "--bits 2 --act bf16" "--bits 8 --act bf16"; do
    step "bench $fmt"
    "$B/lowbit" bench wq_gemm "$@" $fmt 2>&1 | tee -a "$OUT/bench.txt" | tee -a "$S"
  done
fi

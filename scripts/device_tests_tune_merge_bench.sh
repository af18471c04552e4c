#!/usr/bin/env bash
# One call after a template change that adds tuner candidates: build, the GPU suite, a bench of the
# standard cases at $TUNE_M in $BENCH_FORMATS with the shipped file ("before"), then
# device_tune_merge_bench.sh (tune, merge, the same benches "after"). Summaries: $OUT/tests-before.txt,
# $OUT/tune-summary.txt, $OUT/summary.txt (after); the merged file as $OUT/merged.json.
# Usage: FILE=nvidia-h200.json TUNE_M=1,16 FORMATS="" BENCH_FORMATS="" [LIMIT_S=s]
#        scripts/device_tests_tune_merge_bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
: "${FILE:?}" "${TUNE_M:?}"
echo "== gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)" | tee -a "$S"
device_build lowbit_cli lowbit_gpu_tests lowbit_unit_tests
device_ctest
echo "## bench before" | tee -a "$S"
bench_formats "$TUNE_M"
cp "$S" "$OUT/tests-before.txt"
"$ROOT/scripts/device_tune_merge_bench.sh"

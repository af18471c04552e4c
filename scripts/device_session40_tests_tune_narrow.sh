#!/usr/bin/env bash
# Session 40, one call: build, the GPU suite, then the narrow TP layers of $SHAPES benched with the
# shipped file (before), tuned at $TUNE_M, merged into tuning_db/$FILE (back as $OUT/merged.json) and
# benched again (after). Usage: FILE=nvidia-h100.json SHAPES=scripts/x.txt TUNE_M=1,8,16 [LIMIT_S=s]
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
: "${FILE:?}" "${SHAPES:?}" "${TUNE_M:?}"
echo "== gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)" | tee -a "$S"
device_build lowbit_cli lowbit_gpu_tests lowbit_unit_tests
device_ctest
bench_shapes() {
  echo "## bench $1" | tee -a "$S"
  LOWBIT_CACHE_DIR=$B/cache-bench "$B/lowbit" bench wq_gemm --shapes "$ROOT/$SHAPES" --m "$TUNE_M" 2>&1 |
    grep -v '^#' | tee -a "$S"
}
bench_shapes before
timeout -s INT "${LIMIT_S:-200}" "$B/lowbit" tune wq_gemm --shapes "$ROOT/$SHAPES" --m "$TUNE_M" \
  --db "$OUT/tuned-1.json" >"$OUT/tune-1.log" 2>&1
echo "tune rc=$?" | tee -a "$S"
grep " best " "$OUT/tune-1.log" | tee -a "$S"
if python3 "$ROOT/scripts/merge_retune.py" "$ROOT/tuning_db/$FILE" "$OUT/tuned-1.json" | tee -a "$S"; then
  cp "$ROOT/tuning_db/$FILE" "$OUT/merged.json"
fi
bench_shapes after

#!/usr/bin/env bash
# One-off (thirty-second session, H100): re-tune the three H100 entries that the group-staged
# activations made slower in an A/B (W8 16384² and 28672×4096 at M = 1, W4 28672×8192 at M = 16),
# merge them into tuning_db/nvidia-h100.json (the merged file comes back as $OUT/merged.json), bench.
# Usage: bash scripts/device_session32_h100_retune.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-retune
"$B/lowbit" tune wq_gemm --n 16384 --k 16384 --m 1 --bits 8 --db "$OUT/tuned-1.json" > "$OUT/tune-1.log" 2>&1
"$B/lowbit" tune wq_gemm --n 28672 --k 4096 --m 1 --bits 8 --db "$OUT/tuned-1.json" >> "$OUT/tune-1.log" 2>&1
"$B/lowbit" tune wq_gemm --n 28672 --k 8192 --m 16 --db "$OUT/tuned-2.json" > "$OUT/tune-2.log" 2>&1
grep " best " "$OUT"/tune-*.log | tee -a "$S"
python3 "$ROOT/scripts/merge_retune.py" "$ROOT/tuning_db/nvidia-h100.json" "$OUT"/tuned-*.json | tee -a "$S"
cp "$ROOT/tuning_db/nvidia-h100.json" "$OUT/merged.json"
for a in "--n 16384 --k 16384 --m 1 --bits 8" "--n 28672 --k 4096 --m 1 --bits 8" "--n 28672 --k 8192 --m 16"; do "$B/lowbit" bench wq_gemm $a 2>&1 | grep -v "^#" | tee -a "$S"; done

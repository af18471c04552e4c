#!/usr/bin/env bash
# One call: tune the standard layers at $TUNE_M for each format of $FORMATS (as
# device_tune_formats_standard.sh), merge the results into this device's shipped file
# (tuning_db/$FILE, with scripts/merge_retune.py; the merged file comes back as $OUT/merged.json),
# then bench the standard cases at $TUNE_M in the four closing-table formats with it.
# LIMIT_S (default 360) bounds the tuning, so that the benches fit in the call's 600 s.
# BENCH_FORMATS (';'-separated, default the four) limits the benches after.
# Usage: FILE=nvidia-h100.json TUNE_M=1,16 FORMATS=";--act bf16;--bits 2;--bits 8" [LIMIT_S=s]
#        [BENCH_FORMATS=";--bits 2"] scripts/device_tune_merge_bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
: "${FILE:?the shipped tuning file under tuning_db/}" "${TUNE_M:?}"
LIMIT_S=${LIMIT_S:-360} "$ROOT/scripts/device_tune_formats_standard.sh"
cp "$S" "$OUT/tune-summary.txt"
# The tuned files go only once they are merged (else they come back as they are).
if python3 "$ROOT/scripts/merge_retune.py" "$ROOT/tuning_db/$FILE" "$OUT"/tuned-*.json | tee -a "$OUT/tune-summary.txt"; then
  cp "$ROOT/tuning_db/$FILE" "$OUT/merged.json"
  rm -f "$OUT"/tuned-*.json
fi
rm -f "$OUT/build.log"
: >"$S"
bench_formats "$TUNE_M"

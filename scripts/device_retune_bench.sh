#!/usr/bin/env bash
# One call on the GPU machine: re-tune the standard layers at $TUNE_M for each format of $FORMATS
# (scripts/device_tune_formats_standard.sh), merge the results into this GPU's shipped file (the
# tuning_db/*.json whose meta.device is the device's name) with scripts/merge_retune.py, copy the
# merged file to $OUT (bring it back and commit it), then bench the standard cases of all four
# formats with it (FORMATS=1 scripts/device_run.sh, no tests: run them in the call that changed a
# template). Results: $OUT/summary.txt, $OUT/<file>.json; logs under $OUT/tune and $OUT/run.
# Usage: [TUNE_M=1,16] [SHAPES=file (layers instead of the standard ones)] [FORMATS=";--act bf16;--bits 2;--bits 8" (set but empty: W4 f16 only)] [LIMIT_S=360]
#        scripts/device_retune_bench.sh [bench args, default --cases standard --m 1,16,64,128]
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
R=$OUT
export TUNE_M=${TUNE_M:-1,16} FORMATS=${FORMATS-;--act bf16;--bits 2;--bits 8} LIMIT_S=${LIMIT_S:-360}
OUT=$R/tune bash "$ROOT/scripts/device_tune_formats_standard.sh"
grep -E "rc=|out of time" "$R/tune/summary.txt" | tee -a "$S"
device=$("$B/lowbit" info --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["device"]["name"])')
file=$(python3 - "$ROOT/tuning_db" "$device" <<'PY'
import glob, json, sys
for p in sorted(glob.glob(sys.argv[1] + "/*.json")):
    try:
        if json.load(open(p))["meta"]["device"] == sys.argv[2]:
            print(p)
            break
    except (OSError, ValueError, KeyError):
        pass
PY
)
if [ -z "$file" ]; then
  echo "no shipped tuning file for '$device': the re-tuned files stay under $R/tune" | tee -a "$S"
  exit 1
fi
python3 "$ROOT/scripts/merge_retune.py" "$file" "$R"/tune/tuned-*.json 2>&1 | tee -a "$S"
cp "$file" "$R/"
[ $# -eq 0 ] && set -- --cases standard --m 1,16,64,128
OUT=$R/run FORMATS=1 SKIP_TESTS=1 bash "$ROOT/scripts/device_run.sh" "$@" >/dev/null 2>&1
cat "$R/run/summary.txt" >>"$S"

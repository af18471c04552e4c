#!/usr/bin/env bash
# Re-tune the entries of a shipped tuning file that are not W4 g128 f16 (other bits, dtypes, modes,
# groups), format by format, at the M buckets $MS (default 16), into $RETUNE (default
# $OUT/formats.json); device_retune.sh covers the W4 g128 f16 entries. Does not build: run it after
# device_build (or device_retune.sh) in the same call.
# Usage: [RETUNE=file] [MS=16,32] [LIMIT_S=300] [CUDA_VISIBLE_DEVICES=n] scripts/device_retune_formats.sh tuning_db/<gpu>.json
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
SRC=${1:?usage: scripts/device_retune_formats.sh tuning_db/<gpu>.json}
DB=${RETUNE:-$OUT/formats.json}
export LOWBIT_CACHE_DIR=$B/cache-retune
# One line per format: its lowbit flags, then its layers as N:K pairs.
python3 - "$SRC" >"$OUT/formats.txt" <<'PY'
import json, re, sys
layers = {}
for key in json.load(open(sys.argv[1]))["wq_gemm"]:
    fmt, rest = key.split("|")
    # w{bits}.{g128|pc}.{f16|bf16}[.o32].{mode}[.det] (tuning_key in src/kernels/wq_gemm_problem.cpp)
    f = re.fullmatch(r"w(\d+)\.(g\d+|pc)\.(f16|bf16)(\.o32)?\.(zp|sym|fz|sz)(\.det)?", fmt)
    m = re.match(r"m\d+\.n(\d+)\.k(\d+)", rest)
    if not f or not m or fmt == "w4.g128.f16.zp":
        continue
    group = "0" if f[2] == "pc" else f[2][1:]
    flags = f"--bits {f[1]} --group {group} --act {f[3]} --mode {f[5]}" + (" --out f32" if f[4] else "") + (
        " --deterministic" if f[6] else "")
    layers.setdefault(flags, set()).add(f"{m[1]}:{m[2]}")
for flags, ls in sorted(layers.items()):
    print(flags, "|", " ".join(sorted(ls)))
PY
end=$((SECONDS + ${LIMIT_S:-300}))
while IFS='|' read -r flags ls; do
  tr ' :' '\n ' <<<"$ls" | sed '/^$/d' >"$OUT/format-layers.txt"
  left=$((end - SECONDS))
  [ "$left" -le 0 ] && { echo "out of time before: $flags" | tee -a "$S"; break; }
  timeout -s INT "$left" "$B/lowbit" tune wq_gemm $flags --shapes "$OUT/format-layers.txt" --m "${MS:-16}" \
    --db "$DB" --resume >>"$OUT/formats-tune.log" 2>&1
  echo "$flags: rc=$?, $(wc -l <"$OUT/format-layers.txt") layers" | tee -a "$S"
done <"$OUT/formats.txt"
rm -f "$OUT/format-layers.txt" "$OUT/formats.txt"

#!/usr/bin/env bash
# SASS opcode mix of each kernel's hot loop, for cubins built on this machine without a SASS
# disassembler: build them with `lowbit compile ... --arch sm_90a --cache-dir DIR` (DIR untracked, so
# it travels to the GPU machine), then run this there. For every kernel.cubin under DIR: its SASS
# (cuobjdump) into $OUT and the opcode counts of its hot loop (scripts/sass_loop_mix.py) into the
# summary. Where a disassembler is at hand, run scripts/sass_loop_mix.py directly instead.
# Usage: scripts/device_sass_mix.sh DIR
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
DIR=${1:?usage: device_sass_mix.sh DIR}
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)}
find "$DIR" -name kernel.cubin | sort | while read -r cubin; do
  name=$(basename "$(dirname "$cubin")")
  "$CUOBJDUMP" -sass "$cubin" >"$OUT/$name.sass" 2>&1 || { echo "$name: cuobjdump failed" | tee -a "$S"; continue; }
  python3 "$ROOT/scripts/sass_loop_mix.py" "$OUT/$name.sass" | tee -a "$S"
done

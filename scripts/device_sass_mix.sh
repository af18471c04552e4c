#!/usr/bin/env bash
# SASS opcode mix of each kernel's hot loop, for cubins built on this machine (no SASS disassembler
# here): build them with `lowbit compile ... --arch sm_90a --cache-dir DIR` (DIR untracked, so it
# travels to the GPU machine), then run this there. For every kernel.cubin under DIR: registers and
# the opcode counts of the backward-branch loop that holds the most HMMA/HGMMA, into $OUT.
# Usage: scripts/device_sass_mix.sh DIR
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
DIR=${1:?usage: device_sass_mix.sh DIR}
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)}
find "$DIR" -name kernel.cubin | sort | while read -r cubin; do
  name=$(basename "$(dirname "$cubin")")
  "$CUOBJDUMP" -sass "$cubin" >"$OUT/$name.sass" 2>&1 || { echo "$name: cuobjdump failed" | tee -a "$S"; continue; }
  python3 - "$OUT/$name.sass" "$name" <<'PY' | tee -a "$S"
import collections, re, sys
lines = open(sys.argv[1]).read().splitlines()
ins = []  # (address, opcode, text)
for l in lines:
    m = re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);', l)
    if m:
        text = m.group(2).strip()
        op = re.sub(r'^@!?U?P\w+\s+', '', text).split()[0]
        ins.append((int(m.group(1), 16), op, text))
best = None
for i, (addr, op, text) in enumerate(ins):
    if op.startswith('BRA'):
        t = re.search(r'0x([0-9a-f]+)', text)
        if t and int(t.group(1), 16) < addr:
            lo = int(t.group(1), 16)
            body = [o for a, o, _ in ins if lo <= a <= addr]
            mma = sum(o.startswith(('HMMA', 'HGMMA')) for o in body)
            if best is None or mma > best[0]:
                best = (mma, body)
print(f'== {sys.argv[2]}: {len(ins)} instructions')
if best:
    c = collections.Counter(o.split('.')[0] for o in best[1])
    print(f'   loop: {len(best[1])} instructions, {best[0]} MMA; ' + ', '.join(f'{k} {v}' for k, v in c.most_common(22)))
PY
done

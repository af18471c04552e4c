#!/usr/bin/env python3
"""The SASS opcode mix of each kernel's hot loop: the backward-branch loop that holds the most
HMMA/HGMMA instructions. Static counts, no GPU needed, so a template change can be read before
any device time is spent (docs/perf-notes.md, twenty-ninth session).

Inputs: cubins, directories (every kernel.cubin below, e.g. a cache filled by
`lowbit compile wq_gemm ... --arch sm_90a --cache-dir DIR`), or SASS text already disassembled
(`*.sass`, from `cuobjdump -sass` or `nvdisasm -c`). Cubins need a disassembler: $NVDISASM, else
`nvdisasm` or `cuobjdump` on the PATH or in /usr/local/cuda/bin. The CUDA 13 toolkit here has neither;
the wheel has one: `python3 -m pip download --no-deps nvidia-cuda-nvdisasm -d /tmp/w && unzip -o
/tmp/w/*.whl -d /tmp/w`, then NVDISASM=$(find /tmp/w -name nvdisasm -type f).

Usage: scripts/sass_loop_mix.py [--letters] PATH...
  --letters  also print the loop in program order, one letter per instruction: M HMMA/HGMMA,
             a integer ALU (LOP3, SHF, IADD3, LEA, VIADD), f FMA pipe (HADD2, HFMA2, HMUL2, FFMA,
             FADD, FMUL, IMAD), l LDS, g LDGSTS/LDG, . other
"""
import collections
import os
import re
import shutil
import subprocess
import sys


def disassembler():
    tool = os.environ.get("NVDISASM")
    if tool:
        return [tool, "-c"]
    for name, args in (("nvdisasm", ["-c"]), ("cuobjdump", ["-sass"])):
        path = shutil.which(name) or (f"/usr/local/cuda/bin/{name}" if os.path.exists(f"/usr/local/cuda/bin/{name}") else None)
        if path:
            return [path] + args
    sys.exit("no SASS disassembler: set NVDISASM (see the docstring)")


def sass_text(path):
    if path.endswith(".sass"):
        return open(path).read()
    out = subprocess.run(disassembler() + [path], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{path}: {out.stderr.strip()}")
    return out.stdout


def instructions(text):
    """(address, opcode, text) in program order, and the address of each nvdisasm label."""
    ins, labels, pending = [], {}, []
    for line in text.splitlines():
        label = re.match(r"^(\.L_x_\d+):", line)
        if label:
            pending.append(label.group(1))
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m:
            addr = int(m.group(1), 16)
            labels.update((p, addr) for p in pending)
            pending = []
            body = m.group(2).strip()
            ins.append((addr, re.sub(r"^@!?U?P\w+\s+", "", body).split()[0], body))
    return ins, labels


def hot_loop(ins, labels):
    """The backward-branch loop with the most MMAs (cuobjdump names targets by address, nvdisasm by label)."""
    best = None
    for addr, op, body in ins:
        if not op.startswith("BRA"):
            continue
        target = re.search(r"\(\s*(\.L_x_\d+)\s*\)", body)
        lo = labels.get(target.group(1)) if target else None
        if lo is None:
            hexaddr = re.search(r"0x([0-9a-f]+)", body)
            lo = int(hexaddr.group(1), 16) if hexaddr else None
        if lo is None or lo >= addr:
            continue
        loop = [o for a, o, _ in ins if lo <= a <= addr]
        mma = sum(o.startswith(("HMMA", "HGMMA")) for o in loop)
        if best is None or mma > best[0]:
            best = (mma, loop)
    return best


def letter(op):
    base = op.split(".")[0]
    if op.startswith(("HMMA", "HGMMA")):
        return "M"
    if base in ("LOP3", "SHF", "IADD3", "LEA", "VIADD"):
        return "a"
    if base in ("HADD2", "HFMA2", "HMUL2", "FFMA", "FADD", "FMUL", "IMAD"):
        return "f"
    if base == "LDS":
        return "l"
    if base in ("LDGSTS", "LDG"):
        return "g"
    return "."


def main(argv):
    letters = "--letters" in argv
    paths = [a for a in argv if a != "--letters"]
    if not paths:
        sys.exit(__doc__)
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs if f == "kernel.cubin")
        else:
            files.append(p)
    for f in files:
        name = os.path.basename(os.path.dirname(f)) if f.endswith("kernel.cubin") else os.path.basename(f)
        ins, labels = instructions(sass_text(f))
        best = hot_loop(ins, labels)
        print(f"== {name}: {len(ins)} instructions")
        if not best:
            print("   no loop")
            continue
        mma, loop = best
        mix = collections.Counter(o.split(".")[0] for o in loop)
        print(f"   loop: {len(loop)} instructions, {mma} MMA; " + ", ".join(f"{k} {v}" for k, v in mix.most_common(22)))
        if letters:
            s = "".join(letter(o) for o in loop)
            for i in range(0, len(s), 100):
                print("   " + s[i:i + 100])


if __name__ == "__main__":
    main(sys.argv[1:])

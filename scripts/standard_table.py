#!/usr/bin/env python3
"""Issue 3's closing table from `lowbit bench` output: the standard cases in W4 f16, W4 bf16, W2 f16, W8 f16,
W2 bf16 and W8 bf16 (what `FORMATS=1 SKIP_TESTS=1 scripts/device_run.sh --cases standard --m 1,16,64,128` prints;
W2/W8 bf16 since the seventy-third session, absent columns show –), as a
markdown table of µs (% of stream / % of floor), then the speed targets counted on W4 f16:
M = 1 ≥ 90 % of stream, M = 16 ≥ 85 %, M = 64/128 ≥ 65 % of the larger of stream and floor (the floor is
the larger of the bytes at the read ceiling and the tensor-core time), bf16 within 10 % of f16 (per bit width), and the
best peer of shared/BENCHMARKS.md (PEERS below, µs) slower than lowbit; then the range of % of stream of
W2 and W8 beside W4's at 1 and 16 rows. Several files: each case keeps its first row (pass one run).
Rows marked forced are skipped. Usage: scripts/standard_table.py SUMMARY.txt [--gpu h100|h200]"""
import argparse
import re
import sys

HEAD = re.compile(r"^(w\d)g128zp (f16|bf16) +(\d+)x(\d+) +(\d+) ")  # bits, act, N, K, M
# After the config: rel.err, us, stream, floor, %strm, %floor, GB/s, host, heur.us, chosen by.
ROW = re.compile(HEAD.pattern + r"WqGemmConfig\(.*?\)" + r"\s+(\S+)" * 10 + r"\s*$")
STANDARD_LAYERS = {(4096, 4096), (8192, 8192), (16384, 16384), (28672, 4096), (4096, 14336), (6144, 4096)}
STANDARD_M = {1, 16, 64, 128}
FORMATS = [("w4", "f16"), ("w4", "bf16"), ("w2", "f16"), ("w8", "f16"), ("w2", "bf16"), ("w8", "bf16")]
# Best peer per case, µs (shared/BENCHMARKS.md, "Where the peers stand"): (N, K, M) -> µs.
PEERS = {
    "h200": {(4096, 4096, 1): 6.9, (8192, 8192, 1): 20.4, (8192, 8192, 16): 34.3, (8192, 8192, 64): 36.2,
             (16384, 16384, 1): 69.9, (16384, 16384, 16): 123, (28672, 4096, 1): 33.1, (4096, 14336, 1): 18.7},
    "h100": {(4096, 4096, 1): 6.8, (8192, 8192, 1): 20.2, (8192, 8192, 16): 48.5, (16384, 16384, 1): 70.0,
             (28672, 4096, 1): 32.9},
}


def read(paths):
    """Rows of shipped configs (forced rows skipped) by (bits, act, N, K, M), and the one device of all files.
    A failed or unparsed case row is reported, and a failed case counts as a miss (us = inf)."""
    rows, devices, repeated = {}, set(), set()
    for path in paths:
        for line in open(path):
            # `lowbit bench` names the device "device   NAME (sm_..., ...)"; `lowbit info` (device_run.sh's
            # summary) lists "device   0: NAME, ..." and is skipped.
            if line.startswith("device ") and not re.match(r"^device\s+\d+:", line):
                devices.add(line.split(None, 1)[1].split(" (")[0].strip())
            if not re.match(r"^w\dg128zp ", line):  # other formats' rows (benches beside the table) are not its
                continue
            r = ROW.match(line)
            if not r:
                head = HEAD.match(line)
                print(f"warning: {path}: unparsed row: {line.strip()[:120]}", file=sys.stderr)
                if head and "FAIL" in line:
                    key = (head[1], head[2], int(head[3]), int(head[4]), int(head[5]))
                    rows.setdefault(key, {"us": float("inf"), "strm": 0.0, "floor": 0.0})
                continue
            if r[15] == "forced":
                continue
            key = (r[1], r[2], int(r[3]), int(r[4]), int(r[5]))
            if key in rows:
                repeated.add(key)
            rows.setdefault(key, {"us": float(r[7]), "strm": float(r[10]), "floor": float(r[11])})
    if repeated:  # e.g. a bench list with a layer alone before the table: its rows are not the table's
        print(f"warning: {len(repeated)} cases have several rows (first kept), e.g. {sorted(repeated)[0]}: "
              "pass the output of one run", file=sys.stderr)
    if len(devices) > 1:
        sys.exit(f"files from different GPUs: {sorted(devices)}")
    return rows, next(iter(devices), None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("summaries", nargs="+")
    ap.add_argument("--gpu", choices=sorted(PEERS), help="peers to compare with (default: from the device line)")
    opt = ap.parse_args()
    rows, device = read(opt.summaries)
    gpu = opt.gpu
    if gpu is None and device:
        known = {"NVIDIA H200": "h200", "NVIDIA H100 80GB HBM3": "h100"}  # the GPUs BENCHMARKS.md measured
        gpu = known.get(device)
        if gpu is None:
            print(f"warning: no peer figures for {device!r} (pass --gpu to pick some)", file=sys.stderr)
    rows = {k: v for k, v in rows.items() if k[4] in STANDARD_M and (k[2], k[3]) in STANDARD_LAYERS}
    layers = sorted({(k[2], k[3]) for k in rows}, key=lambda nk: (nk[0] * nk[1], nk))
    ms = sorted({k[4] for k in rows})
    print(f"Device: {device}\n")
    print("| N×K | M | W4 f16 | W4 bf16 | W2 f16 | W8 f16 | W2 bf16 | W8 bf16 | bf16 / f16 (W4, W2, W8) | best peer |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    tally = {"m1": [], "m16": [], "m64": [], "bf16": [], "bf16_w2": [], "bf16_w8": [], "peer": []}
    for n, k in layers:
        for m in ms:
            cells = []
            for bits, act in FORMATS:
                c = rows.get((bits, act, n, k, m))
                cells.append(f"{c['us']:.2f} ({c['strm']:.1f} / {c['floor']:.1f})" if c else "–")
            ratios = []
            name = f"{n}×{k} M={m}"
            for bits, key in (("w4", "bf16"), ("w2", "bf16_w2"), ("w8", "bf16_w8")):
                a, b = rows.get((bits, "f16", n, k, m)), rows.get((bits, "bf16", n, k, m))
                ratios.append(f"{b['us'] / a['us']:.3f}" if a and b else "–")
                if a and b:
                    tally[key].append((name, b["us"] / a["us"], b["us"] <= 1.10 * a["us"]))
            f16 = rows.get(("w4", "f16", n, k, m))
            peer = PEERS.get(gpu, {}).get((n, k, m))
            print(f"| {n}×{k} | {m} | " + " | ".join(cells) + f" | {', '.join(ratios)} | {peer if peer else '–'} |")
            if not f16:
                continue
            if m == 1:
                tally["m1"].append((name, f16["strm"], f16["strm"] >= 90))
            elif m == 16:
                tally["m16"].append((name, f16["strm"], f16["strm"] >= 85))
            elif m in (64, 128):
                best = max(f16["strm"], f16["floor"])
                tally["m64"].append((name, best, best >= 65))
            if peer:
                tally["peer"].append((name, f16["us"], f16["us"] < peer))
    labels = {"m1": "M = 1 ≥ 90 % of stream", "m16": "M = 16 ≥ 85 % of stream",
              "m64": "M = 64/128 ≥ 65 % of max(stream, floor)", "bf16": "bf16 within 10 % of f16 (W4)",
              "bf16_w2": "bf16 within 10 % of f16 (W2)", "bf16_w8": "bf16 within 10 % of f16 (W8)",
              "peer": "faster than the best peer"}
    print()
    for key, label in labels.items():
        got = tally[key]
        if not got:
            print(f"- {label}: n/a (no rows)")
            continue
        fmt = ".4f" if key.startswith("bf16") else ".2f" if key == "peer" else ".1f"
        missed = ", ".join(f"{name} {value:{fmt}}" for name, value, ok in got if not ok)
        print(f"- {label}: {sum(ok for _, _, ok in got)}/{len(got)}" + (f" (missed: {missed})" if missed else ""))
    # 2- and 8-bit against 4-bit: the range of % of stream per M (the issue asks for the same %; no threshold).
    for m in (1, 16):
        ranges = []
        for bits in ("w4", "w2", "w8"):
            for act in ("f16", "bf16"):
                v = [r["strm"] for (b, a, n, k, mm), r in rows.items() if b == bits and a == act and mm == m]
                if v:
                    ranges.append(f"{bits.upper()} {act} {min(v):.1f}-{max(v):.1f}")
        print(f"- % of stream at M = {m}: " + (", ".join(ranges) or "n/a (no rows)"))


if __name__ == "__main__":
    main()

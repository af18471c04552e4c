#!/usr/bin/env python3
"""Reads `lowbit bench wq_gemm` summaries written by the device scripts (lines "-- round N: ARGS" before each
bench's table) and prints, per case (the bench arguments without --config), the time of the unforced run (the
heuristic's or the file's choice) and of each forced config benched beside it, with the ratio unforced / forced:
under 1 the unforced choice ran faster. A case's unforced run in a later file replaces the earlier one; its forced
runs add up. Eightieth session (the heuristic's
"new against the choice before" pairs; bench lines as scripts/inputs/benches-session80-*.txt write them).
Usage: scripts/bench_pairs.py SUMMARY.txt [SUMMARY.txt ...]"""
import re
import sys

ROUND = re.compile(r"-- round \d+: (.*)")
ROW = re.compile(r"(w\d\S*) (\S+)\s+(\S+)\s+(\d+) WqGemmConfig\((.*?)\)\s+\S+\s+([\d.]+)")


def short(config):
    """WqGemmConfig's fields as "mt,nt,wn,wk,sk,st+flags"."""
    fields = dict(re.findall(r"(\w+)=(\d+)", config))
    flags = [f for f in ("x_shared", "wgmma", "stream_k", "x_image", "x_sums") if re.search(rf"\b{f}\b", config)]
    order = ("m_tiles", "n_tiles", "warps_n", "warps_k", "split_k", "stages")
    return ",".join(fields[k] for k in order) + "".join("+" + f for f in flags)


def main(paths):
    cases = {}
    for path in paths:
        args = None
        for line in open(path, encoding="utf-8"):
            m = ROUND.match(line)
            if m:
                args = m.group(1).strip()
                continue
            m = ROW.match(line)
            if m and args is not None:
                forced = re.search(r"--config (\S+)", args)
                key = re.sub(r" --config \S+", "", args)
                runs = cases.setdefault(key, {"name": f"{m.group(1)} {m.group(2)} {m.group(3)} M={m.group(4)}"})
                if forced:
                    runs.setdefault("forced", []).append((short(m.group(5)), float(m.group(6))))
                else:
                    runs["unforced"] = (short(m.group(5)), float(m.group(6)))
                args = None
    for key, runs in cases.items():
        if not runs.get("unforced"):
            continue
        config, us = runs["unforced"]
        line = f"{runs['name']:36s} {us:8.2f} {config}"
        for fconfig, fus in runs.get("forced") or []:
            line += f" | {fus:8.2f} {fconfig} ratio {us / fus:.3f}"
        print(line)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])

#!/usr/bin/env python3
"""Offline check of the heuristic against tuning files: for every entry (every format; FORMATS=w4.g128.f16.zp,...
to keep some), the config the heuristic picks now (`lowbit inspect` with LOWBIT_NO_TUNING_DB=1, for sm_90a and
the file's SM count) and its time relative to the entry's best, read from the entry's best and runners-up ("?"
when the tune did not time it or it was more than 20 % slower). On the shipped files this is an in-sample check
(the rules are fitted to them): it says which rules a change broke. On out-of-sample tunes (docs/bench/*tune*.json)
the "?" rows need a bench. One summary per file and format.
Usage: [MS=64,128] [FORMATS=...] [LOWBIT=./build/lowbit] scripts/heuristic_vs_tuned.py FILE.json... [-v]"""
import json, math, os, re, sys
from concurrent.futures import ThreadPoolExecutor

from heuristic_config import heuristic_config, offers, short

paths = [a for a in sys.argv[1:] if a != "-v"]
verbose = "-v" in sys.argv[1:]
lowbit = os.environ.get("LOWBIT", "./build/lowbit")
ms = [int(x) for x in os.environ.get("MS", "1,2,4,8,16,32,64,128").split(",")]
formats = os.environ.get("FORMATS", "").split(",") if os.environ.get("FORMATS") else None


def check(job):
    fmt, sms, m, n, k, v = job
    h = short(heuristic_config(lowbit, "sm_90a", sms, n, k, m, fmt))
    return fmt, m, n, k, h, offers(v).get(h), v["heuristic_us"] / v["us"], short(v["config"])


for path in paths:
    data = json.load(open(path))
    if "wq_gemm" not in data or "meta" not in data:  # a bench record, not a tuning file
        print("== %s: not a tuning file (no meta/wq_gemm), skipped" % path)
        continue
    sms = data["meta"].get("sm_count", 132)
    jobs = []
    for key, v in data["wq_gemm"].items():
        fmt, shape = key.split("|")
        if formats and fmt not in formats:
            continue
        m, n, k = map(int, re.search(r"m(\d+)\.n(\d+)\.k(\d+)", shape).groups())
        if m in ms:
            jobs.append((fmt, sms, m, n, k, v))
    rows = sorted(ThreadPoolExecutor(8).map(check, jobs))
    print(f"== {path}")
    for fmt in sorted({r[0] for r in rows}):
        sub = [r for r in rows if r[0] == fmt]
        known = [r[5] for r in sub if r[5] is not None]
        print(f"{fmt}: {len(sub)} entries: heuristic within 15 % of the best in {sum(x <= 1.15 for x in known)}, "
              f"within 10 % in {sum(x <= 1.10 for x in known)}, not timed or over 20 % in {len(sub) - len(known)}; "
              f"geometric mean of the known ratios {math.exp(sum(map(math.log, known)) / max(1, len(known))):.3f}; "
              f"the tune-day heuristic was within 15 % in {sum(r[6] <= 1.15 for r in sub)}")
        for _, m, n, k, h, ratio, old, best in sub:
            if verbose or ratio is None or ratio > 1.15:
                print(f"  m{m:<4}{n:>6}x{k:<6} heuristic {h:<16} {'?' if ratio is None else f'{ratio:.2f}':>5}"
                      f"  (tune-day heuristic {old:.2f})  best {best}")

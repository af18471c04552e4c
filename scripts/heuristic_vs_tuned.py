#!/usr/bin/env python3
"""Offline check of the heuristic against a tuning file: for every W4 g128 f16 entry, the config the
heuristic picks now (`lowbit inspect` with LOWBIT_NO_TUNING_DB=1, for sm_90a and the file's SM
count) and its time relative to the entry's best, read from the entry's best and runners-up ("?" when
the tune did not time it or it was more than 20 % slower). The rules are fitted to these files, so
this is an in-sample check; it says which rules a change broke, not how the heuristic does on new layers.
Usage: [MS=64,128] [LOWBIT=./build/lowbit] scripts/heuristic_vs_tuned.py tuning_db/nvidia-h200.json [-v]"""
import json, math, os, re, sys
from concurrent.futures import ThreadPoolExecutor

from heuristic_config import heuristic_config

path = sys.argv[1]
verbose = "-v" in sys.argv[2:]
lowbit = os.environ.get("LOWBIT", "./build/lowbit")
ms = [int(x) for x in os.environ.get("MS", "1,2,4,8,16,32,64,128").split(",")]
data = json.load(open(path))
sms = data["meta"].get("sm_count", 132)


def short(c):
    # Every field: a runner-up that differs from the best only in x_image or x_sums must not take its
    # key (forty-third session: that read 1.14 for heuristics that were the best).
    return "%d,%d,%d,%d,%d,%d%s%s%s%s%s" % (c["m_tiles"], c["n_tiles"], c["warps_n"], c["warps_k"], c["split_k"],
                                            c["stages"], ",xs" if c.get("x_shared") else "",
                                            ",wg" if c.get("wgmma") else "", ",stream" if c.get("stream_k") else "",
                                            ",img" if c.get("x_image") else "", ",sums" if c.get("x_sums") else "")


def heuristic(n, k, m):
    return short(heuristic_config(lowbit, "sm_90a", sms, n, k, m))


jobs = []
for key, v in data["wq_gemm"].items():
    if not key.startswith("w4.g128.f16.zp|"):
        continue
    m, n, k = map(int, re.search(r"m(\d+)\.n(\d+)\.k(\d+)", key).groups())
    if m in ms:
        jobs.append((m, n, k, v))


def check(job):
    m, n, k, v = job
    offers = {short(v["config"]): 1.0}
    for r in v.get("runners_up", []):
        offers[short(r["config"])] = r["us"] / v["us"]
    h = heuristic(n, k, m)
    return m, n, k, h, offers.get(h), v["heuristic_us"] / v["us"], short(v["config"])


rows = sorted(ThreadPoolExecutor(8).map(check, jobs))
known = [r[4] for r in rows if r[4] is not None]
print(f"{len(rows)} entries: heuristic within 15 % of the best in {sum(x <= 1.15 for x in known)}, within 10 % in "
      f"{sum(x <= 1.10 for x in known)}, not timed or over 20 % in {len(rows) - len(known)}; geometric mean of "
      f"the known ratios {math.exp(sum(map(math.log, known)) / max(1, len(known))):.3f}; the tune-day heuristic "
      f"was within 15 % in {sum(r[5] <= 1.15 for r in rows)}")
for m, n, k, h, ratio, old, best in rows:
    if verbose or ratio is None or ratio > 1.15:
        print(f"m{m:<4}{n:>6}x{k:<6} heuristic {h:<16} {'?' if ratio is None else f'{ratio:.2f}':>5}"
              f"  (tune-day heuristic {old:.2f})  best {best}")

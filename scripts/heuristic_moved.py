#!/usr/bin/env python3
"""Which tuned entries a heuristic change moves: for every entry of the shipped files and of every tune in
docs/bench/*.json, the config two `lowbit` binaries pick (`lowbit inspect`, LOWBIT_NO_TUNING_DB=1, sm_90a and
the file's SM count) and, where they differ, each one's time relative to the entry's best (from its best and
runners-up; "?" when the tune did not time it within 20 %), beside the heuristic time of the tune day.
Fifty-first session. Keep the old tree's `lowbit` (e.g. cp build/lowbit /tmp/lowbit-old), rebuild, then
Usage: [MMIN=2] [MMAX=8] scripts/heuristic_moved.py OLD_LOWBIT NEW_LOWBIT"""
import glob, json, os, sys
from concurrent.futures import ThreadPoolExecutor

from heuristic_config import heuristic_config, offers, short

old, new = sys.argv[1], sys.argv[2]
m_min, m_max = int(os.environ.get("MMIN", "1")), int(os.environ.get("MMAX", "128"))
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
jobs = []
for path in sorted(glob.glob(f"{root}/tuning_db/*.json")) + sorted(glob.glob(f"{root}/docs/bench/*.json")):
    try:
        data = json.load(open(path))
        entries = data["wq_gemm"]
    except (ValueError, KeyError):
        continue
    sms = data.get("meta", {}).get("sm_count", 132)
    gpu = "H100" if "h100" in path else "H200"
    for key, v in entries.items():
        fmt, shape = key.split("|")
        dims = {part[0]: int(part[1:]) for part in shape.split(".")}
        if m_min <= dims["m"] <= m_max:
            jobs.append((os.path.basename(path), gpu, sms, fmt, dims["m"], dims["n"], dims["k"], v))


def compare(job):
    name, gpu, sms, fmt, m, n, k, v = job
    a = short(heuristic_config(old, "sm_90a", sms, n, k, m, fmt))
    b = short(heuristic_config(new, "sm_90a", sms, n, k, m, fmt))
    if a == b:
        return None
    timed = offers(v)
    ratio = lambda c: "%.3f" % timed[c] if c in timed else "?"
    day = v["heuristic_us"] / v["us"] if v.get("heuristic_us") else float("nan")
    return "%s %s|m%d.n%d.k%d  %s -> %s  %s -> %s  (tune day %.3f, best %s) %s" % (
        gpu, fmt, m, n, k, a, b, ratio(a), ratio(b), day, short(v["config"]), name)


with ThreadPoolExecutor(16) as pool:
    moved = [line for line in pool.map(compare, jobs) if line]
print("\n".join(sorted(moved)))
print("%d of %d entries move" % (len(moved), len(jobs)))

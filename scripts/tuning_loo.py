#!/usr/bin/env python3
"""Leave-one-layer-out check of the tuning lookup, offline: for every tuned layer, hide its entries
and ask what a nearest-layer lookup would pick from the others (nearest layer of the same format and
M bucket, log2 distance over N and K, as TuningDb::lookup did until the forty-third session, which
removed that step on this script's evidence and an out-of-sample bench), then read that config's time on the hidden
layer from the hidden entry's own winner and runners-up. Prints, per M bucket, how often the
nearest entry and the heuristic land within 10 % of the hidden layer's best, and how often the lookup as it was until the forty-third session (the nearest layer only within log distance
0.25, the removed kMaxLayerDistance, else the heuristic) does. The heuristic's time is the one stored in the
hidden entry (the heuristic of the day of the tune); with CURRENT=1 it is the heuristic as built now
(`lowbit inspect`, offline, as scripts/heuristic_vs_tuned.py does: a config the tune did not time,
or timed more than 20 % slower, counts as a miss). That heuristic was fitted to these files, so its
column is in-sample; this mode scores only the W4 g128 f16 entries.
Usage: [CURRENT=1] [LOWBIT=./build/lowbit] scripts/tuning_loo.py tuning_db/nvidia-h200.json"""
import json, math, os, re, sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

from heuristic_config import heuristic_config

data = json.load(open(sys.argv[1]))
current = os.environ.get("CURRENT") == "1"
lowbit = os.environ.get("LOWBIT", "./build/lowbit")
entries = {}
for key, v in data["wq_gemm"].items():
    fmt, shape = key.split("|")
    m, n, k = map(int, re.fullmatch(r"m(\d+)\.n(\d+)\.k(\d+)", shape).groups())
    cfg = lambda c: tuple(sorted(c.items()))
    offers = {cfg(v["config"]): 1.0}
    for r in v.get("runners_up", []):
        offers[cfg(r["config"])] = r["us"] / v["us"]
    entries[(fmt, m, n, k)] = dict(best=cfg(v["config"]), offers=offers, heur=v["heuristic_us"] / v["us"])
if current:  # the current heuristic's time on each W4 g128 f16 entry; the other formats are left out
    entries = {t: e for t, e in entries.items() if t[0] == "w4.g128.f16.zp"}
    w4 = list(entries)
    arch, sms = data["meta"]["arch"], data["meta"].get("sm_count", 132)
    pick = lambda t: tuple(sorted(heuristic_config(lowbit, arch, sms, t[2], t[3], t[1]).items()))
    for t, h in zip(w4, ThreadPoolExecutor(8).map(pick, w4)):
        entries[t]["heur"] = entries[t]["offers"].get(h, math.inf)

dist = lambda a, b: abs(math.log2(a[2] / b[2])) + abs(math.log2(a[3] / b[3]))
MAX_LAYER_DISTANCE = 0.25  # the lookup's limit until the forty-third session (kMaxLayerDistance, removed)
stats = defaultdict(lambda: [0, 0, 0, 0])  # nearest, heuristic, lookup within 10 %, cases
unlisted = 0
for t, e in entries.items():
    pool = [o for o in entries if o[:2] == t[:2] and o[2:] != t[2:]]
    if not pool:
        continue
    near = min(pool, key=lambda o: dist(o, t))
    pick = entries[near]["best"]
    ratio = e["offers"].get(pick)
    unlisted += ratio is None
    s = stats[t[1]]
    s[0] += ratio is not None and ratio <= 1.10
    s[1] += e["heur"] <= 1.10
    s[2] += (ratio is not None and ratio <= 1.10) if dist(near, t) <= MAX_LAYER_DISTANCE else e["heur"] <= 1.10
    s[3] += 1
print("M     nearest<=1.10  heuristic<=1.10  lookup<=1.10  cases")
for m in sorted(stats):
    print(f"{m:<5} {stats[m][0]:>13} {stats[m][1]:>16} {stats[m][2]:>13} {stats[m][3]:>6}")
tot = [sum(s[i] for s in stats.values()) for i in range(4)]
print(f"all   {tot[0]:>13} {tot[1]:>16} {tot[2]:>13} {tot[3]:>6}   ({unlisted} picks not among the hidden entry's runners-up: counted as misses)")

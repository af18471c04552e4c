#!/usr/bin/env python3
"""Where the heuristic's grids run past what the device holds at once (seventy-ninth session, docs/perf-notes.md
§ 79.1 and § 79.7): reads scripts/heuristic_waves.cpp's lines, counts each choice's blocks a SM from shared memory
(228 KB a SM, 1 KB reserved a block), threads (2048 a SM) and ptxas's registers (`lowbit inspect --resources`, one
NVRTC compile per distinct format, bucket and config, ~2.5 s each on 2 cores, cached in $CACHE), and flags
- cluster K splits whose clusters do not all fit at once (cudaOccupancyMaxActiveClusters on the H200's 132 SMs,
  § 79.2's table; other SM counts scale it, approximately);
- other grids just past a whole number of waves (1.0-1.2 or 2.0-2.2 times the blocks held at once).
Stream K is skipped (it sizes its grid to the device). Flags are leads for tunes, not misses: § 79.8 found thin
tails of many small blocks harmless, and the large misses in the configs themselves.
Usage: [LOWBIT=build/lowbit] [CACHE=/tmp/heuristic_waves_regs.json] [ROWS=32,64,128] [SMS=132]
scripts/heuristic_waves.py WAVES.txt"""
import collections, json, os, re, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

LOWBIT = os.environ.get("LOWBIT", "build/lowbit")
CACHE = os.environ.get("CACHE", "/tmp/heuristic_waves_regs.json")
ROWS = {int(r) for r in os.environ.get("ROWS", "1,2,4,8,16,32,64,128").split(",")}
SMS = int(os.environ.get("SMS", "132"))
# Clusters held at once on 132 SMs, by blocks a SM (1-4) and cluster size (1-8): § 79.2.
FIT = {1: [132, 66, 39, 30, 22, 17, 15, 15], 2: [264, 132, 79, 62, 47, 39, 32, 30],
       3: [396, 198, 124, 92, 69, 62, 47, 45], 4: [528, 264, 163, 124, 94, 79, 69, 62]}
LINE = re.compile(r"(\d) (\d) (\d+) (\d+) (\d+) (\S+) \| blocks (\d+) threads (\d+) smem (\d+) split (\d+) meet (\S+)")
ACT = {0: ["--act", "f16"], 1: ["--act", "bf16"], 2: ["--act", "bf16", "--mode", "sym"]}

rows = []
for line in open(sys.argv[1]):
    f = LINE.match(line)
    if f and int(f[5]) in ROWS and f[11] != "stream_k":
        rows.append((int(f[1]), int(f[2]), int(f[3]), int(f[4]), int(f[5]), f[6], int(f[7]), int(f[8]), int(f[9]),
                     int(f[10]), f[11]))

regs = json.load(open(CACHE)) if os.path.exists(CACHE) else {}


def key(r):
    return "%d %d %d %s" % (r[0], r[1], r[4], r[5])


def compile_regs(r):
    out = subprocess.run([LOWBIT, "inspect", "wq_gemm", "--arch", "sm_90a", "--sm-count", str(SMS), "--n", str(r[2]),
                          "--k", str(r[3]), "--m", str(r[4]), "--bits", str(r[0]), *ACT[r[1]], "--config", r[5],
                          "--resources"], capture_output=True, text=True, env=dict(os.environ, LOWBIT_NO_TUNING_DB="1"))
    f = re.search(r"registers (\d+)", out.stdout)
    return key(r), int(f[1]) if f else None


todo = {key(r): r for r in rows if key(r) not in regs}
print("%d choices, %d distinct configs to compile" % (len(rows), len(todo)), file=sys.stderr)
with ThreadPoolExecutor(2) as pool:
    for k, v in pool.map(compile_regs, todo.values()):
        regs[k] = v
json.dump(regs, open(CACHE, "w"))

groups = collections.defaultdict(list)
for r in rows:
    bits, act, n, k, m, config, blocks, threads, smem, split, meet = r
    reg = regs.get(key(r))
    if not reg:
        continue
    warps = threads // 32
    slots = min((228 * 1024) // (smem + 1024), 2048 // threads, 65536 // (warps * ((reg * 32 + 255) // 256 * 256)), 32)
    if slots < 1:
        continue
    if meet == "cluster" and slots <= 4 and split <= 8:
        held = FIT[slots][split - 1] * SMS // 132 * split
        flagged = blocks > held
    else:
        held = slots * SMS
        waves = blocks / held
        flagged = waves > 1 and waves - int(waves) < 0.2 and waves < 3
    if flagged:
        groups[(bits, act, m, config, slots, meet)].append((n, k, blocks, held))
for (bits, act, m, config, slots, meet), v in sorted(groups.items(), key=lambda x: -len(x[1])):
    ns = sorted({x[0] for x in v})
    ks = sorted({x[1] for x in v})
    print("%4d  w%d act%d m%-3d %-26s %d a SM, %-9s N %d-%d, K %s; e.g. %d×%d: %d blocks, %d held" % (
        len(v), bits, act, m, config, slots, meet, ns[0], ns[-1], ",".join(map(str, ks)), v[0][0], v[0][1], v[0][2],
        v[0][3]))

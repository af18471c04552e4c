#!/usr/bin/env python3
"""Hand stale tuning-file entries to the heuristic: reads `lowbit bench wq_gemm` output (the rows of
tuned configs and, in the heur.us column, the heuristic's config timed in the same run) and, for
each W4 g128 f16 row whose tuned config ran more than MARGIN slower than the heuristic's, rewrites
that entry of the tuning file: the heuristic's config (offline, `lowbit inspect --explain` with
LOWBIT_NO_TUNING_DB=1) with its measured time, the replaced config first among the runners-up with
its measured time. Rows are matched to the entry of their exact key (bench M = an M bucket); rows
whose entry is missing are skipped. Writes the file in place (indent 2, sorted keys).
Usage: [MARGIN=0.97] [LOWBIT=./build/lowbit] scripts/adopt_heuristic.py tuning_db/<gpu>.json BENCH.txt [...]"""
import json, os, re, sys

from heuristic_config import heuristic_config

# After the config: rel.err, us, stream, floor, %strm, %floor, GB/s, host, heur.us, chosen by.
ROW = re.compile(r"^w4g128zp f16 (\d+)x(\d+)\s+(\d+) WqGemmConfig\(.*?\)" + r"\s+(\S+)" * 10)


def main():
    path, benches = sys.argv[1], sys.argv[2:]
    margin = float(os.environ.get("MARGIN", "0.97"))
    lowbit = os.environ.get("LOWBIT", "./build/lowbit")
    data = json.load(open(path))
    entries, sms = data["wq_gemm"], data["meta"].get("sm_count", 132)
    changed = 0
    for bench in benches:
        for line in open(bench):
            r = ROW.match(line)
            if not r or r[13] != "tuned":
                continue
            n, k, m, us, heur_us = int(r[1]), int(r[2]), int(r[3]), float(r[5]), float(r[12])
            key = f"w4.g128.f16.zp|m{m}.n{n}.k{k}"
            if key not in entries or heur_us >= margin * us:
                continue
            e = entries[key]
            old = {"config": e["config"], "us": us}
            h = heuristic_config(lowbit, data["meta"]["arch"], sms, n, k, m)
            runners = [old] + [x for x in e.get("runners_up", []) if x["config"] not in (h, e["config"])]
            entries[key] = dict(e, config=h, us=heur_us, heuristic_us=heur_us, runners_up=runners[:6])
            changed += 1
            print(f"{key}: {us:.2f} -> {heur_us:.2f} us ({heur_us / us:.3f}), {h}")
    with open(path, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"{changed} entries handed to the heuristic")


if __name__ == "__main__":
    main()

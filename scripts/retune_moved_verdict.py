#!/usr/bin/env python3
"""Verdicts on the entries a re-tune moved, from scripts/device_retune_moved.sh's results.

Usage: scripts/retune_moved_verdict.py SUMMARY.txt MOVED.txt [RETUNED.json AGREED.json]

Prints one line per moved entry: the bench's µs of the shipped and the re-tuned config in each round,
their ratios, and MOVE where every round has the re-tuned config faster by more than 1 % (else keep).
With RETUNED.json and AGREED.json, writes RETUNED.json less the entries that are not MOVE, for
`scripts/merge_retune.py tuning_db/<gpu>.json AGREED.json` (entries whose config did not move stay:
they refresh the shipped entry's times and runners-up)."""
import collections
import json
import re
import sys

MARGIN = 0.99  # a move is kept only where the re-tuned config runs < 0.99 × the shipped one in every round


def bench_times(summary_path):
    """{key: {(side, round): µs}} from the summary's "-- round R: KEY side" headers and bench rows."""
    times = collections.defaultdict(dict)
    key = side = rnd = None
    for line in open(summary_path):
        m = re.match(r"-- round (\d+): (\S+) (shipped|retuned)$", line.strip())
        if m:
            rnd, key, side = m.groups()
            continue
        if key and re.match(r"w\dg\d+", line):
            times[key][(side, rnd)] = float(line.split()[-9])  # the us column (9th from the end)
    return times


def verdicts(times, moved_path):
    moved = {f[0]: f for f in (line.rstrip("\n").split("\t") for line in open(moved_path)) if f[0]}
    out = {}
    for key in sorted(moved):
        t = times.get(key, {})
        rounds = sorted({r for _, r in t}, key=int)
        pairs = [(t[("shipped", r)], t[("retuned", r)]) for r in rounds if ("shipped", r) in t and ("retuned", r) in t]
        ratios = [new / old for old, new in pairs]
        verdict = "MOVE" if ratios and all(x < MARGIN for x in ratios) else ("keep" if ratios else "unmeasured")
        out[key] = verdict
        config = lambda f: f.split("--config ")[1]
        print(f"{key:36s} shipped {' '.join('%6.2f' % o for o, _ in pairs)} | re-tuned {' '.join('%6.2f' % n for _, n in pairs)}"
              f" | ratio {' '.join('%.3f' % x for x in ratios)} {verdict}  {config(moved[key][1])} -> {config(moved[key][2])}"
              f"  tuner {moved[key][3]} -> {moved[key][4]}")
    print(f"{sum(v == 'MOVE' for v in out.values())} of {len(out)} moves agreed by the bench")
    return out


def main():
    if len(sys.argv) not in (3, 5):
        sys.exit(__doc__)
    out = verdicts(bench_times(sys.argv[1]), sys.argv[2])
    if len(sys.argv) == 5:
        retuned = json.load(open(sys.argv[3]))
        for key, verdict in out.items():
            if verdict != "MOVE":
                retuned["wq_gemm"].pop(key, None)
        with open(sys.argv[4], "w") as f:
            json.dump(retuned, f, indent=2, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()

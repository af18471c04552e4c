#!/usr/bin/env python3
"""Merge re-tuned entries (files written by `lowbit tune`) into a shipped tuning file.

Usage: scripts/merge_retune.py tuning_db/<gpu>.json RETUNED.json [RETUNED.json ...]

Each re-tuned entry replaces the shipped one, except where the shipped entry's config still runs
the same kernel and was faster by more than KEEP_MARGIN (the re-tune's candidates follow the
current heuristic and may not include it): that entry stays, and is listed. Configs whose kernel
changed (stale_if) are never kept. The shipped file takes the re-tuned files' meta (templates
digest, date). Writes the shipped file in place (indent 2, sorted keys, trailing newline).
"""
import json
import os
import sys

KEEP_MARGIN = 0.97  # keep the shipped entry if its time < 0.97 × the re-tuned one


def stale_if(config):
    # Configs whose kernel changed after some shipped entries were timed: x_shared configs swap the
    # MMA operands from 16 rows since the session of 2026-11-23 (eleventh); before that, x_shared
    # with one warp along N changed to per-warp staging (seventh). Such an entry is never kept over
    # a re-tune. Since the thirteenth session every mma.sync config with warps along K spreads its
    # cross-warp reduction over the warps; since the fourteenth, every wgmma config runs the mbarrier
    # pipeline (8-bit: bulk weight copies); since the fifteenth, coalesced activation loads.
    return (config.get("x_shared", False) or config.get("wgmma", False) or config.get("warps_k", 1) > 1)


def main():
    shipped_path, retuned_paths = sys.argv[1], sys.argv[2:]
    shipped = json.load(open(shipped_path))
    entries = shipped["wq_gemm"]
    replaced = kept = added = 0
    for path in retuned_paths:
        retuned = json.load(open(path))
        if retuned["meta"]["arch"] != shipped["meta"]["arch"] or retuned["meta"]["device"] != shipped["meta"]["device"]:
            sys.exit(f"{path}: tuned on {retuned['meta']['device']}, not {shipped['meta']['device']}")
        for key, new in retuned["wq_gemm"].items():
            old = entries.get(key)
            if old is None:
                entries[key] = new
                added += 1
            elif not stale_if(old["config"]) and old["us"] < KEEP_MARGIN * new["us"]:
                kept += 1
                print(f"kept {key}: shipped {old['us']:.2f} us, re-tuned {new['us']:.2f} us")
            else:
                entries[key] = new
                replaced += 1
        shipped["meta"] = retuned["meta"]
    print(f"{shipped_path}: {replaced} replaced, {added} added, {kept} kept")
    tmp = shipped_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(shipped, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, shipped_path)


if __name__ == "__main__":
    main()

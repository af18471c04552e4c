#!/usr/bin/env python3
"""Bench lines that time what the library serves now against a change to the tuning files or the lookup, in one
device call: for each layer and M, a line with the tuning files on (run on the device after the change) and the
same case forced (`--config`) to the config served here now (`lowbit inspect --explain` with the shipped files,
offline, for the named device). Run it before the change; the device runs the pairs after it
(scripts/device_tests_benches.sh), and each pair's first time over its second is the change's ratio. The
config served and its source (exact, nearest M bucket, similar format, heuristic) go to stderr.
Usage: [LOWBIT=./build/lowbit] [DEVICE="NVIDIA H200"] scripts/served_pairs.py "FLAGS" M[,M...] NxK[,NxK...] > bench.txt
  FLAGS: lowbit format flags, e.g. "--act bf16" or "--bits 2" ("" for W4 g128 f16)"""
import os, sys

from heuristic_config import config_arg, inspect_explain, parse_config


def served(lowbit, device, flags, m, n, k):
    out = inspect_explain(lowbit, n, k, m, ["--device-name", device, *flags.split()])
    source = next((line.split("chosen by: ", 1)[1] for line in out.splitlines() if "chosen by: " in line), "?")
    return parse_config(out), source


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    flags, ms, layers = sys.argv[1], [int(m) for m in sys.argv[2].split(",")], sys.argv[3].split(",")
    lowbit = os.environ.get("LOWBIT", "./build/lowbit")
    device = os.environ.get("DEVICE", "NVIDIA H200")
    for m in ms:
        for layer in layers:
            n, k = (int(x) for x in layer.split("x"))
            config, source = served(lowbit, device, flags, m, n, k)
            line = " ".join(x for x in (f"--n {n} --k {k}", flags, f"--m {m} --replays 10") if x)
            print(line)
            print(f"{line} --config {config_arg(config)}")
            print(f"{m} {layer} {config_arg(config)} {source}", file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Probe (thirty-fourth session): back-to-back calls chained by programmatic dependent launch
# (WQ_CHAIN 1 in templates/wq_gemm.cuh and LOWBIT_PDL_CHAIN=1: the GEMM and the stream ceiling's
# kernel both launched with the attribute) against the shipped launches, in alternating rounds.
# WQ_CHAIN 2 lets the next call launch only after the loop (every copy of the block landed).
# Usage: BENCHES=$'args\nargs' [ROUNDS=2] [VARIANTS="0 1 2"] scripts/device_chain_probe.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
F=$ROOT/templates/wq_gemm.cuh
# The probe's code is not in the tree (perf-notes, thirty-fourth session, section 6): apply its patch.
if ! grep -q '^#define WQ_CHAIN' "$F"; then
  (cd "$ROOT" && patch -p1 -s <docs/bench/2026-11-26-session34-chain-probe.patch) ||
    { echo "chain probe patch failed" | tee -a "$S"; exit 1; }
fi
for round in $(seq "${ROUNDS:-2}"); do
  for v in ${VARIANTS:-0 1}; do
    sed -i "s/^#define WQ_CHAIN .*/#define WQ_CHAIN ${v%c}/" "$F"
    device_build lowbit_cli
    echo "== WQ_CHAIN=$v, round $round" | tee -a "$S"
    if [ "$v" != 0 ]; then export LOWBIT_PDL_CHAIN=1; else unset LOWBIT_PDL_CHAIN; fi
    # A trailing c (1c, 2c): the GEMM's shared memory capped to the blocks per SM its grid needs.
    if [ "${v%c}" != "$v" ]; then export LOWBIT_PDL_CHAIN_CAP=1; else unset LOWBIT_PDL_CHAIN_CAP; fi
    bench_lines "/tmp/lowbit-chain-$v"
  done
done

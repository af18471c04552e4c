#!/usr/bin/env bash
# Probe: clusters of 2/3/4/8 wgmma-sized blocks the device holds at once (scripts/probe_cluster_occupancy.cu),
# into $OUT/summary.txt.
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" -gencode arch=compute_90a,code=sm_90a -std=c++20 "$ROOT/scripts/probe_cluster_occupancy.cu" \
  -o "$OUT/cluster_occupancy" >"$OUT/probe-build.log" 2>&1 || { cat "$OUT/probe-build.log" | tee -a "$S"; exit 1; }
"$OUT/cluster_occupancy" 2>&1 | tee -a "$S"
rm -f "$OUT/cluster_occupancy"

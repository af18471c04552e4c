#!/usr/bin/env bash
# Probe: the wgmma (A from registers) issue rate without data movement (scripts/probe_wgmma_rate.cu),
# into $OUT/summary.txt.
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" -gencode arch=compute_90a,code=sm_90a -std=c++20 -I "$ROOT/templates" "$ROOT/scripts/probe_wgmma_rate.cu" \
  -o "$OUT/wgmma_rate" >"$OUT/probe-build.log" 2>&1 || { cat "$OUT/probe-build.log" | tee -a "$S"; exit 1; }
"$OUT/wgmma_rate" 2>&1 | tee -a "$S"
# The SASS, to see whether ptxas put a wait between a batch's wgmmas and the ALU work.
(cuobjdump -sass "$OUT/wgmma_rate" || /usr/local/cuda/bin/cuobjdump -sass "$OUT/wgmma_rate") >"$OUT/probe.sass" 2>&1 || true
rm -f "$OUT/wgmma_rate"

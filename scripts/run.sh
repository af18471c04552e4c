#!/usr/bin/env bash
# The main job. With a GPU: benchmark the standard W4A16 cases (shared/BENCHMARKS.md protocol).
# Without one: compile the kernels of a standard model (Llama-3-8B linear layers, M buckets
# 1..128) for sm_90a into the cache and print what was built.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
mkdir -p "$(dirname "$BUILD_DIR")"
lowbit_build
LOWBIT="$BUILD_DIR/lowbit"
"$LOWBIT" info
if "$LOWBIT" info --json | grep -q '"device"'; then
  "$LOWBIT" bench wq_gemm --cases standard --m 1,16,64 "$@"
else
  "$LOWBIT" compile wq_gemm --model llama-3-8b --m-buckets 1,2,4,8,16,32,64,128 --arch "${LOWBIT_ARCH:-sm_90a}" "$@"
fi

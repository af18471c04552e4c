#!/usr/bin/env bash
# Issue-4 check on the GPU machine: for layers that are in no shipped tuning file, compare the
# library's choice with a fresh tune of that layer. (Written when the lookup's "nearest layer" step
# served such layers; since the forty-third session the library's choice there is the heuristic.)
# Writes $OUT/nearest-bench.json (library's choice, with the heuristic's time) and $OUT/fresh.json
# (fresh tune); compare `us` of the first with `us` of the second per key.
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
device_build lowbit_cli
export LOWBIT_CACHE_DIR=$B/cache-nearest
cat >"$OUT/held-out.txt" <<'SHAPES'
# layers of models that no preset covers (Llama-2-7B/13B, Phi-3-mini, Gemma-2-9B shards)
11008 4096
4096 11008
13824 5120
5120 13824
3072 3072
9216 3072
7168 3584
SHAPES
"$B/lowbit" bench wq_gemm --shapes "$OUT/held-out.txt" --m ${M:-1,16,64} --save "$OUT/nearest-bench.json" | tee -a "$S"
"$B/lowbit" tune wq_gemm --shapes "$OUT/held-out.txt" --m ${M:-1,16,64} --db "$OUT/fresh.json" --budget 20 | tee -a "$S"

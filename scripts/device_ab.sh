#!/usr/bin/env bash
# A/B of a kernel change on the GPU machine, in one call: "new" is the working tree, "base" the
# working tree with $AB_PATCH reversed (make it with `git diff > ab.patch`; an untracked file travels
# to the device). Each side builds its CLI, optionally tunes the layers at $TUNE_M into a file of
# its own (so each side is timed on the configs that suit it), then benches with "$@" (default: the
# standard cases at M 1,16). Base and new benches alternate, twice, so drift shows. Results in $OUT.
# AB_BENCHES (one bench argument list per line) runs those instead of "$@".
# TUNE_ARGS: more `lowbit tune` flags for both sides' tunes (e.g. "--act bf16").
# Usage: [AB_PATCH=ab.patch] [TUNE_M=1,16 [BASE_DB=file] [TUNE_ARGS=flags]] [SHAPES="N K\n..."] [LIMIT_S=150]
#        [AB_BENCHES=$'args\nargs'] scripts/device_ab.sh [bench args]
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
PATCH=$(ab_patch_path) || exit 1
device_build lowbit_cli &
new_build=$!
build_base_cli "$PATCH"
wait "$new_build" || { echo "new build failed" | tee -a "$S"; exit 1; }
[ $# -eq 0 ] && set -- --cases standard --m 1,16
if [ -n "${SHAPES:-}" ]; then
  printf '%b\n' "$SHAPES" >"$OUT/shapes.txt"
  layers=(--shapes "$OUT/shapes.txt")
else
  layers=(--model standard)
fi
declare -A CLI=([base]=$BASE_SRC/build-dev/lowbit [new]=$B/lowbit)
# BASE_DB (with TUNE_M): a tuning file already made for the base side (e.g. by an earlier call, as
# an untracked file in the working tree, path relative to the repo root): used, not re-tuned.
if [ -n "${BASE_DB:-}" ]; then
  [[ $BASE_DB = /* ]] || BASE_DB=$ROOT/$BASE_DB
  cp "$BASE_DB" "$OUT/base-tuned.json" || { echo "no $BASE_DB" | tee -a "$S"; exit 1; }
fi
for side in base new; do
  export LOWBIT_CACHE_DIR=/tmp/lowbit-ab-cache-$side
  if [ -n "${TUNE_M:-}" ] && ! { [ $side = base ] && [ -n "${BASE_DB:-}" ]; }; then
    # shellcheck disable=SC2086  # TUNE_ARGS is a list
    timeout -s INT "${LIMIT_S:-150}" "${CLI[$side]}" tune wq_gemm "${layers[@]}" --m "$TUNE_M" \
      ${TUNE_ARGS:-} --db "$OUT/$side-tuned.json" >"$OUT/$side-tune.log" 2>&1
    echo "$side tune rc=$? ($(grep -c ' best ' "$OUT/$side-tune.log") problems)" | tee -a "$S"
  fi
done
for round in 1 2; do
  for side in base new; do
    export LOWBIT_CACHE_DIR=/tmp/lowbit-ab-cache-$side
    db=()
    [ -f "$OUT/$side-tuned.json" ] && db=(env "LOWBIT_TUNING_DB=$OUT/$side-tuned.json")
    echo "== $side, round $round" | tee -a "$S"
    if [ -n "${AB_BENCHES:-}" ]; then
      while IFS= read -r line; do
        [ -z "$line" ] && continue
        read -r -a args <<<"$line"
        "${db[@]}" "${CLI[$side]}" bench wq_gemm "${args[@]}" 2>&1 | grep -v "^#" | tee -a "$S"
      done <<<"$AB_BENCHES"
    else
      "${db[@]}" "${CLI[$side]}" bench wq_gemm "$@" 2>&1 | tee -a "$S"
    fi
  done
done

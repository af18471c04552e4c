# Sourced by the device scripts: paths, the summary file, and the build of the given targets.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-/tmp/lowbit-out}
mkdir -p "$OUT"
B=$ROOT/build-dev
S=$OUT/summary.txt
: >"$S"
# device_build TARGET...: configure and build; on failure print the errors into the summary and exit.
# NO_BUILD=1: build-dev is built already, by the caller (two scripts side by side on two GPUs would otherwise
# rebuild it under each other's running benches; eightieth session): only check that the CLI is there.
device_build() {
  if [ "${NO_BUILD:-0}" = 1 ]; then
    [ -x "$B/lowbit" ] || { echo "NO_BUILD=1 but no $B/lowbit" | tee -a "$S"; exit 1; }
    return 0
  fi
  # The device keeps build-dev between calls of one lease, but the synced tree may carry older
  # mtimes than a template a variant script rewrote there: touch them so ninja re-embeds them
  # (session 28: a tune ran on the last variant's templates).
  find "$ROOT/templates" -type f -exec touch {} +
  if ! (cmake -S "$ROOT" -B "$B" -G Ninja -DLOWBIT_WERROR=ON >"$OUT/build.log" 2>&1 &&
        ninja -C "$B" "$@" >>"$OUT/build.log" 2>&1); then
    grep -E "error|Error" -A5 "$OUT/build.log" | head -60 | tee -a "$S"
    exit 1
  fi
  # The device returns at most 8 files a call: a build that passed leaves no log (sixty-fourth session).
  rm -f "$OUT/build.log"
}
# device_ctest: the GPU suite (ctest shards side by side, TEST_TIMEOUT seconds, default 480; only the shards
# matching CTEST_REGEX if set, e.g. "unit|gpu_accum_f16") into
# $OUT/tests.log; its return code and result lines into the summary.
device_ctest() {
  (cd "$B" && timeout "${TEST_TIMEOUT:-480}" ctest -j 8 --output-on-failure ${CTEST_REGEX:+-R "$CTEST_REGEX"} 2>&1) >"$OUT/tests.log"
  echo "ctest rc=$?" | tee -a "$S"
  grep -E "tests passed|Passed|Failed|FAILED|Skipped|\*\*\*|REQUIRE|with expansion|err :=|seed" "$OUT/tests.log" | head -60 | tee -a "$S"
}
# for_each_profile FN: for each non-empty line of $PROFILE (bench arguments), in order, writes the
# header "== N: line" into the summary and runs FN N LINE (the ncu scripts).
for_each_profile() {
  local i=0 line
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    i=$((i + 1))
    echo "== $i: $line" | tee -a "$S"
    "$1" "$i" "$line" </dev/null  # FN must not read the remaining lines
  done <<<"${PROFILE:-}"
}
# variant_setup: for the variant scripts (device_variants.sh, device_config_variants.sh): checks that
# $FILE has a `#define $MACRO` line, and with NO_CHECK=1 turns the bench's reference and finiteness
# checks off in this copy of the tree (ablations that compute wrong results on purpose).
variant_setup() {
  : "${FILE:?}" "${MACRO:?}" "${VARIANTS:?}"
  grep -q "^#define $MACRO " "$ROOT/$FILE" || { echo "no '#define $MACRO' line in $FILE" | tee -a "$S"; exit 1; }
  if [ "${NO_CHECK:-0}" = 1 ]; then
    sed -i 's/LOWBIT_CHECK(rel <= tol,/if (false) LOWBIT_CHECK(rel <= tol,/' "$ROOT/src/tune/wq_bench.cpp"
    sed -i "s/LOWBIT_CHECK(std::isfinite(y\[i\]),/if (false) LOWBIT_CHECK(std::isfinite(y[i]),/" "$ROOT/src/tune/wq_bench.cpp"
    echo "reference check OFF" | tee -a "$S"
  fi
}
# build_base_cli PATCH: a copy of the tree with PATCH reversed (the "base" of an A/B) under
# $BASE_SRC, its CLI built at $BASE_SRC/build-dev/lowbit; run it beside device_build (it waits for
# nothing). Exits with a line in the summary if the patch or the build fails.
BASE_SRC=/tmp/lowbit-ab-base
build_base_cli() {
  local patch=$1
  rm -rf "$BASE_SRC" && mkdir -p "$BASE_SRC"
  (cd "$ROOT" && tar --exclude=./build-dev --exclude=./build -cf - .) | (cd "$BASE_SRC" && tar -xf -)
  (cd "$BASE_SRC" && patch -R -p1 -s <"$patch") || { echo "patch -R failed" | tee -a "$S"; exit 1; }
  (cmake -S "$BASE_SRC" -B "$BASE_SRC/build-dev" -G Ninja >"$OUT/build-base.log" 2>&1 &&
    ninja -C "$BASE_SRC/build-dev" lowbit_cli >>"$OUT/build-base.log" 2>&1) || { echo "base build failed" | tee -a "$S"; exit 1; }
}
# ab_patch_path: $AB_PATCH (default ab.patch) as an absolute path; exits if it is missing.
ab_patch_path() {
  local p=${AB_PATCH:-ab.patch}
  [[ $p = /* ]] || p=$ROOT/$p
  [ -f "$p" ] || { echo "no $p" | tee -a "$S"; exit 1; }
  echo "$p"
}
# bench_formats M: `lowbit bench wq_gemm --cases standard --m M` into the summary for each format of
# $BENCH_FORMATS (';'-separated lowbit flags; unset: the closing table's four, W4 f16, W4 bf16, W2, W8;
# "": W4 f16 only), in one kernel cache ($B/cache-bench).
bench_formats() {
  local fmts fmt
  IFS=';' read -ra fmts <<<"${BENCH_FORMATS-;--act bf16;--bits 2;--bits 8}"
  [ ${#fmts[@]} -eq 0 ] && fmts=("")
  for fmt in "${fmts[@]}"; do
    # shellcheck disable=SC2086  # fmt is a list
    LOWBIT_CACHE_DIR=$B/cache-bench "$B/lowbit" bench wq_gemm --cases standard --m "$1" $fmt 2>&1 |
      grep -v "^#" | tee -a "$S"
  done
}
# bench_lines CACHE: `lowbit bench wq_gemm` once per non-empty line of $BENCHES (bench arguments;
# leading VAR=value words are set for that bench only), each line echoed into the summary first, all
# in kernel cache CACHE (the variant scripts).
bench_lines() {
  local line args vars
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    read -r -a args <<<"$line"
    vars=()
    while [ ${#args[@]} -gt 0 ] && [[ ${args[0]} == [A-Z_]*=* ]]; do vars+=("${args[0]}"); args=("${args[@]:1}"); done
    echo "-- $line" | tee -a "$S"
    env "${vars[@]}" LOWBIT_CACHE_DIR="$1" "$B/lowbit" bench wq_gemm "${args[@]}" 2>&1 | tee -a "$S"
  done <<<"$BENCHES"
}

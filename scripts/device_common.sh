# Sourced by the device scripts: paths, the summary file, and the build of the given targets.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-/tmp/lowbit-out}
mkdir -p "$OUT"
B=$ROOT/build-dev
S=$OUT/summary.txt
: >"$S"
# device_build TARGET...: configure and build; on failure print the errors into the summary and exit.
device_build() {
  if ! (cmake -S "$ROOT" -B "$B" -G Ninja -DLOWBIT_WERROR=ON >"$OUT/build.log" 2>&1 &&
        ninja -C "$B" "$@" >>"$OUT/build.log" 2>&1); then
    grep -E "error|Error" -A5 "$OUT/build.log" | head -60 | tee -a "$S"
    exit 1
  fi
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

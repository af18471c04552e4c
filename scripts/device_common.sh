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

# Sourced by the scripts: configure + build, installing missing Debian/Ubuntu packages first.
# BUILD_DIR (default build) and CMAKE_ARGS may be set by the caller.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
PACKAGES="cmake ninja-build g++ libfmt-dev nlohmann-json3-dev libcli11-dev catch2"

lowbit_configure() {
  local gen=()
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  cmake -S "$ROOT" -B "$BUILD_DIR" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DLOWBIT_WERROR=ON ${CMAKE_ARGS:-} "$@"
}

lowbit_install_deps() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "lowbit: missing dependencies and no apt-get; install: $PACKAGES" >&2
    return 1
  fi
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "lowbit: installing $PACKAGES" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $PACKAGES >/dev/null
}

lowbit_build() {
  # Configure; if a dependency is missing, install the packages once and try again.
  if ! command -v cmake >/dev/null 2>&1 || ! lowbit_configure "$@" >"$BUILD_DIR.configure.log" 2>&1; then
    lowbit_install_deps
    lowbit_configure "$@"
  fi
  cmake --build "$BUILD_DIR" -j "$(nproc)"
}

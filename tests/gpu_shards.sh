#!/usr/bin/env bash
# The GPU suite in shards, so that `ctest -j` runs them side by side: the suite is mostly NVRTC
# compiles, on the CPU (one process took ~430 s on the H200; its slowest cases ~100 s each).
# Each shard runs the test cases its Catch2 spec matches; the last runs every case no other spec
# matches. `check` fails if a case is in two shards (overlapping specs) or in none.
#   gpu_shards.sh names                  the shards' names, in order (tests/CMakeLists.txt adds a ctest
#                                        test gpu_NAME for each)
#   gpu_shards.sh run I BINARY [ARGS]    shard I (0-based) of the GPU test binary
#   gpu_shards.sh check BINARY           every test case in exactly one shard (lists only: no GPU)
set -euo pipefail
NAMES=(groups_f16 groups_bf16 formats accum_f16 sweeps heuristics rest)
SPECS=(
  '*: f16 activations'
  '*: bf16 activations'
  'wq_gemm every bits*'
  'wq_gemm fp16 accumulation: every*'
  '[sweep]'
  'wq_gemm heuristic*'
)  # and the rest (eighty-first session: the heuristics' forced configs apart, as rest neared the timeout)
[ ${#NAMES[@]} -eq $((${#SPECS[@]} + 1)) ] || { echo "gpu_shards.sh: one name per spec, then 'rest'" >&2; exit 2; }
spec() {  # the Catch2 test spec of shard $1
  if [ "$1" -lt ${#SPECS[@]} ]; then
    echo "${SPECS[$1]}"
  else
    local s="" x
    for x in "${SPECS[@]}"; do
      if [[ $x == \[* ]]; then s+="~$x "; else s+="~\"$x\" "; fi  # a tag, or a quoted name
    done
    echo "${s% }"
  fi
}
names() {  # the test names a spec selects (every test without one); Catch2 v2 exits with the count
  local out
  out=$("$1" --list-test-names-only "${@:2}" 2>/dev/null) || true
  [ -n "$out" ] || out=$("$1" --list-tests --verbosity quiet "${@:2}") || true  # Catch2 v3
  [ -n "$out" ] && echo "$out"
  return 0
}
case "${1:-}" in
  names) printf '%s\n' "${NAMES[@]}" ;;
  run)
    i=$2 bin=$3
    shift 3
    exec "$bin" "$(spec "$i")" "$@"
    ;;
  check)
    bin=$2
    all=$(names "$bin" | sort)
    [ -n "$all" ] || { echo "no test cases listed"; exit 1; }
    got=$(for ((i = 0; i <= ${#SPECS[@]}; i++)); do names "$bin" "$(spec $i)"; done | sort)
    if [ "$all" != "$got" ]; then
      echo "the shards do not cover each test case exactly once:"
      diff <(echo "$all") <(echo "$got") || true
      exit 1
    fi
    echo "$(echo "$all" | wc -l) test cases in $((${#SPECS[@]} + 1)) shards"
    ;;
  *) echo "usage: gpu_shards.sh names | run I BINARY [ARGS] | check BINARY" >&2; exit 2 ;;
esac

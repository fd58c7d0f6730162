#!/usr/bin/env bash
# Instructions per timestep of each Reprise thread in a Task Bench run, in a count that does not
# depend on the machine's noise: callgrind with one profile per thread, a run of LONG timesteps
# minus one of SHORT (start-up and the report cancel), divided by LONG - SHORT.
#   tools/experiments/thread-instructions.sh [-b BIN_DIR] [-l LONG] [-s SHORT] -- TASKBENCH_FLAGS...
# e.g. tools/experiments/thread-instructions.sh -- -width 2 -type stencil_1d -kernel empty \
#        -ll:cpu 2 --trace none
# Threads are named by the loop they run: app (the main thread), worker N, utility. (Where the
# threads would outnumber the cores the analysis runs on the app thread by default: add
# -lg:no_inline_analysis to the flags to count the utility thread apart.)
set -euo pipefail
BIN=build/bin; LONG=3000; SHORT=1000
while getopts "b:l:s:" o; do
  case $o in b) BIN=$OPTARG ;; l) LONG=$OPTARG ;; s) SHORT=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1)); [ "${1:-}" = "--" ] && shift
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
# Prints "role instructions" per thread of one run of $1 timesteps.
run() {
  rm -f "$T"/cg.*
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$T/cg.%p" \
    "$BIN/reprise-taskbench" -steps "$1" "${@:2}" > /dev/null 2> "$T/err" || { cat "$T/err"; exit 1; }
  local w=0
  for f in $(ls "$T"/cg.*-* | sort -t- -k2 -n); do
    local total role
    total=$(sed -n 's/^totals: \([0-9]*\).*/\1/p' "$f")
    if [[ $f == *-01 ]]; then role=app
    elif grep -q 'utility_loop' "$f"; then role=utility
    elif grep -q 'worker_loop' "$f"; then role="worker$w"; w=$((w + 1))
    else role=other$(basename "$f"); fi
    echo "$role ${total:-0}"
  done
}
run "$LONG" "$@" > "$T/long"; run "$SHORT" "$@" > "$T/short"
join <(sort "$T/long") <(sort "$T/short") | awk -v n=$((LONG - SHORT)) '
  { per = ($2 - $3) / n; all += per; printf "%-10s %8.0f\n", $1, per }
  END { printf "%-10s %8.0f\n", "all", all }'

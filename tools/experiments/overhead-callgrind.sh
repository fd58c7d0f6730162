#!/usr/bin/env bash
# Instructions per task of the single-process launch path, in a count that does not depend on
# the machine's noise: callgrind of bench_overhead (16 points per launch, 100-op window) for
# 3,000 iterations minus 1,000 (start-up cancels), divided by the 64,000 tasks in between.
#   tools/experiments/overhead-callgrind.sh [BIN_DIR] [REPEATS]
set -euo pipefail
BIN=${1:-build/bin}; REPEATS=${2:-3}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
count() {
  valgrind --tool=callgrind --callgrind-out-file="$T/cg.out" "$BIN/bench_overhead" -i "$1" -w 100 -p 16 \
    > /dev/null 2> "$T/err"
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$T/err"
}
for ((k = 1; k <= REPEATS; ++k)); do
  a=$(count 3000); b=$(count 1000)
  echo "instructions per task: $(( (a - b) / 64000 ))"
done

#!/usr/bin/env bash
# What recording trace templates costs one rank, once (the per-iteration counts of
# rank-counts.sh subtract it away: both of its run lengths record): callgrind on that rank's
# utility thread (toggled on *utility_loop*) over a 30-iteration weak-scaling stencil run
# (2 tiles per rank, -ll:cpu 1), Memoizer::record inclusive, and the whole run's total.
#   tools/experiments/recording-cost.sh [BIN_DIR] [MODE] R [RANK]
set -u
BIN=${1:-build/bin}; MODE=${2:-auto}; R=${3:?ranks}; RANK=${4:-0}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
BIN=$(cd "$BIN" && pwd); T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
(cd "$T" && timeout 1500 mpirun -np "$R" --oversubscribe bash -c \
  'if [ "$OMPI_COMM_WORLD_RANK" = '"$RANK"' ]; then exec valgrind --tool=callgrind --callgrind-out-file=cg.out.%p --toggle-collect="*utility_loop*" "$@"; else exec "$@"; fi' \
  _ "$BIN/stencil" -nx $((128 * R)) -ny 128 -px $((2 * R)) -py 1 -iters 30 -warmup 0 \
  -ll:cpu 1 --trace "$MODE" > /dev/null 2>&1)
callgrind_annotate --inclusive=yes "$T"/cg.out.* 2> /dev/null > "$T/incl.txt"
total=$(awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}' "$T/incl.txt")
record=$(awk '/Memoizer::record\(unsigned/ {gsub(",", "", $1); print $1; exit}' "$T/incl.txt")
echo "mode=$MODE ranks=$R rank=$RANK utility_instr_total=$total recording_instr=${record:-0}"

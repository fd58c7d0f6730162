#!/usr/bin/env bash
# One rank's utility-thread instructions per iteration under weak scaling, as
# ../shared/tools/weak-scaling-counts.sh counts rank 0's — for any rank (rank 0 is an edge of
# the 1-d layout; a middle rank has neighbours on both sides):
#   [APP=stencil|cfd|circuit] tools/experiments/rank-counts.sh [BIN_DIR] [MODE] R [RANK]
# (RANK defaults to R/2.) stencil: 2 tiles per rank (-nx 128*R -ny 128 -px 2R -py 1), the
# difference of a 30- and a 10-iteration run over 20. cfd: 2 tiles per rank (-nx 32*R -ny 32
# -tiles 2R -nit 5), 60 minus 20 steps over 40 (its automatic traces alternate: no template
# replays back to back). circuit: 2 pieces per rank (-p 2R -npp 100 -wpp 400, PCT (env, default
# 95) percent of a piece's wires within it, the others to WINDOW (env, default 0: any) pieces
# either side), 30 minus 10 loops over 20. -ll:cpu 1, callgrind on
# that rank toggled on *utility_loop*.
# STEPS="A B" (env): other run lengths than those two.
set -u
BIN=${1:-build/bin}; MODE=${2:-none}; R=${3:?ranks}; RANK=${4:-$((R / 2))}; APP=${APP:-stencil}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
BIN=$(cd "$BIN" && pwd); T=$(mktemp -d)
case $APP in
  stencil) A=10; B=30; run() { echo "$BIN/stencil" -nx $((128 * R)) -ny 128 -px $((2 * R)) -py 1 -iters "$1" -warmup 0; } ;;
  cfd) A=20; B=60; run() { echo "$BIN/cfd" -nx $((32 * R)) -ny 32 -tiles $((2 * R)) -nit 5 -max_steps "$1" -tol 1e-12; } ;;
  circuit) A=10; B=30; run() { echo "$BIN/circuit" -p $((2 * R)) -npp 100 -wpp 400 -pct "${PCT:-95}" -window "${WINDOW:-0}" -l "$1"; } ;;
  *) echo "APP must be stencil, cfd or circuit" >&2; exit 2 ;;
esac
# STEPS="A B" replaces the two run lengths (e.g. later windows, past the traces found late).
[ -n "${STEPS:-}" ] && read -r A B <<< "$STEPS"
count() {
  (cd "$T" && rm -f cg.out.* &&
    timeout 1500 mpirun -np "$R" --oversubscribe bash -c \
      'if [ "$OMPI_COMM_WORLD_RANK" = '"$RANK"' ]; then exec valgrind --tool=callgrind --callgrind-out-file=cg.out.%p --toggle-collect="*utility_loop*" "$@"; else exec "$@"; fi' \
      _ $(run "$1") -ll:cpu 1 --trace "$MODE" > /dev/null 2>&1 &&
    callgrind_annotate cg.out.* 2>/dev/null | grep -m1 'PROGRAM TOTALS' | awk '{gsub(",","",$1); print $1}')
}
a=$(count $A); b=$(count $B)
echo "app=$APP mode=$MODE ranks=$R rank=$RANK util_instr_per_iter=$(((b - a) / (B - A)))"
rm -rf "$T"

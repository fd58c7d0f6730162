#!/usr/bin/env bash
# Wall-clock weak scaling of control replication on a machine with enough cores (the stencil of
# issue 15: 2 tiles per rank, -ll:cpu 1), under mpirun's default binding and --bind-to none, in
# none and manual modes; one RESULT line per run, prefixed with the binding and rank count.
# Used on the 16-core GPU machine (docs/results.md "Control replication on 16 real cores"):
#   tools/experiments/weak-scaling-wallclock.sh BIN_DIR "1 2 4 8 16" [ITERS] > weak.txt
# BIN_DIR holds stencil (a packed one works: export LD_LIBRARY_PATH to its libraries first).
set -u
bin=${1:?bin dir}
ranks=${2:-"1 2 4 8"}
iters=${3:-2000}
for bind in core none; do
  for mode in none manual; do
    for r in $ranks; do
      if [ "$r" = 1 ]; then
        [ "$bind" = none ] && continue
        launch=()
      else
        launch=(mpirun --allow-run-as-root --oversubscribe --bind-to "$bind" -np "$r")
        [ -n "${LD_LIBRARY_PATH:-}" ] && launch+=(-x LD_LIBRARY_PATH)
      fi
      "${launch[@]}" "$bin/stencil" -nx $((128 * r)) -ny 128 -px $((2 * r)) -py 1 \
        -iters "$iters" -ll:cpu 1 --trace "$mode" | grep '^RESULT' | sed "s/^/bind=$bind R=$r /"
    done
  done
done

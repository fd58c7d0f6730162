#!/usr/bin/env bash
# Instructions inside a Task Bench run's timed window (apps::timed: from the fence before the
# first launch to the end of the fence after the last), split into what every timestep costs and
# what the run costs once (its fixed cost: the last fence and the points it waits for; with
# -warmup 0 also first launches of each shape, a trace's recording, the finder's warm-up — by
# default reprise-taskbench times a second run, after an untimed warm-up, as Task Bench does).
# (With automatic tracing the split is rough: how long its traces grow depends on the run's
# length.) callgrind toggled on the window, at three run lengths:
#   per_step = (I(L3) - I(L2)) / (L3 - L2);  fixed = I(L2) - per_step * L2
# Task Bench's METG runs are 1,000 timesteps long: fixed / 1000 is what the fixed cost adds to
# each of their timesteps. Counted on the application thread only, so Reprise runs in its
# one-core layout (-ll:cpu 1 -ll:app_cpu 1: the application thread analyses and runs every point,
# with the window of ops in flight of one core; a width above 1 runs on that one CPU too).
# (With -ll:app_cpu 1 automatic tracing mines for repeats on that thread too, as on one core:
# counted. Do not add -lg:window: a fixed window stops it growing with the traces.)
#   tools/experiments/window-instructions.sh [-b BIN_DIR] [-l "L1 L2 L3"] -- TASKBENCH_FLAGS...
# e.g. tools/experiments/window-instructions.sh -- -width 1 -type stencil_1d -kernel empty \
#        --trace manual
set -euo pipefail
BIN=build/bin; LENGTHS="250 1000 4000"
while getopts "b:l:" o; do
  case $o in b) BIN=$OPTARG ;; l) LENGTHS=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1)); [ "${1:-}" = "--" ] && shift
read -r L1 L2 L3 <<< "$LENGTHS"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
count() {
  valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*apps::timed*' \
    --callgrind-out-file="$T/cg.$1" "$BIN/reprise-taskbench" -steps "$1" "${@:2}" \
    -ll:cpu 1 -ll:app_cpu 1 -lg:inline_analysis > /dev/null 2> "$T/err" ||
    { cat "$T/err"; exit 1; }
  sed -n 's/^totals: \([0-9]*\).*/\1/p' "$T/cg.$1"
}
I1=$(count "$L1" "$@"); I2=$(count "$L2" "$@"); I3=$(count "$L3" "$@")
awk -v l1="$L1" -v l2="$L2" -v l3="$L3" -v i1="$I1" -v i2="$I2" -v i3="$I3" 'BEGIN {
  per = (i3 - i2) / (l3 - l2); fixed = i2 - per * l2
  printf "window instructions: %d steps %d, %d steps %d, %d steps %d\n", l1, i1, l2, i2, l3, i3
  printf "per_step %.0f fixed %.0f fixed_per_step_at_1000 %.0f (steps %d..%d: %.0f per step)\n",
    per, fixed, fixed / 1000, l1, l2, (i2 - i1) / (l2 - l1) }'

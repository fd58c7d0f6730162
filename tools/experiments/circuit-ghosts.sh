#!/usr/bin/env bash
# The circuit at 4, 16 and 64 pieces, exact (sparse) against bounding-box ghost pieces, in
# the three trace modes: median of 3 iterations/s, coverage, copies per iteration, ghost nodes
# held / needed (docs/results.md). Run from the repository root after tools/setup/build.sh.
set -euo pipefail
for P in 4 16 64; do for g in exact bounding; do for t in none manual auto; do
  vals=""; for rep in 1 2 3; do
    line=$(build/bin/circuit -l 100 -p $P -npp 100 -wpp 400 -ghosts $g --trace $t -ll:cpu 2 2>&1 | grep RESULT)
    ips=$(echo "$line" | grep -o "iter_per_s=[0-9.]*" | cut -d= -f2); vals="$vals $ips"
  done
  med=$(echo $vals | tr ' ' '\n' | sort -n | sed -n 2p)
  cov=$(echo "$line" | grep -o "coverage=[0-9.]*" | cut -d= -f2); cp=$(echo "$line" | grep -o " copies=[0-9]*" | cut -d= -f2)
  gh=$(echo "$line" | grep -o "ghost_nodes=[0-9]*" | cut -d= -f2); gn=$(echo "$line" | grep -o "ghost_needed=[0-9]*" | cut -d= -f2)
  echo "P=$P ghosts=$g trace=$t it/s=$med cov=$cov copies/iter=$((cp/100)) ghost=$gh/$gn"
done; done; done

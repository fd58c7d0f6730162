#!/usr/bin/env bash
# Checks of -lg:evtrace, reprise-evtrace and reprise-whatif (tests/evtrace/CMakeLists.txt).
# usage: check.sh MODE BIN_DIR [MPIRUN]
set -euo pipefail
mode=$1 bin=$2 mpirun=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
size() { wc -c < "$1"; }
stencil() { "$bin/stencil" -nx 256 -ny 256 -px 2 -py 2 -ll:cpu 1 "$@"; }

case "$mode" in
  iterations)
    # Nearly constant in iterations: 1,000 iterations within 1.2x of 400 (by 400 the automatic
    # tracer has taken the loop's maximal trace, which is a second loop in the record); the
    # loop is shown.
    for t in manual auto; do
      stencil -iters 400 --trace $t -lg:evtrace a.txt > /dev/null
      stencil -iters 1000 --trace $t -lg:evtrace b.txt > /dev/null
      a=$(size a.txt) b=$(size b.txt)
      echo "$t: 400 iterations $a bytes, 1000 iterations $b bytes"
      awk -v a="$a" -v b="$b" 'BEGIN { exit !(b <= 1.2 * a) }'
      "$bin/reprise-evtrace" show b.txt > show.txt
      grep -q "loop x" show.txt
      # Manual traces: the timed loop, one iteration a trace.
      if [ $t = manual ]; then "$bin/reprise-evtrace" show a.txt | grep -q "loop x400 (4 ops per iteration)"; fi
    done
    echo "evtrace sizes ok"
    ;;
  same_result)
    # Recording changes no result.
    x=$(stencil -iters 50 --trace auto | grep -o 'checksum=[0-9a-f]*')
    y=$(stencil -iters 50 --trace auto -lg:evtrace c.txt | grep -o 'checksum=[0-9a-f]*')
    echo "$x / $y"
    [ "$x" = "$y" ]
    echo "evtrace result ok"
    ;;
  ranks)
    # Merged across ranks: one group; at most 1.6x the largest shard's own trace (the merged
    # histograms hold every shard's values: ~1.5x here); 8 ranks within 1.2x of 4 (the interior
    # shards share one variant).
    run() {
      "$mpirun" -np "$1" --oversubscribe "$bin/stencil" -nx $((128 * $1)) -ny 128 -px $((2 * $1)) \
        -py 1 -iters 60 -ll:cpu 1 --trace manual -lg:evtrace "r$1.txt" -lg:evtrace:shards > /dev/null
    }
    run 4
    run 8
    merged=$(size r4.txt)
    largest=$(for f in r4.txt.*; do size "$f"; done | sort -n | tail -1)
    eight=$(size r8.txt)
    echo "4 ranks: merged $merged bytes, largest shard $largest; 8 ranks merged $eight"
    "$bin/reprise-evtrace" size r8.txt
    "$bin/reprise-evtrace" size r8.txt | grep -q "groups=1 "
    awk -v m="$merged" -v l="$largest" -v e="$eight" 'BEGIN { exit !(m <= 1.6 * l && e <= 1.2 * m) }'
    "$bin/reprise-evtrace" show r8.txt | grep -q "shards 1-6: 2 points, sends to -1"
    if [ -x "$bin/reprise-whatif" ]; then
      # A 4-rank trace predicts 16 and 64 ranks, the checksum task included (it reads every
      # shard's tiles: its shard receives only what the other shards' classes send to it).
      "$mpirun" -np 4 --oversubscribe "$bin/stencil" -nx 256 -ny 256 -px 4 -py 4 -iters 10 \
        -ll:cpu 1 --trace none -lg:evtrace w4.txt > /dev/null
      for r in 16 64; do
        "$bin/reprise-whatif" w4.txt --platform cores=4,lat=1us,bw=10GBps --ranks $r | grep -q "ranks=$r "
      done
    fi
    echo "evtrace ranks ok"
    ;;
  simulate_shards)
    # -lg:simulate_shards 4 in one process yields the per-shard structure of mpirun -np 4:
    # the same points, copies and bytes sent and received per shard (exactly), and about the
    # same completions asked (within 10%: a single process's templates link differently).
    compare() {
      "$bin/stencil" "$@" -lg:simulate_shards 4 -lg:evtrace sim.txt > sim.out
      grep -q verified sim.out
      "$mpirun" -np 4 --oversubscribe "$bin/stencil" "$@" -lg:evtrace real.txt > /dev/null
      "$bin/reprise-evtrace" totals sim.txt > sim.tot
      "$bin/reprise-evtrace" totals real.txt > real.tot
      paste -d' ' sim.tot real.tot
      [ "$(wc -l < sim.tot)" = 4 ]
      paste -d' ' sim.tot real.tot | awk '{
        for (i = 1; i <= NF; ++i) { split($i, kv, "="); v[i] = kv[2] }
        half = NF / 2
        for (i = 1; i < half; ++i) if (v[i] != v[i + half]) { print "differs: " $i " vs " $(i + half); bad = 1 }
        a = v[half]; b = v[NF]
        if (a < 0.9 * b || a > 1.1 * b) { print "asks differ: " a " vs " b; bad = 1 }
      } END { exit bad }'
    }
    compare -nx 512 -ny 128 -px 8 -py 1 -iters 20 -ll:cpu 1 --trace none
    compare -nx 512 -ny 128 -px 8 -py 1 -iters 20 -ll:cpu 1 --trace manual
    compare -nx 256 -ny 256 -px 4 -py 2 -iters 20 -ll:cpu 2 -ll:numa 2 --trace manual
    # 100 shards (more memories than a mask held; the asks once stopped at shard 63): one
    # process's checksum, and an interior shard past 64 records what one below 64 does
    # (points, copies, bytes; no asks — every access waits by data).
    args="-nx 6400 -ny 32 -px 200 -py 1 -iters 10 -ll:cpu 1 --trace manual"
    want=$("$bin/stencil" $args | grep -o 'checksum=[0-9a-f]*')
    "$bin/stencil" $args -lg:simulate_shards 100 -lg:evtrace sim100.txt | grep -q "$want verified=1"
    "$bin/reprise-evtrace" totals sim100.txt > sim100.tot
    [ "$(wc -l < sim100.tot)" = 100 ]
    low=$(grep '^shard=50 ' sim100.tot | cut -d' ' -f2-)
    high=$(grep '^shard=90 ' sim100.tot | cut -d' ' -f2-)
    echo "shard 50: $low; shard 90: $high"
    [ -n "$low" ] && [ "$low" = "$high" ] && echo "$low" | grep -q 'copies=[1-9]'
    # Under mpirun it is a clear error, not a hang.
    out=$("$mpirun" -np 2 --oversubscribe "$bin/stencil" -lg:simulate_shards 4 2>&1) && exit 1
    echo "$out" | grep -q "one process plays the shards"
    echo "simulate_shards ok"
    ;;
  whatif_known)
    # Hand-written traces whose times follow from the platform alone.
    # One shard, 2 cores: per iteration 4 points of 1 ms on 2 cores, then 1 of 0.5 ms: 2.5 ms.
    out=$("$bin/reprise-whatif" "$here/known_single.evtrace" --platform cores=2 --means)
    echo "$out"
    echo "$out" | grep -Eq "iter_s=0\.0025(0|00[0-9]*)? "
    # Two shards exchanging 1 MB each iteration over 10 us, 1 GB/s links, then 2 ms of work:
    # 1.01 ms for the data (both directions at once) + 2 ms = 3.01 ms per iteration.
    out=$("$bin/reprise-whatif" "$here/known_exchange.evtrace" --platform lat=10us,bw=1GBps --means)
    echo "$out"
    echo "$out" | awk '{ for (i = 1; i <= NF; ++i) if ($i ~ /^iter_s=/) { split($i, kv, "="); v = kv[2] } }
                       END { exit !(v > 0.00300 && v < 0.00303) }'
    # Each shard's progress thread polls for 1 ms after a message, on the one core its node
    # has: the 2 ms of work after the data get half the core for 1 ms, 3.51 ms in all.
    out=$("$bin/reprise-whatif" "$here/known_exchange.evtrace" --platform lat=10us,bw=1GBps,cores=1,poll=1ms --means)
    echo "$out"
    echo "$out" | awk '{ for (i = 1; i <= NF; ++i) if ($i ~ /^iter_s=/) { split($i, kv, "="); v = kv[2] } }
                       END { exit !(v > 0.00350 && v < 0.00352) }'
    # The same run, its shards' records compressed into different loops (two groups): each
    # shard replays its own, the same prediction.
    out=$("$bin/reprise-whatif" "$here/known_exchange_two_groups.evtrace" --platform lat=10us,bw=1GBps --means)
    echo "$out"
    echo "$out" | awk '{ for (i = 1; i <= NF; ++i) if ($i ~ /^iter_s=/) { split($i, kv, "="); v = kv[2] } }
                       END { exit !(v > 0.00300 && v < 0.00303) }'
    # Groups that unroll to different op streams: an error naming them.
    sed '0,/loop 25/s//loop 24/' "$here/known_exchange_two_groups.evtrace" > uneven.evtrace
    out=$("$bin/reprise-whatif" uneven.evtrace --platform cores=2 2>&1) && exit 1
    echo "$out" | grep -q "shard 1 recorded 50 ops, shard 0 51"
    # Other rank counts come from shard classes that share one group; a trace whose classes
    # do not is predicted at its recorded count only.
    "$bin/reprise-whatif" "$here/known_ring_two_groups.evtrace" --platform cores=1 --means | grep -q "ranks=3 "
    out=$("$bin/reprise-whatif" "$here/known_ring_two_groups.evtrace" --platform cores=1 --ranks 8 2>&1) && exit 1
    echo "$out" | grep -q "loops differ in shape (2 groups)"
    # Weak scaling to 64 shards: the interior shards behave like the recorded ones.
    out=$("$bin/reprise-whatif" "$here/known_exchange.evtrace" --platform lat=10us,bw=1GBps --means --ranks 64 2>&1) && exit 1
    echo "$out" | grep -q "no interior shard"
    # Bad input: a clear error, no crash.
    out=$("$bin/reprise-whatif" "$here/known_single.evtrace" --platform cores=2,bogus=1 2>&1) && exit 1
    echo "$out" | grep -q "unknown key 'bogus'"
    out=$("$bin/reprise-whatif" /nonexistent.evtrace --platform cores=2 2>&1) && exit 1
    echo "$out" | grep -q "cannot read"
    echo "whatif ok"
    ;;
  *)
    echo "unknown mode $mode" >&2
    exit 2
    ;;
esac

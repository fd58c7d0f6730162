#!/usr/bin/env python3
"""Timesteps of a reprise-taskbench run, in chunks: how long each chunk's timesteps took and how
busy the application and utility threads were meanwhile (from a -lg:prof timeline).

    reprise-taskbench ... -lg:prof run.json
    tools/experiments/step_phases.py run.json [--chunk 500]

A timestep (one launch) ends when the last of its points ends. With -lg:window 16777216 the application
issues every launch at once, so the chunks after its burst show the workers' lock-step alone.
(The profile's own cost is included: compare chunks of one run, not runs with and without it;
the first chunk also holds the profiler's start-up, milliseconds that an unprofiled run has not.)
"""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("profile")
    p.add_argument("--chunk", type=int, default=500)
    a = p.parse_args()
    with open(a.profile) as f:
        d = json.load(f)
    events = d["traceEvents"] if isinstance(d, dict) else d
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    # Per launch (one per timestep), when its last point ended. (By launch, not by thread: an
    # idle worker may run another's points, -ll:steal_ns.)
    launch_end = {}
    for e in spans:
        if e["name"].startswith("task_bench_point"):
            op = e["args"]["op"]
            launch_end[op] = max(launch_end.get(op, 0), e["ts"] + e["dur"])
    if not launch_end:
        sys.exit("no task_bench_point spans in this profile")
    step_end = [launch_end[op] for op in sorted(launch_end)]
    steps = len(step_end)
    # The control threads' own work (their waits are not work).
    control = [e for e in spans if names.get(e["tid"]) in ("app", "util")
               and not e["name"].startswith(("wait", "window"))]
    print(f"{'timesteps':>13} {'us/step':>8} {'app+util busy us':>17} {'of us':>8}")
    for c in range(0, steps - 1, a.chunk):
        last = min(c + a.chunk, steps - 1)
        t0, t1 = step_end[c], step_end[last]
        busy = sum(min(e["ts"] + e["dur"], t1) - max(e["ts"], t0) for e in control
                   if e["ts"] < t1 and e["ts"] + e["dur"] > t0)
        print(f"{c:>6}-{last:<6} {(t1 - t0) / (last - c):8.3f} {busy:17.0f} {t1 - t0:8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

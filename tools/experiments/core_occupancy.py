#!/usr/bin/env python3
"""Which thread held each core, over time: a run recorded with the scheduler's switch events.

    tools/experiments/core_occupancy.py [--bucket-us 100] -- COMMAND [ARGS...]
    tools/experiments/core_occupancy.py --data perf.data [--bucket-us 100]

Runs COMMAND under `perf record -a -e sched:sched_switch` (system-wide: a core's idle time shows
as `swapper`), then prints each thread's time on each core and, per core, one character per
bucket for the thread that held it longest: `s` idle, `r` the application's main thread, the
fourth letter of a runtime thread's name (`rp-cpu0` -> `c`, `rp-util` -> `u`), else the first
letter of the command. The timeline starts at the first switch of a runtime thread (`rp-*`).
Needs perf and root (or perf_event_paranoid <= -1). Why: the lock-step of a stencil's workers
stalls while the application and utility threads hold a core; this shows when and where.
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

SWITCH = re.compile(r"\s*\S.*?\s+\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch:\s+prev_comm=(.*?) "
                    r"prev_pid=\d+ .*prev_state=\S+ ==> next_comm=(.*?) next_pid=")


def switches(data):
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,cpu,time,event,trace"],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = SWITCH.match(line)
        if m:
            yield int(m.group(1)), float(m.group(2)) * 1e6, m.group(3), m.group(4)


def letter(thread, main):
    if thread.startswith("swapper"):
        return "s"
    if thread.startswith("rp-") and len(thread) > 3:
        return thread[3]
    if main and thread.startswith(main[:15]):
        return "r"
    return thread[0]


def report(data, bucket_us, main):
    segments = collections.defaultdict(list)  # core -> [(begin, end, thread)]
    last = {}
    start = None
    for core, t, prev, nxt in switches(data):
        if start is None and (prev.startswith("rp-") or nxt.startswith("rp-")):
            start = t
        if core in last and start is not None and t > max(last[core], start):
            segments[core].append((max(last[core], start), t, prev))
        last[core] = t
    if start is None:
        sys.exit("no runtime thread (rp-*) switched in this recording")
    end = max(e for segs in segments.values() for _, e, _ in segs)
    print(f"timeline: {end - start:.0f} us from the first runtime thread's switch")
    held = collections.Counter()
    for core, segs in segments.items():
        for b, e, th in segs:
            held[(core, th)] += e - b
    for (core, th), us in sorted(held.items()):
        print(f"core {core}  {th:<18} {us:9.1f} us")
    print(f"per core, one character per {bucket_us} us (s: idle, r: application, c/u: workers, "
          "utility)")
    for core in sorted(segments):
        row = []
        for b0 in range(int(start), int(end), bucket_us):
            c = collections.Counter()
            for b, e, th in segments[core]:
                overlap = min(e, b0 + bucket_us) - max(b, b0)
                if overlap > 0:
                    c[th] += overlap
            row.append(letter(c.most_common(1)[0][0], main) if c else ".")
        print(f"{core:>4} {''.join(row)}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", help="an existing perf.data instead of running a command")
    p.add_argument("--bucket-us", type=int, default=100)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = [c for c in a.command if c != "--"]
    if a.data:
        report(a.data, a.bucket_us, None)
        return 0
    if not cmd:
        p.error("give a command (after --) or --data")
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        subprocess.run(["perf", "record", "-q", "-a", "-e", "sched:sched_switch", "-o", data, "--"]
                       + cmd, check=True)
        report(data, a.bucket_us, os.path.basename(cmd[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

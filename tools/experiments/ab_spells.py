#!/usr/bin/env python3
"""Steady-state A/B runs of reprise-taskbench (or Task Bench) builds or flags, alternated run by
run, each run told calm or slow by the cross-core round trip probed before and after it.

    tools/experiments/ab_spells.py [--rounds 81] [--steps 8000] \\
        "base|/tmp/old-taskbench -width 2 -kernel compute_bound -iter 192 -ll:cpu 2" \\
        "new|build/bin/reprise-taskbench -width 2 -kernel compute_bound -iter 192 -ll:cpu 2"

This box has spells of slow cross-core transfers (docs/results.md, "Two-mode runs explained"):
seconds in which a timestep of two cores takes ~2x as long. A run counts as calm when both of
its probes are within --calm-factor of the first quartile of all probes, as slow when both are
beyond --slow-factor; the rest (a spell began or ended during it) count as neither. Each
variant's median (and quartiles) per kind, in microseconds per timestep (Elapsed Time over
-steps, which is appended to every command). One run is ~20 ms: 81 rounds of four variants take
about a minute. The calm medians of one pair moved by up to 3% from one set of rounds to the
next on the development box: repeat before trusting a smaller difference.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys


def probe(path):
    out = subprocess.run([path], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"roundtrip_ns=(\d+)", out).group(1))


def elapsed(cmd, steps):
    out = subprocess.run(cmd + ["-steps", str(steps)], capture_output=True, text=True)
    m = re.search(r"Elapsed Time ([0-9.e+-]+) seconds", out.stdout)
    if out.returncode != 0 or not m:
        sys.exit(f"ab_spells: {' '.join(cmd)} failed:\n{out.stdout}{out.stderr}")
    return float(m.group(1)) * 1e6 / steps


def summary(values):
    if not values:
        return "-"
    v = sorted(values)
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return f"{statistics.median(v):.3f} (n={len(v)} q1 {q[0]:.3f} q3 {q[2]:.3f})"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("variants", nargs="+", help='"label|command with flags" (no -steps)')
    p.add_argument("--rounds", type=int, default=81)
    p.add_argument("--steps", type=int, default=8000)
    p.add_argument("--probe", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "..", "..", "build", "bin",
                                                   "reprise-core-roundtrip"))
    p.add_argument("--calm-factor", type=float, default=2.0)
    p.add_argument("--slow-factor", type=float, default=4.0)
    a = p.parse_args()
    variants = []
    for v in a.variants:
        label, sep, cmd = v.partition("|")
        if not sep or not cmd.split():
            sys.exit(f'ab_spells: "{v}" is not "label|command"')
        variants.append((label, cmd.split()))
    runs = {label: [] for label, _ in variants}  # label -> [(us per step, probe before, after)]
    probes = []
    for _ in range(a.rounds):
        for label, cmd in variants:
            before = probe(a.probe)
            t = elapsed(cmd, a.steps)
            after = probe(a.probe)
            probes += [before, after]
            runs[label].append((t, before, after))
    q1 = statistics.quantiles(probes, n=4)[0] if len(probes) > 1 else probes[0]
    calm_max, slow_min = a.calm_factor * q1, a.slow_factor * q1
    print(f"PROBES n={len(probes)} q1_ns={q1:.0f} calm<={calm_max:.0f} slow>={slow_min:.0f}")
    for label, _ in variants:
        calm = [t for t, b, e in runs[label] if b <= calm_max and e <= calm_max]
        slow = [t for t, b, e in runs[label] if b >= slow_min and e >= slow_min]
        print(f"AB {label}: calm {summary(calm)}  slow {summary(slow)}  us/step")


if __name__ == "__main__":
    main()

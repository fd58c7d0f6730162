#!/usr/bin/env python3
"""METG(50%) of reprise-taskbench (and of Task Bench's MPI build) on this machine.

Sweeps the kernel's iterations from large to small for one graph, runs every system at each
size (interleaved, so that a change in the machine's load hits all of them alike), and
computes per run
  task granularity = elapsed time x cores / tasks        (Task Bench's definition)
  efficiency       = FLOP/s / peak FLOP/s                (peak: the best run of any system)
METG(50%) is the smallest granularity at which a system still reaches 50% efficiency,
interpolated (in log granularity) towards the next smaller size.

  tools/experiments/metg.py --bin build/bin/reprise-taskbench --cores 2 --type stencil_1d \\
      [--mpi PATH/task-bench/mpi/nonblock] [--modes none,manual,auto] [--radix 3] \\
      [--reps 3] [--bind] [--compare OTHER/reprise-taskbench] [--plot docs/figures/metg.png] \\
      [--csv out.csv]

--gate [PROBE] holds each run until the machine is calm: PROBE (default: reprise-core-roundtrip
beside --bin) measures the cross-core cache-line round trip before and after every run; a run
counts only if both are within --gate-factor of the first quartile of the round trips seen, else
it waits (up to --gate-wait seconds) and runs again. (On the shared virtual machines here the
round trip is ~75-95 ns, and 430-870 ns for spells of seconds, during which Reprise's
fine-grained chains take ~2x as long and MPI's less: spells that land on one system's runs would
bias the comparison.)

--compare runs every mode with a second build too (systems `MODE@compare`), in the same sweep:
a before/after figure that one noisy spell of the machine cannot bias.

Given --mpi, every Reprise system's line has `ratio_to_mpi`, its METG over MPI's (with
several rounds the median of each round's ratio).

--rounds N runs the whole sweep N times, one after another, and gives each system's median
METG over the rounds: on one core a slow spell lasting minutes moves a whole sweep (±40%
here), and a round's systems move together.

Prints one line per system: `METG system=... type=... cores=... metg_us=...`. The plot
(efficiency vs granularity) needs matplotlib: run with /usr/bin/python3 on Debian.
"""
import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import time

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def parse_run(text):
    t = re.search(r"Elapsed Time ([0-9.eE+-]+) seconds", text)
    f = re.search(r"FLOP/s ([0-9.eE+-]+)", text)
    n = re.search(r"Total Tasks (\d+)", text)
    if not (t and f and n):
        raise RuntimeError("no Task Bench report in the output:\n" + text[-2000:])
    return float(t.group(1)), float(f.group(1)), int(n.group(1))


def graph_flags(a, iters, steps):
    flags = ["-steps", str(steps), "-width", str(a.width or a.cores), "-type", a.type,
             "-kernel", "compute_bound", "-iter", str(iters)]
    if a.radix is not None:
        flags += ["-radix", str(a.radix)]
    return flags


def command(system, a, iters, steps):
    flags = graph_flags(a, iters, steps)
    # --bind: every system's threads on cores 0..C-1 only (Reprise's application and utility
    # threads included), so that "C cores" means the same for both.
    bind = ["taskset", "-c", f"0-{a.cores - 1}"] if a.bind else []
    if system == "mpi":
        return bind + ["mpirun", "-np", str(a.cores), "--oversubscribe", a.mpi] + flags
    mode, _, other = system.partition("@")
    binary = a.compare if other else a.bin
    return bind + [binary] + flags + ["--trace", mode, "-ll:cpu", str(a.cores)] + \
        a.runtime_flags


def run(system, a, iters, steps):
    env = dict(os.environ, **MPI_ENV)
    out = subprocess.run(command(system, a, iters, steps), capture_output=True, text=True,
                         env=env, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{system} failed ({out.returncode}):\n{out.stdout[-1000:]}"
                           f"{out.stderr[-1000:]}")
    return parse_run(out.stdout)


class Gate:
    """Runs a command only while the cross-core round trip is calm (--gate): within `factor` of
    the first quartile of the round trips seen so far (not the least one: spells of a few
    tens of ns come too, and would hold the sweep for good)."""

    def __init__(self, probe, factor, max_wait_s):
        self.probe, self.factor, self.max_wait_s = probe, factor, max_wait_s
        self.seen = []
        for _ in range(5):
            self.measure()
            time.sleep(0.2)
        self.held = self.reruns = self.uncalm = 0
        self.waited_s = 0.0

    def reference(self):
        return sorted(self.seen)[len(self.seen) // 4]

    def measure(self):
        out = subprocess.run([self.probe], capture_output=True, text=True, timeout=60)
        m = re.search(r"roundtrip_ns=(\d+)", out.stdout)
        if out.returncode != 0 or not m:
            raise RuntimeError(f"--gate: {self.probe} failed:\n{out.stdout}{out.stderr}")
        self.seen.append(int(m.group(1)))
        return self.seen[-1]

    def is_calm(self):
        ns = self.measure()
        return ns <= self.factor * self.reference()

    def wait_for_calm(self):
        t0 = time.monotonic()
        if not self.is_calm():
            self.held += 1
            while time.monotonic() - t0 < self.max_wait_s and not self.is_calm():
                time.sleep(0.5)
        self.waited_s += time.monotonic() - t0

    def run(self, fn):
        for attempt in range(4):
            self.wait_for_calm()
            result = fn()
            if self.is_calm():
                return result
            if attempt < 3:
                self.reruns += 1
        self.uncalm += 1  # (kept: a machine that never calms down still gives a figure)
        return result

    def summary(self):
        ref = self.reference()
        slow = sum(1 for ns in self.seen if ns > self.factor * ref)
        return (f"GATE reference_roundtrip_ns={ref} threshold_ns={self.factor * ref:.0f} "
                f"probes={len(self.seen)} slow_probes={slow} held={self.held} "
                f"waited_s={self.waited_s:.1f} reruns={self.reruns} uncalm_runs={self.uncalm}")


def metg(points, peak):
    """points: [(granularity_us, flops)] sorted by decreasing granularity. The smallest
    granularity still at 50% efficiency or more; interpolated (in log granularity) towards the
    next smaller size, if that one is below 50% (a noisy dip at a larger size does not count).
    Returns (METG, bound): bound is "upper" where the system was still efficient at the smallest
    size tried (its METG is at most that: sweep further down, --min-log2), "lower" where it was
    never efficient, else ""."""
    eff = [(g, f / peak) for g, f in points]
    ok = [i for i, (_, e) in enumerate(eff) if e >= 0.5]
    if not ok:
        return eff[0][0], "lower"  # never efficient: the largest size tried
    i = ok[-1]
    g0, e0 = eff[i]
    if i + 1 == len(eff):
        return g0, "upper"  # still efficient at the smallest size tried
    g1, e1 = eff[i + 1]
    x = (e0 - 0.5) / (e0 - e1) if e0 != e1 else 0.0
    return math.exp(math.log(g0) + x * (math.log(g1) - math.log(g0))), ""


def sweep(a, systems, gate, tag):
    """One sweep from the largest size to the smallest: system -> [(iters, granularity_us,
    flops)], each the median of --reps runs."""
    results = {s: [] for s in systems}
    for k in range(a.max_log2, a.min_log2 - 1, -1):
        iters = 1 << k
        # About 2^22 iterations of kernel per task-column: short runs at large sizes.
        steps = max(50, min(a.max_steps, (1 << 22) // iters))
        # Repetitions go round the systems (not one system's in a row): a slow spell of a
        # shared machine then falls on every system alike.
        by_system = {s: [] for s in systems}
        for _ in range(a.reps):
            for s in systems:
                go = lambda: run(s, a, iters, steps)  # noqa: E731
                elapsed, flops, tasks = gate.run(go) if gate else go()
                by_system[s].append((elapsed * a.cores / tasks * 1e6, flops))
        for s in systems:
            runs = by_system[s]
            g = statistics.median(r[0] for r in runs)
            f = statistics.median(r[1] for r in runs)
            results[s].append((iters, g, f))
            print(f"RUN {tag}system={s} type={a.type} cores={a.cores} iter={iters} "
                  f"steps={steps} granularity_us={g:.3f} flops={f:.4e}", flush=True)
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default="build/bin/reprise-taskbench")
    p.add_argument("--mpi", help="Task Bench's MPI binary (e.g. mpi/nonblock), run alongside")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--width", type=int, help="graph width (default: --cores)")
    p.add_argument("--type", default="stencil_1d")
    p.add_argument("--radix", type=int)
    p.add_argument("--modes", default="none,manual,auto")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--rounds", type=int, default=1,
                   help="whole sweeps, one after another; METG is the median of the rounds' "
                        "(and ratio_to_mpi the median of each round's ratio)")
    p.add_argument("--max-log2", type=int, default=16, help="largest iterations, as a power of 2")
    p.add_argument("--min-log2", type=int, default=2)
    p.add_argument("--max-steps", type=int, default=1000,
                   help="timesteps of the runs at small sizes (fewer at large ones): 1,000 "
                        "runs a fine-grained graph in ~1 ms, which one preemption of a thread "
                        "can double; 10,000 makes such spells a tenth as large")
    p.add_argument("--runtime-flags", default="", help="extra flags for reprise-taskbench")
    p.add_argument("--bind", action="store_true",
                   help="run every system under taskset on cores 0..C-1 (without it Reprise's "
                        "application and utility threads may use the machine's other cores)")
    p.add_argument("--compare", help="another reprise-taskbench: every mode runs with it too")
    p.add_argument("--compare-label", default="compared build",
                   help="what the plot's legend calls the --compare runs")
    p.add_argument("--gate", nargs="?", const="", metavar="PROBE",
                   help="run only while the cross-core round trip is calm (see above)")
    p.add_argument("--gate-factor", type=float, default=2.0)
    p.add_argument("--gate-wait", type=float, default=60.0, help="seconds, at most, per run")
    p.add_argument("--plot")
    p.add_argument("--csv")
    a = p.parse_args()
    if a.rounds < 1:
        p.error("--rounds must be at least 1")
    if a.max_steps < 50:
        p.error("--max-steps must be at least 50")
    a.runtime_flags = a.runtime_flags.split()
    modes = [m for m in a.modes.split(",") if m]
    systems = modes + ([f"{m}@compare" for m in modes] if a.compare else []) + \
        (["mpi"] if a.mpi else [])
    gate = None
    if a.gate is not None:
        probe = a.gate or os.path.join(os.path.dirname(os.path.abspath(a.bin)),
                                       "reprise-core-roundtrip")
        gate = Gate(probe, a.gate_factor, a.gate_wait)
    rounds = []  # per round: system -> [(iters, granularity_us, flops)]
    for r in range(a.rounds):
        rounds.append(sweep(a, systems, gate, f"round={r} " if a.rounds > 1 else ""))
    if gate:
        print(gate.summary(), flush=True)
    # Each round's METG against its own peak; with several rounds, the median over rounds (and
    # of each round's ratio to MPI: a slow spell moves a round's figures together).
    per_round = []  # per round: system -> (METG, bound)
    for r, res in enumerate(rounds):
        peak_r = max(f for rs in res.values() for _, _, f in rs)
        per_round.append({s: metg([(g, f) for _, g, f in res[s]], peak_r) for s in systems})
        if a.rounds > 1:
            print(f"ROUND {r} " + " ".join(f"{s}={per_round[r][s][0]:.3f}" for s in systems),
                  flush=True)
    # The curves (plot, CSV): each point's median over the rounds.
    results = {s: [(it, statistics.median(res[s][i][1] for res in rounds),
                    statistics.median(res[s][i][2] for res in rounds))
                   for i, (it, _, _) in enumerate(rounds[0][s])] for s in systems}
    peak = max(f for rs in results.values() for _, _, f in rs)
    for s in systems:
        pts = [(g, f) for _, g, f in results[s]]
        value = statistics.median(pr[s][0] for pr in per_round)
        bounds = {pr[s][1] for pr in per_round}
        bound = bounds.pop() if len(bounds) == 1 else ""
        note = {"upper": " bound=upper (still efficient at the smallest size: at most this)",
                "lower": " bound=lower (never efficient: at least this)"}.get(bound, "")
        if a.rounds > 1:
            note = f" rounds={a.rounds}" + note
        if "mpi" in systems and s != "mpi":
            ratio = statistics.median(pr[s][0] / pr["mpi"][0] for pr in per_round)
            note += f" ratio_to_mpi={ratio:.2f}"
        print(f"METG system={s} type={a.type} cores={a.cores} metg_us={value:.3f} "
              f"peak_flops={max(f for _, f in pts):.4e}{note}")
    if a.csv:
        with open(a.csv, "w") as out:
            out.write("system,iter,granularity_us,flops,efficiency\n")
            for s in systems:
                for it, g, f in results[s]:
                    out.write(f"{s},{it},{g},{f},{f / peak}\n")
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4))
        colors = {}  # a mode and its compared build in one colour
        for s in systems:
            mode, _, other = s.partition("@")
            colors.setdefault(mode, f"C{len(colors)}")
            label = "mpi" if s == "mpi" else f"reprise {mode}"
            if other:
                label += f" ({a.compare_label})"
            ax.plot([g for _, g, _ in results[s]], [f / peak for _, _, f in results[s]],
                    marker="." if other else "o", linestyle="--" if other else "-",
                    alpha=0.5 if other else 1.0, color=colors[mode], label=label)
        ax.axhline(0.5, color="grey", linestyle=":")
        ax.set_xscale("log")
        ax.set_xlabel("task granularity (µs)")
        ax.set_ylabel("efficiency")
        ax.set_title(f"{a.type}, width {a.width or a.cores}, {a.cores} cores")
        ax.legend()
        fig.tight_layout()
        fig.savefig(a.plot, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())

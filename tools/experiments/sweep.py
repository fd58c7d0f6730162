#!/usr/bin/python3
"""Reprise experiment harness: runs app x size x ranks x mode, writes every RESULT line to a
CSV (plus the per-iteration coverage timelines), prints a summary table, and draws the
paper's plots: throughput vs ranks per size and mode (Apophenia Figs. 6-8), iterations until
the auto mode's steady state (Fig. 9) and coverage over time for one run (Fig. 10).

    /usr/bin/python3 tools/experiments/sweep.py --apps stencil,jacobi,cfd --sizes s,m \\
        --modes none,manual,auto --ranks 1 --out results/sweep

With --whatif R1,R2,... the runs at the largest of --ranks (at least 3 for rank counts above
it) also record a compressed event trace (-lg:evtrace), and reprise-whatif replays it on
--platform for every R, weak scaling (each rank keeps its work) and strong scaling (the work
divided among R): predicted iterations/s and parallel efficiency vs ranks next to the measured
points, the platform written on the plot (whatif_<app>_<size>.png, whatif.csv):

    /usr/bin/python3 tools/experiments/sweep.py --apps stencil --sizes s --ranks 1,4 \
        --whatif 1,4,16,64,256,1024 --platform cores=4,lat=1us,bw=10GBps --out results/whatif

With --simulate S the traces come instead from one more run per app, size and mode in a
single process that plays S shards (-lg:simulate_shards S: the per-shard structure of an
S-rank run, without mpirun; any S: 1,024 shards of a small stencil take ~18 s).

Plots need Debian's python3-matplotlib, which only /usr/bin/python3 sees; without it the CSVs
and the table are still written. Ranks above 1 run under mpirun (control replication).
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import time

# Problem sizes: arguments per app and size. xs is for smoke tests.
SIZES = {
    "stencil": {
        "xs": "-nx 64 -ny 64 -px 2 -py 2 -iters 60",
        "s": "-nx 256 -ny 256 -px 4 -py 4 -iters 400",
        "m": "-nx 1024 -ny 1024 -px 4 -py 4 -iters 500",
        "l": "-nx 4096 -ny 4096 -px 4 -py 4 -iters 40",
        "w": "-nx 256 -ny 256 -px 4 -py 4 -iters 100",  # what-if figures: short, 16 tiles
    },
    "jacobi": {
        "xs": "-n 32 -tiles 2 -iters 60",
        "s": "-n 64 -iters 600",
        "m": "-n 1024 -iters 1000",
        "l": "-n 4096 -iters 20",
    },
    "jacobi2d": {
        "xs": "-n 32 -px 2 -py 2 -iters 60",
        "s": "-n 128 -px 4 -py 4 -iters 2000",
        "m": "-n 1024 -px 4 -py 4 -iters 1000",
        "l": "-n 4096 -px 4 -py 4 -iters 20",
    },
    "cfd": {
        "xs": "-nx 17 -ny 13 -nit 5 -tol 1e-2",
        "s": "-nx 41 -ny 41 -nit 50 -tol 1e-3",
        "m": "-nx 257 -ny 257 -nit 50 -max_steps 200",
        "l": "-nx 1025 -ny 1025 -nit 50 -max_steps 20",
    },
}
# Modes an app offers (cfd has no manual placement).
MODES = {"stencil": ["none", "manual", "auto"], "jacobi": ["none", "manual", "auto"],
         "jacobi2d": ["none", "manual", "auto"], "cfd": ["none", "auto"]}


def parse_keys(line):
    out = {}
    for tok in line.split()[1:]:
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k] = v
    return out


# The task launched once per program iteration (reprise-whatif --iter-task), where there is one.
ITER_TASK = {"stencil": "stencil", "jacobi2d": "sweep"}


def run_one(bindir, app, size, mode, ranks, cpus, timeout, evtrace=None, simulate=0):
    cmd = [os.path.join(bindir, app)] + SIZES[app][size].split()
    cmd += ["--trace", mode, "-ll:cpu", str(cpus), "-lg:coverage_log"]
    if evtrace:
        cmd += ["-lg:evtrace", evtrace]
    if simulate:
        cmd += ["-lg:simulate_shards", str(simulate)]
    if ranks > 1:
        mpirun = shutil.which("mpirun")
        if not mpirun:
            raise RuntimeError("ranks > 1 needs mpirun")
        cmd = [mpirun, "-np", str(ranks), "--oversubscribe"] + cmd
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    wall = time.time() - t0
    result, warmup, timeline = None, None, []
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result = parse_keys(line)
        elif line.startswith("WARMUP "):
            warmup = parse_keys(line)
        elif line.startswith("COVERAGE "):
            t = parse_keys(line)
            if all(k in t for k in ("iter", "points", "replayed")):  # (ranks' lines may interleave)
                timeline.append(t)
    if proc.returncode != 0 or result is None:
        raise RuntimeError("%s failed (exit %d):\n%s%s" %
                           (" ".join(cmd), proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))
    result["size"] = size
    result["wall_s"] = "%.2f" % wall
    result["command"] = " ".join(cmd)
    if warmup:
        result["warmup_iters"] = warmup.get("iterations", "")
        result["steady_coverage"] = warmup.get("level", "")
    return result, timeline


def summary(rows):
    by = {}
    for r in rows:
        by[(r["app"], r["size"], r["ranks"], r["mode"])] = r
    print("\n%-9s %-4s %5s %-7s %11s %8s %8s %9s %7s" %
          ("app", "size", "ranks", "mode", "iter/s", "coverage", "vs none", "vs manual", "warmup"))
    for (app, size, ranks, mode), r in sorted(by.items()):
        ips = float(r["iter_per_s"])
        none = by.get((app, size, ranks, "none"))
        manual = by.get((app, size, ranks, "manual"))
        vs_none = "%.2fx" % (ips / float(none["iter_per_s"])) if none else "-"
        vs_manual = "%.2f" % (ips / float(manual["iter_per_s"])) if manual else "-"
        warm = r.get("warmup_iters", "") if mode != "none" else ""
        print("%-9s %-4s %5s %-7s %11.1f %8s %8s %9s %7s" %
              (app, size, ranks, mode, ips, r["coverage"], vs_none, vs_manual, warm))


def plots(rows, timelines, out, coverage_run):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("sweep: matplotlib not found (run with /usr/bin/python3 and python3-matplotlib); "
              "no plots")
        return []
    made = []
    colors = {"none": "tab:red", "manual": "tab:blue", "auto": "tab:green"}
    apps = sorted({r["app"] for r in rows})
    for app in apps:
        sizes = [s for s in ["xs", "s", "w", "m", "l"] if any(r["app"] == app and r["size"] == s for r in rows)]
        fig, axes = plt.subplots(1, len(sizes), figsize=(4 * len(sizes), 3.2), squeeze=False)
        for ax, size in zip(axes[0], sizes):
            for mode in MODES[app]:
                pts = sorted((int(r["ranks"]), float(r["iter_per_s"])) for r in rows
                             if r["app"] == app and r["size"] == size and r["mode"] == mode)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=mode,
                            color=colors[mode])
            ax.set_title("%s, size %s" % (app, size))
            ax.set_xlabel("ranks")
            ax.set_ylabel("iterations / s")
            ax.set_xscale("log", base=2)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out, "throughput_%s.png" % app)
        fig.savefig(path, dpi=120)
        plt.close(fig)
        made.append(path)
    auto = [r for r in rows if r["mode"] == "auto" and r.get("warmup_iters", "") not in ("", None)]
    if auto:
        fig, ax = plt.subplots(figsize=(6, 3.2))
        labels = ["%s/%s/%sr" % (r["app"], r["size"], r["ranks"]) for r in auto]
        vals = [max(int(r["warmup_iters"]), 0) for r in auto]
        ax.bar(range(len(auto)), vals, color="tab:green")
        ax.set_xticks(range(len(auto)))
        ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("iterations until steady state")
        ax.set_title("Automatic tracing warm-up (cf. Apophenia Fig. 9)")
        fig.tight_layout()
        path = os.path.join(out, "warmup.png")
        fig.savefig(path, dpi=120)
        plt.close(fig)
        made.append(path)
    if coverage_run in timelines:
        tl = timelines[coverage_run]
        fig, ax = plt.subplots(figsize=(7, 3))
        it = [int(t["iter"]) for t in tl]
        frac = [int(t["replayed"]) / max(int(t["points"]), 1) for t in tl]
        ax.fill_between(it, frac, step="mid", color="tab:green", alpha=0.6)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("iteration")
        ax.set_ylabel("fraction of tasks replayed")
        ax.set_title("Coverage over time: %s (cf. Apophenia Fig. 10)" % "/".join(coverage_run))
        fig.tight_layout()
        path = os.path.join(out, "coverage_%s.png" % "_".join(coverage_run))
        fig.savefig(path, dpi=120)
        plt.close(fig)
        made.append(path)
    return made


def whatif(bindir, trace, app, platform, ranks, strong):
    cmd = [os.path.join(bindir, "reprise-whatif"), trace, "--platform", platform,
           "--ranks", str(ranks)]
    if strong:
        cmd.append("--strong")
    if app in ITER_TASK:
        cmd += ["--iter-task", ITER_TASK[app]]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    line = next((l for l in proc.stdout.splitlines() if l.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), proc.stderr[-2000:]))
    out = parse_keys(line)
    out["command"] = " ".join(cmd)
    return out


def whatif_plots(pred, rows, out, platform):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    made = []
    colors = {"none": "tab:red", "manual": "tab:blue", "auto": "tab:green"}
    for app, size in sorted({(p["app"], p["size"]) for p in pred}):
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
        for mode in MODES[app]:
            for scaling, style in (("weak", "-"), ("strong", "--")):
                pts = sorted((int(p["ranks"]), 1.0 / float(p["iter_s"])) for p in pred
                             if p["app"] == app and p["size"] == size and p["mode"] == mode
                             and p["scaling"] == scaling and float(p["iter_s"]) > 0)
                if not pts:
                    continue
                r = [x for x, _ in pts]
                ips = [y for _, y in pts]
                eff = [y / ips[0] if scaling == "weak" else y / (ips[0] * x / r[0])
                       for x, y in pts]
                axes[0 if scaling == "weak" else 1].plot(r, ips, style, marker="o", ms=3,
                                                         color=colors[mode], label=mode)
                axes[2].plot(r, eff, style, color=colors[mode], label="%s %s" % (mode, scaling))
            meas = sorted((int(x["ranks"]), float(x["iter_per_s"])) for x in rows
                          if x["app"] == app and x["size"] == size and x["mode"] == mode)
            if meas:
                axes[0].plot([m[0] for m in meas], [m[1] for m in meas], "x", color=colors[mode],
                             ms=8, label="%s measured here" % mode)
        axes[0].set_title("%s %s: weak scaling (predicted)" % (app, size))
        axes[1].set_title("strong scaling (predicted)")
        axes[2].set_title("parallel efficiency")
        for ax in axes[:2]:
            ax.set_ylabel("iterations / s")
            ax.set_yscale("log")
        for ax in axes:
            ax.set_xscale("log", base=2)
            ax.set_xlabel("ranks")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle("reprise-whatif on SimGrid, platform %s" % platform, fontsize=9)
        fig.tight_layout()
        path = os.path.join(out, "whatif_%s_%s.png" % (app, size))
        fig.savefig(path, dpi=120)
        plt.close(fig)
        made.append(path)
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--apps", default="stencil,jacobi,jacobi2d,cfd")
    ap.add_argument("--sizes", default="s,m")
    ap.add_argument("--modes", default="none,manual,auto")
    ap.add_argument("--ranks", default="1")
    ap.add_argument("--cpus", type=int, default=2, help="-ll:cpu per rank")
    ap.add_argument("--repeat", type=int, default=1, help="runs per point; the median is kept")
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin"))
    ap.add_argument("--out", default="results/sweep")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--whatif", default="", help="rank counts to predict with reprise-whatif")
    ap.add_argument("--simulate", type=int, default=0,
                    help="record the what-if traces in one process playing this many shards")
    ap.add_argument("--platform", default="cores=4,lat=1us,bw=10GBps",
                    help="reprise-whatif's --platform for the predictions")
    ap.add_argument("--coverage-run", default="", help="app,size,ranks for the coverage plot "
                    "(default: the first auto run)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    apps = args.apps.split(",")
    for a in apps:
        if a not in SIZES:
            sys.exit("sweep: unknown app %s (have %s)" % (a, ", ".join(SIZES)))
    plan = [(a, s, int(r), m) for a in apps for s in args.sizes.split(",")
            for r in args.ranks.split(",") for m in args.modes.split(",") if m in MODES[a]]
    for a, s, _, _ in plan:
        if s not in SIZES[a]:
            sys.exit("sweep: unknown size %s (have %s)" % (s, ", ".join(SIZES[a])))
    rows, timelines = [], {}
    traced_ranks = max(int(r) for r in args.ranks.split(","))
    traces = {}
    for k, (app, size, ranks, mode) in enumerate(plan, 1):
        runs = []
        evtrace = None
        if args.whatif and ranks == traced_ranks and not args.simulate:
            evtrace = os.path.abspath(os.path.join(args.out, "evtrace_%s_%s_%s.txt" % (app, size, mode)))
            traces[(app, size, mode)] = evtrace
        for _ in range(args.repeat):
            runs.append(run_one(args.bin, app, size, mode, ranks, args.cpus, args.timeout, evtrace))
        runs.sort(key=lambda rt: float(rt[0]["iter_per_s"]))
        result, timeline = runs[len(runs) // 2]
        rows.append(result)
        if timeline:
            timelines[(app, size, str(ranks), mode)] = timeline
        print("[%d/%d] %s %s ranks=%d %s: %s iter/s, coverage %s, verified=%s (%ss)" %
              (k, len(plan), app, size, ranks, mode, result["iter_per_s"], result["coverage"],
               result["verified"], result["wall_s"]), flush=True)
    keys = ["app", "size", "ranks", "mode"]
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(args.out, "timelines.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["app", "size", "ranks", "mode", "iter", "points", "replayed"])
        for (app, size, ranks, mode), tl in timelines.items():
            for t in tl:
                w.writerow([app, size, ranks, mode, t["iter"], t["points"], t["replayed"]])
    summary(rows)
    if args.coverage_run:
        a, s, r = args.coverage_run.split(",")
        cov = (a, s, r, "auto")
    else:
        cov = next((key for key in timelines if key[3] == "auto"), None)
    made = plots(rows, timelines, args.out, cov)
    if args.whatif and args.simulate:
        for app, size, mode in sorted({(a, s, m) for a, s, _, m in plan}):
            trace = os.path.abspath(os.path.join(
                args.out, "evtrace_%s_%s_%s_sim%d.txt" % (app, size, mode, args.simulate)))
            run_one(args.bin, app, size, mode, 1, args.cpus, args.timeout, trace, args.simulate)
            traces[(app, size, mode)] = trace
            print("recorded %s %s %s playing %d shards" % (app, size, mode, args.simulate), flush=True)
    if args.whatif:
        pred = []
        for (app, size, mode), trace in sorted(traces.items()):
            for r in [int(x) for x in args.whatif.split(",")]:
                for scaling in ("weak", "strong"):
                    p = whatif(args.bin, trace, app, args.platform, r, scaling == "strong")
                    p.update(app=app, size=size, mode=mode, scaling=scaling)
                    pred.append(p)
                    print("whatif %s %s %s %s ranks=%d: %.3g iterations/s" %
                          (app, size, mode, scaling, r, 1.0 / max(float(p["iter_s"]), 1e-30)),
                          flush=True)
        with open(os.path.join(args.out, "whatif.csv"), "w", newline="") as f:
            keys = ["app", "size", "mode", "scaling", "ranks", "iter_s", "util_frac", "command"]
            w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
            w.writeheader()
            w.writerows(pred)
        made += whatif_plots(pred, rows, args.out, args.platform)
    print("\nsweep: wrote %s, %s%s" % (os.path.join(args.out, "results.csv"),
                                      os.path.join(args.out, "timelines.csv"),
                                      "".join(", " + p for p in made)))
    bad = [r for r in rows if r["verified"] != "1"]
    if bad:
        sys.exit("sweep: %d runs did not verify" % len(bad))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""How well reprise-whatif predicts runs on this machine, and what -lg:evtrace costs.

For each app and rank count: run it with -lg:evtrace, replay the trace with reprise-whatif on a
platform that describes this machine, and print the measured and predicted time per iteration
and the error. Then the recording overhead: the stencil with and without -lg:evtrace, side by
side, medians of --repeat runs.

    /usr/bin/python3 tools/experiments/whatif_accuracy.py [--bin build/bin] [--repeat 5]
        [--cores 2] [--lat 50us] [--poll 1ms] [--runs N]

On a machine without reprise-whatif (a borrowed one), --record-only DIR runs the apps and
keeps their traces and measured times in DIR; --predict-from DIR then predicts them here.

The machine: --cores cores shared by every rank's threads (mpirun --oversubscribe), so the
platform is cores=C,per_node=R,shared_util=1,workers=1, with --lat the latency of a message
between two ranks here (the MPI progress threads share the cores with everything else, so it
is far from the hardware's) and --poll how long a progress thread polls after a message (the
runtime's -ll:net_spin: on cores the ranks share, CPU their tasks do not get).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile

APPS = {
    # app: (arguments per rank count, --iter-task or None, modes)
    "stencil": (lambda r: "-nx %d -ny 256 -px %d -py 2 -iters 300" % (256 * r, 2 * r), "stencil",
                ["none", "manual", "auto"]),
    "jacobi2d": (lambda r: "-n 256 -px %d -py 2 -iters 300" % (2 * r), "sweep", ["manual", "auto"]),
    "cfd": (lambda r: "-nx 41 -ny 41 -nit 50 -tol 1e-3", None, ["auto"]),
}


def keys(line):
    return dict(tok.split("=", 1) for tok in line.split()[1:] if "=" in tok)


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    line = next((l for l in p.stdout.splitlines() if l.startswith("RESULT ")), None)
    if p.returncode != 0 or line is None:
        raise RuntimeError("%s failed:\n%s%s" % (" ".join(cmd), p.stdout[-1500:], p.stderr[-1500:]))
    return keys(line)


def app_cmd(bindir, app, ranks, mode, extra):
    args, _, _ = APPS[app]
    cmd = [os.path.join(bindir, app)] + args(ranks).split() + ["--trace", mode, "-ll:cpu", "1"] + extra
    if ranks > 1:
        # (-x: binaries that find their libraries through LD_LIBRARY_PATH, packed ones say)
        forward = ["-x", "LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else []
        cmd = [shutil.which("mpirun"), "-np", str(ranks), "--oversubscribe"] + forward + cmd
    return cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin"))
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--apps", default="stencil,jacobi2d,cfd")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--runs", type=int, default=1,
                    help="recordings per app, rank count and mode (medians compared)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--lat", default="50us")
    ap.add_argument("--poll", default="1ms")
    ap.add_argument("--record-only", metavar="DIR", help="run and keep traces and times in DIR")
    ap.add_argument("--predict-from", metavar="DIR", help="predict the runs kept in DIR")
    args = ap.parse_args()
    if args.runs > 1 and (args.record_only or args.predict_from):
        ap.error("--runs N records N times: not with --record-only or --predict-from (one each)")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    tmp = args.record_only or args.predict_from or tempfile.mkdtemp(prefix="whatif_accuracy_")
    os.makedirs(tmp, exist_ok=True)
    kept = {}  # trace file name -> (iterations, measured s per iteration)
    if args.predict_from:
        with open(os.path.join(tmp, "measured.txt")) as f:
            for line in f:
                name, iters, measured = line.split()
                kept[name] = (int(iters), float(measured))
    print("%-9s %5s %-7s %12s %12s %7s  %s" % ("app", "ranks", "mode", "measured us", "predicted us",
                                              "error", "platform"))
    errors = []
    for app in args.apps.split(","):
        _, iter_task, modes = APPS[app]
        for ranks in [int(r) for r in args.ranks.split(",")]:
            for mode in modes:
                name = "%s_%d_%s.txt" % (app, ranks, mode)
                trace = os.path.join(tmp, name)
                platform = "cores=%d,per_node=%d,shared_util=1,workers=1,lat=%s,poll=%s" % (
                    args.cores, ranks, args.lat, args.poll if ranks > 1 else "0")
                # --runs N: N recordings, each predicted; the medians are compared.
                measured_runs, predicted_runs, failure = [], [], None
                for _ in range(1 if args.predict_from or args.record_only else args.runs):
                    if args.predict_from:
                        if name not in kept:
                            break
                        iters, measured = kept[name]
                    else:
                        res = run(app_cmd(args.bin, app, ranks, mode, ["-lg:evtrace", trace]), env)
                        iters = int(res["iters"])
                        measured = float(res["time_s"]) / iters
                    measured_runs.append(measured)
                    if args.record_only:
                        with open(os.path.join(tmp, "measured.txt"), "a") as f:
                            f.write("%s %d %.9f\n" % (name, iters, measured))
                        continue
                    cmd = [os.path.join(args.bin, "reprise-whatif"), trace, "--platform", platform]
                    if iter_task:
                        cmd += ["--iter-task", iter_task]
                    try:
                        pred = run(cmd)
                    except RuntimeError as e:
                        failure = str(e).strip().splitlines()[-1][:100]
                        break
                    # Without a task launched once per iteration, the whole program's time per
                    # iteration (the app times its iterations only: slightly more than measured).
                    predicted_runs.append(
                        float(pred["iter_s"]) if iter_task else float(pred["total_s"]) / iters)
                if not measured_runs:
                    continue
                measured = statistics.median(measured_runs)
                if args.record_only:
                    print("%-9s %5d %-7s %12.1f" % (app, ranks, mode, measured * 1e6), flush=True)
                    continue
                if failure:
                    print("%-9s %5d %-7s %12.1f %12s %7s  %s" % (app, ranks, mode, measured * 1e6,
                          "-", "-", failure), flush=True)
                    continue
                predicted = statistics.median(predicted_runs)
                err = (predicted - measured) / measured
                errors.append(abs(err))
                print("%-9s %5d %-7s %12.1f %12.1f %+6.1f%%  %s" %
                      (app, ranks, mode, measured * 1e6, predicted * 1e6, 100 * err, platform),
                      flush=True)
    if errors:
        print("median |error| %.1f%%, max %.1f%%" %
              (100 * statistics.median(errors), 100 * max(errors)))
    if args.predict_from:
        return

    # Recording overhead: the stencil with and without -lg:evtrace, alternated.
    on, off = [], []
    for _ in range(args.repeat):
        for record, out in ((False, off), (True, on)):
            extra = ["-lg:evtrace", os.path.join(tmp, "overhead.txt")] if record else []
            cmd = app_cmd(args.bin, "stencil", 1, "manual", extra)
            out.append(float(run(cmd, env)["iter_per_s"]))
    print("recording overhead (stencil, 1 rank, manual, %d runs each): off %.0f, on %.0f "
          "iterations/s (median), on/off %.3f" %
          (args.repeat, statistics.median(off), statistics.median(on),
           statistics.median(on) / statistics.median(off)))


if __name__ == "__main__":
    main()

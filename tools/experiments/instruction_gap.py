#!/usr/bin/env python3
"""Instructions a Task Bench timestep costs outside its kernel: Reprise in its one-core layout
against Task Bench's MPI build (one rank), counted by callgrind, so that the gap behind the
one-core METG ratio can be followed without the box's noise.

    tools/experiments/instruction_gap.py --mpi PATH/task-bench/mpi/nonblock \\
        [--bin build/bin/reprise-taskbench] [--lengths 1000,3000] [--trace none] [--top N] \\
        -- TASKBENCH_FLAGS...
    e.g. ... -- -width 1 -type stencil_1d -kernel compute_bound -iter 16

At one core a timestep is the kernel plus what the system spends around it (Reprise: the
launch, its analysis, the point's run and completion, the task's accessors and the app's loop;
MPI: the loop, the dependence lookups and the point's input check). METG(50%) is where the
kernel takes as long as the rest, so where both run their instructions at a similar rate the
ratio of the rests tracks the METG ratio (on the 2-core box at 0.75-0.85 of it, ranking graphs
and modes alike: docs/results.md, 2026-12-02).

How each is counted, per timestep: the difference between two run lengths, divided by the
difference in timesteps. Reprise: inside apps::timed (the timed run only; its untimed warm-up
and reports are outside). Task Bench's MPI build: the whole program, less App::report_timing
(which walks every timestep once), divided by 2 (nonblock runs the graph twice, the first as a
warm-up). The kernel is the kernel functions' own instructions (Reprise:
taskbench's compute/busy_wait/memory, Task Bench: execute_kernel_*).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import locked_instructions  # noqa: E402  (its callgrind run of reprise-taskbench at one core)

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
# Exclusive costs of these functions are the kernel's.
REPRISE_KERNEL = re.compile(r"taskbench::\(anonymous namespace\)::"
                            r"(compute_avx2|compute_portable|busy_wait|memory)\(")
MPI_KERNEL = re.compile(r"\bexecute_kernel_\w+\(")
# Inclusive costs of these roots are outside Task Bench's timed loop yet grow with the steps.
MPI_OUTSIDE = re.compile(r"\bApp::report_timing\(")


def parse_annotate(text):
    """callgrind_annotate's output: (program total, {function: cost})."""
    total, costs = None, {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(.*)$", line)
        if not m:
            continue
        value, rest = int(m.group(1).replace(",", "")), m.group(2).strip()
        if rest.startswith("PROGRAM TOTALS"):
            total = value
        elif ":" in rest and total is not None:
            # "file:function [object]": the function's name, without its object.
            name = re.sub(r"\s+\[[^\]]*\]$", "", rest.split(":", 1)[1])
            costs[name] = costs.get(name, 0) + value
    if total is None:
        raise RuntimeError("callgrind_annotate printed no PROGRAM TOTALS")
    return total, costs


def matching(costs, pattern):
    return sum(v for k, v in costs.items() if pattern.search(k))


def per_step(counts, lengths, runs):
    """Per timestep from counts at two run lengths, over `runs` runs of the graph."""
    (l1, c1), (l2, c2) = zip(lengths, counts)
    return (c2 - c1) / (l2 - l1) / runs


def annotate(out, inclusive):
    args = ["callgrind_annotate", "--threshold=100", out]
    if inclusive:
        args.insert(1, "--inclusive=yes")
    return parse_annotate(subprocess.run(args, capture_output=True, text=True, check=True).stdout)


def callgrind_mpi(a, steps, flags, out):
    """Task Bench's MPI build, one rank, the whole program (valgrind runs the rank)."""
    cmd = ["mpirun", "-np", "1", "--oversubscribe", "valgrind", "--tool=callgrind",
           f"--callgrind-out-file={out}", a.mpi, "-steps", str(steps), *flags]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **MPI_ENV))
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-1500:]}")


def measure_reprise(a, flags, tmp):
    """Per timestep: all instructions, the kernel's, and each function's own (largest first)."""
    totals, kernels, costs = [], [], []
    for steps in a.lengths:
        out = os.path.join(tmp, f"reprise.{steps}")
        locked_instructions.callgrind(a.bin, steps, [*flags, "--trace", a.trace], out,
                                      by_address=False)
        total, own = annotate(out, inclusive=False)
        totals.append(total)
        kernels.append(matching(own, REPRISE_KERNEL))
        costs.append(own)
    functions = {k: per_step([costs[0].get(k, 0), costs[1].get(k, 0)], a.lengths, 1)
                 for k in set(costs[0]) | set(costs[1])}
    top = sorted(functions.items(), key=lambda kv: -kv[1])
    return per_step(totals, a.lengths, 1), per_step(kernels, a.lengths, 1), top


def measure_mpi(a, flags, tmp):
    totals, kernels = [], []
    for steps in a.lengths:
        out = os.path.join(tmp, f"mpi.{steps}")
        callgrind_mpi(a, steps, flags, out)
        total, costs = annotate(out, inclusive=False)
        _, inclusive = annotate(out, inclusive=True)
        totals.append(total - matching(inclusive, MPI_OUTSIDE))
        kernels.append(matching(costs, MPI_KERNEL))
    return per_step(totals, a.lengths, 2), per_step(kernels, a.lengths, 2)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default="build/bin/reprise-taskbench")
    p.add_argument("--mpi", help="Task Bench's MPI nonblock binary (without it: Reprise only)")
    p.add_argument("--lengths", default="1000,3000",
                   type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--trace", default="none", choices=["none", "manual", "auto"])
    p.add_argument("--top", type=int, default=0,
                   help="also list Reprise's N costliest functions a timestep (their own "
                        "instructions, with what is inlined into them)")
    p.add_argument("flags", nargs=argparse.REMAINDER)
    a = p.parse_args()
    flags = a.flags[1:] if a.flags[:1] == ["--"] else a.flags
    if len(a.lengths) != 2 or a.lengths[0] >= a.lengths[1]:
        p.error("--lengths takes two run lengths, the shorter first")
    if "-steps" in flags:
        p.error("the run lengths come from --lengths, not -steps")
    with tempfile.TemporaryDirectory() as tmp:
        ours, ours_kernel, top = measure_reprise(a, flags, tmp)
        print(f"reprise --trace {a.trace}: {ours:.0f} instructions a timestep, kernel "
              f"{ours_kernel:.0f}, rest {ours - ours_kernel:.0f}")
        for name, cost in top[:a.top]:
            print(f"  {cost:7.1f}  {name[:110]}")
        if a.mpi:
            mpi, mpi_kernel = measure_mpi(a, flags, tmp)
            rest = mpi - mpi_kernel
            print(f"task bench mpi: {mpi:.0f} instructions a timestep, kernel {mpi_kernel:.0f}, "
                  f"rest {rest:.0f}")
            if rest > 0:
                print(f"rest ratio (reprise / mpi): {(ours - ours_kernel) / rest:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

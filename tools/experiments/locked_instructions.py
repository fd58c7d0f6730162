#!/usr/bin/env python3
"""How many locked read-modify-writes (LOCK-prefixed instructions, XCHG) a Task Bench timestep
executes on the application thread, and in which functions.

    tools/experiments/locked_instructions.py [--bin build/bin] [--lengths 1000,2000] \
        -- TASKBENCH_FLAGS...
    e.g. ... -- -width 1 -type stencil_1d -kernel empty --trace manual

Runs reprise-taskbench under callgrind twice (the two lengths, in its one-core layout, counted
inside apps::timed as tools/experiments/window-instructions.sh does) with --dump-instr=yes,
finds the locked instructions in the binary with objdump, and prints their executions per
timestep: (count at the longer length - count at the shorter) / (difference in timesteps).
Why: one core's launch path is a few thousand instructions a timestep, at an IPC where a locked
instruction (a full fence on x86) costs more than its count says; this shows which reference
counts, completion counts and event words the path still updates atomically. Counts only code
in the reprise-taskbench binary (the runtime is linked in statically; libc is not counted).
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile


def callgrind(binary, steps, flags, out, by_address=True):
    """reprise-taskbench under callgrind in its one-core layout, counted inside apps::timed
    (per instruction address with by_address; also used by instruction_gap.py)."""
    dump = ["--dump-instr=yes", "--dump-line=no"] if by_address else []
    cmd = ["valgrind", "--tool=callgrind", *dump,
           "--collect-atstart=no", "--toggle-collect=*apps::timed*",
           f"--callgrind-out-file={out}", binary, "-steps", str(steps), *flags,
           "-ll:cpu", "1", "-ll:app_cpu", "1", "-lg:inline_analysis"]
    run = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        sys.exit(f"callgrind failed:\n{run.stderr[-2000:]}")


def costs_by_address(path, object_name):
    """(address, function) -> instructions executed there, for code of object_name."""
    counts = collections.Counter()
    names = {}
    obj = fn = None
    addr = 0
    skip_next = False  # the cost line after calls= is the call's inclusive cost

    def name(kind, text):
        m = re.match(r"\((\d+)\)(?: (.*))?", text)
        if not m:
            return text
        if m.group(2):
            names[(kind, m.group(1))] = m.group(2)
        return names.get((kind, m.group(1)), "?")

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("ob="):
                obj = name("o", line[3:])
            elif line.startswith("fn="):
                fn = name("n", line[3:])
            elif line.startswith(("fl=", "fi=", "fe=")):
                name("f", line[3:])
            elif line.startswith(("cfl=", "cfi=")):
                name("f", line[4:])
            elif line.startswith("cfn="):
                name("n", line[4:])
            elif line.startswith("cob="):
                name("o", line[4:])
            elif line.startswith("calls="):
                skip_next = True
            else:
                m = re.match(r"^(0x[0-9a-f]+|[+-]\d+|\*)\s+(\d+)", line)
                if not m:
                    continue
                pos = m.group(1)
                if pos.startswith("0x"):
                    addr = int(pos, 16)
                elif pos != "*":
                    addr += int(pos)
                if skip_next:
                    skip_next = False
                elif obj and os.path.basename(obj) == object_name:
                    counts[(addr, fn)] += int(m.group(2))
    return counts


def locked_addresses(binary):
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True,
                          text=True, check=True).stdout
    found = set()
    for line in text.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(\S+)", line)
        if m and (m.group(2) == "lock" or m.group(2).startswith("xchg")):
            found.add(int(m.group(1), 16))
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default="build/bin")
    p.add_argument("--lengths", default="1000,2000")
    p.add_argument("--top", type=int, default=20)
    p.add_argument("flags", nargs=argparse.REMAINDER)
    a = p.parse_args()
    flags = a.flags[1:] if a.flags[:1] == ["--"] else a.flags
    short, long_ = (int(x) for x in a.lengths.split(","))
    binary = os.path.join(a.bin, "reprise-taskbench")
    locked = locked_addresses(binary)
    with tempfile.TemporaryDirectory() as tmp:
        counts = []
        for steps in (short, long_):
            out = os.path.join(tmp, f"cg.{steps}")
            callgrind(binary, steps, flags, out)
            counts.append(costs_by_address(out, os.path.basename(binary)))
    per_function = collections.Counter()
    for (addr, fn), c in counts[1].items():
        if addr in locked:
            per_function[fn] += c - counts[0].get((addr, fn), 0)
    steps = long_ - short
    print(f"locked instructions per timestep: {sum(per_function.values()) / steps:.1f}")
    for fn, c in per_function.most_common(a.top):
        if c / steps >= 0.05:
            print(f"{c / steps:6.2f}  {fn[:110]}")


if __name__ == "__main__":
    main()

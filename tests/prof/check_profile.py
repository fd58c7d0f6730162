#!/usr/bin/python3
"""The profiler's output (-lg:prof): valid Chrome trace-event JSON holding exactly one task
interval per executed point, on one shard or several.

  check_profile.py SAXPY_BINARY REPLAYED [MPIRUN NP]

saxpy (apps/examples/out_of_tree) runs 5 traced iterations of an 8-point launch and one
8-point check: 48 task points and 2 fills. REPLAYED of the points ran replayed: 32 in one
process (recorded once, replayed 4 times); 24 on 2 shards (the fills put the data on one
shard's memory, so the first recording copies, and the second iteration records again)."""
import glob
import json
import os
import subprocess
import sys
import tempfile

PROF_TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "prof",
                         "reprise-prof")


def main():
    binary, expect_replayed = sys.argv[1], int(sys.argv[2])
    launcher = [] if len(sys.argv) < 5 else [sys.argv[3], "-np", sys.argv[4], "--oversubscribe"]
    with tempfile.TemporaryDirectory() as work:
        pattern = os.path.join(work, "prof_%.json")
        out = subprocess.run(launcher + [binary, "-ll:cpu", "2", "-lg:no_auto_tracing",
                                         "-lg:prof", pattern],
                             capture_output=True, text=True, timeout=300)
        print(out.stdout, out.stderr)
        assert out.returncode == 0, "saxpy failed"
        assert "max error 0 (ok)" in out.stdout
        files = sorted(glob.glob(os.path.join(work, "prof_*.json")))
        shards = 1 if not launcher else int(sys.argv[4])
        assert len(files) == shards, f"{len(files)} profile files for {shards} shards"
        tasks, replayed, fills, seen = 0, 0, 0, set()
        for f in files:
            events = json.load(open(f))["traceEvents"]  # must parse
            names = {e["tid"]: e["args"]["name"] for e in events
                     if e["ph"] == "M" and e["name"] == "thread_name"}
            for e in events:
                if e["ph"] != "X":
                    continue
                assert e["dur"] >= 0 and e["ts"] >= 0, e
                if e["cat"] == "task":
                    key = (e["args"]["op"], e["args"]["point"])
                    assert key not in seen, f"point {key} twice"
                    seen.add(key)
                    tasks += 1
                    replayed += e["args"]["replayed"]
                    assert names[e["tid"]].startswith("cpu"), names[e["tid"]]
                elif e["cat"] == "fill":
                    fills += 1
        print(f"{len(files)} file(s): {tasks} task intervals ({replayed} replayed), {fills} fills")
        assert tasks == 48, tasks
        assert replayed == expect_replayed, replayed
        assert fills == 2, fills
        # The summary tool agrees, and writes its page.
        page = os.path.join(work, "prof.html")
        summary = subprocess.run([sys.executable, PROF_TOOL, "--html", page] + files,
                                 capture_output=True, text=True, timeout=120)
        print(summary.stdout, summary.stderr)
        assert summary.returncode == 0
        cov = expect_replayed / 48
        want = f"total: {len(files)} shard(s), 48 task points, {expect_replayed} replayed, coverage {cov:.2f}"
        assert want in summary.stdout, want
        assert "<svg" in open(page).read()
        # The trace inspector: trace 1 on every shard, one op long, replayed on each shard as
        # often as the points say (8 points per replay).
        listing = subprocess.run([sys.executable, PROF_TOOL, "--traces"] + files,
                                 capture_output=True, text=True, timeout=120).stdout
        rows = [l.split() for l in listing.splitlines() if l.split()[:1] and l.split()[0].isdigit()
                and len(l.split()) == 7]
        assert len(rows) == len(files), listing
        for shard, trace, ops, _at, recordings, replays, replayed_ops in rows:
            assert (trace, ops) == ("1", "1"), listing
            assert int(replays) == expect_replayed // 8 and int(recordings) >= 1, listing
    print("profile ok")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Tests of tools/experiments/metg.py: its METG(50%) arithmetic on known curves, its reading
of Task Bench's report, and (given a reprise-taskbench binary) a whole small sweep of two
rounds, with that binary standing in for Task Bench's MPI build under mpirun (it takes the
same flags and prints the same report).

  test_metg.py [REPRISE_TASKBENCH]
"""
import math
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
METG_PY = os.path.join(HERE, "metg.py")
sys.path.insert(0, HERE)
import metg  # noqa: E402

BINARY = None  # set from the command line


class MetgArithmetic(unittest.TestCase):
    # points: (granularity_us, flops), largest granularity first; peak 100.

    def test_interpolates_in_log_granularity_between_the_sizes_around_half(self):
        value, bound = metg.metg([(4.0, 90.0), (2.0, 80.0), (1.0, 20.0)], 100.0)
        self.assertEqual(bound, "")
        # 80% at 2 us, 20% at 1 us: 50% halfway in log granularity, sqrt(2) us.
        self.assertAlmostEqual(value, math.sqrt(2.0), places=9)

    def test_a_dip_at_a_larger_size_does_not_end_the_search(self):
        value, bound = metg.metg([(8.0, 90.0), (4.0, 40.0), (2.0, 60.0), (1.0, 10.0)], 100.0)
        self.assertEqual(bound, "")
        self.assertGreater(value, 1.0)
        self.assertLess(value, 2.0)

    def test_still_efficient_at_the_smallest_size_is_an_upper_bound(self):
        self.assertEqual(metg.metg([(2.0, 90.0), (1.0, 70.0)], 100.0), (1.0, "upper"))

    def test_never_efficient_is_a_lower_bound_at_the_largest_size(self):
        self.assertEqual(metg.metg([(2.0, 40.0), (1.0, 10.0)], 100.0), (2.0, "lower"))

    def test_exactly_half_is_efficient(self):
        value, bound = metg.metg([(2.0, 50.0), (1.0, 50.0)], 100.0)
        self.assertEqual((value, bound), (1.0, "upper"))


class ReportParsing(unittest.TestCase):
    def test_reads_elapsed_flops_and_tasks(self):
        text = "Total Tasks 20000\nTotal FLOPs 42240000\nElapsed Time 4.5e-03 seconds\n" \
               "FLOP/s 9.2e+09\n"
        self.assertEqual(metg.parse_run(text), (4.5e-03, 9.2e+09, 20000))

    def test_a_run_without_a_report_is_an_error(self):
        with self.assertRaisesRegex(RuntimeError, "no Task Bench report"):
            metg.parse_run("Segmentation fault\n")


class WholeSweep(unittest.TestCase):
    def sweep(self, *flags):
        """metg.py on one core, one run per size, the binary standing in for MPI: its output."""
        if not BINARY:
            self.skipTest("no reprise-taskbench given")
        out = subprocess.run(
            [sys.executable, METG_PY, "--bin", BINARY, "--mpi", BINARY, "--cores", "1",
             "--reps", "1", "--min-log2", "4", *flags],
            capture_output=True, text=True, timeout=600)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        return out.stdout

    def test_two_rounds_with_a_stand_in_for_mpi(self):
        with tempfile.TemporaryDirectory() as tmp:
            csv = os.path.join(tmp, "metg.csv")
            out = self.sweep("--modes", "none,manual", "--rounds", "2", "--max-log2", "6",
                             "--csv", csv)
            for system in ("none", "manual", "mpi"):
                m = re.search(rf"^METG system={system} type=stencil_1d cores=1 "
                              rf"metg_us=([0-9.]+) .*rounds=2", out, re.M)
                self.assertIsNotNone(m, out)
                self.assertGreater(float(m.group(1)), 0.0)
            # The stand-in is measured like MPI, against which the modes get their ratio.
            self.assertEqual(len(re.findall(r"ratio_to_mpi=[0-9.]+", out)), 2, out)
            # Each round runs every system at every size: 2 rounds x 3 sizes x 3 systems.
            self.assertEqual(len(re.findall(r"^RUN round=", out, re.M)), 18)
            with open(csv) as f:
                rows = f.read().splitlines()
            self.assertEqual(rows[0], "system,iter,granularity_us,flops,efficiency")
            self.assertEqual(len(rows), 1 + 3 * 3)
            effs = [float(r.split(",")[4]) for r in rows[1:]]
            self.assertAlmostEqual(max(effs), 1.0, places=9)  # (against the best run)

    def test_one_round_with_mpi_gives_the_ratio_too(self):
        out = self.sweep("--modes", "manual", "--max-log2", "5")
        self.assertRegex(out, r"(?m)^METG system=manual .*ratio_to_mpi=[0-9.]+$")
        self.assertNotIn("rounds=", out)
        self.assertNotRegex(out, r"(?m)^METG system=mpi .*ratio_to_mpi")

    def test_max_steps_bounds_the_runs_at_small_sizes(self):
        # 2^22 / iters steps, at most --max-steps (at 2^4 and 2^5 iterations: 60 each).
        out = self.sweep("--modes", "none", "--max-log2", "5", "--max-steps", "60")
        steps = re.findall(r"(?m)^RUN system=\S+ .* steps=(\d+) ", out)
        self.assertEqual(steps, ["60"] * 4, out)
        bad = subprocess.run([sys.executable, METG_PY, "--bin", BINARY, "--max-steps", "10"],
                             capture_output=True, text=True, timeout=60)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("--max-steps must be at least 50", bad.stderr)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()

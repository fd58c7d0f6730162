#!/usr/bin/env python3
"""Tests of tools/experiments/instruction_gap.py: its reading of callgrind_annotate, its
per-timestep arithmetic, and (given a reprise-taskbench binary) a small count of both systems,
that binary standing in for Task Bench's MPI build under mpirun (same flags, same report).

  test_instruction_gap.py [REPRISE_TASKBENCH]
"""
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import instruction_gap as gap  # noqa: E402

BINARY = None  # set from the command line

ANNOTATE = """\
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
5,967,124 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                 file:function
--------------------------------------------------------------------------------
854,000 (14.31%)  ???:taskbench::(anonymous namespace)::compute_avx2(long) [/b/reprise-taskbench]
809,936 (13.57%)  ???:reprise::detail::Analysis::analyse_points(reprise::detail::OpRef&) [/b/x]
 44,002 ( 0.74%)  ./string/memset.S:__memset_avx2_unaligned_erms [/usr/lib/libc.so.6]
  4,992,000       ???:execute_kernel_compute(Kernel const&) [/tmp/tb/mpi/nonblock]
"""


class Parsing(unittest.TestCase):
    def test_reads_the_total_and_each_function_without_its_object(self):
        total, costs = gap.parse_annotate(ANNOTATE)
        self.assertEqual(total, 5967124)
        self.assertEqual(costs["taskbench::(anonymous namespace)::compute_avx2(long)"], 854000)
        self.assertEqual(costs["__memset_avx2_unaligned_erms"], 44002)
        self.assertEqual(costs["execute_kernel_compute(Kernel const&)"], 4992000)

    def test_the_kernel_patterns_pick_each_systems_kernel_only(self):
        _, costs = gap.parse_annotate(ANNOTATE)
        self.assertEqual(gap.matching(costs, gap.REPRISE_KERNEL), 854000)
        self.assertEqual(gap.matching(costs, gap.MPI_KERNEL), 4992000)

    def test_output_without_totals_is_an_error(self):
        with self.assertRaisesRegex(RuntimeError, "no PROGRAM TOTALS"):
            gap.parse_annotate("valgrind: no such file\n")


class Arithmetic(unittest.TestCase):
    def test_per_step_is_the_slope_between_the_lengths_over_the_runs(self):
        # 1,000 fixed + 3 a step, one run; 1,000 fixed + 2 x 3 a step, two runs.
        self.assertEqual(gap.per_step([4000, 10000], [1000, 3000], 1), 3.0)
        self.assertEqual(gap.per_step([7000, 19000], [1000, 3000], 2), 3.0)


@unittest.skipUnless(BINARY or len(sys.argv) > 1, "needs a reprise-taskbench binary")
class BothSystems(unittest.TestCase):
    def test_counts_both_and_prints_their_ratio(self):
        out = subprocess.run(
            [sys.executable, os.path.join(HERE, "instruction_gap.py"), "--bin", BINARY, "--mpi",
             BINARY, "--lengths", "50,150", "--top", "3", "--", "-width", "1", "-type",
             "stencil_1d", "-kernel", "compute_bound", "-iter", "16"],
            capture_output=True, text=True, timeout=240)
        self.assertEqual(out.returncode, 0, out.stderr)
        ours = re.search(r"reprise --trace none: (\d+) instructions a timestep, kernel (\d+), "
                         r"rest (\d+)", out.stdout)
        self.assertIsNotNone(ours, out.stdout)
        total, kernel, rest = (int(x) for x in ours.groups())
        self.assertGreater(kernel, 0)  # the compute kernel is found by name
        self.assertEqual(total, kernel + rest)
        # --top 3: the costliest three functions, the kernel among them, largest first.
        top = re.findall(r"^ +([0-9.]+)  (.+)$", out.stdout, re.M)
        self.assertEqual(len(top), 3, out.stdout)
        costs = [float(c) for c, _ in top]
        self.assertEqual(costs, sorted(costs, reverse=True))
        self.assertTrue(any("compute" in name for _, name in top), out.stdout)
        # The stand-in under mpirun, counted whole over two runs: its kernel is not Task
        # Bench's by name, so all of it is "rest".
        self.assertRegex(out.stdout, r"task bench mpi: \d+ instructions a timestep, kernel 0, "
                                     r"rest \d+\nrest ratio \(reprise / mpi\): [0-9.]+")

    def test_refuses_steps_among_the_flags(self):
        out = subprocess.run(
            [sys.executable, os.path.join(HERE, "instruction_gap.py"), "--bin", BINARY, "--",
             "-steps", "10"], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("--lengths", out.stderr)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        BINARY = sys.argv.pop(1)
    unittest.main()

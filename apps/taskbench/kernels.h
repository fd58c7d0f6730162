#pragma once
// Task Bench's kernels, our own code: empty, busy_wait (integer multiply-modulo chain),
// compute_bound (64 lanes of x = x*x + x), load_imbalance (compute_bound with per-task
// iterations), memory_bound (copies between the halves of a per-worker scratch buffer).
#include "graph.h"

namespace taskbench {

// Runs the kernel for `iterations` (already varied for load_imbalance); the result is
// returned so that the work cannot be optimised away.
double run_kernel(const Kernel& k, long iterations, long timestep, long scratch_bytes);

}  // namespace taskbench

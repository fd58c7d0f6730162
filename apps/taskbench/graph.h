#pragma once
// Task Bench's task graphs (Slaughter et al., SC'20): a graph is `steps` timesteps of up to
// `width` tasks; the task at (t, p) depends on the outputs of tasks of timestep t - 1 given by
// the dependence pattern, and runs a kernel. Our own description of the published patterns
// and kernels, independent of any runtime (apps/taskbench/README.md says what differs).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace taskbench {

enum class Pattern {
  Trivial,
  NoComm,
  Stencil1D,
  Stencil1DPeriodic,
  Dom,
  Tree,
  Fft,
  AllToAll,
  Nearest,
  Spread,
  RandomNearest
};
enum class KernelKind { Empty, BusyWait, MemoryBound, ComputeBound, LoadImbalance };

struct Kernel {
  KernelKind kind = KernelKind::Empty;
  long iterations = 0;
  int samples = 16;        // memory_bound: the scratch buffer is cut into this many samples
  double imbalance = 0.0;  // load_imbalance: iterations vary by up to ±imbalance/2
};

// An inclusive range of points [first, last].
using Interval = std::pair<long, long>;

struct Graph {
  int index = 0;  // position among the graphs of a run (-and)
  Pattern pattern = Pattern::Trivial;
  long steps = 4, width = 4;
  long radix = 3;
  long period = -1;  // spread and random_nearest: dependence sets (default 3)
  double fraction_connected = 0.25;
  Kernel kernel;
  long output_bytes = 16;  // per task, at least 16 (its timestep and point go first)
  long scratch_bytes = 0;  // per task (memory_bound)

  // The tasks of timestep t are points [offset_at(t), offset_at(t) + width_at(t)).
  long offset_at(long t) const;
  long width_at(long t) const;
  // The patterns that change with the timestep cycle through dependence sets.
  long dependence_sets() const;
  long dependence_set_at(long t) const;
  // Points of the previous timestep that (t, point) reads with dependence set dset, as
  // disjoint intervals in increasing order, before clamping to that timestep's points (into
  // out, which is cleared first).
  void dependencies(long dset, long point, std::vector<Interval>& out) const;
  // The same, clamped to the points of timestep t - 1 (empty intervals dropped).
  std::vector<Interval> inputs(long t, long point) const;
  void inputs(long t, long point, std::vector<Interval>& out) const;  // (reuses out)
  // The largest number of intervals any task reads (the requirements of a launch).
  long max_intervals() const;

  long long flops_per_task(long t, long point) const;
  long long bytes_per_task() const;
  long kernel_iterations(long t, long point) const;  // load_imbalance varies them
};

const char* name_of(Pattern p);
const char* name_of(KernelKind k);
bool pattern_named(const std::string& name, Pattern& out);
bool kernel_named(const std::string& name, KernelKind& out);

// A uniform number in [0, 1) from a few integers (our own mix: Task Bench's random choices
// use SipHash, so random_nearest picks other, equally distributed, dependences).
double uniform(std::initializer_list<long> key);

}  // namespace taskbench

// reprise-taskbench: Task Bench (Slaughter et al., SC'20) on Reprise's public API, for
// comparing runtimes by METG (tools/experiments/metg.py). Each graph lives in two regions
// (timesteps alternate between them) of `width` rows, one row per task's output; a timestep is
// an index launch over its points that writes its own rows and reads the rows of the tasks it
// depends on, through one aliased partition per input interval. Every task checks that it got
// exactly the outputs of the previous timestep's tasks it depends on.
//
//   reprise-taskbench -steps 1000 -width 2 -type stencil_1d -kernel compute_bound -iter 4096
//                     [--trace none|manual|auto] [runtime flags]   (also under mpirun)
#include <fmt/core.h>
#include <reprise/reprise.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "app_support.h"
#include "graph.h"
#include "kernels.h"

using namespace reprise;
using taskbench::Graph;

namespace {

enum : TaskID { T_POINT = 1 };
enum : FieldID { FX = 0 };

const char* kUsage =
    "usage: reprise-taskbench [-steps N] [-width N] [-type PATTERN] [-kernel KERNEL] [-iter N]\n"
    "         [-radix N] [-period N] [-fraction F] [-output BYTES] [-scratch BYTES]\n"
    "         [-sample N] [-imbalance F] [-nodes N] [-v] [-and <another graph> ...]\n"
    "         [--trace none|manual|auto] [-trace_block N] [-warmup N] [runtime flags]\n"
    "  PATTERN: trivial no_comm stencil_1d stencil_1d_periodic dom tree fft all_to_all\n"
    "           nearest spread random_nearest\n"
    "  KERNEL:  empty busy_wait memory_bound compute_bound load_imbalance\n";

struct Options {
  std::vector<Graph> graphs;
  std::string trace = "none";
  long nodes = 0;         // for the local/nonlocal estimates of the report
  long trace_block = 16;  // --trace manual: timesteps per trace, at least
  // Untimed runs of the whole graph before the timed one. Task Bench's MPI implementation runs
  // its graph twice and reports the second run (mpi/nonblock.cc), its Legion one runs a
  // warm-up pass first (legion/main.cc): 1 measures as they do; 0 times a cold first run (its
  // code and data first touched, traces recorded and found inside the window).
  long warmup = 1;
};

// Read-only once the top-level task starts: tasks look their graph up here (every rank of a
// control-replicated run parses the same arguments).
std::vector<Graph> g_graphs;

// The input intervals of every point of one launch shape (ShapeInputs::of), found before the
// timed window as Task Bench's MPI implementation caches its dependencies: a task looks its
// own up instead of deriving them from the pattern (~110 instructions a task at width 1).
class ShapeInputs {
 public:
  ShapeInputs(const Graph& g, long t) {
    std::vector<taskbench::Interval> in;
    begin_.push_back(0);
    for (long p = 0; p < g.width; ++p) {
      g.inputs(t, p, in);
      intervals_.insert(intervals_.end(), in.begin(), in.end());
      begin_.push_back(intervals_.size());
    }
  }
  std::span<const taskbench::Interval> of(long p) const {
    const auto b = begin_[std::size_t(p)], e = begin_[std::size_t(p) + 1];
    return {intervals_.data() + b, e - b};
  }

 private:
  std::vector<std::size_t> begin_;  // point p's intervals: [begin_[p], begin_[p + 1])
  std::vector<taskbench::Interval> intervals_;
};
// [graph][shape], filled by each graph's GraphState before its first launch; read-only after.
std::vector<std::vector<ShapeInputs>> g_shape_inputs;

[[noreturn]] void usage(const std::string& message) {
  apps::exit_with_usage("reprise-taskbench", kUsage, message);
}

Options parse(const std::vector<std::string>& args) {
  Options o;
  Graph g;
  apps::ArgReader r(args, usage);
  auto finish = [&] {
    if (g.period < 0)
      g.period = (g.pattern == taskbench::Pattern::Spread ||
                  g.pattern == taskbench::Pattern::RandomNearest)
                     ? 3
                     : 0;
    g.index = int(o.graphs.size());
    o.graphs.push_back(g);
    g = Graph();
  };
  while (r.next()) {
    const std::string f = r.flag();
    if (f == "-steps")
      g.steps = long(r.integer(1));
    else if (f == "-width")
      g.width = long(r.integer(1));
    else if (f == "-type") {
      if (!taskbench::pattern_named(r.value(), g.pattern)) usage("unknown -type");
    } else if (f == "-kernel") {
      if (!taskbench::kernel_named(r.value(), g.kernel.kind)) usage("unknown -kernel");
    } else if (f == "-iter")
      g.kernel.iterations = long(r.integer(0));
    else if (f == "-radix")
      g.radix = long(r.integer(0));
    else if (f == "-period")
      g.period = long(r.integer(0));
    else if (f == "-fraction")
      g.fraction_connected = r.positive_real();
    else if (f == "-output")
      g.output_bytes = long(r.integer(16));
    else if (f == "-scratch")
      g.scratch_bytes = long(r.integer(0));
    else if (f == "-sample")
      g.kernel.samples = int(r.integer(1));
    else if (f == "-imbalance")
      g.kernel.imbalance = r.positive_real();
    else if (f == "-nodes")
      o.nodes = long(r.integer(1));
    else if (f == "-trace_block")
      o.trace_block = long(r.integer(1));
    else if (f == "-warmup")
      o.warmup = long(r.integer(0));
    else if (f == "-v") {
      // (Accepted for Task Bench's scripts: the configuration is always shown.)
    } else if (f == "--trace") {
      o.trace = r.value();
      if (!apps::valid_trace_mode(o.trace)) usage("--trace must be none, manual or auto");
    } else if (f == "-and")
      finish();
    else
      usage("unknown argument " + f);
  }
  finish();
  for (const Graph& x : o.graphs) {
    const bool periodic =
        x.pattern == taskbench::Pattern::Spread || x.pattern == taskbench::Pattern::RandomNearest;
    if (periodic && x.period == 0)
      usage(fmt::format("-type {} needs -period > 0", name_of(x.pattern)));
    if (!periodic && x.period != 0)
      usage(fmt::format("-type {} takes no -period", name_of(x.pattern)));
    if (x.kernel.kind == taskbench::KernelKind::MemoryBound && x.scratch_bytes <= 0)
      usage("-kernel memory_bound needs -scratch BYTES");
  }
  return o;
}

long words_of(const Graph& g) {
  return (g.output_bytes + 7) / 8;
}

struct PointArgs {
  int graph;
  long t;
  int inputs;           // requirements after the output
  std::uint32_t shape;  // its launch's shape (g_shape_inputs; none at timestep 0)
};

// One task: check the inputs, run the kernel, write (t, point) and a pattern into its row.
void point_task(TaskContext& tc) {
  const PointArgs a = tc.args<PointArgs>();
  const Graph& g = g_graphs[std::size_t(a.graph)];
  const long p = long(tc.point()[0]);
  const std::span<const taskbench::Interval> expected =
      a.inputs > 0 ? g_shape_inputs[std::size_t(a.graph)][a.shape].of(p)
                   : std::span<const taskbench::Interval>();
  auto fail = [&](const std::string& what) {
    throw std::runtime_error(
        fmt::format("graph {} timestep {} point {}: {}", a.graph, a.t, p, what));
  };
  for (int k = 0; k < a.inputs; ++k) {
    if (std::size_t(k) >= expected.size()) {
      if (const Domain d = tc.domain(1 + k); !d.empty())
        fail(fmt::format("input {} should be empty, got rows {}", k, d.str()));
      continue;
    }
    // (The accessor's bounds are the requirement's rows: one call into the runtime, not two.)
    auto in = tc.accessor<const std::int64_t, 2>(1 + k, FX);
    const auto [first, last] = expected[std::size_t(k)];
    if (const Rect<2>& d = in.bounds(); d.empty() || d.lo[0] != first || d.hi[0] != last)
      fail(
          fmt::format("input {} should be rows [{}..{}], got {}", k, first, last, Domain(d).str()));
    for (long q = first; q <= last; ++q)
      if (in[Point<2>{q, 0}] != a.t - 1 || in[Point<2>{q, 1}] != q)
        fail(fmt::format("row {} holds the output of ({}, {}), not of ({}, {})", q,
                         in[Point<2>{q, 0}], in[Point<2>{q, 1}], a.t - 1, q));
  }
  const double r =
      taskbench::run_kernel(g.kernel, g.kernel_iterations(a.t, p), a.t, g.scratch_bytes);
  auto out = tc.accessor<std::int64_t, 2>(0, FX);
  out[Point<2>{p, 0}] = a.t;
  out[Point<2>{p, 1}] = p;
  for (long w = 2; w < words_of(g); ++w) out[Point<2>{p, w}] = a.t ^ p ^ (r > 0 ? 1 : 0);
}

// The regions and partitions of one graph.
class GraphState {
 public:
  GraphState(Context& ctx, const Graph& g) : ctx_(ctx), g_(g) {
    const long words = words_of(g);
    auto fs = ctx.create_field_space({{FX, sizeof(std::int64_t)}});
    const auto rows = ctx.create_index_space(Rect<2>({0, 0}, {g.width - 1, words - 1}));
    colors_ = ctx.create_index_space(Rect<1>({0}, {g.width - 1}));
    for (int b = 0; b < 2; ++b) {
      region_[b] = ctx.create_region(rows, fs);
      own_[b] = ctx.partition_by_rects(region_[b], colors_, [&](const DomainPoint& c) {
        return Domain(Rect<2>({c[0], 0}, {c[0], words - 1}));
      });
    }
    inputs_ = g.max_intervals();
    // Every input partition up front, once per distinct shape of a timestep: none may be made
    // inside a trace, and a launch only looks its partitions up.
    std::map<std::vector<long>, std::size_t> shape_index;
    step_inputs_.assign(std::size_t(g.steps), 0);
    for (long t = 1; t < g.steps; ++t) {
      std::vector<long> key{t % 2, g.dependence_set_at(t), g.offset_at(t - 1), g.width_at(t - 1)};
      auto [it, fresh] = shape_index.try_emplace(std::move(key), inputs_by_shape_.size());
      if (fresh) {
        const ShapeInputs& shape = g_shape_inputs[std::size_t(g.index)].emplace_back(g, t);
        parity_of_shape_.push_back(std::size_t(t % 2));
        inputs_by_shape_.emplace_back();
        for (long k = 0; k < inputs_; ++k)
          inputs_by_shape_.back().push_back(make_input(t, shape, k));
      }
      step_inputs_[std::size_t(t)] = it->second;
    }
    // One launcher per shape, made before the timed window (as an MPI code sets up its
    // buffers once): the first timestep's writes only; then per shape its parity's rows and
    // its inputs. No future maps: nothing waits on a timestep but the next one, through the
    // rows it reads, and the fence at the end (as in Task Bench's MPI code).
    launchers_.emplace_back(T_POINT, Domain(Rect<1>({0}, {0}))).set_future_map(false);
    launchers_.back().add(own_[0], Projection::identity(), Privilege::WriteDiscard, {FX});
    for (std::size_t s = 0; s < inputs_by_shape_.size(); ++s) {
      IndexLauncher& l = launchers_.emplace_back(T_POINT, Domain(Rect<1>({0}, {0})));
      l.set_future_map(false);
      l.add(own_[parity_of_shape_[s]], Projection::identity(), Privilege::WriteDiscard, {FX});
      for (const Partition& in : inputs_by_shape_[s])
        l.add(in, Projection::identity(), Privilege::ReadOnly, {FX});
    }
  }

  // The launch of timestep t: the launcher of its shape, with its domain and arguments.
  void launch(long t) {
    const long first = g_.offset_at(t), n = g_.width_at(t);
    if (n <= 0) return;
    IndexLauncher& l = launchers_[t == 0 ? 0 : 1 + step_inputs_[std::size_t(t)]];
    l.set_domain(Rect<1>({first}, {first + n - 1}));
    const std::size_t shape = t == 0 ? 0 : step_inputs_[std::size_t(t)];
    l.set_args(TaskArgs{PointArgs{g_.index, t, t == 0 ? 0 : int(inputs_), std::uint32_t(shape)}});
    ctx_.execute(l);
  }

  // What makes timestep t's launch look different from another's (for manual trace ids).
  std::vector<long> shape(long t) const {
    return {t == 0,
            t % 2,
            g_.dependence_set_at(t),
            g_.offset_at(t),
            g_.width_at(t),
            g_.offset_at(t - 1),
            g_.width_at(t - 1)};
  }

 private:
  // Input k of every point of timestep t (of that shape): the k-th interval it reads of
  // timestep t - 1.
  Partition make_input(long t, const ShapeInputs& shape, long k) {
    const long words = words_of(g_);
    return ctx_.partition_by_rects(region_[(t - 1) % 2], colors_, [&](const DomainPoint& c) {
      const auto in = shape.of(long(c[0]));
      if (std::size_t(k) >= in.size()) return Domain(Rect<2>({0, 0}, {-1, -1}));
      return Domain(Rect<2>({in[std::size_t(k)].first, 0}, {in[std::size_t(k)].second, words - 1}));
    });
  }

  Context& ctx_;
  const Graph& g_;
  IndexSpace colors_;
  Region region_[2];
  Partition own_[2];
  long inputs_ = 0;
  std::vector<std::vector<Partition>> inputs_by_shape_;  // the input partitions of a shape
  std::vector<std::size_t> step_inputs_;                 // per timestep: its shape
  std::vector<std::size_t> parity_of_shape_;             // the rows a shape writes
  std::vector<IndexLauncher> launchers_;                 // 0: timestep 0; 1 + s: shape s
};

void display(const Options& o) {
  std::printf("Running Task Benchmark\n  Configuration:\n");
  for (const Graph& g : o.graphs) {
    std::printf("    Task Graph %d:\n", g.index + 1);
    std::printf("      Time Steps: %ld\n      Max Width: %ld\n", g.steps, g.width);
    std::printf("      Dependence Type: %s\n      Radix: %ld\n      Period: %ld\n",
                name_of(g.pattern), g.radix, g.period);
    std::printf("      Fraction Connected: %f\n", g.fraction_connected);
    std::printf("      Kernel:\n        Type: %s\n        Iterations: %ld\n",
                name_of(g.kernel.kind), g.kernel.iterations);
    std::printf("        Samples: %d\n        Imbalance: %f\n", g.kernel.samples,
                g.kernel.imbalance);
    std::printf("      Output Bytes: %ld\n      Scratch Bytes: %ld\n", g.output_bytes,
                g.scratch_bytes);
  }
}

void report(const Options& o, double seconds) {
  long long tasks = 0, deps = 0, flops = 0, bytes = 0;
  // With -nodes N: points in N contiguous blocks, a dependence local when both ends share one.
  long long local = 0, nonlocal = 0, local_bytes = 0, nonlocal_bytes = 0;
  for (const Graph& g : o.graphs) {
    long long graph_local = 0, graph_nonlocal = 0;
    for (long t = 0; t < g.steps; ++t)
      for (long p = g.offset_at(t); p < g.offset_at(t) + g.width_at(t); ++p) {
        ++tasks;
        const long node = o.nodes > 0 ? p * o.nodes / g.width : 0;
        const long first = o.nodes > 0 ? node * g.width / o.nodes : 0;
        const long last = o.nodes > 0 ? (node + 1) * g.width / o.nodes - 1 : g.width - 1;
        for (auto [a, b] : g.inputs(t, p)) {
          deps += b - a + 1;
          const long in = std::max(0L, std::min(b, last) - std::max(a, first) + 1);
          graph_local += in;
          graph_nonlocal += b - a + 1 - in;
        }
        flops += g.flops_per_task(t, p);
        bytes += g.bytes_per_task();
      }
    local += graph_local;
    nonlocal += graph_nonlocal;
    local_bytes += graph_local * g.output_bytes;
    nonlocal_bytes += graph_nonlocal * g.output_bytes;
  }
  std::printf("Total Tasks %lld\nTotal Dependencies %lld\n", tasks, deps);
  if (o.nodes > 0)
    std::printf(
        "  Local Dependencies %lld (estimated)\n  Nonlocal Dependencies %lld (estimated)\n"
        "  Number of Nodes (used for estimate) %ld\n",
        local, nonlocal, o.nodes);
  else
    std::printf("  Unable to estimate local/nonlocal dependencies\n");
  std::printf("Total FLOPs %lld\nTotal Bytes %lld\n", flops, bytes);
  std::printf("Elapsed Time %e seconds\nFLOP/s %e\nB/s %e\n", seconds, double(flops) / seconds,
              double(bytes) / seconds);
  std::printf("Transfer (estimated):\n");
  if (o.nodes > 0)
    std::printf(
        "  Local Bytes %lld\n  Nonlocal Bytes %lld\n  Local Bandwidth %e B/s\n"
        "  Nonlocal Bandwidth %e B/s\n",
        local_bytes, nonlocal_bytes, double(local_bytes) / seconds,
        double(nonlocal_bytes) / seconds);
  else
    std::printf("  Unable to estimate local/nonlocal transfer\n");
}

void top_level(Context& ctx, const Options& o) {
  std::vector<GraphState> states;
  states.reserve(o.graphs.size());
  g_shape_inputs.assign(o.graphs.size(), {});
  long steps = 0;
  for (const Graph& g : o.graphs) {
    states.emplace_back(ctx, g);
    steps = std::max(steps, g.steps);
  }
  const bool manual = o.trace == "manual";
  // Manual traces hold a block of timesteps: a whole number of the graphs' cycles of launch
  // shapes (parity, dependence sets), at least -trace_block timesteps, so that a replay's
  // fixed cost is shared by many launches. Timestep 0 (its launch writes only, like no other)
  // goes untraced on its own and the blocks start at timestep 1, so that the first block
  // already repeats. Blocks whose launches look alike share a trace; a block that looks like
  // no other (a short last one, say) is not traced: its recording would never replay. The
  // ids are found before the timed window (0: untraced).
  long block = 2;
  for (const Graph& g : o.graphs) block = std::lcm(block, 2 * g.dependence_sets());
  block *= std::max(1L, (o.trace_block + block - 1) / block);
  std::vector<TraceID> block_trace;
  if (manual) {
    std::map<std::vector<long>, TraceID> trace_of;
    std::vector<long> blocks_of(1);  // per trace id
    for (long t = 1; t < steps; t += block) {
      std::vector<long> key;
      for (long u = t; u < std::min(steps, t + block); ++u)
        for (std::size_t i = 0; i < states.size(); ++i)
          if (u < o.graphs[i].steps) {
            const auto s = states[i].shape(u);
            key.insert(key.end(), s.begin(), s.end());
          }
      const TraceID id =
          trace_of.emplace(std::move(key), TraceID(trace_of.size() + 1)).first->second;
      if (id >= blocks_of.size()) blocks_of.push_back(0);
      ++blocks_of[id];
      block_trace.push_back(id);
    }
    for (TraceID& id : block_trace)
      if (blocks_of[id] < 2) id = 0;
  }
  TraceID open = 0;
  auto run_graphs = [&] {
    for (long t = 0; t < steps; ++t) {
      if (manual && t > 0 && (t - 1) % block == 0) {
        open = block_trace[std::size_t((t - 1) / block)];
        if (open) ctx.begin_trace(open);
      }
      for (std::size_t i = 0; i < states.size(); ++i)
        if (t < o.graphs[i].steps) states[i].launch(t);
      if (open && ((t - 1) % block == block - 1 || t == steps - 1)) {
        ctx.end_trace(open);
        open = 0;
      }
    }
  };
  // (The same trace ids in every run: a warm-up records what the timed run replays.)
  for (long k = 0; k < o.warmup; ++k) run_graphs();
  const apps::TimedWindow w = apps::timed(ctx, run_graphs);
  if (ctx.shard() != 0) return;
  display(o);
  report(o, w.seconds);
  double tasks = 0;
  for (const Graph& g : o.graphs)
    for (long t = 0; t < g.steps; ++t) tasks += double(g.width_at(t));
  apps::print_result("taskbench", o.trace, ctx, int(steps), w, tasks, 0, true,
                     fmt::format("type={} width={} kernel={} iter={}", name_of(o.graphs[0].pattern),
                                 o.graphs[0].width, name_of(o.graphs[0].kernel.kind),
                                 o.graphs[0].kernel.iterations));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(app_args(argc, argv));
  g_graphs = o.graphs;
  TaskRegistry::add(T_POINT, "task_bench_point", {cpu(point_task)});
  return start(
      argc, argv, [&](Context& ctx) { top_level(ctx, o); }, apps::trace_mode_flags(o.trace));
}

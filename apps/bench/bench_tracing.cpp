// Tracing overheads: per-task analysis cost untraced (alpha), while recording (alpha_m), when
// replaying (alpha_r), and the constant per replay (c, from a least-squares fit of replay cost
// per iteration against tasks per iteration), for two workloads with empty task bodies:
//   empty:   bench_overhead's pattern (T1 read-write A; T2 read-only A, write-discard B) over a
//            1-d equal partition of P pieces;
//   stencil: a 2-d tiled stencil pattern (read-write out on the interior partition, read-only
//            in on the aliased halo partition; then read-write in on the interior).
// Costs are the utility thread's busy time per task (where the analysis runs); end-to-end
// wall time per task is printed beside them. The last line is the RESULT for empty, P = 16.
#include <reprise/reprise.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "reprise_rt/runtime.h"

using namespace reprise;

namespace {

enum : TaskID { T_A = 1, T_B = 2 };
enum : FieldID { F0 = 0, F1 = 1 };
void empty_task(TaskContext&) {}

struct Workload {
  std::vector<IndexLauncher> launches;
  int tasks_per_iter = 0;
};

Workload make_empty(Context& ctx, int pieces) {
  auto is = ctx.create_index_space(Rect<1>({0}, {65535}));
  auto fs = ctx.create_field_space({{F0, 8}, {F1, 8}});
  Region r = ctx.create_region(is, fs);
  auto colors = ctx.create_index_space(Rect<1>({0}, {pieces - 1}));
  Partition p = ctx.partition_equal(r, colors);
  Workload w;
  IndexLauncher a(T_A, colors);
  a.add(p, Projection::identity(), Privilege::ReadWrite, {F0});
  IndexLauncher b(T_B, colors);
  b.add(p, Projection::identity(), Privilege::ReadOnly, {F0});
  b.add(p, Projection::identity(), Privilege::WriteDiscard, {F1});
  w.launches = {a, b};
  w.tasks_per_iter = 2 * pieces;
  return w;
}

Workload make_stencil(Context& ctx, int pieces) {
  int px = int(std::lround(std::sqrt(double(pieces))));
  int py = pieces / px;
  auto is = ctx.create_index_space(Rect<2>({0, 0}, {255, 255}));
  auto fs = ctx.create_field_space({{F0, 8}, {F1, 8}});
  Region g = ctx.create_region(is, fs);
  auto tiles = ctx.create_index_space(Rect<2>({0, 0}, {px - 1, py - 1}));
  Partition interior = ctx.partition_equal(g, tiles);
  Partition halo = ctx.partition_by_rects(
      g, tiles, [&](const DomainPoint& c) { return grow(interior.rect(c), 2) & g.bounds(); });
  Workload w;
  IndexLauncher st(T_A, tiles);
  st.add(interior, Projection::identity(), Privilege::ReadWrite, {F1});
  st.add(halo, Projection::identity(), Privilege::ReadOnly, {F0});
  IndexLauncher inc(T_B, tiles);
  inc.add(interior, Projection::identity(), Privilege::ReadWrite, {F0});
  w.launches = {st, inc};
  w.tasks_per_iter = 2 * px * py;
  return w;
}

enum class Mode { Untraced, Recording, Replaying };

struct Cost {
  double util_us_per_task = 0, e2e_us_per_task = 0, util_us_per_iter = 0;
};

Cost measure(Context& ctx, const Workload& w, Mode mode, int iters) {
  static TraceID next_id = 1000;
  const TraceID loop_id = next_id++;
  auto iteration = [&](int it) {
    TraceID id = mode == Mode::Recording ? next_id++ : loop_id;
    if (mode != Mode::Untraced) ctx.begin_trace(id);
    for (const auto& l : w.launches) ctx.execute(l);
    if (mode != Mode::Untraced) ctx.end_trace(id);
    (void)it;
  };
  for (int i = 0; i < 20; ++i) iteration(i);  // warm up (records the loop's template)
  ctx.fence().wait();
  auto& rt = reprise::detail::Runtime::of(ctx);
  const double u0 = double(rt.stats().analysis_busy_ns) * 1e-3;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) iteration(i);
  ctx.fence().wait();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double u1 = double(rt.stats().analysis_busy_ns) * 1e-3;
  const double tasks = double(iters) * w.tasks_per_iter;
  return Cost{(u1 - u0) / tasks, wall * 1e6 / tasks, (u1 - u0) / iters};
}

struct Row {
  std::string workload;
  int pieces, tasks_per_iter;
  Cost none, rec, rep;
};

}  // namespace

int main(int argc, char** argv) {
  int iters = 2000;
  auto args = app_args(argc, argv);
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "-i" && i + 1 < args.size()) {
      iters = std::atoi(args[++i].c_str());
    } else {
      std::fprintf(stderr, "usage: bench_tracing [-i iterations=2000] [runtime flags]\n");
      return 2;
    }
  }
  if (iters < 1) return 2;
  TaskRegistry::add(T_A, "a", {cpu(empty_task)});
  TaskRegistry::add(T_B, "b", {cpu(empty_task)});
  std::vector<Row> rows;
  int rc = start(argc, argv, [&](Context& ctx) {
    for (const char* name : {"empty", "stencil"})
      for (int p : {4, 16, 64}) {
        Workload w = std::string(name) == "empty" ? make_empty(ctx, p) : make_stencil(ctx, p);
        Row r{name, p, w.tasks_per_iter, {}, {}, {}};
        r.none = measure(ctx, w, Mode::Untraced, iters);
        // Every recording is a new template: fewer iterations keep memory modest.
        r.rec = measure(ctx, w, Mode::Recording, std::max(1, iters / 10));
        r.rep = measure(ctx, w, Mode::Replaying, iters);
        rows.push_back(r);
      }
  });
  if (rc != 0) return rc;
  std::printf(
      "bench_tracing: %d iterations; analysis = utility-thread busy us per task, e2e = wall "
      "us per task\n",
      iters);
  std::printf("%-8s %6s %6s | %9s %9s | %9s %9s | %9s %9s | %7s\n", "workload", "pieces", "tasks",
              "alpha", "e2e", "alpha_m", "e2e", "alpha_r", "e2e", "a/a_r");
  for (const auto& r : rows)
    std::printf("%-8s %6d %6d | %9.3f %9.3f | %9.3f %9.3f | %9.3f %9.3f | %7.1f\n",
                r.workload.c_str(), r.pieces, r.tasks_per_iter, r.none.util_us_per_task,
                r.none.e2e_us_per_task, r.rec.util_us_per_task, r.rec.e2e_us_per_task,
                r.rep.util_us_per_task, r.rep.e2e_us_per_task,
                r.none.util_us_per_task / r.rep.util_us_per_task);
  // c: intercept of replay cost per iteration against tasks per iteration (least squares).
  auto fit = [&](const std::string& workload, double& slope, double& intercept) {
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& r : rows)
      if (r.workload == workload) {
        double x = r.tasks_per_iter, y = r.rep.util_us_per_iter;
        n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
      }
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    intercept = (sy - slope * sx) / n;
  };
  for (const char* wl : {"empty", "stencil"}) {
    double slope, c;
    fit(wl, slope, c);
    std::printf("%-8s replay cost per iteration = %.3f us + %.3f us x tasks\n", wl, c, slope);
  }
  double slope, c;
  fit("empty", slope, c);
  for (const auto& r : rows)
    if (r.workload == "empty" && r.pieces == 16)
      std::printf(
          "RESULT bench=tracing pieces=16 tasks_per_iter=%d alpha_us=%.3f alpha_m_us=%.3f "
          "alpha_r_us=%.3f c_us=%.3f\n",
          r.tasks_per_iter, r.none.util_us_per_task, r.rec.util_us_per_task, r.rep.util_us_per_task,
          c);
  return 0;
}

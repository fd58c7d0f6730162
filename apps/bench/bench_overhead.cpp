// The per-task overhead benchmark (same workload as our Legion reference measurement): a 1-d
// region of 65,536 elements with fields A and B, equally partitioned into P pieces; each
// iteration launches T1 (read-write A) and T2 (read-only A, write-discard B) over the pieces,
// with empty bodies. 500 warm-up iterations, then -i timed iterations between two fences.
// Prints, per P, the application-thread cost, the analysis (utility-thread) cost and the
// end-to-end time per task; the last line is the RESULT for P = 16. Automatic tracing is off
// (the RESULT is the untraced figure); --with-auto measures again with it on and prints what
// it adds per task.
#include <reprise/reprise.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "reprise_rt/runtime.h"

using namespace reprise;

namespace {

enum : TaskID { T1 = 1, T2 = 2 };
enum : FieldID { FA = 0, FB = 1 };

void empty_task(TaskContext&) {}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

struct Figures {
  int pieces = 0;
  double app_us = 0, analysis_us = 0, end_to_end_us = 0;
};

Figures measure(Context& ctx, int pieces, int iters, int warmup) {
  auto is = ctx.create_index_space(Rect<1>({0}, {65535}));
  auto fs = ctx.create_field_space({{FA, sizeof(double)}, {FB, sizeof(double)}});
  Region r = ctx.create_region(is, fs);
  auto colors = ctx.create_index_space(Rect<1>({0}, {pieces - 1}));
  Partition part = ctx.partition_equal(r, colors);
  IndexLauncher l1(T1, colors);
  l1.add(part, Projection::identity(), Privilege::ReadWrite, {FA});
  IndexLauncher l2(T2, colors);
  l2.add(part, Projection::identity(), Privilege::ReadOnly, {FA});
  l2.add(part, Projection::identity(), Privilege::WriteDiscard, {FB});

  for (int i = 0; i < warmup; ++i) {
    ctx.execute(l1);
    ctx.execute(l2);
  }
  ctx.fence().wait();
  auto& rt = reprise::detail::Runtime::of(ctx);
  const double analysis0 = double(rt.stats().analysis_busy_ns) * 1e-9;
  const double app0 = thread_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    ctx.execute(l1);
    ctx.execute(l2);
  }
  const double app1 = thread_cpu_seconds();
  ctx.fence().wait();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double analysis1 = double(rt.stats().analysis_busy_ns) * 1e-9;
  const double tasks = double(iters) * 2.0 * pieces;
  Figures f;
  f.pieces = pieces;
  f.app_us = (app1 - app0) * 1e6 / tasks;
  f.analysis_us = (analysis1 - analysis0) * 1e6 / tasks;
  f.end_to_end_us = wall * 1e6 / tasks;
  ctx.destroy(r);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 5000, warmup = 500;
  bool with_auto = false;
  std::vector<int> piece_counts = {4, 16, 64};
  auto args = app_args(argc, argv);
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "-i" && i + 1 < args.size()) {
      iters = std::atoi(args[++i].c_str());
    } else if (args[i] == "-w" && i + 1 < args.size()) {
      warmup = std::atoi(args[++i].c_str());
    } else if (args[i] == "-p" && i + 1 < args.size()) {
      piece_counts = {std::atoi(args[++i].c_str())};
    } else if (args[i] == "--with-auto") {
      with_auto = true;
    } else {
      std::fprintf(stderr,
                   "usage: bench_overhead [-i iterations=5000] [-w warmup=500] [-p pieces] "
                   "[--with-auto] [runtime flags]\n");
      return 2;
    }
  }
  if (iters < 1 || warmup < 0) {
    std::fprintf(stderr, "bench_overhead: -i must be >= 1 and -w >= 0\n");
    return 2;
  }
  TaskRegistry::add(T1, "t1_rw_a", {cpu(empty_task)});
  TaskRegistry::add(T2, "t2_ro_a_wd_b", {cpu(empty_task)});

  std::vector<Figures> all, with;
  int rc = start(argc, argv,
                 [&](Context& ctx) {
                   for (int p : piece_counts) all.push_back(measure(ctx, p, iters, warmup));
                 },
                 {"-lg:no_auto_tracing"});
  if (rc != 0) return rc;
  if (with_auto) {
    rc = start(argc, argv, [&](Context& ctx) {
      for (int p : piece_counts) with.push_back(measure(ctx, p, iters, warmup));
    });
    if (rc != 0) return rc;
  }
  std::printf("bench_overhead: %d timed iterations (after %d warm-up), 2 index launches each\n",
              iters, warmup);
  std::printf("%8s %14s %14s %14s\n", "pieces", "app us/task", "analysis us/t", "e2e us/task");
  for (const auto& f : all)
    std::printf("%8d %14.3f %14.3f %14.3f\n", f.pieces, f.app_us, f.analysis_us, f.end_to_end_us);
  if (with_auto) {
    std::printf("with automatic tracing (it finds and replays the loop):\n");
    std::printf("%8s %14s %14s %14s %16s\n", "pieces", "app us/task", "analysis us/t",
                "e2e us/task", "app added us/t");
    for (std::size_t k = 0; k < with.size(); ++k)
      std::printf("%8d %14.3f %14.3f %14.3f %16.3f\n", with[k].pieces, with[k].app_us,
                  with[k].analysis_us, with[k].end_to_end_us, with[k].app_us - all[k].app_us);
  }
  for (const auto& f : all)
    if (f.pieces == 16 || all.size() == 1)
      std::printf(
          "RESULT bench=overhead pieces=%d tasks_per_iter=%d us_per_task=%.3f "
          "app_us_per_task=%.3f analysis_us_per_task=%.3f\n",
          f.pieces, 2 * f.pieces, f.end_to_end_us, f.app_us, f.analysis_us);
  return 0;
}

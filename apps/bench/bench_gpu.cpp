// GPU launch costs on a device backend (-backend host, the default, or cuda on a GPU): (1) the
// backend's own cost per kernel — empty kernels enqueued one by one vs the same kernels
// captured once and launched as graphs; (2) the runtime's — a traced loop of dependent GPU
// launches replayed kernel by kernel (-lg:gpu_graphs 0) vs as one graph per GPU processor,
// and the same loop untraced with and without -lg:gpu_early, all in one run, alternating,
// medians of -reps.
//   bench_gpu [-backend host|cuda] [-kernels N] [-iters N] [-pieces P] [-steps S] [-gpus G]
//             [-reps R]
// RESULT lines: bench=gpu_device ... and bench=gpu_replay mode=kernels|graphs ...
#include <reprise/reprise.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_gpu_kernels.h"
#include "reprise_gpu/devices.h"

using namespace reprise;

namespace {

using namespace bench_gpu;

void bump_cpu(TaskContext& tc) {
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  for (auto p : Rect<1>(tc.domain(0))) acc[p] += 1;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Empty kernels on one stream of the backend (CUDA kernels on cuda, host functions on host):
// one by one, and as captured graphs of `per_graph` kernels. Returns microseconds per kernel
// for both.
std::pair<double, double> device_costs(const std::string& backend, int kernels, int per_graph) {
  std::string notice;
  auto dev = devices::make_device(backend, notice);
  const bool cuda = std::string(dev->backend()) == "cuda";
  auto s = dev->create_stream(0);
  const auto empty_kernel = [&] {
    if (!cuda || !enqueue_empty_kernel(s.handle)) dev->launch_host(s, [] {});
  };
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kernels; ++i) empty_kernel();
  dev->synchronize(s);
  const double one_by_one = seconds_since(t0) * 1e6 / kernels;
  dev->begin_capture(s);
  for (int i = 0; i < per_graph; ++i) empty_kernel();
  auto g = dev->end_capture(s);
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kernels / per_graph; ++i) dev->launch_graph(s, g);
  dev->synchronize(s);
  const double graphs = seconds_since(t0) * 1e6 / (kernels / per_graph * per_graph);
  dev->destroy_graph(g);
  dev->destroy_stream(s);
  return {one_by_one, graphs};
}

struct ReplayRun {
  double seconds = 0;
  std::uint64_t kernels = 0, graphs = 0, replays = 0;
};

// How a run issues its GPU points: replayed as graphs or kernel by kernel, or untraced with
// or without -lg:gpu_early.
enum class Mode { Graphs, Kernels, Untraced, UntracedLate };

ReplayRun replay_run(const std::string& backend, Mode mode, int iters, int pieces, int steps,
                     int gpus) {
  ReplayRun out;
  const std::string g = std::to_string(gpus);
  const bool traced = mode == Mode::Graphs || mode == Mode::Kernels;
  reprise::run(
      {"-ll:cpu", "1", "-ll:gpu", g.c_str(), "-ll:gpu_backend", backend.c_str(), "-lg:gpu_graphs",
       mode == Mode::Graphs ? "1" : "0", "-lg:gpu_early", mode == Mode::UntracedLate ? "0" : "1"},
      [&](Context& ctx) {
        const coord_t n = 64 * pieces;
        Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {n - 1})),
                                     ctx.create_field_space({{FV, sizeof(std::int64_t)}}));
        Partition p = ctx.partition_by_blocks(r, Point<1>{n / pieces});
        ctx.fill(r, FV, std::int64_t(0));
        IndexLauncher bump(T_BUMP, p.color_space());
        bump.add(p, Projection::identity(), Privilege::ReadWrite, {FV});
        const auto iteration = [&] {
          if (traced) ctx.begin_trace(1);
          for (int k = 0; k < steps; ++k) ctx.execute(bump);
          if (traced) ctx.end_trace(1);
        };
        for (int i = 0; i < 3; ++i) iteration();  // record, first replays, capture
        ctx.fence().wait();
        const Context::TraceStats before = ctx.trace_stats();
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) iteration();
        ctx.fence().wait();
        out.seconds = seconds_since(t0);
        const Context::TraceStats after = ctx.trace_stats();
        out.kernels = after.gpu_kernels - before.gpu_kernels;
        out.graphs = after.gpu_graph_launches - before.gpu_graph_launches;
        out.replays = after.replays - before.replays;
      });
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int kernels = 200000, iters = 2000, pieces = 4, steps = 8, gpus = 2, reps = 5;
  std::string backend = "host";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (a == "-backend")
      backend = argv[i + 1];
    else if (a == "-kernels")
      kernels = v;
    else if (a == "-iters")
      iters = v;
    else if (a == "-pieces")
      pieces = v;
    else if (a == "-steps")
      steps = v;
    else if (a == "-gpus")
      gpus = v;
    else if (a == "-reps")
      reps = v;
    else {
      std::fprintf(stderr, "bench_gpu: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  TaskRegistry::add(T_BUMP, "bump", {cpu(bump_cpu), gpu(bump_gpu)});
  std::vector<double> one, graph, by_kernel, by_graph, untraced, untraced_late;
  ReplayRun last_k, last_g;
  for (int r = 0; r < reps; ++r) {
    const auto [o, g] = device_costs(backend, kernels, 64);
    one.push_back(o);
    graph.push_back(g);
    last_k = replay_run(backend, Mode::Kernels, iters, pieces, steps, gpus);
    last_g = replay_run(backend, Mode::Graphs, iters, pieces, steps, gpus);
    by_kernel.push_back(last_k.seconds * 1e6 / iters);
    by_graph.push_back(last_g.seconds * 1e6 / iters);
    untraced.push_back(replay_run(backend, Mode::Untraced, iters, pieces, steps, gpus).seconds *
                       1e6 / iters);
    untraced_late.push_back(
        replay_run(backend, Mode::UntracedLate, iters, pieces, steps, gpus).seconds * 1e6 / iters);
  }
  std::printf(
      "RESULT bench=gpu_device backend=%s us_per_kernel=%.3f us_per_kernel_in_graph=%.3f "
      "ratio=%.2f\n",
      backend.c_str(), median(one), median(graph), median(one) / median(graph));
  const double points = double(pieces) * steps;
  std::printf(
      "RESULT bench=gpu_replay backend=%s mode=kernels gpus=%d points_per_replay=%.0f "
      "us_per_iter=%.2f us_per_point=%.3f gpu_kernels=%llu gpu_graph_launches=%llu\n",
      backend.c_str(), gpus, points, median(by_kernel), median(by_kernel) / points,
      (unsigned long long)last_k.kernels, (unsigned long long)last_k.graphs);
  std::printf(
      "RESULT bench=gpu_replay backend=%s mode=graphs gpus=%d points_per_replay=%.0f "
      "us_per_iter=%.2f us_per_point=%.3f gpu_kernels=%llu gpu_graph_launches=%llu "
      "speedup=%.2f\n",
      backend.c_str(), gpus, points, median(by_graph), median(by_graph) / points,
      (unsigned long long)last_g.kernels, (unsigned long long)last_g.graphs,
      median(by_kernel) / median(by_graph));
  std::printf(
      "RESULT bench=gpu_untraced backend=%s gpus=%d points_per_iter=%.0f "
      "us_per_iter_early=%.2f us_per_iter_late=%.2f speedup=%.2f\n",
      backend.c_str(), gpus, points, median(untraced), median(untraced_late),
      median(untraced_late) / median(untraced));
  return 0;
}

// The executor with a device (-ll:gpu): points that complete from a stream — a GPU variant's
// kernels, a copy or fill with a framebuffer end — and replays as graphs, where the GPU points
// of a replayed template run as one captured graph per GPU processor (reprise_rt/gpu_groups.h).
#include <algorithm>
#include <cstring>

#include "reprise_rt/executor.h"
#include "reprise_rt/gpu_groups.h"
#include "reprise_rt/pool.h"
#include "reprise_rt/profiler.h"
#include "reprise_rt/runtime.h"

namespace reprise::detail {

namespace {
struct PendingGpuPoint {
  Executor* exec;
  PointTask* task;
  std::exception_ptr error;
  std::uint64_t begin_ns;
};

// A graph whose arguments changed this many times is not captured again: its points run
// kernel by kernel (a graph replays the arguments it was captured with).
constexpr int kMaxCaptures = 3;

// What a point's kernels may have captured of its arguments: the launch's and its own from
// the argument map (sizes first, so that no two differ only in where one ends).
void args_of(const PointTask& t, std::vector<std::byte>& out) {
  const auto& a = t.op->task_payload().args;
  const std::span<const std::byte> local = t.op->kind == OpKind::IndexTask
                                               ? t.op->task_payload().point_args.bytes(t.point)
                                               : std::span<const std::byte>();
  const std::uint64_t sizes[2] = {a.size(), local.size()};
  out.resize(sizeof(sizes) + a.size() + local.size());
  std::memcpy(out.data(), sizes, sizeof(sizes));
  if (!a.empty()) std::memcpy(out.data() + sizeof(sizes), a.data(), a.size());
  if (!local.empty())
    std::memcpy(out.data() + sizeof(sizes) + a.size(), local.data(), local.size());
}
}  // namespace

GpuGroups::~GpuGroups() {
  Executor* x = exec.load(std::memory_order_acquire);
  if (!x) return;
  for (const auto& g : groups)
    if (g->graph.handle) x->retire_graph(g->graph);
}

void Executor::run_point_with_device(PointTask* t) {
  if (ReplayBatch* b = t->batch; b && b->gpu) {
    const std::int32_t g = b->gpu->group_of[t->batch_index];
    if (g >= 0) {
      // A point of a group: the last of the group to become ready launches them all.
      if (b->gates[g].fetch_sub(1, std::memory_order_acq_rel) == 1)
        launch_group(*b, *b->gpu->groups[std::size_t(g)]);
      return;
    }
  }
  const std::uint64_t t0 = rt_.profiler() ? Profiler::stamp() : 0;
  t->copy_device = -1;
  if (t->stream_wait_count) {  // work of other streams it follows (Executor::wait_for)
    const DeviceStream own = work_stream(*t);
    for (int k = 0; k < t->stream_wait_count; ++k) {
      if (own.valid()) rt_.device()->wait(own, t->stream_waits[k]->event);
      release_mark(t->stream_waits[k]);
    }
    t->stream_wait_count = 0;
  }
  std::exception_ptr error = execute_point(*t);
  const DeviceStream s = t->copy_device >= 0 ? copy_stream(t->copy_device) : stream_of(t->proc);
  // (t may be gone once it is finished or its completion is enqueued.)
  const Event issued = t->issued;
  if (t->mark && s.valid()) t->mark->event = rt_.device()->record(s);
  if (!s.valid()) {  // a CPU point: done
    if (Profiler* prof = rt_.profiler()) profile_point(*prof, *t, t0);
    finish_point(t, std::move(error));
  } else {
    complete_from_stream(t, s, std::move(error), t0);
  }
  // Its work is on the stream: later points of this device may follow (Executor::wait_for).
  if (issued.exists()) rt_.events().trigger(issued);
}

void Executor::complete_from_stream(PointTask* t, DeviceStream s, std::exception_ptr error,
                                    std::uint64_t t0) {
  // Completion comes from the stream once it has run what the point enqueued.
  auto pending = make_pooled<PendingGpuPoint>(PendingGpuPoint{this, t, std::move(error), t0});
  rt_.device()->callback(s, &Executor::gpu_point_done, pending.release());
}

void Executor::gpu_point_done(void* arg) {
  PoolPtr<PendingGpuPoint> p(static_cast<PendingGpuPoint*>(arg));
  Executor& x = *p->exec;
  if (Profiler* prof = x.rt_.profiler()) x.profile_point(*prof, *p->task, p->begin_ns);
  x.finish_point(p->task, std::move(p->error));
}

void Executor::launch_group(ReplayBatch& b, GpuGroup& group) {
  Device& device = *rt_.device();
  const DeviceStream s = stream_of(group.proc);
  release_retired_graphs();
  if (!group.off && group.graph.handle) {
    // A graph replays the arguments it was captured with: check this replay's.
    // (Groups of different GPUs may be launched by different threads at once.)
    thread_local std::vector<std::byte> args;
    bool same = true;
    for (std::size_t k = 0; k < group.members.size() && same; ++k) {
      args_of(b.tasks[group.members[k]], args);
      same = args == group.captured_args[k];
    }
    if (!same) {  // stale: captured again below, or given up
      retire_graph(group.graph);
      group.graph = DeviceGraph{};
      if (group.captures >= kMaxCaptures) group.off = true;
    }
  }
  if (group.off) {  // kernel by kernel, in template order
    for (std::uint32_t m : group.members) {
      PointTask* t = &b.tasks[m];
      const std::uint64_t t0 = rt_.profiler() ? Profiler::stamp() : 0;
      std::exception_ptr error = execute_point(*t);
      complete_from_stream(t, s, std::move(error), t0);
    }
    return;
  }
  if (!group.graph.handle) {
    // Capture: each point's variant enqueues its kernels; a callback completes the points
    // since the previous one (reprise_rt/gpu_groups.h).
    const std::size_t m = group.members.size();
    group.steps.resize(
        std::size_t(std::count(group.callback_after.begin(), group.callback_after.end(), true)));
    std::vector<std::exception_ptr> errors(m);
    device.begin_capture(s);
    std::uint32_t first = 0, step = 0;
    for (std::uint32_t k = 0; k < m; ++k) {
      errors[k] = execute_point(b.tasks[group.members[k]]);
      if (!group.callback_after[k]) continue;
      group.steps[step] = GpuGroup::Step{this, &group, first, k};
      device.callback(s, &Executor::graph_step_done, &group.steps[step++]);
      first = k + 1;
    }
    const DeviceGraph graph = device.end_capture(s);
    if (std::any_of(errors.begin(), errors.end(), [](const auto& e) { return e != nullptr; })) {
      // Its kernels were captured, not run: the points complete with their errors, and the
      // group runs kernel by kernel from now on.
      if (graph.handle) retire_graph(graph);
      group.off = true;
      for (std::size_t k = 0; k < m; ++k)
        complete_from_stream(&b.tasks[group.members[k]], s, std::move(errors[k]), 0);
      return;
    }
    b.gpu->exec.store(this, std::memory_order_release);
    group.graph = graph;
    ++group.captures;
    group.captured_args.resize(group.members.size());
    for (std::size_t k = 0; k < group.members.size(); ++k)
      args_of(b.tasks[group.members[k]], group.captured_args[k]);
  }
  {
    std::lock_guard<std::mutex> g(group.mutex);
    group.in_flight.push_back(&b);
  }
  rt_.count_gpu_graph_launch();  // first: the graph may complete its points at once
  device.launch_graph(s, group.graph);
}

void Executor::graph_step_done(void* arg) {
  const auto& step = *static_cast<const GpuGroup::Step*>(arg);
  GpuGroup& group = *step.group;
  ReplayBatch* b;
  {
    // Graphs run in launch order on the stream: this step belongs to the oldest launch.
    std::lock_guard<std::mutex> g(group.mutex);
    b = group.in_flight.front();
    if (step.last + 1 == group.members.size()) group.in_flight.pop_front();
  }
  // (The group may go with the batch once its last point is done; until then the unfinished
  // points keep the batch, and so the group, alive: nothing of it is read after the last.)
  Executor* exec = step.exec;
  const std::uint32_t first = step.first, last = step.last;
  for (std::uint32_t k = first; k <= last; ++k)
    exec->finish_point(&b->tasks[group.members[k]], nullptr);
}

void Executor::retire_graph(DeviceGraph g) {
  // Not destroyed here: this may run in a stream's callback, where a CUDA backend must not
  // call the runtime API. A GPU thread destroys it before its next launch, or stop() does.
  std::lock_guard<std::mutex> lock(retired_graphs_mutex_);
  retired_graphs_.push_back(g);
}

void Executor::release_retired_graphs() {
  std::vector<DeviceGraph> graphs;
  {
    std::lock_guard<std::mutex> lock(retired_graphs_mutex_);
    if (retired_graphs_.empty()) return;
    graphs.swap(retired_graphs_);
  }
  for (DeviceGraph g : graphs) rt_.device()->destroy_graph(g);
}

}  // namespace reprise::detail

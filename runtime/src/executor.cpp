#include "reprise_rt/executor.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>

#include "reprise/task_context.h"
#include "reprise_rt/alone.h"
#include "reprise_rt/assert.h"
#include "reprise_rt/cycle_clock.h"
#include "reprise_rt/exception_text.h"
#include "reprise_rt/future_state.h"
#include "reprise_rt/local_ready.h"
#include "reprise_rt/log.h"
#include "reprise_rt/profiler.h"
#include "reprise_rt/recycler.h"
#include "reprise_rt/runtime.h"
#include "reprise_rt/shard_exchange.h"
#include "reprise_rt/topology.h"

namespace reprise::detail {

namespace {
thread_local LocalReady* tl_local_ready = nullptr;

// What a failed point reports: which op, task, point (and shard) failed, then what it threw —
// anything, not only std::exception (a task that throws 42 must not terminate the process).
std::exception_ptr point_failure(const Runtime& rt, const PointTask& t, std::exception_ptr thrown) {
  const std::string what = exception_text(thrown);
  // The runtime's own errors inside a task name the point already.
  if (what.rfind("op #", 0) == 0) return thrown;
  const std::string shard =
      rt.num_shards() > 1 ? fmt::format(" on shard {}", rt.shard()) : std::string();
  const bool single = t.op->kind != OpKind::IndexTask;
  return std::make_exception_ptr(Error(
      fmt::format("{}{}{}: {}", t.op->describe(),
                  single ? std::string() : fmt::format(", point {}", t.point.str()), shard, what)));
}
}  // namespace

Executor::Executor(Runtime& rt) : rt_(rt), bounds_checks_(rt.config().bounds_checks) {
  for (int i = 0; i < rt.config().cpus; ++i) cpu_queues_.push_back(std::make_unique<ReadyQueue>());
  for (int i = 1; i < rt.config().utils; ++i) dma_queues_.push_back(std::make_unique<ReadyQueue>());
  if (rt.device())
    for (int i = 0; i < rt.config().gpus; ++i)
      gpu_queues_.push_back(std::make_unique<ReadyQueue>());
  if (rt.config().othr > 1)
    for (int i = 0; i < rt.config().cpus; ++i)
      steal_pools_.push_back(
          std::make_unique<StealPool>(rt.config().othr, rt.config().steal_policy));
  if (!rt.config().steal_trace_file.empty()) steal_sink_ = std::make_unique<StealTraceSink>();
}

Executor::~Executor() {
  stop();
  // Templates go after stop(): the graphs of their GPU groups come back to be destroyed here.
  if (rt_.device()) release_retired_graphs();
}

void Executor::start() {
  // Pin workers to distinct cores while there are cores for them; extra workers float.
  int cores = machine_cores();
  // Under control replication several ranks may share a node (and the launcher binds them):
  // leave placement to it.
  bool pin = rt_.config().pin && int(cpu_queues_.size()) <= cores && rt_.num_shards() == 1;
  // Which CPUs' queues each CPU may take points from: those of its NUMA domain. (Not with
  // fork-join helpers: a point's helper pool is its mapped CPU's.)
  const std::size_t cpus = cpu_queues_.size();
  steal_from_.assign(cpus, {});
  const MachineInfo& machine = rt_.machine();
  if (rt_.spin_policy().steal_after_ns > 0 && steal_pools_.empty() &&
      rt_.mapper().permit_stealing(machine))
    for (std::uint32_t i = 0; i < cpus; ++i) {
      for (std::uint32_t j = 0; j < cpus; ++j) {
        const Processor a{ProcessorKind::CPU, i, rt_.shard()},
            b{ProcessorKind::CPU, j, rt_.shard()};
        if (i != j && machine.closest_memory(a) == machine.closest_memory(b))
          steal_from_[i].push_back(cpu_queues_[j].get());
      }
      cpu_queues_[i]->set_siblings(steal_from_[i]);
    }
  // Spares need siblings (no rate to measure, ~200 us, without them); not with a device: its
  // points are not timed.
  const bool any_siblings = std::any_of(steal_from_.begin(), steal_from_.end(),
                                        [](const auto& from) { return !from.empty(); });
  keep_below_ = rt_.config().keep_ns > 0 && any_siblings && !rt_.device()
                    ? std::int64_t(double(rt_.config().keep_ns) * cycles_per_ns())
                    : 0;
  keep_all_below_ = keep_below_ > 0 && rt_.spin_policy().kept_steal_after_ns > 0
                        ? std::int64_t(double(rt_.config().keep_all_ns) * cycles_per_ns())
                        : 0;
  long_point_ = kLongPointThresholds * keep_all_below_;
  // -ll:app_cpu: the last CPU's points run on the application thread while it waits.
  const std::size_t app_served = rt_.config().app_cpu && cpus > 0 ? 1 : 0;
  if (app_served) {
    app_local_ = std::make_unique<LocalReady>(
        make_local(*cpu_queues_.back(), std::span<ReadyQueue* const>(steal_from_.back())));
    app_lane_ = fmt::format("cpu{}", cpus - 1);
    cpu_queues_.back()->set_unattended(true);   // (until the application thread waits)
    if (Profiler* profiler = rt_.profiler()) {  // (start runs on the application thread)
      const Profiler::LaneScope lane(app_lane_.c_str());
      profiler->prepare_buffer();
    }
  }
  for (std::size_t i = 0; i + app_served < cpus; ++i)
    threads_.emplace_back(&Executor::worker_loop, this, std::ref(*cpu_queues_[i]),
                          std::span<ReadyQueue* const>(steal_from_[i]), pin ? int(i) : -1,
                          fmt::format("cpu{}", i));
  for (std::size_t i = 0; i < dma_queues_.size(); ++i)
    threads_.emplace_back(&Executor::worker_loop, this, std::ref(*dma_queues_[i]),
                          std::span<ReadyQueue* const>(), -1, fmt::format("util{}", i + 1));
  // A GPU processor: a host thread that runs its variants' host code, and a stream on its
  // device (virtual GPUs share the physical ones round-robin).
  if (Device* device = rt_.device()) {
    for (int d = 0; d < device->devices(); ++d) copy_streams_.push_back(device->create_stream(d));
    for (std::size_t i = 0; i < gpu_queues_.size(); ++i) {
      gpu_streams_.push_back(device->create_stream(int(i) % device->devices()));
      threads_.emplace_back(&Executor::worker_loop, this, std::ref(*gpu_queues_[i]),
                            std::span<ReadyQueue* const>(), -1, fmt::format("gpu{}", i));
    }
  }
  // (The application thread serves the last CPU; with no thread of the executor's own, no
  // device and no profiler, nothing else runs a point or watches one run: runs_inline.)
  // Beside CPU workers, points may run inline only while they are too short to be worth a
  // hand-off (kept points, above), and only those of CPUs the application's may take points
  // from: not with fork-join helpers.
  inline_beside_workers_ = runs_threads();
  const bool inline_here =
      app_local_ && copy_streams_.empty() && !rt_.profiler() &&
      (!inline_beside_workers_ || (keep_all_below_ > 0 && steal_pools_.empty()));
  inline_cpu_ = inline_here ? std::int64_t(cpus - 1) : -1;
  inline_takes_from_.assign(cpus, 0);
  for (std::uint32_t j = 0; j + 1 < cpus && inline_here && inline_beside_workers_; ++j)
    inline_takes_from_[j] = std::find(steal_from_[cpus - 1].begin(), steal_from_[cpus - 1].end(),
                                      cpu_queues_[j].get()) != steal_from_[cpus - 1].end();
  if (rt_.profiler())
    for (std::size_t made = buffers_made_.load(); made < threads_.size();
         made = buffers_made_.load())
      buffers_made_.wait(made);
}

void Executor::stop() {
  if (alone_beside_workers_.load(std::memory_order_relaxed)) leave_alone();
  for (auto& q : cpu_queues_) q->stop();
  for (auto& q : dma_queues_) q->stop();
  for (auto& q : gpu_queues_) q->stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  steal_pools_.clear();  // joins their helpers (idle: every task has run)
  // (Every point has completed: the streams hold nothing more.)
  for (DeviceStream s : gpu_streams_) rt_.device()->destroy_stream(s);
  for (DeviceStream s : copy_streams_) rt_.device()->destroy_stream(s);
  gpu_streams_.clear();
  copy_streams_.clear();
}

void Executor::write_steal_trace(const std::string& path) const {
  if (steal_sink_) steal_sink_->write(path);
}

ReadyQueue& Executor::queue_of(const Processor& p) {
  if (p.kind == ProcessorKind::Utility && !dma_queues_.empty())
    return *dma_queues_[p.index % dma_queues_.size()];
  if (p.kind == ProcessorKind::GPU && !gpu_queues_.empty())
    return *gpu_queues_[p.index % gpu_queues_.size()];
  return *cpu_queues_[p.index % cpu_queues_.size()];
}

DeviceStream Executor::work_stream(const PointTask& t) const {
  // (fill_on_device and copy_on_device enqueue on this stream: one decision for both.)
  const Op& op = *t.op;
  switch (op.kind) {
    case OpKind::Task:
    case OpKind::IndexTask:
      return t.proc.kind == ProcessorKind::GPU ? stream_of(t.proc) : DeviceStream{};
    case OpKind::Fill: {
      const Instance* inst = op.point_instances[0];
      return inst->on_device() ? copy_stream(inst->device_index()) : DeviceStream{};
    }
    case OpKind::Copy: {
      if (op.folds() || t.send_to >= 0 || t.receive) return DeviceStream{};
      // A copy into a framebuffer runs on its device's copy stream, one out of one on the
      // source's.
      const Instance* si = op.point_instances[0];
      const Instance* di = op.point_instances[1];
      if (di->on_device()) return copy_stream(di->device_index());
      return si->on_device() ? copy_stream(si->device_index()) : DeviceStream{};
    }
    default:
      return DeviceStream{};
  }
}

DeviceStream Executor::early_stream(const PointTask& t) const {
  // Points whose work runs on a device stream and whose host code only enqueues it: not a
  // task that reads futures (a future is ready only when its producer has finished) or folds
  // on the host; not under control replication (a remote shard's event has no stand-in) nor
  // -lg:simulate_shards.
  REPRISE_ASSERT(rt_.device(), "early_stream is asked only with a device");
  if (!rt_.config().gpu_early) return DeviceStream{};
  if (rt_.exchange() || rt_.simulated()) return DeviceStream{};
  const Op& op = *t.op;
  if (op.kind == OpKind::Task || op.kind == OpKind::IndexTask) {
    if (t.proc.kind != ProcessorKind::GPU) return DeviceStream{};
    if (!t.variant || t.variant != op.task_info->variant(ProcessorKind::GPU)) return DeviceStream{};
    if (!op.futures().empty()) return DeviceStream{};
    for (const ReqInfo& q : op.reqs)
      if (q.privilege == Privilege::Reduce) return DeviceStream{};
  }
  return work_stream(t);
}

bool Executor::take_stream_wait(PointTask& t, DeviceStream own, StreamMark* mark) {
  if (mark->stream == own.handle) {  // the stream orders the two already
    release_mark(mark);
    return true;
  }
  // A batch's point may run inside a captured graph, which cannot wait for an event from
  // outside it; and the room is bounded.
  if (t.batch || t.stream_wait_count == PointTask::kMaxStreamWaits) return false;
  t.stream_waits[t.stream_wait_count++] = mark;
  return true;
}

void Executor::release_mark(StreamMark* mark) {
  if (mark->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  rt_.device()->release_event(mark->event);
  PoolDelete<StreamMark>{}(mark);
}

void Executor::precondition_done(void* ctx, std::uint64_t) {
  auto* t = static_cast<PointTask*>(ctx);
  t->exec->release(t);
}

Event Executor::op(Op& op, std::uint32_t point, Processor proc, std::span<const Event> pre) {
  // (Another shard's point needs no task here: checked before one is allocated.)
  if (rt_.exchange() && proc.shard != rt_.shard()) {
    // A point that touches data, of an op that completes locally: nothing here waits for it
    // (every access waits by data, Analysis::own_waits), so it gets no proxy — done with here
    // at once, untraced or recorded.
    if (op.local_completion && !op.reqs.empty()) {
      count_off(op);
      return kNoEvent;
    }
    return remote_point(op, point, proc.shard);
  }
  return launch(op, point, proc, pre);
}

Event Executor::copy(const OpRef& copy, Processor proc, std::span<const Event> pre, std::uint32_t) {
  return launch(*copy, 0, proc, pre);
}

Event Executor::launch(Op& op, std::uint32_t point, Processor proc, std::span<const Event> pre) {
  RecycledPtr<PointTask> task(Recycler<PointTask>::make());
  const Event done = init_sharded_point(*task, op, point, proc, 0, nullptr);
  if (task->elsewhere) return done;
  if (const DeviceStream s = rt_.device() ? early_stream(*task) : DeviceStream{}; s.valid()) {
    task->issued = rt_.events().create();
    PoolPtr<StreamMark> mark = make_pooled<StreamMark>();
    mark->stream = s.handle;
    task->mark = mark.release();  // the link's reference, dropped in finish_point
    rt_.events().link_early(done, task->issued, device_tag(s), task->mark);
  }
  PointTask* t = task.release();  // owned by the executor until it has run
  wait_for(t, pre);
  release(t);
  return done;
}

Event Executor::merge(std::span<const Event> events) {
  if (ShardExchange* x = rt_.exchange())
    for (Event e : events) x->need(e);
  if (SimulatedAsks* asks = rt_.simulated_asks()) [[unlikely]]
    asks->merged(events);
  Event merged = rt_.events().merge(events);
  if (Profiler* prof = rt_.profiler(); prof && prof->deps()) [[unlikely]] {
    // A merge of fewer than two pending events is none of its own (nothing, or its one
    // pending input), which would drop the others from the profile's graph (an entry fence
    // made after the work before it has finished, say): here it gets one.
    if (!events.empty() &&
        (!merged.exists() || std::find(events.begin(), events.end(), merged) != events.end())) {
      EventTable& table = rt_.events();
      const Event own = table.create();
      const auto trigger = [](void* t, std::uint64_t e) {
        static_cast<EventTable*>(t)->trigger(Event{std::uint32_t(e >> 32), std::uint32_t(e)});
      };
      const std::uint64_t packed = std::uint64_t(own.id) << 32 | own.gen;
      if (!merged.exists() || !table.add_waiter(merged, trigger, &table, packed))
        table.trigger(own);
      merged = own;
    }
    prof->merged(merged, events);
  }
  return merged;
}

Event Executor::fence(std::span<const Event> before) {
  return merge(before);
}

void Executor::enqueue(PointTask* t) {
  // (Alone here is the application thread's: a worker queues only points of a list it took.)
  if (runtime_alone() && alone_beside_workers_.load(std::memory_order_relaxed)) [[unlikely]]
    leave_alone();
  ReadyQueue& q = queue_of(t->proc);
  if (LocalReady* local = tl_local_ready) {
    if (&q == local->own && !local->spare) return local->append(t);
    if (local->keep_below) return local->take_or_push(t, q);
  }
  q.push(t);
}

void Executor::worker_loop(ReadyQueue& q, std::span<ReadyQueue* const> siblings, int pin_core,
                           std::string name) {
  set_log_thread_name(std::move(name));
  if (Profiler* profiler = rt_.profiler()) {  // (not on a first point)
    profiler->prepare_buffer();
    buffers_made_.fetch_add(1);
    buffers_made_.notify_all();
  }
  if (pin_core >= 0 && !pin_current_thread(pin_core))
    REPRISE_LOG_DEBUG(LogCategory::Runtime, "could not pin a worker to core {}", pin_core);
  const SpinPolicy spin = rt_.spin_policy();
  LocalReady local = make_local(q, siblings);
  tl_local_ready = &local;
  for (;;) {
    q.enter_between_lists();
    PointTask* list = q.pop_all(spin);  // (a take leaves between lists: ReadyQueue::take)
    if (!list) break;
    REPRISE_ASSERT(!runtime_alone(),
                   "a worker takes points only while the runtime does not run alone (the "
                   "application thread leaves it before it queues any)");
    run_list(q, local, list);
  }
  REPRISE_ASSERT(local.deferred_count == 0,
                 "a worker runs out of points only after its count-offs");
  tl_local_ready = nullptr;
}

LocalReady Executor::make_local(ReadyQueue& q, std::span<ReadyQueue* const> siblings) const {
  LocalReady local{&q};
  if (!siblings.empty() && keep_below_ > 0) {
    local.siblings = siblings;
    local.keep_below = keep_below_;
    local.keep_all_below = keep_all_below_;
  }
  return local;
}

void Executor::run_list(ReadyQueue& q, LocalReady& local, PointTask* list,
                        const std::atomic<std::uint32_t>* interrupt, std::uint32_t seen) {
  while (list) {
    // The application thread serving its CPU goes back to issuing once woken for it: what it
    // has not run goes back to its queue, where its siblings take it.
    if (interrupt && interrupt->load(std::memory_order_relaxed) != seen) [[unlikely]] {
      if (local.deferred_count) count_off_deferred(local);
      list = local.ahead_of(list);  // (what those count-offs made ready)
      for (PointTask* t = list; t;) {
        PointTask* next = t->next;
        q.push(t);
        t = next;
      }
      return;
    }
    PointTask* next = list->next;
    local.more = next != nullptr;
    // (The rest is shown to siblings while this point runs, taken back after it.)
    if (next) q.show_rest(next);
    run_point(list);
    if (next) next = q.take_rest();
    local.settle();
    // What this point made ready here runs before the rest of the batch: it is on the
    // critical path, the rest was ready earlier.
    next = local.ahead_of(next);
    // Out of points: what waited to be counted off is, and may make more ready here.
    if (!next && local.deferred_count) [[unlikely]] {
      count_off_deferred(local);
      next = local.ahead_of(nullptr);
    }
    list = next;
  }
}

void Executor::count_off_deferred(LocalReady& local) {
  for (std::uint32_t i = 0; i < local.deferred_count; ++i) {
    const OpRef op = std::move(local.deferred[i]);
    count_off(*op);
  }
  local.deferred_count = 0;
  local.settle();  // (a spare they made ready joins the points made ready here)
}

void Executor::serve_app(const std::atomic<std::uint32_t>* wakes, std::uint32_t seen) {
  REPRISE_ASSERT(app_local_ && !tl_local_ready,
                 "only the application thread serves its CPU, and not from inside a point");
  ReadyQueue& q = *cpu_queues_.back();
  q.set_unattended(false);
  struct Away {  // (issuing again, whichever way this returns)
    ReadyQueue& q;
    ~Away() { q.set_unattended(true); }
  } away{q};
  PointTask* list = wakes ? q.pop_all(rt_.spin_policy(), wakes, seen) : q.try_take();
  if (!list) return;
  // (Profiled on the CPU's lane, not the application's.)
  const Profiler::LaneScope lane(app_lane_.c_str());
  tl_local_ready = app_local_.get();
  run_list(q, *app_local_, list, wakes, seen);
  REPRISE_ASSERT(app_local_->deferred_count == 0,
                 "the application thread goes back to issuing only after its count-offs");
  tl_local_ready = nullptr;
}

bool Executor::runs_inline(Processor proc, const TaskInfo* kind) const {
  return may_run_inline(proc) && !tl_local_ready &&
         (!inline_beside_workers_ || (points_short() && !(kind && kind->ran_long.get())));
}

void Executor::note_kind_ticks(const Op& op, std::int64_t ticks) const {
  if (inline_beside_workers_ && op.task_info) op.task_info->ran_long.set(ticks >= long_point_);
}

bool Executor::may_run_inline(Processor proc) const {
  // (The application's own CPU first: alone, the only one.)
  return inline_cpu_ >= 0 && proc.kind == ProcessorKind::CPU && proc.shard == rt_.shard() &&
         (std::int64_t(proc.index) == inline_cpu_ ||
          (proc.index < inline_takes_from_.size() && inline_takes_from_[proc.index]));
}

bool Executor::points_short() const {
  const std::int64_t recent = recent_point_ticks_.load(std::memory_order_relaxed);
  return recent > 0 && recent < keep_all_below_;
}

inline void Executor::run_task_here(Op& op, std::uint32_t point, Processor proc,
                                    const DomainPoint* coords, LocalReady& local) {
  // What init_point, run_point and finish_point do for a task's point, less what a point run
  // here, start to end, never needs: a recycled PointTask, a completion event, a reference
  // of its own (the caller holds the op throughout), a device stream, a batch, a deferred
  // count-off (nothing can be ahead of it in `local`: nothing was made ready before it ends).
  // (~130 instructions of an eager one-point launch's ~2,500.)
  REPRISE_ASSERT(!local.head && !local.spare && local.deferred_count == 0,
                 "a point run here has nothing ahead of it");
  PointTask& t = here_;
  t.exec = this;
  t.point_index = point;
  t.point = coords ? *coords : op.domain.delinearize(coord_t(point));
  t.proc = proc;
  t.variant = op.task_info->variant_to_run(proc.kind);
  t.op = OpRef(&op);
  struct Borrowed {  // (detached, not released, however this returns)
    OpRef& ref;
    ~Borrowed() { ref.detach(); }
  } borrowed{t.op};
  op.point_done[point] = kNoEvent;
  // (Beside workers every point run here is timed: one that ran long must not run here again.)
  const bool sampled = local.sample();
  const bool timed = sampled || inline_beside_workers_;
  const std::uint64_t c0 = timed ? cycle_count() : 0;
  if (!rt_.failed()) [[likely]] {
    try {
      run_task_body(t);
    } catch (...) {
      fail_point(t, std::current_exception());  // (the op's error, and the runtime's)
    }
  }
  if (timed) [[unlikely]] {
    const auto ticks = std::int64_t(cycle_count() - c0);
    if (sampled) publish_point_ticks(local, ticks);
    note_kind_ticks(op, ticks);
  }
  count_off(op);
}

void Executor::run_inline(Op& op, std::uint32_t point, Processor proc, const DomainPoint* coords) {
  // (Not runs_inline: beside workers, the sampled point times it looks at may have changed
  // since the analysis asked.)
  REPRISE_ASSERT(may_run_inline(proc) && !tl_local_ready,
                 "a point runs inline only on the CPU the application serves, or on one it may "
                 "take points from");
  points_inline_.store(points_inline_.load(std::memory_order_relaxed) + 1,
                       std::memory_order_relaxed);
  if (!runtime_alone()) [[unlikely]] {
    if (alone_beside_workers_.load(std::memory_order_relaxed)) go_alone();
    if (!runtime_alone())
      points_inline_shared_.store(points_inline_shared_.load(std::memory_order_relaxed) + 1,
                                  std::memory_order_relaxed);
  }
  // As serve_app runs its CPU's points: a point is a point wherever it runs (on_app_thread).
  const std::uint64_t c0 = rt_.timing_analysis() ? cycle_count() : 0;
  LocalReady& local = *app_local_;
  tl_local_ready = &local;
  if (op.task_info && copy_streams_.empty() && steal_pools_.empty() && !rt_.profiler()) [[likely]] {
    run_task_here(op, point, proc, coords, local);
  } else {
    RecycledPtr<PointTask> task(Recycler<PointTask>::make());
    // (No completion event: nothing can wait for a point that is done before the next launch.)
    init_point(*task, op, point, proc, 0, coords, false);
    run_point(task.release());  // (finish_point recycles it)
  }
  // (Nothing can wait for a point run eagerly; whatever it made ready here runs after it all
  // the same, as serve_app would run it.)
  for (;;) {
    local.settle();
    PointTask* more = local.ahead_of(nullptr);
    if (!more && local.deferred_count) [[unlikely]] {
      count_off_deferred(local);
      more = local.ahead_of(nullptr);
    }
    if (!more) [[likely]]
      break;
    run_list(*cpu_queues_.back(), local, more);
  }
  REPRISE_ASSERT(app_local_->deferred_count == 0,
                 "the application thread goes back to issuing only after its count-offs");
  tl_local_ready = nullptr;
  if (c0) rt_.ran_inline(cycle_count() - c0);
}

bool Executor::workers_idle() {
  if (!gpu_queues_.empty() || !steal_pools_.empty()) return false;
  // Every worker between lists, nothing queued or shown, and every worker still in the same
  // state: a worker that took a list between the looks changed its state before the take (a
  // queue found empty through a take is looked at after it), and one that came back had
  // queued what its points made ready before it did (its first look found it busy).
  const std::size_t cpu_workers = app_local_ ? cpu_queues_.size() - 1 : cpu_queues_.size();
  auto each_worker = [&](auto&& f) {
    for (std::size_t i = 0; i < cpu_workers; ++i)
      if (!f(*cpu_queues_[i])) return false;
    for (const auto& q : dma_queues_)
      if (!f(*q)) return false;
    return true;
  };
  idle_looks_.clear();
  const bool between = each_worker([&](const ReadyQueue& q) {
    idle_looks_.push_back(q.consumer_state());
    return (idle_looks_.back() & 1) != 0;
  });
  if (!between) return false;
  for (const auto& q : cpu_queues_)
    if (!q->holds_nothing()) return false;
  for (const auto& q : dma_queues_)
    if (!q->holds_nothing()) return false;
  std::size_t i = 0;
  return each_worker([&](const ReadyQueue& q) { return q.consumer_state() == idle_looks_[i++]; });
}

void Executor::go_alone() {
  // Nothing is in flight: every point a worker took has finished, and its worker has since
  // come back between lists (workers_idle sees it, and all it did before) or is still on its
  // way (then not now). Nothing is queued while the runtime runs alone: enqueue leaves it
  // first.
  if (workers_idle()) g_runtime_alone.store(true, std::memory_order_relaxed);
}

void Executor::leave_alone() {
  // (Before a point is queued: the worker that takes it, with acquire, sees the flag clear and
  // every counter this thread changed by a load and a store.)
  g_runtime_alone.store(false, std::memory_order_relaxed);
}

void Executor::nudge_app() {
  cpu_queues_.back()->nudge();
}

bool Executor::running_points_here() {
  return tl_local_ready != nullptr;
}

void Executor::run_point(PointTask* t) {
  if (!copy_streams_.empty()) [[unlikely]]  // a device: points may complete from a stream
    return run_point_with_device(t);
  // (Profiling and timing take another path, so that the usual one stays as short as it was.)
  LocalReady* timed = tl_local_ready;
  if (timed && !timed->sample()) timed = nullptr;
  if (Profiler* prof = rt_.profiler(); prof || timed) [[unlikely]]
    return run_point_observed(t, prof, timed);
  finish_point(t, execute_point(*t));
}

void Executor::publish_point_ticks(LocalReady& local, std::int64_t ticks) {
  local.ran(ticks);  // (the thread's own average first, then the one every thread shares)
  // One average of every thread's samples: a thread's own average is as old as its last
  // sample — the application thread's, taken while it last waited, may be of points that ran
  // cold after a sleep. A sample counts at most four thresholds (-ll:keep_all_ns), so that one
  // page fault or preemption moves it by half a threshold at most. (A load and a store: a
  // sample another thread publishes at the same time may be lost.)
  if (keep_all_below_ > 0) ticks = std::min(ticks, 4 * keep_all_below_);
  const std::int64_t was = recent_point_ticks_.load(std::memory_order_relaxed);
  recent_point_ticks_.store(was == 0 ? std::max<std::int64_t>(ticks, 1) : was + (ticks - was) / 8,
                            std::memory_order_relaxed);
}

void Executor::run_point_observed(PointTask* t, Profiler* prof, LocalReady* timed) {
  const std::uint64_t t0 = prof ? Profiler::stamp() : 0;
  const std::uint64_t cpu0 = prof && prof->cpu_times() ? Profiler::thread_cpu_now() : 0;
  const std::uint64_t c0 = timed ? cycle_count() : 0;
  std::exception_ptr point_error = execute_point(*t);
  if (timed) {
    const auto ticks = std::int64_t(cycle_count() - c0);
    publish_point_ticks(*timed, ticks);
    note_kind_ticks(*t->op, ticks);
  }
  if (prof) profile_point(*prof, *t, t0, cpu0);
  finish_point(t, std::move(point_error));
}

std::exception_ptr Executor::execute_point(PointTask& t) {
  Op& op = *t.op;
  ShardExchange* exchange = rt_.exchange();
  std::exception_ptr point_error;
  if (!rt_.failed()) {
    try {
      switch (op.kind) {
        case OpKind::Task:
        case OpKind::IndexTask:
          run_task_body(t);
          break;
        case OpKind::Fill:
          run_fill(t);
          break;
        case OpKind::Copy:
          if (t.send_to >= 0) {
            exchange->send_data(op, std::uint32_t(t.send_to));
          } else if (t.receive) {
            exchange->unpack(op);
            rt_.count_copy();
          } else {
            run_copy(t);
          }
          break;
        default:
          break;
      }
    } catch (...) {
      point_error = fail_point(t, std::current_exception());
    }
  }
  return point_error;
}

std::exception_ptr Executor::fail_point(PointTask& t, std::exception_ptr thrown) {
  std::exception_ptr point_error = point_failure(rt_, t, std::move(thrown));
  Op& op = *t.op;
  if (!op.error_set.exchange(true)) op.error = point_error;  // read when the op completes
  rt_.record_error(point_error);
  return point_error;
}

void Executor::finish_point(PointTask* t, std::exception_ptr point_error) {
  Op& op = *t->op;
  ShardExchange* exchange = rt_.exchange();
  // Control replication: the other shards hold a proxy for this point.
  if (exchange && !op.generated()) exchange->finished(op, t->point_index, point_error);
  const bool sent = t->send_to >= 0;
  Event done = t->done;
  StreamMark* mark = t->mark;
  OpRef keep = std::move(t->op);
  ReplayBatch* batch = t->batch;
  const std::uint32_t batch_index = t->batch_index;
  if (!batch) Recycler<PointTask>::destroy(t);  // a batch's points go with their batch
  if (done.exists()) rt_.events().trigger(done);
  if (mark) release_mark(mark);  // (after the trigger: no waiter takes it any more)
  if (batch) finish_in_batch(batch, batch_index);
  if (keep->generated()) {
    // No program op to complete; a send half counted towards its op's completion here.
    if (Op* parent = keep->parent(); sent && parent && parent->local_completion) count_off(*parent);
    return;
  }
  if (LocalReady* local = tl_local_ready; local && local->may_defer()) [[unlikely]]
    return local->defer(std::move(keep));
  count_off(*keep);
}

void Executor::profile_point(Profiler& prof, const PointTask& t, std::uint64_t t0,
                             std::uint64_t cpu0) {
  const Op& op = *t.op;
  Profiler::Kind kind = Profiler::Kind::Task;
  std::uint64_t bytes = 0;
  std::uint32_t peer = 0;
  if (op.kind == OpKind::Fill) {
    kind = Profiler::Kind::Fill;
  } else if (op.kind == OpKind::Copy) {
    kind = t.send_to >= 0 ? Profiler::Kind::Send
           : t.receive    ? Profiler::Kind::Receive
                          : Profiler::Kind::Copy;
    bytes = copy_bytes(op);
    if (t.send_to >= 0) peer = std::uint32_t(t.send_to);
    if (t.receive) peer = rt_.instances().shard_of(op.point_instances[0]->memory());
  }
  // -lg:simulate_shards: the shard the point ran for; a generated copy goes from its source's
  // shard to its destination's.
  std::uint32_t shard = 0;
  if (rt_.simulated()) {
    shard = t.proc.shard;
    peer = shard;
    if (op.kind == OpKind::Copy && op.generated()) {
      const auto ends = rt_.instances().copy_shards(op);
      shard = ends.from;
      peer = ends.to;
    }
  }
  const std::uint64_t cpu =
      cpu0 ? std::max<std::uint64_t>(1, Profiler::thread_cpu_now() - cpu0) : 0;
  prof.record(kind, op, t.point_index, t.point, t0, Profiler::stamp(), bytes, peer, cpu, shard);
}

}  // namespace reprise::detail

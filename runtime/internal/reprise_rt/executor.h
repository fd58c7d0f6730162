#pragma once
// The executor: CPU worker threads (pinned with hwloc) and extra utility threads, each with a
// ready queue; implements the graph calculus by launching points when their preconditions
// have triggered.
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "reprise_rt/batch_sink.h"
#include "reprise_rt/device.h"
#include "reprise_rt/graph.h"
#include "reprise_rt/point_task.h"
#include "reprise_rt/ready_queue.h"
#include "reprise_rt/replay_batch.h"
#include "reprise_rt/steal_scope.h"

namespace reprise::detail {

class Profiler;
struct GpuGroup;
struct LocalReady;  // a worker's points made ready for it (executor.cpp)
class Runtime;
class SimulatedAsks;

class Executor final : public GraphSink, public BatchSink {
 public:
  explicit Executor(Runtime& rt);
  ~Executor() override;
  void start();
  void stop();  // joins every thread; queues must be empty

  Event op(Op& op, std::uint32_t point, Processor proc, std::span<const Event> pre) override;
  Event copy(const OpRef& copy, Processor proc, std::span<const Event> pre,
             std::uint32_t for_point) override;
  Event merge(std::span<const Event> events) override;
  Event fence(std::span<const Event> before) override;
  // Where the application thread serves a CPU and no device or profiler watches points run:
  // that CPU's points where no other thread runs points; beside CPU workers, only while
  // points are too short to be worth a hand-off (-ll:keep_all_ns, sampled on every thread),
  // that CPU's and those of the CPUs it may take points from (the mapper permitting), and not
  // a task whose last timed point ran long (TaskInfo::ran_long).
  bool runs_inline(Processor proc, const TaskInfo* kind) const override;
  // A task point that runs this many times -ll:keep_all_ns (what counts as too short for a
  // hand-off; 9.6 us by default) runs long (TaskInfo::ran_long): run eagerly beside workers it
  // would hold the issue of what follows for many hand-offs' time, while a worker may idle.
  // (A preemption that makes a short task's point look long sends its launches to the
  // workers until one of its sampled points is short.)
  static constexpr std::int64_t kLongPointThresholds = 32;
  bool runs_any_inline() const { return inline_cpu_ >= 0; }  // (after start)
  std::uint64_t points_inline() const { return points_inline_.load(std::memory_order_relaxed); }
  // ... of which run while the runtime ran alone (reprise_rt/alone.h).
  std::uint64_t points_inline_alone() const {
    return points_inline() - points_inline_shared_.load(std::memory_order_relaxed);
  }
  // Whether the runtime may run alone beside its CPU workers while they wait with nothing to
  // run (reprise_rt/alone.h): set by Runtime::run, on the application thread, where it
  // analyses, serves a CPU and launches eagerly with nothing but CPU workers beside it.
  void allow_alone_beside_workers(bool allow) {
    alone_beside_workers_.store(allow, std::memory_order_relaxed);
  }
  void run_inline(Op& op, std::uint32_t point, Processor proc,
                  const DomainPoint* coords = nullptr) override;
  // Whether every worker is between lists and no queue holds a point: nothing runs but the
  // application thread (it and the workers run alone: go_alone).
  bool workers_idle();

  // BatchSink: replays launch their points as batches (reprise_rt/batch_sink.h).
  void init_point(PointTask& t, Op& op, std::uint32_t point, Processor proc, std::int32_t in_edges,
                  const DomainPoint* coords, bool completion_event) override;
  void reinit_point(PointTask& t, Op& op, std::uint32_t point, std::int32_t in_edges,
                    bool completion_event) override;
  Event init_sharded_point(PointTask& t, Op& op, std::uint32_t point, Processor proc,
                           std::int32_t in_edges, const DomainPoint* coords) override;
  void leave_elsewhere(PointTask& t) override;
  void wait_for(PointTask* t, std::span<const Event> pre) override;
  void count_down_when(Event e, PointTask* t) override;
  void release(PointTask* t) override;
  void link_batches(ReplayBatch& prev, ReplayBatch& next) override;
  // One of op's points (or, under control replication, a send half of one of its copies, or
  // another shard's point) is done here: the last completes the op.
  void count_off(Op& op, std::uint32_t points = 1) override;

  // -ll:app_cpu: the application thread serves the last CPU's queue (no worker thread of its
  // own). serve_app waits for its points (spinning, then asleep) and runs those it takes
  // (and what they make ready here); it returns after a list, or once *wakes differs from
  // `seen` (wakers call nudge_app after changing it). wakes null: it runs what is queued now.
  void serve_app(const std::atomic<std::uint32_t>* wakes, std::uint32_t seen = 0);
  void nudge_app();
  // Whether this thread is running points now: a worker's, or the application's serving
  // its CPU.
  static bool running_points_here();
  // -lg:bounds_checks: whether the accessors tasks make check every use (read per accessor).
  bool bounds_checks() const { return bounds_checks_; }
  // Whether it runs threads of its own (workers, or -ll:othr helpers): after start().
  bool runs_threads() const { return !threads_.empty() || !steal_pools_.empty(); }

  std::uint32_t num_cpus() const { return std::uint32_t(cpu_queues_.size()); }
  std::uint32_t num_gpus() const { return std::uint32_t(gpu_queues_.size()); }
  // The stream a GPU processor's kernels go to (invalid for other processors).
  DeviceStream stream_of(const Processor& p) const {
    return p.kind == ProcessorKind::GPU && !gpu_streams_.empty()
               ? gpu_streams_[p.index % gpu_streams_.size()]
               : DeviceStream{};
  }
  // The stream that copies in and out of physical device d's framebuffers run on.
  DeviceStream copy_stream(int device) const { return copy_streams_[std::size_t(device)]; }
  // A graph no group launches any more: destroyed later from a GPU thread (or at stop).
  void retire_graph(DeviceGraph g);
  // -lg:steal_trace: writes the steal trees of the regions inside tasks (after stop()).
  void write_steal_trace(const std::string& path) const;

 private:
  static void precondition_done(void* ctx, std::uint64_t);
  // The device stream a point's work goes to (invalid: none, its work runs on a CPU thread).
  DeviceStream work_stream(const PointTask& t) const;
  // A point's work stream when it may start once device work it waits for is enqueued rather
  // than finished (reprise_rt/stream_mark.h); invalid otherwise. Only with a device (its
  // callers check rt_.device() first: a point without one needs no call on its launch path).
  DeviceStream early_stream(const PointTask& t) const;
  // The event table's tag for early starts: the points of one device share it.
  static std::uint32_t device_tag(DeviceStream s) { return std::uint32_t(s.device) + 1; }
  // t, whose work goes to `own`, will make its stream wait for mark (or needs not, on mark's
  // own stream); false if it cannot, and must wait for the completion instead. Takes over the
  // reference.
  bool take_stream_wait(PointTask& t, DeviceStream own, StreamMark* mark);
  void release_mark(StreamMark* mark);
  // What every replay changes in a batch's point t: its op, completion event and count
  // (init_point and reinit_point).
  void renew_point(PointTask& t, Op& op, std::uint32_t point, std::int32_t in_edges,
                   bool completion_event);
  // Control replication: point `point` of op runs on shard `owner` (its proxy here, if any).
  Event remote_point(Op& op, std::uint32_t point, std::uint32_t owner);
  // A single point or copy: a task of its own, released once its preconditions hold.
  Event launch(Op& op, std::uint32_t point, Processor proc, std::span<const Event> pre);
  void enqueue(PointTask* t);
  // siblings: the CPU queues of its NUMA domain (points it made ready for them it may keep).
  void worker_loop(ReadyQueue& q, std::span<ReadyQueue* const> siblings, int pin_core,
                   std::string name);
  // A CPU's points and the state it keeps between them, as its worker loop sets them up.
  LocalReady make_local(ReadyQueue& q, std::span<ReadyQueue* const> siblings) const;
  // Runs a list q's consumer took, and what its points make ready here; once *interrupt
  // differs from `seen` it puts the rest back in q instead.
  void run_list(ReadyQueue& q, LocalReady& local, PointTask* list,
                const std::atomic<std::uint32_t>* interrupt = nullptr, std::uint32_t seen = 0);
  // Counts off the ops whose count-off waited (LocalReady::deferred); what that makes ready
  // here (a spare included) is in local.head after it.
  void count_off_deferred(LocalReady& local);
  void run_point(PointTask* t);
  // A point's body threw: the error (naming the op and point) becomes the op's and the
  // runtime's.
  [[gnu::noinline]] std::exception_ptr fail_point(PointTask& t, std::exception_ptr thrown);
  // run_inline's way for a task's point on a CPU without a profiler, device or steal pool.
  // (Inlined into it: one call and its register saves less on every eager launch.)
  [[gnu::always_inline]] inline void run_task_here(Op& op, std::uint32_t point, Processor proc,
                                                   const DomainPoint* coords, LocalReady& local);
  // run_point with a profiler or a point timed for -ll:keep_ns (the worker's LocalReady);
  // either may be null.
  [[gnu::noinline]] void run_point_observed(PointTask* t, Profiler* prof, LocalReady* timed);
  // A sampled point's run time, into its thread's average (LocalReady::ran) and the one
  // runs_inline looks at (recent_point_ticks_).
  void publish_point_ticks(LocalReady& local, std::int64_t ticks);
  // A timed point of a task: whether it ran long, for runs_inline (TaskInfo::ran_long).
  // Where points run inline beside workers only: elsewhere nothing asks.
  void note_kind_ticks(const Op& op, std::int64_t ticks) const;
  // runs_inline's parts: where a point may run on the application thread at all, and
  // whether the points sampled lately are too short to be worth a hand-off (-ll:keep_all_ns).
  bool may_run_inline(Processor proc) const;
  bool points_short() const;
  // Alone beside workers (run_inline's callers have nothing in flight): sets g_runtime_alone
  // if every worker is between lists and nothing is queued; leave_alone clears it before
  // anything is queued (enqueue) and at stop.
  void go_alone();
  void leave_alone();
  // With a device: a GPU processor's variant enqueues kernels on the processor's stream, and a
  // copy or fill of framebuffer data enqueues on a copy stream; such a point completes when
  // its stream has run that work (a callback from the backend's thread).
  void run_point_with_device(PointTask* t);
  void complete_from_stream(PointTask* t, DeviceStream s, std::exception_ptr error,
                            std::uint64_t begin_ns);
  static void gpu_point_done(void* pending);
  // Replays as graphs (reprise_rt/gpu_groups.h): the group's points are all ready; runs them as
  // its captured graph (capturing it first), or kernel by kernel.
  void launch_group(ReplayBatch& b, GpuGroup& group);
  static void graph_step_done(void* step);
  void release_retired_graphs();
  // Runs the point's body (or copy, fill, half); returns what it threw.
  std::exception_ptr execute_point(PointTask& t);
  // Completion: proxies, the point's event, its batch's successors, its op.
  void finish_point(PointTask* t, std::exception_ptr point_error);
  // cpu0: the thread's CPU time at the start (Profiler::cpu_times()), else 0.
  void profile_point(Profiler& prof, const PointTask& t, std::uint64_t begin_ns,
                     std::uint64_t cpu0 = 0);
  // A point of a batch is done: counts down its successors there (and the next batch's,
  // through elision links), and retires the batch after its last point.
  void finish_in_batch(ReplayBatch* batch, std::uint32_t index);
  void cross_done(ReplayBatch& b, std::uint32_t j);
  void count_down_cross(const ReplayBatch& b, std::uint32_t j, const ReplayBatch& next);
  void run_task_body(PointTask& t);
  void run_fill(PointTask& t);
  void run_copy(PointTask& t);
  // A fill or copy with a framebuffer end: enqueued on the device's copy stream.
  void fill_on_device(PointTask& t);
  void copy_on_device(PointTask& t);
  ReadyQueue& queue_of(const Processor& p);

  Runtime& rt_;
  const bool bounds_checks_;
  std::vector<std::unique_ptr<ReadyQueue>> cpu_queues_;
  // Per CPU (start): the other CPUs' queues it may take points from (ReadyQueue siblings).
  std::vector<std::vector<ReadyQueue*>> steal_from_;
  std::unique_ptr<LocalReady> app_local_;  // -ll:app_cpu: the application thread's
  // The point run_task_here runs (one at a time: a point runs inline only when none runs on
  // the application thread); only what a task's point reads is set anew.
  PointTask here_;
  std::int64_t inline_cpu_ = -1;        // the CPU whose points may run inline (start)
  bool inline_beside_workers_ = false;  // ... while CPU workers run too (start)
  // A point this long (cycle ticks; kLongPointThresholds) runs long for note_kind_ticks.
  std::int64_t long_point_ = 0;
  std::vector<char> inline_takes_from_;  // per CPU: its points may run inline beside workers
  // A running average of every thread's sampled point run times (ticks; 0: none yet): where
  // points run inline beside CPU workers (publish_point_ticks).
  std::atomic<std::int64_t> recent_point_ticks_{0};
  // Points run inline (run_inline; only the application thread writes it), and those of them
  // run while the runtime did not run alone.
  std::atomic<std::uint64_t> points_inline_{0};
  std::atomic<std::uint64_t> points_inline_shared_{0};
  std::atomic<bool> alone_beside_workers_{false};  // allow_alone_beside_workers
  std::vector<std::uint64_t> idle_looks_;          // workers_idle's (application thread)
  std::string app_lane_;                           // ... and the profile lane of the CPU it serves
  std::int64_t keep_below_ = 0;                    // -ll:keep_ns in cycle_count() ticks (0: off)
  std::int64_t keep_all_below_ = 0;                // -ll:keep_all_ns in ticks (0: off)
  std::vector<std::unique_ptr<ReadyQueue>> dma_queues_;  // utility threads after the first
  std::vector<std::unique_ptr<ReadyQueue>> gpu_queues_;  // one per GPU processor (-ll:gpu)
  std::vector<DeviceStream> gpu_streams_;
  std::vector<DeviceStream> copy_streams_;  // one per physical device
  std::mutex retired_graphs_mutex_;
  std::vector<DeviceGraph> retired_graphs_;
  std::vector<std::thread> threads_;
  // Profiled runs: counted up by each thread of threads_ once its profile buffer is made;
  // start() returns only when every one has (else a worker touches its ~8 MB while the
  // program's first points wait for it, milliseconds that unprofiled runs do not have).
  std::atomic<std::size_t> buffers_made_{0};
  // -ll:othr > 1: per CPU processor, the pool its tasks fork into (docs/forkjoin.md).
  std::vector<std::unique_ptr<StealPool>> steal_pools_;
  std::unique_ptr<StealTraceSink> steal_sink_;  // -lg:steal_trace
};

}  // namespace reprise::detail

#pragma once
// The executor: CPU worker threads (pinned with hwloc) and extra utility threads, each with a
// ready queue; implements the graph calculus by launching points when their preconditions
// have triggered.
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "reprise_rt/graph.h"
#include "reprise_rt/point_task.h"
#include "reprise_rt/ready_queue.h"

namespace reprise::detail {

class InstanceManager;
class Profiler;
class Runtime;

class Executor final : public GraphSink {
 public:
  explicit Executor(Runtime& rt);
  ~Executor() override;
  void start();
  void stop();  // joins every thread; queues must be empty

  Event op(Op& op, std::uint32_t point, Processor proc, std::span<const Event> pre) override;
  Event copy(const OpRef& copy, Processor proc, std::span<const Event> pre,
             std::uint32_t for_point) override;
  Event merge(std::span<const Event> events) override;

  // Batch launch (replays): create every point first, holding `in_edges` + 1 counts; add event
  // waits; wire successors through a SuccessorBlock; then release each point. The storage
  // is the batch's (SuccessorBlock::tasks). coords: the point's coordinates if known (else
  // computed); without a completion event the point is known only to its batch's counters
  // and its op's completion count.
  void init_point(PointTask& t, Op& op, std::uint32_t point, Processor proc, std::int32_t in_edges,
                  const DomainPoint* coords, bool completion_event);
  // init_point for a launch that may span shards (control replication; single launches use
  // it too). A point or copy that runs on another shard leaves t `elsewhere` (never
  // launched); a copy between shards becomes its send or receive half. Returns the event
  // that stands for its completion on this shard: t's own, the proxy its owner's Done
  // triggers, or none (another shard's point of an op that completes locally, a copy between
  // two other shards: nothing here waits for them).
  Event init_batch_point(PointTask& t, Op& op, std::uint32_t point, Processor proc,
                         std::int32_t in_edges, const DomainPoint* coords, bool completion_event);
  void wait_for(PointTask* t, std::span<const Event> pre);
  // One of t's counted preconditions is e (an event, not a counter of its batch).
  void count_down_when(Event e, PointTask* t);
  void release(PointTask* t);
  // Fence elision between two batches of one template: `next`'s points already count one
  // pending edge per link; counts down those whose point in `prev` has completed, and leaves
  // the others to their completion.
  void link_batches(SuccessorBlock& prev, SuccessorBlock& next);
  Event fence(std::span<const Event> before) override;
  // One of op's points (or, under control replication, a send half of one of its copies, or
  // another shard's point) is done here: the last completes the op.
  void count_off(Op& op, std::uint32_t points = 1);
  // A batch slot for work that never runs here: never released, and counting it down from
  // its predecessors in the batch is harmless.
  static void leave_elsewhere(PointTask& t);
  // The bytes a copy moves, and of those the ones that cross between shards (0 for a copy
  // within one shard): the statistic of bytes between shards, which every shard counts.
  static std::uint64_t copy_bytes(const Op& copy);
  static std::uint64_t bytes_between_shards(const Op& copy, const InstanceManager& im);

  std::uint32_t num_cpus() const { return std::uint32_t(cpu_queues_.size()); }

 private:
  static void precondition_done(void* ctx, std::uint64_t);
  // Control replication: point `point` of op runs on shard `owner` (its proxy here, if any).
  Event remote_point(Op& op, std::uint32_t point, std::uint32_t owner);
  // A single point or copy: a task of its own, released once its preconditions hold.
  Event launch(Op& op, std::uint32_t point, Processor proc, std::span<const Event> pre);
  void enqueue(PointTask* t);
  void worker_loop(ReadyQueue& q, int pin_core, std::string name);
  void run_point(PointTask* t);
  // Runs the point's body (or copy, fill, half); returns what it threw.
  std::exception_ptr execute_point(PointTask& t);
  // Completion: proxies, the point's event, its batch's successors, its op.
  void finish_point(PointTask* t, std::exception_ptr point_error);
  void profile_point(Profiler& prof, const PointTask& t, std::uint64_t begin_ns);
  void cross_done(SuccessorBlock& b, std::uint32_t j);
  void count_down_cross(const SuccessorBlock& b, std::uint32_t j, const SuccessorBlock& next);
  void run_task_body(PointTask& t);
  void run_fill(PointTask& t);
  void run_copy(PointTask& t);
  ReadyQueue& queue_of(const Processor& p);

  Runtime& rt_;
  std::vector<std::unique_ptr<ReadyQueue>> cpu_queues_;
  std::vector<std::unique_ptr<ReadyQueue>> dma_queues_;  // utility threads after the first
  std::vector<std::thread> threads_;
};

}  // namespace reprise::detail

// The executor's batch launch (BatchSink): replays create a template's points in a batch,
// wire their in-batch counters, split copies between shards into halves, link back-to-back
// batches of one template (fence elision), then release the points.
#include "reprise_rt/assert.h"
#include "reprise_rt/executor.h"
#include "reprise_rt/profiler.h"
#include "reprise_rt/runtime.h"
#include "reprise_rt/shard_exchange.h"

namespace reprise::detail {

// (Inline: on every replayed point's way, in both callers.)
inline void Executor::renew_point(PointTask& t, Op& op, std::uint32_t point, std::int32_t in_edges,
                                  bool completion_event) {
  t.op = OpRef(&op);
  op.add_ref();
  t.done = completion_event ? rt_.events().create() : kNoEvent;
  t.issued = kNoEvent;
  t.mark = nullptr;
  t.stream_wait_count = 0;
  op.point_done[point] = t.done;
  t.pending.store(1 + in_edges, std::memory_order_relaxed);
}

void Executor::init_point(PointTask& t, Op& op, std::uint32_t point, Processor proc,
                          std::int32_t in_edges, const DomainPoint* coords, bool completion_event) {
  t.exec = this;
  t.point_index = point;
  t.point = coords ? *coords : op.domain.delinearize(coord_t(point));
  t.proc = proc;
  // (A batch's storage is reused by later replays: nothing of an earlier point may remain.)
  t.send_to = -1;
  t.receive = t.elsewhere = false;
  t.variant = op.task_info ? op.task_info->variant_to_run(proc.kind) : nullptr;
  renew_point(t, op, point, in_edges, completion_event);
  if (Profiler* prof = rt_.profiler(); prof && prof->deps()) [[unlikely]] {
    prof->produced(t.done, op, point);
    if (!op.generated()) prof->part_of_op(op, point);
  }
}

void Executor::reinit_point(PointTask& t, Op& op, std::uint32_t point, std::int32_t in_edges,
                            bool completion_event) {
  REPRISE_ASSERT(!t.op && t.exec == this && t.point_index == point && !t.elsewhere &&
                     t.send_to < 0 && !t.receive,
                 "a point is re-initialised only where init_point made the same point before, "
                 "and after it ran");
  renew_point(t, op, point, in_edges, completion_event);
}

void Executor::finish_in_batch(ReplayBatch* batch, std::uint32_t index) {
  const BatchEdges& s = *batch->successors;
  // (The elision links first: once its last successor is released, a point that is not a
  // sink must not read the batch again — it may be retired and replayed anew by then.)
  if (batch->cross) cross_done(*batch, index);
  const std::uint32_t successors = s.count[index];
  const bool counted = !batch->sinks_only || successors == 0;
  const std::uint32_t* next = s.targets.data() + s.begin[index];
  for (std::uint32_t i = 0; i < successors; ++i) release(&batch->tasks[next[i]]);
  if (!counted) return;
  const std::int32_t unfinished = shared_sub(batch->unfinished, 1, std::memory_order_acq_rel);
  REPRISE_ASSERT(unfinished > 0, "a batch finishes each of its points once");
  if (unfinished == 1) retire_batch(batch);
}

void Executor::wait_for(PointTask* t, std::span<const Event> pre) {
  ShardExchange* x = rt_.exchange();
  // A device point whose host code only enqueues work (early_stream) waits for device work of
  // its device only until that work is enqueued: its own stream runs it first, another stream
  // waits for its mark (reprise_rt/stream_mark.h).
  const DeviceStream own = rt_.device() ? early_stream(*t) : DeviceStream{};
  if (Profiler* prof = rt_.profiler(); prof && prof->deps()) [[unlikely]]
    for (Event e : pre) prof->waits(*t->op, t->point_index, e);
  for (Event e : pre) {
    // Most preconditions of a replayed or well-pipelined point have triggered already: a
    // lock-free check skips the waiter list.
    if (rt_.events().has_triggered(e)) continue;
    if (own.valid()) {
      StreamMark* mark = nullptr;
      const Event early = rt_.events().early_stand_in(e, device_tag(own), &mark);
      if (mark && !take_stream_wait(*t, own, mark)) {
        release_mark(mark);  // (no room, or a batch's point on another stream: wait for e)
      } else {
        e = early;
        if (rt_.events().has_triggered(e)) continue;
      }
    }
    if (x) x->need(e);
    shared_add(t->pending, 1, std::memory_order_relaxed);
    if (!rt_.events().add_waiter(e, &Executor::precondition_done, t, 0))
      shared_sub(t->pending, 1, std::memory_order_relaxed);
  }
}

void Executor::count_down_when(Event e, PointTask* t) {
  if (Profiler* prof = rt_.profiler(); prof && prof->deps()) [[unlikely]]
    prof->waits(*t->op, t->point_index, e);
  if (ShardExchange* x = rt_.exchange(); x && e.exists()) x->need(e);
  if (!rt_.events().add_waiter(e, &Executor::precondition_done, t, 0)) release(t);
}

void Executor::count_off(Op& op, std::uint32_t points) {
  const std::int64_t remaining = shared_sub(op.remaining, points, std::memory_order_acq_rel);
  REPRISE_ASSERT(remaining >= std::int64_t(points), "an op completes once, after its last point");
  if (remaining == std::int64_t(points)) rt_.op_completed(op);
}

void Executor::leave_elsewhere(PointTask& t) {
  t.elsewhere = true;
  t.pending.store(1 << 30, std::memory_order_relaxed);  // never reaches zero
}

Event Executor::remote_point(Op& op, std::uint32_t point, std::uint32_t owner) {
  const Event e = rt_.exchange()->remote(op, point, owner);
  // An op that completes locally is done with another shard's point as soon as it is launched.
  if (op.local_completion) count_off(op);
  return e;
}

Event Executor::init_sharded_point(PointTask& t, Op& op, std::uint32_t point, Processor proc,
                                   std::int32_t in_edges, const DomainPoint* coords) {
  ShardExchange* x = rt_.exchange();
  if (!x) {
    init_point(t, op, point, proc, in_edges, coords, true);
    if (SimulatedAsks* asks = rt_.simulated_asks();
        asks && !op.generated() && ShardExchange::completes_locally(op)) [[unlikely]]
      asks->produced(t.done, proc.shard);
    return t.done;
  }
  if (op.kind != OpKind::Copy || !op.generated()) {
    if (proc.shard != rt_.shard()) {
      leave_elsewhere(t);
      return remote_point(op, point, proc.shard);
    }
    init_point(t, op, point, proc, in_edges, coords, true);
    return t.done;
  }
  // Control replication: the halves of a copy run on the shards of its two memories.
  const InstanceManager& im = rt_.instances();
  const std::uint32_t me = rt_.shard();
  const auto [from, to] = im.copy_shards(op);
  if (to == me && from != me) rt_.count_shard_bytes(copy_bytes(op));
  if (from != me && to != me) {
    // Nothing here waits for it: it reads and writes other shards' memories only.
    leave_elsewhere(t);
    return kNoEvent;
  }
  proc.shard = me;
  if (from == to) {
    init_point(t, op, point, proc, in_edges, coords, true);
    return t.done;
  }
  if (from == me) {
    init_point(t, op, point, proc, in_edges, coords, true);
    t.send_to = std::int32_t(to);
    // Until the data is packed its source must stay: the send half keeps its op incomplete
    // here (a fence or a destruction after it waits for it).
    if (Op* parent = op.parent(); parent && parent->local_completion)
      parent->remaining.fetch_add(1, std::memory_order_relaxed);
    if (ShardLinks* links = x->links(); links && links->carries(op)) links->expect_send(op, to);
    return t.done;  // done here once the data is packed
  }
  init_point(t, op, point, proc, in_edges + 1, coords, true);  // one more: the data
  t.receive = true;
  if (ShardLinks* links = x->links(); links && links->carries(op))
    links->expect_receive(&t, from);
  else
    x->expect_data(&t);
  return t.done;
}

void Executor::release(PointTask* t) {
  const std::int32_t pending = shared_sub(t->pending, 1, std::memory_order_acq_rel);
  REPRISE_ASSERT(pending > 0, "a point is counted down at most once per precondition");
  if (pending == 1) enqueue(t);
}

void Executor::count_down_cross(const ReplayBatch& b, std::uint32_t j, const ReplayBatch& next) {
  const ElisionLinks& c = *b.cross;
  for (std::uint32_t i = 0; i < c.count[j]; ++i) release(&next.tasks[c.targets[c.begin[j] + i]]);
}

void Executor::cross_done(ReplayBatch& b, std::uint32_t j) {
  if (b.cross->count[j] == 0) return;
  // Dekker-style: mark done, then look for the next batch; the launcher publishes the next
  // batch, then looks for done marks. Whoever sees the other claims j (exactly once).
  b.state[j].fetch_or(ReplayBatch::kDone, std::memory_order_seq_cst);
  ReplayBatch* next = b.next.load(std::memory_order_seq_cst);
  if (next && !(b.state[j].fetch_or(ReplayBatch::kClaimed) & ReplayBatch::kClaimed))
    count_down_cross(b, j, *next);
}

void Executor::link_batches(ReplayBatch& prev, ReplayBatch& next) {
  prev.next.store(&next, std::memory_order_seq_cst);
  const ElisionLinks& c = *prev.cross;
  for (std::uint32_t j = 0; j < c.count.size(); ++j) {
    if (c.count[j] == 0) continue;
    if ((prev.state[j].load(std::memory_order_seq_cst) & ReplayBatch::kDone) &&
        !(prev.state[j].fetch_or(ReplayBatch::kClaimed) & ReplayBatch::kClaimed))
      count_down_cross(prev, j, next);
  }
}

}  // namespace reprise::detail

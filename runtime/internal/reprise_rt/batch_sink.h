#pragma once
// How a replay reaches the executor: the batch-launch half of the graph calculus, beside
// GraphSink (one op at a time, with events). The memoizer holds a BatchSink, never the
// executor itself.
//
// A batch replay creates every point first, holding its in-batch edge count plus one; adds
// the waits on events from outside the batch; links it to the previous batch of the same
// template (fence elision); then releases each point.
#include <cstdint>
#include <span>

#include "reprise/types.h"
#include "reprise_rt/event.h"
#include "reprise_rt/op.h"
#include "reprise_rt/replay_batch.h"

namespace reprise::detail {

class BatchSink {
 public:
  virtual ~BatchSink() = default;
  // Makes t (storage of a batch) point `point` of op on proc, holding in_edges + 1 counts.
  // coords: the point's coordinates if known (else computed). Without a completion event the
  // point is known only to its batch's counters and its op's completion count.
  virtual void init_point(PointTask& t, Op& op, std::uint32_t point, Processor proc,
                          std::int32_t in_edges, const DomainPoint* coords,
                          bool completion_event) = 0;
  // t, which init_point made point `point` of an earlier replay of this same template in a
  // single process, becomes that point of op (this replay's op for the same instruction):
  // only what changes from one replay to the next is written (its op, completion event and
  // count); its processor, coordinates, variant and flags stay as init_point left them.
  virtual void reinit_point(PointTask& t, Op& op, std::uint32_t point, std::int32_t in_edges,
                            bool completion_event) = 0;
  // init_point for a launch that may span shards (control replication). A point or copy that
  // runs on another shard leaves t `elsewhere` (never launched); a copy between shards
  // becomes its send or receive half. Returns the event that stands for its completion on
  // this shard: t's own, the proxy its owner's Done triggers, or none (another shard's point
  // of an op that completes locally, a copy between two other shards).
  virtual Event init_sharded_point(PointTask& t, Op& op, std::uint32_t point, Processor proc,
                                   std::int32_t in_edges, const DomainPoint* coords) = 0;
  // A slot of the batch for work that never runs here: never released, and counting it down
  // from its predecessors in the batch is harmless.
  virtual void leave_elsewhere(PointTask& t) = 0;
  // t also waits for every event in pre (one count each).
  virtual void wait_for(PointTask* t, std::span<const Event> pre) = 0;
  // One of t's counted preconditions is e (an event, not a counter of its batch).
  virtual void count_down_when(Event e, PointTask* t) = 0;
  // Drops the hold init_point took: t runs once its other counts are down too.
  virtual void release(PointTask* t) = 0;
  // Fence elision between two batches of one template: `next`'s points already count one
  // pending edge per link; counts down those whose point in `prev` has completed, and leaves
  // the others to their completion.
  virtual void link_batches(ReplayBatch& prev, ReplayBatch& next) = 0;
  // `points` of op's points are done here without running here (other shards' points of an
  // op that completes locally); the last completes the op.
  virtual void count_off(Op& op, std::uint32_t points) = 0;
};

}  // namespace reprise::detail

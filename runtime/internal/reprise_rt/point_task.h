#pragma once
// One unit of execution: a point of a task launch, or a fill or copy, with the mapping the
// analysis chose and a count of the preconditions it still waits for.
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "reprise/registry.h"
#include "reprise/types.h"
#include "reprise_rt/event.h"
#include "reprise_rt/op.h"

namespace reprise::detail {

class Executor;
struct PointTask;

// A template's fence-elision links, reversed: per point of one replay, the points of the next
// replay that wait for it (shared by the template and the batches still running).
struct CrossLinks {
  std::vector<std::uint32_t> begin, count, targets;
};

// A template's in-trace edges (shared by the template and the batches still running): point i
// of a batch counts down the points targets[begin[i] .. begin[i] + count[i]) of its batch.
struct SuccessorLists {
  std::vector<std::uint32_t> begin, count, targets;
};

// A batch of points launched together (a replayed template): it owns their storage, and its
// in-trace edges are counters, not events. Freed when the last point of the batch has run and
// the memoizer has let go of it.
//
// Back-to-back replays of one idempotent template are linked the same way (fence elision):
// point j of this batch counts down, in the next batch, the points `cross` lists for it.
// Either j's completion or the next batch's launch does it, whichever comes second: j marks
// itself done, the launcher publishes `next`, and the one that sees the other's mark claims j.
struct SuccessorBlock {
  static constexpr std::uint8_t kDone = 1, kClaimed = 2;
  std::atomic<std::int32_t> unfinished{0};
  std::unique_ptr<PointTask[]> tasks;  // the batch's points, by instruction
  std::shared_ptr<const SuccessorLists> successors;
  // Fence elision without events (null when the template has no links).
  std::shared_ptr<const CrossLinks> cross;
  std::unique_ptr<std::atomic<std::uint8_t>[]> state;  // per point: kDone | kClaimed
  std::atomic<SuccessorBlock*> next{nullptr};
};

struct PointTask {
  Executor* exec = nullptr;
  OpRef op;
  std::uint32_t point_index = 0;
  DomainPoint point;
  Processor proc;
  const TaskVariant* variant = nullptr;
  Event done;
  std::atomic<std::int32_t> pending{1};
  PointTask* next = nullptr;        // intrusive link for ready queues
  SuccessorBlock* block = nullptr;  // batch launches only (the block owns the point)
  // Control replication: a copy between shards runs as its send half (send_to) here or its
  // receive half (receive) here.
  std::int32_t send_to = -1;
  bool receive = false;
  // A batch's point (or copy) that runs on another shard: never launched here; its successors
  // in the batch wait for its proxy event instead.
  bool elsewhere = false;
  std::uint32_t batch_index = 0;  // its instruction in the batch
};

}  // namespace reprise::detail

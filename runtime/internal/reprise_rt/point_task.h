#pragma once
// One unit of execution: a point of a task launch, or a fill or copy, with the mapping the
// analysis chose and a count of the preconditions it still waits for.
#include <atomic>
#include <cstdint>
#include <vector>

#include "reprise/registry.h"
#include "reprise/types.h"
#include "reprise_rt/event.h"
#include "reprise_rt/op.h"

namespace reprise::detail {

class Executor;
struct PointTask;

// The successor lists of a batch of points launched together (a replayed template): its
// in-trace edges are counters, not events. Freed when the last point of the batch has run.
struct SuccessorBlock {
  std::atomic<std::int32_t> unfinished{0};
  std::vector<PointTask*> successors;
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
  SuccessorBlock* block = nullptr;  // batch launches only
  // Control replication: a copy between shards runs as its send half (send_to) here or its
  // receive half (receive) here.
  std::int32_t send_to = -1;
  bool receive = false;
  std::uint32_t succ_begin = 0, succ_count = 0;
};

}  // namespace reprise::detail

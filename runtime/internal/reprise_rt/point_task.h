#pragma once
// One unit of execution: a point of a task launch, or a fill or copy, with the mapping the
// analysis chose and a count of the preconditions it still waits for.
#include <atomic>
#include <cstdint>

#include "reprise/registry.h"
#include "reprise/types.h"
#include "reprise_rt/event.h"
#include "reprise_rt/op.h"

namespace reprise::detail {

class Executor;

struct PointTask {
  Executor* exec = nullptr;
  OpRef op;
  std::uint32_t point_index = 0;
  DomainPoint point;
  Processor proc;
  const TaskVariant* variant = nullptr;
  Event done;
  std::atomic<std::int32_t> pending{1};
  PointTask* next = nullptr;  // intrusive link for ready queues
};

}  // namespace reprise::detail

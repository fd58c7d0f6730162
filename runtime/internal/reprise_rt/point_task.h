#pragma once
// One unit of execution: a point of a task launch, or a fill or copy, with the mapping the
// analysis chose and a count of the preconditions it still waits for.
#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "reprise/registry.h"
#include "reprise/types.h"
#include "reprise_rt/event.h"
#include "reprise_rt/op.h"
#include "reprise_rt/stream_mark.h"

namespace reprise::detail {

class Executor;
struct ReplayBatch;

struct PointTask {
  // (User-provided: value-initialising a PointTask would otherwise zero the whole point before the
  // members' own initialisers run; every member has one.)
  PointTask() {}  // NOLINT(modernize-use-equals-default)
  Executor* exec = nullptr;
  OpRef op;
  std::uint32_t point_index = 0;
  DomainPoint point;
  Processor proc;
  const TaskVariant* variant = nullptr;
  Event done;
  // A point outside a batch whose work runs on a device stream: triggered once that work is
  // enqueued, so that later points of the device need not wait for it to finish
  // (Executor::wait_for); `mark` says where the work ends on the stream (stream_mark.h).
  Event issued;
  StreamMark* mark = nullptr;
  // Marks of other streams this point's stream must wait for before its work (references
  // held until then).
  static constexpr int kMaxStreamWaits = 4;
  StreamMark* stream_waits[kMaxStreamWaits] = {};
  std::uint8_t stream_wait_count = 0;
  std::atomic<std::int32_t> pending{1};
  PointTask* next = nullptr;     // intrusive link for ready queues
  ReplayBatch* batch = nullptr;  // batch launches only (the batch owns the point)
  // Control replication: a copy between shards runs as its send half (send_to) here or its
  // receive half (receive) here.
  std::int32_t send_to = -1;
  bool receive = false;
  // A batch's point (or copy) that runs on another shard: never launched here; its successors
  // in the batch wait for its proxy event instead.
  bool elsewhere = false;
  std::uint32_t batch_index = 0;  // its instruction in the batch
  // A copy or fill that moves framebuffer data enqueued its work on this device's copy stream:
  // it completes when the stream gets there.
  std::int16_t copy_device = -1;
};

}  // namespace reprise::detail

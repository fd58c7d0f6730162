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

namespace reprise::detail {

class Executor;
struct PointTask;

// A template's fence-elision links, reversed: per point of one replay, the points of the next
// replay that wait for it (shared by the template and the batches still running).
struct CrossLinks {
  std::vector<std::uint32_t> begin, count, targets;
};

struct SuccessorBlock;

// A template's in-trace edges (shared by the template and the batches still running): point i
// of a batch counts down the points targets[begin[i] .. begin[i] + count[i]) of its batch.
struct SuccessorLists {
  std::vector<std::uint32_t> begin, count, targets;
  // Finished batches of this template, kept so that later replays reuse their storage instead
  // of allocating and constructing every point again. Replays run ahead of their points by up
  // to the window, so as many batches as that are in flight; they come back here (pushed by
  // whichever thread retires them, see retire_batch) and only the launching thread takes
  // them, which makes the stack free of ABA.
  mutable std::atomic<SuccessorBlock*> retired{nullptr};
  mutable SuccessorBlock* reusable = nullptr;  // taken from `retired`; launching thread only
  SuccessorBlock* take_spare() const;
  SuccessorLists() = default;
  SuccessorLists(const SuccessorLists&) = delete;
  SuccessorLists& operator=(const SuccessorLists&) = delete;
  ~SuccessorLists();
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
  SuccessorBlock* next_spare = nullptr;  // in SuccessorLists::retired / reusable
};

// Frees a batch whose points have all run and that its launcher has let go of: it becomes its
// template's spares, freed with the template.
void retire_batch(SuccessorBlock* b);

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

inline SuccessorLists::~SuccessorLists() {
  for (SuccessorBlock* b : {retired.load(std::memory_order_acquire), reusable})
    while (b) PoolDelete<SuccessorBlock>{}(std::exchange(b, b->next_spare));
}

inline SuccessorBlock* SuccessorLists::take_spare() const {
  if (!reusable) reusable = retired.exchange(nullptr, std::memory_order_acquire);
  SuccessorBlock* b = reusable;
  if (b) reusable = b->next_spare;
  return b;
}

inline void retire_batch(SuccessorBlock* b) {
  std::shared_ptr<const SuccessorLists> lists = std::move(b->successors);
  b->cross.reset();
  if (!lists) {
    PoolDelete<SuccessorBlock>{}(b);
    return;
  }
  SuccessorBlock* head = lists->retired.load(std::memory_order_relaxed);
  do {
    b->next_spare = head;
  } while (!lists->retired.compare_exchange_weak(head, b, std::memory_order_release,
                                                 std::memory_order_relaxed));
}  // (if the template is gone, lists frees b with it here)

}  // namespace reprise::detail

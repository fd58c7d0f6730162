#pragma once
// Replays launch a template's points as one batch: the batch owns the points' storage, and
// its in-trace edges are counters, not events (a template's BatchEdges). Back-to-back replays
// of one idempotent template link batch to batch the same way (ElisionLinks: fence elision).
// The memoizer builds these from a template; the executor runs them (BatchSink).
#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "reprise_rt/point_task.h"
#include "reprise_rt/pool.h"
#include "reprise_rt/steal_scope.h"

namespace reprise::detail {

// A template's fence-elision links, reversed: per point of one replay, the points of the next
// replay that wait for it (shared by the template and the batches still running).
struct ElisionLinks {
  std::vector<std::uint32_t> begin, count, targets;
};

struct ReplayBatch;
struct GpuGroups;

// A template's in-trace edges (shared by the template and the batches still running): point i
// of a batch counts down the points targets[begin[i] .. begin[i] + count[i]) of its batch.
struct BatchEdges {
  std::vector<std::uint32_t> begin, count, targets;
  // Points with no successor in the batch (count 0): a batch whose points all run here counts
  // these only (ReplayBatch::sinks_only). 0 where the lists are not a whole template's.
  std::uint32_t sinks = 0;
  // Finished batches of this template, kept so that later replays reuse their storage instead
  // of allocating and constructing every point again. Replays run ahead of their points by up
  // to the window, so as many batches as that are in flight; they come back here (pushed by
  // whichever thread retires them, see retire_batch) and only the launching thread takes
  // them, which makes the stack free of ABA.
  mutable std::atomic<ReplayBatch*> retired{nullptr};
  mutable ReplayBatch* reusable = nullptr;  // taken from `retired`; launching thread only
  // Retentive stealing: per point, the steal trees of its fork-join regions in the last
  // replay, where the next replay of the point starts (docs/forkjoin.md).
  mutable StealMemos steal_memos;
  ReplayBatch* take_spare() const;
  BatchEdges() = default;
  BatchEdges(const BatchEdges&) = delete;
  BatchEdges& operator=(const BatchEdges&) = delete;
  ~BatchEdges();
};

// A batch of points launched together (a replayed template): it owns their storage, and its
// in-trace edges are counters, not events. Freed when the last point of the batch has run and
// the memoizer has let go of it.
//
// Back-to-back replays of one idempotent template are linked the same way (fence elision):
// point j of this batch counts down, in the next batch, the points `cross` lists for it.
// Either j's completion or the next batch's launch does it, whichever comes second: j marks
// itself done, the launcher publishes `next`, and the one that sees the other's mark claims j.
struct ReplayBatch {
  static constexpr std::uint8_t kDone = 1, kClaimed = 2;
  // The points still to finish (and the launcher's hold). With sinks_only, only the points
  // without successors in the batch count: every other point has released a successor that
  // cannot finish before it, and reads nothing of the batch after that release — so the
  // batch's last sink is its last point, and most points finish without touching this line,
  // which both workers of a replay would otherwise pass back and forth at every point.
  std::atomic<std::int32_t> unfinished{0};
  bool sinks_only = false;
  // Its points were last set up whole by a single-process replay of every instruction (no
  // shard plan, prefix, graph groups or profiled edges): a later such replay of the template
  // re-initialises its task points only (BatchSink::reinit_point).
  bool plain_points = false;
  std::unique_ptr<PointTask[]> tasks;  // the batch's points, by instruction
  std::shared_ptr<const BatchEdges> successors;
  // Fence elision without events (null when the template has no links).
  std::shared_ptr<const ElisionLinks> cross;
  std::unique_ptr<std::atomic<std::uint8_t>[]> state;  // per point: kDone | kClaimed
  std::atomic<ReplayBatch*> next{nullptr};
  ReplayBatch* next_spare = nullptr;  // in BatchEdges::retired / reusable
  // Replays as graphs (reprise_rt/gpu_groups.h): per group, its points not yet ready; the
  // last one launches the group's graph.
  std::shared_ptr<GpuGroups> gpu;
  std::unique_ptr<std::atomic<std::int32_t>[]> gates;
};

// Frees a batch whose points have all run and that its launcher has let go of: it becomes its
// template's spares, freed with the template.
void retire_batch(ReplayBatch* b);

inline BatchEdges::~BatchEdges() {
  for (ReplayBatch* b : {retired.load(std::memory_order_acquire), reusable})
    while (b) PoolDelete<ReplayBatch>{}(std::exchange(b, b->next_spare));
}

inline ReplayBatch* BatchEdges::take_spare() const {
  if (!reusable) reusable = retired.exchange(nullptr, std::memory_order_acquire);
  ReplayBatch* b = reusable;
  if (b) reusable = b->next_spare;
  return b;
}

inline void retire_batch(ReplayBatch* b) {
  std::shared_ptr<const BatchEdges> lists = std::move(b->successors);
  b->cross.reset();
  b->gpu.reset();  // (its groups own the lists a graph batch retires to: no cycle)
  if (!lists) {
    PoolDelete<ReplayBatch>{}(b);
    return;
  }
  ReplayBatch* head = lists->retired.load(std::memory_order_relaxed);
  do {
    b->next_spare = head;
  } while (!lists->retired.compare_exchange_weak(head, b, std::memory_order_release,
                                                 std::memory_order_relaxed));
}  // (if the template is gone, lists frees b with it here)

}  // namespace reprise::detail

#pragma once
// The shared state behind Future and FutureMap.
#include <atomic>
#include <exception>
#include <memory>
#include <span>
#include <vector>

#include "reprise/future.h"
#include "reprise/registry.h"
#include "reprise_rt/event.h"
#include "reprise_rt/pool.h"
#include "reprise_rt/recycler.h"

namespace reprise::detail {

struct Op;
// Makes op the one whose task body this thread is running (its argument futures may be read;
// null: none) and returns the one it replaces. (A function, not an extern thread_local: UBSan
// took the TLS wrapper's address of the variable for a null pointer in sanitizer builds.)
const Op* set_running_task(const Op* op);

struct FutureMapState;

// (Both states have a user-provided constructor: made by allocate_shared, which
// value-initialises, a state would otherwise be zeroed whole — a `rep stos` that took a fifth
// of Context::execute's samples — before the members' own initialisers run; every member has
// one, but for a result's inline bytes, read only up to its size.)
struct FutureState {
  FutureState() {}  // NOLINT(modernize-use-equals-default)
  Event ready_event;
  std::atomic<bool> ready{false};
  ValueKind kind = ValueKind::None;
  TaskResult value;
  std::exception_ptr error;
  // A future of one point of a map reads its value there.
  std::shared_ptr<FutureMapState> map;
  std::uint64_t map_index = 0;
  // Control replication: a point of a map whose values were gathered to every shard is
  // ready when the gather is (FutureMapState::gathered).
  std::shared_ptr<FutureState> gate;
};

struct FutureMapState {
  FutureMapState() {}  // NOLINT(modernize-use-equals-default)
  Event ready_event;
  std::atomic<bool> ready{false};
  Domain domain;
  ValueKind kind = ValueKind::None;
  PoolVector<TaskResult> values;  // by row-major point index (none for a void task)
  std::exception_ptr error;
  // Control replication, a task that returns values: the map completes on each shard with its
  // own points, and holds only their values (produced[p] != 0); other shards' values are read
  // through a reduction or a gather (ShardExchange::reduce).
  bool sharded = false;
  std::vector<std::uint8_t> produced;
  // The first FutureMap::get on a sharded map issues one gather of every point's value to
  // every shard (an op, on every shard in the same place); this is its future, and later
  // gets wait for it and read `values` here. (Set and read on the application thread.)
  std::shared_ptr<FutureState> gathered;
};

// A launch's future: made on the application thread, most often dropped by a worker with its
// op, so its block is recycled (reprise_rt/recycler.h).
inline std::shared_ptr<FutureState> make_future_state() {
  return std::allocate_shared<FutureState>(RecyclingAllocator<FutureState>());
}

// The event a task given future f must wait for, or kNoEvent if f is ready.
inline Event pending_event(const Future& f) {
  const auto& s = f.state();
  if (s->gate && !s->gate->ready.load(std::memory_order_acquire)) return s->gate->ready_event;
  if (s->map) return s->map->ready.load(std::memory_order_acquire) ? kNoEvent : s->map->ready_event;
  return s->ready.load(std::memory_order_acquire) ? kNoEvent : s->ready_event;
}

// Whether a task given these futures would wait for one of them.
inline bool any_pending(std::span<const Future> futures) {
  for (const Future& f : futures)
    if (pending_event(f).exists()) return true;
  return false;
}

// Folds b into a (both of kind k) with op; throws Error for kinds that cannot be reduced.
void fold_value(TaskResult& a, const TaskResult& b, ValueKind k, ReductionOp op);

// The values of points 0 .. n-1 (value_at(i)) folded in point order, the one order every
// reduction of a future map uses (one process, or the root shard of a tree).
template <class ValueAt>
TaskResult fold_in_point_order(std::size_t n, ValueAt&& value_at, ValueKind k, ReductionOp op) {
  TaskResult acc = value_at(0);
  for (std::size_t i = 1; i < n; ++i) fold_value(acc, value_at(i), k, op);
  return acc;
}

}  // namespace reprise::detail

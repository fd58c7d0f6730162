#pragma once
// A thread's private share of running points: what it made ready for itself, its spare, the
// count-offs it put off (Executor::run_list, finish_point, enqueue).
#include <array>
#include <cstdint>
#include <span>

#include "reprise_rt/op.h"
#include "reprise_rt/point_task.h"
#include "reprise_rt/ready_queue.h"

namespace reprise::detail {

// The points a worker made ready for its own queue while it ran a point: it runs them next,
// without the queue's lock and wake-up (a dependence chain on one processor stays on its
// thread, hot in its cache). Only threads that run points have one (the workers', the
// application thread's while it serves its CPU).
// A CPU worker may also run one point it made ready for a sibling (a CPU of its NUMA domain it
// may steal from): the spare, if the point that made it ready made nothing ready for this
// worker and it has nothing else to run — the spare could start no sooner on the other core,
// and would cost a hand-off there: a dependence chain stays on one core. Not where its points
// average -ll:keep_ns or more: the mapper's placement keeps their data in its core's caches.
// (Never more than one, nor while it has other work: a point kept behind another here would
// wait for it, however long it runs, while another CPU could run it.)
struct LocalReady {
  ReadyQueue* own = nullptr;
  PointTask* head = nullptr;
  PointTask* tail = nullptr;
  std::span<ReadyQueue* const> siblings;
  std::int64_t keep_below = 0;      // cycle_count() ticks; 0: no spares
  std::int64_t keep_all_below = 0;  // ticks (-ll:keep_all_ns); 0: at most one spare
  std::int64_t recent = 0;          // a running average of sampled points' run times (ticks)
  bool more = false;                // it has more points to run (the rest of a taken list)
  std::uint32_t points = 0;         // run so far (mod 2^32: for sample())
  PointTask* spare = nullptr;
  ReadyQueue* spare_queue = nullptr;
  // Ops one of whose points ran here, counted off later (Executor::finish_point). The thread
  // that finishes an op's last point completes the op — its count reaching zero, its event,
  // the program's count of completed ops, its reference: ~150 ns between that point and the
  // successor it made ready here, on a dependence chain's critical path, while the other CPUs,
  // done with their points earlier, wait for theirs. With a successor to run next and points
  // shorter than -ll:keep_ns, the count-off waits until this thread runs out of points (the
  // end of Executor::run_list), where it would wait anyway, or until a third would wait: an op
  // completes at most two short points late.
  static constexpr std::uint32_t kMostDeferred = 2;
  std::array<OpRef, kMostDeferred> deferred;
  std::uint32_t deferred_count = 0;

  void append(PointTask* t) {
    t->next = nullptr;
    if (tail)
      tail->next = t;
    else
      head = t;
    tail = t;
  }
  bool sibling(const ReadyQueue& q) const {
    for (const ReadyQueue* s : siblings)
      if (s == &q) return true;
    return false;
  }
  // Runs t, made ready for q, here or gives it to q. (Out of line: enqueue's usual path stays
  // as short as it was.)
  [[gnu::noinline]] void take_or_push(PointTask* t, ReadyQueue& q) {
    if (!take(t, q)) q.push(t);
  }
  // Whether t, made ready for q, runs here (else q gets it).
  bool take(PointTask* t, ReadyQueue& q) {
    if (&q == own) {
      if (spare) {  // something to run here after all: the spare goes to its own CPU
        spare_queue->push(spare);
        spare = nullptr;
      }
      append(t);
      return true;
    }
    // Points too short to be worth a hand-off: every one made ready for a sibling is kept, in
    // this worker's own queue, where the sibling takes it only if this worker is slow to.
    if (recent > 0 && recent < keep_all_below && sibling(q)) {
      own->push_kept(t);
      return true;
    }
    if (spare || head || more || recent >= keep_below || !sibling(q)) return false;
    spare = t;
    spare_queue = &q;
    return true;
  }
  // The points made ready here, then `rest`: they run first (they are on the critical path,
  // the rest was ready earlier). Leaves none made ready here.
  PointTask* ahead_of(PointTask* rest) {
    if (!head) return rest;
    tail->next = rest;
    PointTask* first = head;
    head = tail = nullptr;
    return first;
  }
  // After a point: the spare, if it is still one, runs next.
  void settle() {
    if (!spare) [[likely]]
      return;
    append(spare);
    spare = nullptr;
  }
  // Whether the count-off of the point that just ran may wait (see `deferred`).
  bool may_defer() const {
    return (head || spare) && recent > 0 && recent < keep_below && deferred_count < kMostDeferred;
  }
  // (Out of line: the usual way through finish_point stays as short as it was.)
  [[gnu::noinline]] void defer(OpRef op) { deferred[deferred_count++] = std::move(op); }
  // Whether to time this point: the first and then one in sixteen, where spares are on (a
  // running average needs no more; the clock costs instructions on every point).
  bool sample() { return keep_below != 0 && (points++ & 15) == 0; }
  void ran(std::uint64_t ticks) {
    recent = points == 1 ? std::int64_t(ticks) : recent + (std::int64_t(ticks) - recent) / 8;
  }
};

}  // namespace reprise::detail

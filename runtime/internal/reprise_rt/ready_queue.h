#pragma once
// The queue of ready task points of one processor: many producers (whoever triggers the last
// precondition), one consumer (the processor's thread), which spins briefly and then sleeps —
// and, while they spin, its siblings (the other CPU workers of its NUMA domain), which take
// what it has left untaken too long.
//
// Lock-free: a producer pushes with one CAS, a consumer takes the whole list with one
// exchange. (With a mutex, a consumer polling the queue could see a push before the
// producer's unlock, and its lock attempt then sleep in the kernel, on the critical path of a
// hand-off between two workers; the exchange costs fewer instructions too.) No ABA: no
// consumer takes single nodes, only the whole list.
#include <atomic>
#include <cstdint>
#include <span>

#include "reprise_rt/point_task.h"
#include "reprise_rt/spin_policy.h"

namespace reprise::detail {

class ReadyQueue {
 public:
  // The queues whose workers may take this one's points, and this one theirs (set before
  // the consumers start; none: no stealing).
  void set_siblings(std::span<ReadyQueue* const> siblings);
  void push(PointTask* t);
  // Its own worker queues a point it made ready for a sibling and keeps (-ll:keep_all_ns):
  // siblings take this queue's points only after spin.kept_steal_after_ns while it holds one.
  // (No wake-up: the worker pushing it is awake.)
  void push_kept(PointTask* t);
  // Takes every queued task (a list linked by `next`, in push order). Sleeps while empty;
  // returns nullptr once stop() was called and the queue is empty.
  // While it spins it also watches its siblings (at most kWatched), and takes the list of one
  // whose head has not changed for spin.steal_after_ns: that queue's worker runs a longer
  // task, or its thread lost its core — on a small machine, to the application or utility
  // thread, while the points it holds are on a dependence chain's critical path. It does not
  // sleep while a watched sibling has points queued, and asleep it looks at them every
  // millisecond.
  PointTask* pop_all(const SpinPolicy& spin) { return pop_all(spin, nullptr, 0); }
  // The same, served by a thread that also waits for something else (the application thread
  // serving a CPU, -ll:app_cpu): returns nullptr too once *interrupt differs from `seen`
  // (whoever changes it calls nudge() after).
  PointTask* pop_all(const SpinPolicy& spin, const std::atomic<std::uint32_t>* interrupt,
                     std::uint32_t seen);
  // Wakes a consumer sleeping in pop_all to look at its interrupt word.
  void nudge();
  // Takes every queued task without waiting (nullptr if none), in push order.
  PointTask* try_take() { return take(nullptr); }
  static constexpr std::size_t kWatched = 8;
  // The rest of a list its worker took, while the worker runs the list's first point: a
  // sibling takes it (as it takes queued points) if it stays untaken for
  // spin.steal_after_ns — a long point at the head of a list must not hold up the rest while
  // another CPU idles. Only the queue's own worker calls these, rest after show_rest.
  void show_rest(PointTask* rest) { rest_.store(rest, std::memory_order_release); }
  PointTask* take_rest() { return rest_.exchange(nullptr, std::memory_order_acquire); }
  // Whether its consumer is away: the application thread serving a CPU (-ll:app_cpu) while
  // it issues and analyses ops, which can take milliseconds. Siblings take its points as soon
  // as they see them, not after spin.steal_after_ns.
  void set_unattended(bool away) { unattended_.store(away, std::memory_order_relaxed); }
  // Whether its worker is between lists (Executor::workers_idle): its consumer state is odd
  // while the worker waits in pop_all, having finished every point it took (what they made
  // ready is queued, its count-offs are done), and even from just before it takes a list
  // (its own queue's, or a sibling's) until it is back. The count of lists taken goes up at
  // every take, so that two looks at an odd state that find it the same saw the worker
  // between lists all the time in between. (The worker calls enter_between_lists; the takes
  // it makes in pop_all do the rest.)
  void enter_between_lists() {
    consumer_state_.store(2 * lists_taken_ + 1, std::memory_order_release);
  }
  std::uint64_t consumer_state() const { return consumer_state_.load(std::memory_order_seq_cst); }
  // Whether nothing is queued or shown (a sibling could take nothing from it).
  bool holds_nothing() const {
    return !head_.load(std::memory_order_seq_cst) && !rest_.load(std::memory_order_seq_cst);
  }
  void stop();

 private:
  // Sleeps until a push, stop() or nudge() (or spuriously; with watched siblings at most 1 ms);
  // not at all while a watched sibling has points queued or *interrupt differs from `seen`.
  void sleep(std::size_t watched, const std::atomic<std::uint32_t>* interrupt, std::uint32_t seen);
  // Wakes its consumer if it sleeps (or is about to); whether it did. (seq_cst with sleep()'s
  // sleeping_ store and head_ load: either the consumer sees what the caller changed before it
  // sleeps, or this sees it sleeping.)
  bool wake_if_asleep();
  // Takes every queued task (nullptr if none), in push order; taker: the queue of the worker
  // taking them, which leaves its between-lists state first (null: not a worker's take).
  PointTask* take(ReadyQueue* taker);
  // What take_rest() takes, for a sibling's worker (taker, as take's).
  PointTask* take_rest(ReadyQueue& taker);
  void leave_between_lists() {
    ++lists_taken_;
    consumer_state_.store(2 * lists_taken_, std::memory_order_seq_cst);
  }
  // Puts t at the head (the compare-exchange with `order`).
  void link(PointTask* t, std::memory_order order);

  std::atomic<PointTask*> head_{nullptr};  // newest first
  // 1 while the consumer sleeps or is about to: a producer that sees it wakes the consumer.
  std::atomic<std::uint32_t> sleeping_{0};
  std::atomic<bool> stopping_{false};
  // It may hold a kept point (push_kept): set by its worker, cleared by a take. (A stale value
  // only moves a steal by a few microseconds.)
  std::atomic<bool> kept_{false};
  std::atomic<PointTask*> rest_{nullptr};  // show_rest (in run order)
  std::atomic<bool> unattended_{false};    // set_unattended (a stale value moves a steal only)
  // enter_between_lists (between lists from the start: a worker that has not started yet
  // holds nothing, and touches nothing another thread does before its first take)
  std::atomic<std::uint64_t> consumer_state_{1};
  std::uint64_t lists_taken_ = 0;  // (its consumer's only)
  std::span<ReadyQueue* const> siblings_;
};

}  // namespace reprise::detail

#pragma once
// The queue of ready task points of one processor: many producers (whoever triggers the last
// precondition), one consumer (the processor's thread), which spins briefly and then sleeps.
//
// Lock-free: a producer pushes with one CAS, the consumer takes the whole list with one
// exchange. (With a mutex, a consumer polling the queue could see a push before the
// producer's unlock, and its lock attempt then sleep in the kernel, on the critical path of a
// hand-off between two workers; the exchange costs fewer instructions too.) No ABA: the
// consumer never takes single nodes, only the whole list.
#include <atomic>
#include <cstdint>

#include "reprise_rt/point_task.h"
#include "reprise_rt/spin_policy.h"

namespace reprise::detail {

class ReadyQueue {
 public:
  void push(PointTask* t);
  // Takes every queued task (a list linked by `next`, in push order). Sleeps while empty;
  // returns nullptr once stop() was called and the queue is empty.
  PointTask* pop_all(const SpinPolicy& spin);
  void stop();

 private:
  // Sleeps until a push or stop() (or spuriously).
  void sleep();

  std::atomic<PointTask*> head_{nullptr};  // newest first
  // 1 while the consumer sleeps or is about to: a producer that sees it wakes the consumer.
  std::atomic<std::uint32_t> sleeping_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace reprise::detail

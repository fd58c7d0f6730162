#pragma once
// The queue of ready task points of one processor: many producers (whoever triggers the last
// precondition), one consumer (the processor's thread), which spins briefly and then sleeps.
#include <atomic>
#include <condition_variable>
#include <mutex>

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
  std::mutex mutex_;
  std::condition_variable cv_;
  PointTask* head_ = nullptr;
  PointTask* tail_ = nullptr;
  std::atomic<bool> nonempty_{false};
  bool sleeping_ = false;
  bool stopping_ = false;
};

}  // namespace reprise::detail

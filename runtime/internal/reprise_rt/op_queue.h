#pragma once
// The application thread's hand-off of ops to the utility thread: a bounded single-producer,
// single-consumer ring; the consumer spins briefly and then sleeps on the tail index.
#include <atomic>
#include <cstdint>
#include <vector>

#include "reprise_rt/cycle_clock.h"
#include "reprise_rt/op.h"
#include "reprise_rt/spin_policy.h"

namespace reprise::detail {

class OpQueue {
 public:
  explicit OpQueue(std::size_t capacity);
  ~OpQueue();
  void push(OpRef op);  // producer; yields while the ring is full
  // Consumer: the next op, or an empty ref once stop() was called and the ring is drained.
  // Calls on_idle() before it sleeps.
  template <typename Idle>
  OpRef pop(const SpinPolicy& spin, Idle&& on_idle);
  void stop();
  // Wakes a sleeping consumer without an op (it runs its idle callback again).
  void wake();

 private:
  bool try_pop(OpRef& out);
  void sleep_until_push();
  std::vector<Op*> ring_;
  std::size_t mask_;
  alignas(64) std::atomic<std::uint64_t> head_{0};
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  std::atomic<bool> sleeping_{false};
  std::atomic<std::uint32_t> signal_{0};  // bumped to wake a sleeping consumer
  std::atomic<bool> stopping_{false};
};

template <typename Idle>
OpRef OpQueue::pop(const SpinPolicy& spin, Idle&& on_idle) {
  OpRef out;
  for (;;) {
    if (try_pop(out)) return out;
    const std::uint64_t start = now_ns();
    bool idled = false;
    for (std::uint64_t now = start; now - start < spin.spin_ns; now = now_ns()) {
      if (try_pop(out)) return out;
      if (!idled) {
        on_idle();
        idled = true;
      }
      spin.pause(now - start);
    }
    if (!idled) on_idle();
    if (try_pop(out)) return out;
    if (stopping_.load(std::memory_order_acquire)) return OpRef();
    sleep_until_push();
  }
}

}  // namespace reprise::detail

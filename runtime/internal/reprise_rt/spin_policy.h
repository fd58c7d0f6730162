#pragma once
// How an idle thread (a CPU worker, the utility thread) waits for work before it sleeps.
// Spinning keeps the next wake-up cheap (a sleeping thread costs tens of microseconds to wake),
// but on a machine with more busy threads than cores a spinning thread holds the core that a
// working one needs: there it yields the core at every round instead of pausing in place, so
// a runnable thread on the same core runs at once and the spinner still sees new work within a
// scheduler round.
#include <atomic>
#include <cstdint>
#include <thread>

#include "reprise_rt/spin_lock.h"

namespace reprise::detail {

struct SpinPolicy {
  std::uint64_t spin_ns = 50'000;  // -ll:spin
  bool yield = false;              // -ll:spin_yield (auto: when oversubscribed)
  // The runtime's busy threads outnumber the cores it has (whatever -ll:spin_yield says).
  bool crowded = false;
  // Even when yielding, the first microseconds of a wait pause in place: a hand-off from
  // another worker usually comes within them, and a yield costs a system call.
  std::uint64_t pause_ns = 3'000;
  // PAUSEs between two looks at the queue: few, so that a hand-off from another worker is seen
  // at once. (A PAUSE takes 13 ns on this project's Xeons, ~40 on Skylake-SP; 32 of them made a
  // spinning worker look every 0.4-1.4 us, and a chain of tasks on two workers waited that long
  // at every step: empty tasks of width 2 1.66 -> 1.52 us per timestep with 4.)
  int relax_rounds = 4;
  // A spinning CPU worker takes another CPU worker's queued points once that queue's head has
  // not changed for this long (0: never).
  std::uint64_t steal_after_ns = 0;
  // ... and once it has not changed for this long where that worker kept the points
  // (-ll:keep_all_ns): it runs them itself once its own point is done, unless that point runs long.
  std::uint64_t kept_steal_after_ns = 0;

  // elapsed_ns: how long this wait has spun so far. Pausing in place, it returns as soon as
  // `arrived` reads non-zero: the word a hand-off writes is looked at between PAUSEs, while
  // the clock and the siblings are read once per round (a round is ~130 ns where a PAUSE takes
  // ~25, on this project's AMD VMs: a hand-off waited ~65 ns on average to be seen).
  template <typename Word>
  void pause(std::uint64_t elapsed_ns, const std::atomic<Word>& arrived) const {
    if (yield && elapsed_ns >= pause_ns) {
      std::this_thread::yield();
    } else {
      for (int i = 0; i < relax_rounds && !arrived.load(std::memory_order_relaxed); ++i)
        cpu_relax();
    }
  }
  // With no word to watch: all relax_rounds PAUSEs.
  void pause(std::uint64_t elapsed_ns) const {
    static const std::atomic<int> never{0};
    pause(elapsed_ns, never);
  }
};

// Whether `threads` busy threads per process, `local_ranks` processes on this node, exceed the
// node's `cores` (0: unknown, taken as not oversubscribed).
inline bool oversubscribed(int threads, int local_ranks, int cores) {
  return cores > 0 && threads * local_ranks > cores;
}

}  // namespace reprise::detail

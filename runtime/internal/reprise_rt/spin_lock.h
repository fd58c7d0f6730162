#pragma once
// A tiny lock for critical sections of a few instructions (event waiter lists).
#include <atomic>
#include <thread>

#include "reprise_rt/alone.h"

namespace reprise::detail {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

class SpinLock {
 public:
  void lock() {
    if (runtime_alone()) return;  // (nothing else could hold it: reprise_rt/alone.h)
    for (int spins = 0; flag_.exchange(true, std::memory_order_acquire); ++spins) {
      while (flag_.load(std::memory_order_relaxed)) {
        if (++spins > 64) {
          std::this_thread::yield();  // the holder may be descheduled on an oversubscribed box
          spins = 0;
        } else {
          cpu_relax();
        }
      }
    }
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace reprise::detail

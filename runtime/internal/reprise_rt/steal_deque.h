#pragma once
// A Chase–Lev work-stealing deque of pointers (Lê et al., PPoPP'13, the C11 version) with a
// fixed capacity: the owner pushes and pops at the bottom, thieves take from the top. A full
// deque refuses a push and the caller runs the job at once (always correct), so no resizing.
#include <atomic>
#include <cstdint>
#include <memory>

namespace reprise::detail {

template <typename T>
class StealDeque {
 public:
  static constexpr std::int64_t kCapacity = 1 << 12;

  StealDeque() : slots_(new std::atomic<T*>[kCapacity]) {
    for (std::int64_t i = 0; i < kCapacity; ++i)
      slots_[i].store(nullptr, std::memory_order_relaxed);
  }

  // Owner only. False when full.
  bool push(T* x) {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    const std::int64_t t = top_.load(std::memory_order_acquire);
    if (b - t >= kCapacity) return false;
    slots_[b & kMask].store(x, std::memory_order_relaxed);
    // Release: a thief that sees the new bottom sees the job's fields (and the slot).
    bottom_.store(b + 1, std::memory_order_release);
    return true;
  }

  // Owner only: the newest entry, or null when empty (or when a thief took the last one).
  T* pop() {
    // seq_cst store then load (not relaxed ones and a fence: ThreadSanitizer does not model
    // fences): a thief's seq_cst loads of top then bottom see this bottom or this sees its top.
    const std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    bottom_.store(b, std::memory_order_seq_cst);
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    if (t > b) {
      bottom_.store(b + 1, std::memory_order_relaxed);
      return nullptr;
    }
    T* x = slots_[b & kMask].load(std::memory_order_relaxed);
    if (t == b) {  // the last entry: race the thieves for it
      if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                        std::memory_order_relaxed))
        x = nullptr;
      bottom_.store(b + 1, std::memory_order_relaxed);
    }
    return x;
  }

  // Any thread: the oldest entry, or null (empty, or lost a race: try again later).
  T* steal() {
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    const std::int64_t b = bottom_.load(std::memory_order_seq_cst);
    if (t >= b) return nullptr;
    T* x = slots_[t & kMask].load(std::memory_order_relaxed);
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed))
      return nullptr;
    return x;
  }

  // Owner only: where the bottom is (entries at or above a mark taken here were pushed since).
  std::int64_t bottom() const { return bottom_.load(std::memory_order_relaxed); }
  // Any thread, racy: whether there may be something to steal. Acquire: what the owner wrote
  // before the push it sees is visible after.
  bool maybe_nonempty() const {
    const std::int64_t b = bottom_.load(std::memory_order_acquire);
    return top_.load(std::memory_order_relaxed) < b;
  }

 private:
  static constexpr std::int64_t kMask = kCapacity - 1;
  alignas(64) std::atomic<std::int64_t> top_{0};
  alignas(64) std::atomic<std::int64_t> bottom_{0};
  std::unique_ptr<std::atomic<T*>[]> slots_;
};

}  // namespace reprise::detail

#pragma once
// Objects of one type made on one thread (the analysis) and destroyed on others (the workers),
// many per op: the memory of a destroyed one goes on a shared lock-free stack, and the making
// thread takes the whole stack back when its own list runs dry, so that making one costs a
// pop from a thread-local list and destroying one a compare-and-swap. (Through oneTBB's
// scalable allocator a point task cost ~150 instructions to allocate on the utility thread,
// most of them collecting the blocks that workers had freed: ~5% of an untraced launch.)
// AddressSanitizer builds allocate each object anew, as before (a use after destruction is not
// hidden by a recycled block); ThreadSanitizer builds recycle, so that it checks the stack.
#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <utility>

#include "reprise_rt/pool.h"

namespace reprise::detail {

template <typename T>
class Recycler {
  struct Block {
    Block* next;
  };
  static_assert(sizeof(T) >= sizeof(Block) && alignof(T) <= alignof(std::max_align_t),
                "a recycled object's memory holds the free list's link");

 public:
  template <typename... Args>
  static T* make(Args&&... args) {
    void* mem = take();
    try {
      return ::new (mem) T(std::forward<Args>(args)...);
    } catch (...) {
      give_back(mem);
      throw;
    }
  }
  static void destroy(T* p) noexcept {
    p->~T();
    give_back(p);
  }
  // Raw blocks of sizeof(T), for RecyclingAllocator.
  static void* allocate() { return take(); }
  static void deallocate(void* p) noexcept { give_back(p); }

 private:
#if defined(__SANITIZE_ADDRESS__)
  static void* take() {
    return pool_allocate(sizeof(T));
  }
  static void give_back(void* mem) noexcept {
    pool_free(mem);
  }
#else
  // This thread's blocks; freed when the thread exits.
  struct Local {
    Block* head = nullptr;
    ~Local() {
      while (Block* b = head) {
        head = b->next;
        pool_free(b);
      }
    }
  };
  static void* take() {
    thread_local Local local;
    if (!local.head) local.head = returned_.exchange(nullptr, std::memory_order_acquire);
    if (Block* b = local.head) {
      local.head = b->next;
      return b;
    }
    return pool_allocate(sizeof(T));
  }
  static void give_back(void* mem) noexcept {
    // (Only ever pushed one at a time and taken all at once: no ABA.)
    auto* b = ::new (mem) Block{returned_.load(std::memory_order_relaxed)};
    while (!returned_.compare_exchange_weak(b->next, b, std::memory_order_release,
                                            std::memory_order_relaxed)) {
    }
  }
  // What other threads gave back since the making thread last looked (stays reachable at exit).
  static inline std::atomic<Block*> returned_{nullptr};
#endif
};

// For std::allocate_shared: the object and its count in one recycled block (a launch's future
// or future map, made on the application thread and dropped by a worker with its op).
template <typename T>
struct RecyclingAllocator {
  using value_type = T;
  RecyclingAllocator() = default;
  template <typename U>
  RecyclingAllocator(const RecyclingAllocator<U>&) noexcept {}  // NOLINT: rebinding
  T* allocate(std::size_t n) {
    return static_cast<T*>(n == 1 ? Recycler<T>::allocate() : pool_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n == 1)
      Recycler<T>::deallocate(p);
    else
      pool_free(p);
  }
  template <typename U>
  bool operator==(const RecyclingAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename T>
struct RecycleDelete {
  void operator()(T* p) const noexcept { Recycler<T>::destroy(p); }
};
template <typename T>
using RecycledPtr = std::unique_ptr<T, RecycleDelete<T>>;

}  // namespace reprise::detail

#pragma once
// Objects of one type made on one thread (the analysis) and destroyed on others (the workers),
// many per op: their memory goes round in batches (batch_exchange.h), so that making one costs
// a pop from an array of this thread's and destroying one a store into one. (A list linked
// through the blocks was read on one core and written on the other, its head swapped on both
// per object. Asking for the next blocks' memory ahead, a prefetch for writing, was slower
// here: 0.163 against 0.156 us per task, bench_overhead at two CPUs. Through
// oneTBB's scalable allocator a point task cost ~150 instructions to allocate on the utility
// thread, most of them collecting the blocks that workers had freed.)
// AddressSanitizer builds allocate each object anew, as before (a use after destruction is not
// hidden by a recycled block); ThreadSanitizer builds recycle, so that it checks the batches.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

#include "reprise_rt/batch_exchange.h"
#include "reprise_rt/pool.h"

namespace reprise::detail {

template <typename T>
class Recycler {
  static_assert(alignof(T) <= alignof(std::max_align_t),
                "a recycled object's memory comes from the pool allocator (aligned for "
                "max_align_t)");

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
  using Blocks = BatchExchange<void*>;
  // Frees this thread's blocks when it exits (registered on a thread's first slow path).
  struct ExitHook {
    ~ExitHook() {
      Blocks::for_each(local_, [](void* mem) { pool_free(mem); });
      Blocks::free_batches(local_);
    }
  };
  static void hook_exit() {
    thread_local ExitHook hook;
    (void)hook;
  }
  static void* take() {
    void* mem;
    return local_.pop(mem) ? mem : take_slow();
  }
  [[gnu::noinline]] static void* take_slow() {
    hook_exit();
    void* mem;
    return blocks_.refill(local_) && local_.pop(mem) ? mem : pool_allocate(sizeof(T));
  }
  static void give_back(void* mem) noexcept {
    if (!local_.push(mem)) [[unlikely]]
      give_slow(mem);
  }
  // (Out of line: the inlined fast paths stay a few instructions in their callers.)
  [[gnu::noinline]] static void give_slow(void* mem) noexcept {
    hook_exit();
    if (!blocks_.give(local_, mem)) pool_free(mem);  // (no memory for a batch: not recycled)
  }
  static inline constinit thread_local Blocks::Local local_{};
  static inline constinit Blocks blocks_{};
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

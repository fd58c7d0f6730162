#pragma once
// Objects of one type made on one thread (the analysis) and destroyed on others (the workers),
// many per op. A destroying thread collects the memory in a batch of its own (an array of
// addresses) and shares a full batch with one compare-and-swap; the making thread takes every
// shared batch at once when its own run dry. Making one costs a pop from an array, destroying
// one a store into one: neither reads the recycled memory, which the other core wrote last —
// read and then written, each of its lines crossed between the cores twice (a point's first
// write waited on them: ~3/4 of `init_point`'s samples at two CPUs), and the array lets the
// maker ask for a few blocks ahead before it writes them. (Through oneTBB's scalable
// allocator a point task cost ~150 instructions to allocate on the utility thread, most of
// them collecting the blocks that workers had freed.)
// AddressSanitizer builds allocate each object anew, as before (a use after destruction is not
// hidden by a recycled block); ThreadSanitizer builds recycle, so that it checks the batches.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

#include "reprise_rt/pool.h"

namespace reprise::detail {

template <typename T>
class Recycler {
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
  static constexpr std::uint32_t kBatch = 32;
  // Blocks asked for ahead of their use (for writing: the block's lines come over while the
  // maker does other work, instead of each stalling its first write).
  static constexpr std::uint32_t kAhead = 3;
  struct Batch {
    Batch* next = nullptr;  // shared batches, and those the making thread took
    std::uint32_t count = 0;
    void* blocks[kBatch];
  };
  struct Local {
    Batch* giving = nullptr;  // destroyed here, not shared yet (made again here first: hot)
    Batch* taking = nullptr;  // from other threads, then the rest of what was taken with it
    ~Local() {
      drop(std::exchange(giving, nullptr));
      drop(std::exchange(taking, nullptr));
    }
  };
  static Local& local() {
    thread_local Local l;
    return l;
  }
  static void drop(Batch* b) noexcept {
    while (b) {
      for (std::uint32_t i = 0; i < b->count; ++i) pool_free(b->blocks[i]);
      Batch* next = b->next;
      PoolDelete<Batch>{}(b);
      b = next;
    }
  }
  static void* take() {
    Local& l = local();
    if (Batch* g = l.giving; g && g->count) return g->blocks[--g->count];
    Batch* t = l.taking;
    if (!t || !t->count) [[unlikely]] {
      t = refill(l);
      if (!t) return pool_allocate(sizeof(T));
    }
    const std::uint32_t n = --t->count;
    if (n >= kAhead) __builtin_prefetch(t->blocks[n - kAhead], 1);
    return t->blocks[n];
  }
  // The next batch taken before, or every batch shared since; null when there is none.
  static Batch* refill(Local& l) {
    Batch* t = l.taking;
    if (t && t->next) {
      l.taking = t->next;
      PoolDelete<Batch>{}(t);
      return l.taking;
    }
    Batch* shared = returned_.exchange(nullptr, std::memory_order_acquire);
    if (!shared) return nullptr;
    if (t) PoolDelete<Batch>{}(t);
    l.taking = shared;
    for (std::uint32_t i = 0; i < kAhead && i < shared->count; ++i)
      __builtin_prefetch(shared->blocks[shared->count - 1 - i], 1);
    return shared;
  }
  static void give_back(void* mem) noexcept {
    Local& l = local();
    Batch* g = l.giving;
    if (!g || g->count == kBatch) [[unlikely]] {
      g = fresh_batch(l);
      if (!g) return pool_free(mem);  // (no memory for a batch: not recycled)
    }
    g->blocks[g->count++] = mem;
  }
  // Shares the full batch being given (if any) and starts another.
  static Batch* fresh_batch(Local& l) noexcept {
    if (Batch* full = l.giving) {
      // (Pushed one at a time and taken all at once: no ABA.)
      full->next = returned_.load(std::memory_order_relaxed);
      while (!returned_.compare_exchange_weak(full->next, full, std::memory_order_release,
                                              std::memory_order_relaxed)) {
      }
      l.giving = nullptr;
    }
    void* mem = pool_malloc(sizeof(Batch));
    if (!mem) return nullptr;
    l.giving = ::new (mem) Batch{};
    return l.giving;
  }
  // Batches shared since the making thread last looked (stay reachable at exit).
  static inline std::atomic<Batch*> returned_{nullptr};
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

#pragma once
// Free things (recycled blocks, event slots) handed from the threads that free them to the
// threads that use them again, in batches: each thread fills a batch of its own and shares a
// full one with one compare-and-swap; a thread that runs dry takes every shared batch at once.
// Per item a thread stores into or loads from an array of its own: it neither reads the freed
// thing (whose lines the other core wrote last) nor touches a shared head. Emptied batches go
// back the other way for reuse. Both stacks are pushed one batch at a time and taken whole: no
// ABA.
#include <atomic>
#include <cstdint>
#include <new>
#include <utility>

#include "reprise_rt/pool.h"

namespace reprise::detail {

template <typename Item, std::uint32_t N = 32>
struct ItemBatch {
  ItemBatch* next = nullptr;  // in a stack, or the rest of what a thread took with this one
  std::uint32_t count = 0;
  Item items[N];
};

// One thread's batches of one exchange (trivially constructible: a thread_local of it costs no
// guard on the fast path; the owner empties it at the thread's exit).
template <typename Item, std::uint32_t N = 32>
struct ThreadBatches {
  using Batch = ItemBatch<Item, N>;
  Batch* giving = nullptr;  // freed here, not shared yet (used again here first: hot here)
  Batch* taking = nullptr;  // taken from the shared ones (and, through next, the rest of them)
  Batch* spares = nullptr;  // empty, for giving

  // An item freed here or taken before, if there is one at hand.
  bool pop(Item& out) {
    if (Batch* g = giving; g && g->count) {
      out = g->items[--g->count];
      return true;
    }
    if (Batch* t = taking; t && t->count) [[likely]] {
      out = t->items[--t->count];
      return true;
    }
    return false;
  }
  // False when the batch being given is full (then BatchExchange::give).
  bool push(const Item& item) {
    Batch* g = giving;
    if (!g || g->count == N) [[unlikely]]
      return false;
    g->items[g->count++] = item;
    return true;
  }
};

template <typename Item, std::uint32_t N = 32>
class BatchExchange {
 public:
  using Batch = ItemBatch<Item, N>;
  using Local = ThreadBatches<Item, N>;

  BatchExchange() = default;
  BatchExchange(const BatchExchange&) = delete;
  BatchExchange& operator=(const BatchExchange&) = delete;
  // (Trivially destructible: a static one stays reachable at exit. An owner that goes first
  // calls free_shared.)

  // Local::push found no room: shares the full batch and starts another. False when there is no
  // memory for a batch (the item is then not recycled).
  bool give(Local& l, const Item& item) noexcept {
    if (l.giving) share(std::exchange(l.giving, nullptr));
    if (!l.spares) l.spares = empty_.exchange(nullptr, std::memory_order_acquire);
    Batch* b = l.spares;
    if (b) {
      l.spares = b->next;
      b->next = nullptr;
    } else {
      void* mem = pool_malloc(sizeof(Batch));
      if (!mem) return false;
      b = ::new (mem) Batch{};
    }
    l.giving = b;
    b->items[b->count++] = item;
    return true;
  }
  // Local::pop found nothing: every batch shared since, ahead of the rest of those taken
  // before (the most recently freed first: their memory is the likeliest in this core's caches;
  // at one CPU, using up the older batches first cost bench_overhead ~4% in cache misses on
  // event slots). False when there is none.
  bool refill(Local& l) {
    Batch* t = l.taking;
    Batch* rest = t ? std::exchange(t->next, nullptr) : nullptr;
    if (Batch* shared = full_.exchange(nullptr, std::memory_order_acquire)) {
      if (rest) {
        Batch* tail = shared;
        while (tail->next) tail = tail->next;
        tail->next = rest;
      }
      l.taking = shared;
    } else if (rest) {
      l.taking = rest;
    } else {
      return false;
    }
    if (t) recycle(t);
    return true;
  }
  // Shares a non-empty batch (a full one, or what a thread that leaves a table gives back).
  void share(Batch* b) {
    b->next = full_.load(std::memory_order_relaxed);
    while (!full_.compare_exchange_weak(b->next, b, std::memory_order_release,
                                        std::memory_order_relaxed)) {
    }
  }
  bool any_shared() const { return full_.load(std::memory_order_acquire) != nullptr; }
  // Every item in l goes back to this exchange; l is left empty.
  void give_back_all(Local& l) {
    for (Batch* b : {std::exchange(l.giving, nullptr), std::exchange(l.taking, nullptr)}) {
      while (b) {
        Batch* next = std::exchange(b->next, nullptr);
        if (b->count)
          share(b);
        else
          recycle(b);
        b = next;
      }
    }
    free_all(std::exchange(l.spares, nullptr));
  }
  // Frees l's batches (their items are the caller's to release first: for_each).
  static void free_batches(Local& l) noexcept {
    free_all(std::exchange(l.giving, nullptr));
    free_all(std::exchange(l.taking, nullptr));
    free_all(std::exchange(l.spares, nullptr));
  }
  template <typename F>
  static void for_each(const Local& l, F&& f) {
    for (const Batch* b : {l.giving, l.taking})
      for (; b; b = b->next)
        for (std::uint32_t i = 0; i < b->count; ++i) f(b->items[i]);
  }
  // Frees every shared batch, full or empty (their items are the caller's to release first).
  void free_shared() noexcept {
    free_all(full_.exchange(nullptr, std::memory_order_acquire));
    free_all(empty_.exchange(nullptr, std::memory_order_acquire));
  }

 private:
  void recycle(Batch* b) noexcept {
    b->count = 0;
    b->next = empty_.load(std::memory_order_relaxed);
    while (!empty_.compare_exchange_weak(b->next, b, std::memory_order_release,
                                         std::memory_order_relaxed)) {
    }
  }
  static void free_all(Batch* b) noexcept {
    while (b) PoolDelete<Batch>{}(std::exchange(b, b->next));
  }

  std::atomic<Batch*> full_{nullptr};
  std::atomic<Batch*> empty_{nullptr};
};

}  // namespace reprise::detail

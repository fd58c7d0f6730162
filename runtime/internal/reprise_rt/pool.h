#pragma once
// Pooled allocation for per-op objects: oneTBB's scalable allocator keeps per-thread caches,
// so objects created on one thread and freed on another cost no global lock.
#include <tbb/scalable_allocator.h>

#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace reprise::detail {

template <typename T>
struct PoolDelete {
  void operator()(T* p) const noexcept {
    p->~T();
    scalable_free(p);
  }
};

template <typename T>
using PoolPtr = std::unique_ptr<T, PoolDelete<T>>;

template <typename T, typename... Args>
PoolPtr<T> make_pooled(Args&&... args) {
  void* mem = scalable_malloc(sizeof(T));
  if (!mem) throw std::bad_alloc();
  return PoolPtr<T>(::new (mem) T(std::forward<Args>(args)...));
}

template <typename T>
using PoolAllocator = tbb::scalable_allocator<T>;

// Vectors inside per-op objects: allocated on one thread, freed on another, many per op.
template <typename T>
using PoolVector = std::vector<T, PoolAllocator<T>>;

}  // namespace reprise::detail

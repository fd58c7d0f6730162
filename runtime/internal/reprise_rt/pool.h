#pragma once
// Pooled allocation for per-op objects: oneTBB's scalable allocator keeps per-thread caches,
// so objects created on one thread and freed on another cost no global lock.
#include <tbb/scalable_allocator.h>

#include <cstdlib>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace reprise::detail {

// ThreadSanitizer cannot see the synchronisation inside tbbmalloc (it is not instrumented) and
// reports every cross-thread reuse of memory as a race; sanitizer builds use malloc instead.
#if defined(REPRISE_PLAIN_MALLOC)
inline void* pool_malloc(std::size_t n) {
  return std::malloc(n);
}
inline void pool_free(void* p) {
  std::free(p);
}
template <typename T>
using PoolAllocator = std::allocator<T>;
#else
inline void* pool_malloc(std::size_t n) {
  return scalable_malloc(n);
}
inline void pool_free(void* p) {
  scalable_free(p);
}
template <typename T>
using PoolAllocator = tbb::scalable_allocator<T>;
#endif

// pool_malloc that throws std::bad_alloc instead of returning null.
inline void* pool_allocate(std::size_t n) {
  void* mem = pool_malloc(n);
  if (!mem) throw std::bad_alloc();
  return mem;
}

template <typename T>
struct PoolDelete {
  void operator()(T* p) const noexcept {
    p->~T();
    pool_free(p);
  }
};

template <typename T>
using PoolPtr = std::unique_ptr<T, PoolDelete<T>>;

template <typename T, typename... Args>
PoolPtr<T> make_pooled(Args&&... args) {
  return PoolPtr<T>(::new (pool_allocate(sizeof(T))) T(std::forward<Args>(args)...));
}

// Vectors inside per-op objects: allocated on one thread, freed on another, many per op.
template <typename T>
using PoolVector = std::vector<T, PoolAllocator<T>>;

}  // namespace reprise::detail

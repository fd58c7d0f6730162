#pragma once
// Where the running runtime has a single thread — the application's, which is also its only
// CPU's worker and runs the analysis (the one-core layout: -ll:cpu 1 -ll:app_cpu 1, no utility
// thread, GPU, network, helper or mining threads; Runtime::run decides) — nothing else can
// touch the counters that several threads share otherwise: an op's references and remaining
// points, a replayed point's predecessors, the runtime's completed ops. They change by a load
// and a store then instead of a locked read-modify-write (~5 ns each on this project's VMs,
// about seven a replayed launch: a fifth of its cost at one core), as glibc's malloc skips its
// atomics while a process has one thread.
//
// The same holds beside CPU workers while every worker waits for points between lists and
// nothing is in flight (eager launches, -ll:cpu 2 and up): the executor sets the flag then
// and clears it before it hands anything to a worker (Executor::go_alone, leave_alone).
#include <atomic>
#include <type_traits>

namespace reprise::detail {

// Set while the running runtime runs alone: by Runtime::run where no other thread of the
// runtime exists, or by the executor while its workers wait with nothing to run (one
// runtime runs at a time in a process).
inline std::atomic<bool> g_runtime_alone{false};

inline bool runtime_alone() {
  return g_runtime_alone.load(std::memory_order_relaxed);
}

// a.fetch_add(d, order), by a load and a store while the runtime runs alone (the old value).
template <typename T>
T shared_add(std::atomic<T>& a, std::type_identity_t<T> d, std::memory_order order) {
  if (runtime_alone()) {
    const T old = a.load(std::memory_order_relaxed);
    a.store(old + d, std::memory_order_relaxed);
    return old;
  }
  return a.fetch_add(d, order);
}

template <typename T>
T shared_sub(std::atomic<T>& a, std::type_identity_t<T> d, std::memory_order order) {
  if (runtime_alone()) {
    const T old = a.load(std::memory_order_relaxed);
    a.store(old - d, std::memory_order_relaxed);
    return old;
  }
  return a.fetch_sub(d, order);
}

}  // namespace reprise::detail

#pragma once
// A clock for timing single task points on the launch path: the time-stamp counter where there
// is one (a few instructions; steady_clock's vDSO call costs tens, on every point), read as
// nanoseconds through a rate measured once per process.
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace reprise::detail {

// steady_clock in nanoseconds: the one clock for spin, steal and sleep decisions.
std::uint64_t now_ns();

inline std::uint64_t cycle_count() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return now_ns();
#endif
}

// Counter ticks per nanosecond (measured against steady_clock over ~200 us, the first time).
double cycles_per_ns();

}  // namespace reprise::detail

#include "reprise_rt/cycle_clock.h"

#include <chrono>

namespace reprise::detail {

std::uint64_t now_ns() {
  return std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count());
}

double cycles_per_ns() {
  // Once per process, ~200 us: the runtime's start-up pays it, no point does.
  static const double rate = [] {
    const std::uint64_t ns0 = now_ns(), c0 = cycle_count();
    std::uint64_t ns1 = ns0;
    while (ns1 - ns0 < 200'000) ns1 = now_ns();
    const std::uint64_t c1 = cycle_count();
    return c1 > c0 ? double(c1 - c0) / double(ns1 - ns0) : 1.0;
  }();
  return rate;
}

}  // namespace reprise::detail

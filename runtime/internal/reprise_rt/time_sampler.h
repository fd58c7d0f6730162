#pragma once
// Which of a stream of like events to time, where timing each costs more than the figure is
// worth: the cycle counter costs ~10 ns a read on this project's VMs, and the two around an
// untraced one-point launch's analysis were ~2.4% of its wall time at one core.
#include <cstdint>

namespace reprise::detail {

// One event in kEvery, at the irregular intervals of a Weyl sequence (k times the golden
// ratio, modulo 1, below 1/kEvery): every phase of any period the program repeats at is sampled
// equally often over a run (a fixed stride would see only some phases of a period sharing a
// factor with it), so the sampled times, each counted kEvery times, are an unbiased estimate of
// the whole.
class TimeSampler {
 public:
  static constexpr std::uint64_t kEvery = 8;

  // kEvery to time this event and count it kEvery times, 0 not to time it.
  std::uint64_t weight() {
    phase_ += 0x9e3779b97f4a7c15ull;  // (2^64 over the golden ratio, odd)
    return phase_ < kBelow ? kEvery : 0;
  }

 private:
  static constexpr std::uint64_t kBelow = ~std::uint64_t(0) / kEvery;
  std::uint64_t phase_ = 0;
};

}  // namespace reprise::detail

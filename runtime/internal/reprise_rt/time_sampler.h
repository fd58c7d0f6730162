#pragma once
// Which of a stream of like events to time, where timing each costs more than the figure is
// worth: the cycle counter costs ~10 ns a read on this project's VMs, and the two around an
// untraced one-point launch's analysis were ~2.4% of its wall time at one core.
#include <cstdint>

namespace reprise::detail {

// One event in kEvery, drawn at random (xorshift64, a few instructions): independent of any
// period the program repeats at, so every phase of every period is sampled alike and the
// sampled times, each counted kEvery times, are an unbiased estimate of the whole. (A fixed
// stride sees only some phases of a period sharing a factor with it, and a Weyl sequence
// leaves phases of long periods — hundreds of ops — unsampled for runs shorter than ~P².)
// Seeded per runtime, so that repeated runs of one program sample different events.
class TimeSampler {
 public:
  static constexpr std::uint64_t kEvery = 8;

  explicit TimeSampler(std::uint64_t seed = 0x9e3779b97f4a7c15ull)
      : state_(seed ? seed : 0x9e3779b97f4a7c15ull) {}

  // kEvery to time this event and count it kEvery times, 0 not to time it.
  std::uint64_t weight() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_ >> 61 == 0 ? kEvery : 0;  // (the top bits: xorshift's best)
  }

 private:
  std::uint64_t state_;  // never 0
};

}  // namespace reprise::detail

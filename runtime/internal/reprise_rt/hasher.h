#pragma once
// The runtime's one hash mixer: a 64-bit running hash of words and rectangles (splitmix64's
// finaliser per word: cheap and well distributed). Op tokens, launch shapes, the
// control-replication checks (op shapes, op streams, what shards create), reduction-instance
// keys and the physical state's lists use it.
#include <cstdint>

#include "reprise/geometry.h"

namespace reprise::detail {

struct Hasher {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  void mix(std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
  }
  void mix(const Domain& d) {
    mix(std::uint64_t(d.dim));
    for (int i = 0; i < d.dim; ++i) {
      mix(std::uint64_t(d.lo[i]));
      mix(std::uint64_t(d.hi[i]));
    }
  }
};

}  // namespace reprise::detail

#pragma once
// The tree that collectives among shards travel (future-map reductions, votes): a binary heap
// rooted at shard 0 — shard s's parent is (s - 1) / 2, its children 2s + 1 and 2s + 2. A shard
// sends at most three messages per collective (one up, two down), whatever the number of
// shards: a binomial tree's root would send log2(shards).
#include <cstdint>

namespace reprise::detail {

inline std::uint32_t tree_parent(std::uint32_t shard) {
  return shard == 0 ? 0 : (shard - 1) / 2;
}

// Shard `shard`'s children among `shards` (none, one or two).
inline std::uint32_t tree_child_count(std::uint32_t shard, std::uint32_t shards) {
  const std::uint64_t first = 2 * std::uint64_t(shard) + 1;
  return std::uint32_t(first >= shards ? 0 : first + 1 >= shards ? 1 : 2);
}
inline std::uint32_t tree_child(std::uint32_t shard, std::uint32_t i) {
  return 2 * shard + 1 + i;
}

// The same tree rooted at `root` instead (shards renumbered from it, cyclically): what a
// broadcast from `root` travels.
inline std::uint32_t rooted_child_count(std::uint32_t root, std::uint32_t shard,
                                        std::uint32_t shards) {
  return tree_child_count((shard + shards - root) % shards, shards);
}
inline std::uint32_t rooted_child(std::uint32_t root, std::uint32_t shard, std::uint32_t i,
                                  std::uint32_t shards) {
  return (tree_child((shard + shards - root) % shards, i) + root) % shards;
}

}  // namespace reprise::detail

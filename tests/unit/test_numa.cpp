// Host memory for instances: zero-filled, and bound to a NUMA node with hwloc when asked.
#include <gtest/gtest.h>

#include <algorithm>

#include "reprise_rt/topology.h"

using namespace reprise::detail;

TEST(Numa, AllocationsAreZeroAndBoundWhenAsked) {
  EXPECT_GE(numa_nodes(), 1);
  constexpr std::size_t kBytes = 1 << 20;
  for (int node : {-1, 0}) {
    HostBytes b = host_allocate(kBytes, node);
    ASSERT_TRUE(b);
    EXPECT_TRUE(
        std::all_of(b.get(), b.get() + kBytes, [](std::byte x) { return x == std::byte{0}; }));
    std::fill(b.get(), b.get() + kBytes, std::byte{7});  // the pages are ours to write
    if (node >= 0 && b.get_deleter().bound) {
      EXPECT_EQ(bound_node(b.get(), kBytes), node) << "bound to the node asked for";
    }
    if (node < 0) {
      EXPECT_FALSE(b.get_deleter().bound);
    }
  }
  // A node that does not exist: an unbound allocation, not a failure.
  HostBytes none = host_allocate(64, numa_nodes() + 3);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none.get_deleter().bound);
}

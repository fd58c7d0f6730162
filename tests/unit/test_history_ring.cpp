// HistoryRing: the bounded history the control-replication checks keep per op.
#include <gtest/gtest.h>

#include <thread>

#include "reprise_rt/history_ring.h"

using reprise::detail::HistoryRing;

TEST(HistoryRing, KeepsTheLastValuesAndForgetsOlderOnes) {
  HistoryRing<3> ring;  // 8 values
  EXPECT_FALSE(ring.at(0));
  for (std::uint64_t i = 0; i < 20; ++i) ring.push_back(100 + i);
  EXPECT_EQ(ring.size(), 20u);
  // The last 7 are held; the slot of the 8th from the end is the one written next.
  for (std::uint64_t i = 0; i < 13; ++i) EXPECT_FALSE(ring.at(i)) << i;
  for (std::uint64_t i = 13; i < 20; ++i) EXPECT_EQ(ring.at(i), 100 + i) << i;
  EXPECT_FALSE(ring.at(20));  // not written yet
}

TEST(HistoryRing, AReaderNeverSeesAnOverwrittenValueAsValid) {
  HistoryRing<4> ring;  // 16 values; value i is always 3 * i
  std::atomic<bool> done{false}, reading{false};
  std::thread writer([&] {
    while (!reading) std::this_thread::yield();  // overlap with the reader
    for (std::uint64_t i = 0; i < 2000000; ++i) ring.push_back(3 * i);
    done = true;
  });
  std::uint64_t checked = 0, wrong = 0;
  for (bool last = false; !last;) {
    last = done;  // one more pass after the writer finished
    reading = true;
    const std::uint64_t n = ring.size();
    for (std::uint64_t i = n > 20 ? n - 20 : 0; i < n + 2; ++i)
      if (auto v = ring.at(i)) {
        wrong += *v != 3 * i;
        ++checked;
      }
  }
  writer.join();
  EXPECT_EQ(wrong, 0u) << "of " << checked << " values read";
  EXPECT_GT(checked, 0u);
}

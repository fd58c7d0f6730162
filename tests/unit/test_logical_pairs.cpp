// The logical analysis' points that meet, for small launches over partitions named by identity
// (kept per pair of partitions and launch domains, LogicalAnalysis::small_pair_meets): the same
// pair over another domain gets its own answer, and more pairs than the table has slots, asked
// again, still get theirs.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "logical_fixture.h"

using namespace logical_fixture;

TEST(LogicalPairs, TheSamePairOverAnotherDomainGetsItsOwnPoints) {
  Fixture f;
  const Partition halves = f.partition({r1(0, 49), r1(50, 99)});
  const Partition reads = f.partition({r1(0, 10), r1(40, 60)});
  const OpRef write = f.launch(f.colors, halves, Privilege::ReadWrite);
  f.analyse(write);
  const Event w0 = write->point_done[0], w1 = write->point_done[1];
  // Over both colors: color 0 reads [0, 10] (half 0's), color 1 [40, 60] (both halves').
  const auto both = f.analyse(f.launch(f.colors, reads, Privilege::ReadOnly));
  EXPECT_EQ(both[0], std::vector<Event>{w0});
  EXPECT_EQ(both[1], sorted({w0, w1}));
  // Over color 1 alone: its one point is color 1 — not the answer kept for point 0 above.
  const auto second = f.analyse(f.launch(r1(1, 1), reads, Privilege::ReadOnly));
  EXPECT_EQ(second[0], sorted({w0, w1}));
  // And over color 0 alone, then both colors again (kept answers, asked again).
  const auto first = f.analyse(f.launch(r1(0, 0), reads, Privilege::ReadOnly));
  EXPECT_EQ(first[0], std::vector<Event>{w0});
  const auto again = f.analyse(f.launch(f.colors, reads, Privilege::ReadOnly));
  EXPECT_EQ(again[0], std::vector<Event>{w0});
  EXPECT_EQ(again[1], sorted({w0, w1}));
  // A write of color 1 alone: the same two partitions again, over the same reading domain,
  // but the earlier op's point 0 is color 1 now (its half [50, 99]).
  const OpRef write1 = f.launch(r1(1, 1), halves, Privilege::ReadWrite);
  const auto after_write1 = f.analyse(write1);
  const auto& waits = after_write1[0];  // (w1, and the reads of color 1 before it)
  EXPECT_NE(std::find(waits.begin(), waits.end(), w1), waits.end());
  EXPECT_EQ(std::find(waits.begin(), waits.end(), w0), waits.end());
  const Event v1 = write1->point_done[0];
  const auto last = f.analyse(f.launch(f.colors, reads, Privilege::ReadOnly));
  EXPECT_EQ(last[0], std::vector<Event>{w0});
  EXPECT_EQ(last[1], sorted({w0, w1, v1}));  // (the first write still holds half 0)
}

TEST(LogicalPairs, MorePairsThanSlotsAreEachAnsweredRight) {
  Fixture f;
  const Partition halves = f.partition({r1(0, 49), r1(50, 99)});
  const OpRef write = f.launch(f.colors, halves, Privilege::ReadWrite);
  f.analyse(write);
  const Event w0 = write->point_done[0], w1 = write->point_done[1];
  // 100 partitions whose color 0 reads [k, k] and color 1 [99 - k, 99 - k]: twice round, so
  // that later pairs take earlier ones' slots and the earlier ones are asked again.
  std::vector<Partition> reads;
  for (coord_t k = 0; k < 100; ++k) reads.push_back(f.partition({r1(k, k), r1(99 - k, 99 - k)}));
  for (int round = 0; round < 2; ++round)
    for (coord_t k = 0; k < 100; ++k) {
      const auto got = f.analyse(f.launch(f.colors, reads[std::size_t(k)], Privilege::ReadOnly));
      EXPECT_EQ(got[0], std::vector<Event>{k < 50 ? w0 : w1}) << "round " << round << ", k " << k;
      EXPECT_EQ(got[1], std::vector<Event>{99 - k < 50 ? w0 : w1})
          << "round " << round << ", k " << k;
    }
}

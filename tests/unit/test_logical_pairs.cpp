// The logical analysis' points that meet, for small launches over partitions named by identity
// (kept per pair of partitions and launch domains, LogicalAnalysis::small_pair_meets): the same
// pair over another domain gets its own answer, and more pairs than the table has slots, asked
// again, still get theirs.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "reprise_analysis/logical.h"
#include "reprise_rt/event.h"
#include "reprise_rt/forest.h"
#include "reprise_rt/op.h"

using namespace reprise;
using detail::Event;
using detail::EventTable;
using detail::OpRef;

namespace {

Domain r1(coord_t lo, coord_t hi) {
  return Domain(Rect<1>({lo}, {hi}));
}

struct Fixture {
  EventTable events;
  detail::RegionForest forest;
  detail::LogicalAnalysis logical{forest, events, /*prune_completed=*/false};
  Region region;
  Domain colors = r1(0, 1);

  Fixture() {
    const IndexSpace is = forest.create_index_space(r1(0, 99));
    const FieldSpace fs = forest.create_field_space({{1, 8}});
    region = forest.create_region(is, fs);
  }
  Partition partition(std::vector<Domain> pieces) {
    return forest.create_partition(region, colors, std::move(pieces));
  }
  // An index launch over `domain` naming `p` by identity; its points' events are made here.
  OpRef launch(const Domain& domain, const Partition& p, Privilege privilege) {
    OpRef op = detail::make_op();
    op->kind = detail::OpKind::IndexTask;
    op->domain = domain;
    detail::ReqInfo& q = op->reqs.emplace_back();
    q.tree = p.tree();
    q.region = region.node();
    q.partition = p.node();
    q.uid = p.uid();
    q.whole_partition = domain == colors;
    q.privilege = privilege;
    q.mask = 1;
    op->done = events.create();
    for (std::size_t i = 0; i < op->num_points(); ++i) op->point_done.push_back(events.create());
    logical.compute_rects(*op);
    return op;
  }
  // What each point of `op` waits for; then op becomes a user.
  std::vector<std::vector<Event>> analyse(const OpRef& op) {
    detail::PointPreconditions pre;
    pre.reset(op->num_points());
    logical.dependences(*op, pre);
    std::vector<std::vector<Event>> out;
    for (std::size_t p = 0; p < op->num_points(); ++p) {
      const auto events_of = pre.of(p);
      std::vector<Event> v(events_of.begin(), events_of.end());
      std::sort(v.begin(), v.end(), [](Event a, Event b) { return a.id < b.id; });
      out.push_back(std::move(v));
    }
    logical.record(op);
    return out;
  }
};

std::vector<Event> sorted(std::vector<Event> v) {
  std::sort(v.begin(), v.end(), [](Event a, Event b) { return a.id < b.id; });
  return v;
}

}  // namespace

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

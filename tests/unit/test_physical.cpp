// The physical state: which memories hold valid data for each piece of a field, the copies a
// read needs, invalidation by writes, and the facts/effects journal that trace templates use.
#include <gtest/gtest.h>

#include "reprise_analysis/physical.h"

using namespace reprise;
using detail::CopyNeed;
using detail::Event;
using detail::FoldNeed;
using detail::PhysicalEffect;
using detail::PhysicalFact;
using detail::PhysicalState;

namespace {
Domain r1(coord_t lo, coord_t hi) {
  return Domain(Rect<1>({lo}, {hi}));
}
coord_t volume(const std::vector<Domain>& v) {
  coord_t n = 0;
  for (const auto& d : v) n += d.volume();
  return n;
}
}  // namespace

TEST(Physical, SubtractLeavesDisjointCover) {
  Domain a(Rect<2>({0, 0}, {9, 9}));
  Domain hole(Rect<2>({3, 4}, {5, 20}));
  std::vector<Domain> out;
  detail::subtract(a, hole, out);
  EXPECT_EQ(volume(out), a.volume() - (a & hole).volume());
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_FALSE(out[i].overlaps(hole));
    for (std::size_t j = i + 1; j < out.size(); ++j) EXPECT_FALSE(out[i].overlaps(out[j]));
  }
  out.clear();
  detail::subtract(a, Domain(Rect<2>({20, 20}, {30, 30})), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], a);
  out.clear();
  detail::subtract(a, a, out);
  EXPECT_TRUE(out.empty());
}

TEST(Physical, ReadsCopyWhatWritesInvalidated) {
  PhysicalState s(2);
  const Domain root = r1(0, 99);
  std::vector<Event> waits;
  std::vector<CopyNeed> needs;
  std::vector<FoldNeed> folds;
  // Fresh data is valid everywhere (instances start zero-filled, like the region).
  s.read(0, root, 0, r1(0, 99), 1, waits, needs, folds);
  EXPECT_TRUE(needs.empty());
  // A write in memory 0 leaves memory 1 stale for what it wrote only.
  s.written(0, root, 0, r1(0, 49), 0);
  s.read(0, root, 0, r1(40, 59), 1, waits, needs, folds);
  ASSERT_EQ(needs.size(), 1u);
  EXPECT_EQ(needs[0].rect, r1(40, 49));
  EXPECT_EQ(needs[0].src_mem, 0u);
  EXPECT_FALSE(needs[0].src_ready.exists());
  // Once copied, a second reader in memory 1 waits for that copy instead of copying again.
  const Event copy{7, 1};
  s.copied(0, root, 0, r1(40, 49), 1, copy);
  needs.clear();
  waits.clear();
  s.read(0, root, 0, r1(45, 45), 1, waits, needs, folds);
  EXPECT_TRUE(needs.empty());
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0], copy);
  // Other fields and other trees are unaffected.
  s.read(0, root, 1, r1(0, 99), 1, waits, needs, folds);
  s.read(1, root, 0, r1(0, 99), 1, waits, needs, folds);
  EXPECT_TRUE(needs.empty());
  // A write undoes the cuts: the written rectangle is one piece again.
  s.written(0, root, 0, r1(0, 99), 1);
  EXPECT_EQ(s.piece_count(0, 0), 1u);
}

// Control replication: a shard holds no event for other shards' copies, yet every shard must
// choose the same copy source: the choice follows what was copied, not which events exist.
TEST(Physical, CopySourceDoesNotDependOnEvents) {
  for (const Event ready : {Event{9, 1}, Event{}}) {
    PhysicalState s(3);
    const Domain root = r1(0, 9);
    std::vector<Event> waits;
    std::vector<CopyNeed> needs;
    std::vector<FoldNeed> folds;
    s.written(0, root, 0, root, 1);        // memory 1 holds the data
    s.copied(0, root, 0, root, 0, ready);  // a copy fills memory 0 (event or not)
    s.read(0, root, 0, root, 2, waits, needs, folds);
    ASSERT_EQ(needs.size(), 1u);
    EXPECT_EQ(needs[0].src_mem, 1u) << "copy from the memory not being filled";
    EXPECT_FALSE(needs[0].src_ready.exists());
  }
}

TEST(Physical, ReductionsKeepTheCopyTheyWaitFor) {
  PhysicalState s(2);
  const Domain root = r1(0, 9);
  s.written(0, root, 0, root, 1);
  std::vector<Event> waits;
  std::vector<CopyNeed> needs;
  std::vector<FoldNeed> folds;
  s.read(0, root, 0, root, 0, waits, needs, folds);
  ASSERT_EQ(needs.size(), 1u);
  s.copied(0, root, 0, root, 0, Event{3, 1});
  s.reduced(0, root, 0, root, 0);
  // Another reducer of the same op (no dependence on the first) still waits for the copy.
  needs.clear();
  s.read(0, root, 0, r1(2, 3), 0, waits, needs, folds);
  EXPECT_TRUE(needs.empty());
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0], (Event{3, 1}));
}

TEST(Physical, JournalRecordsFactsBeforeTheTraceAndEffects) {
  PhysicalState s(2);
  const Domain root = r1(0, 19);
  s.written(0, root, 0, r1(0, 9), 0);  // [0,9] only in memory 0
  s.start_journal();
  std::vector<Event> waits;
  std::vector<CopyNeed> needs;
  std::vector<FoldNeed> folds;
  s.read(0, root, 0, r1(5, 14), 1, waits, needs, folds);  // copy [5,9] from 0; [10,14] valid
  ASSERT_EQ(needs.size(), 1u);
  s.copied(0, root, 0, r1(5, 9), 1, Event{9, 1});
  s.written(0, root, 0, r1(0, 9), 0);
  s.read(0, root, 0, r1(0, 9), 0, waits, needs, folds);  // written inside the journal: no fact
  std::vector<PhysicalFact> facts;
  std::vector<PhysicalEffect> effects;
  s.stop_journal(facts, effects);
  // [5,9] not valid in 1 but valid in 0; [10,14] valid in 1.
  ASSERT_EQ(facts.size(), 3u);
  EXPECT_EQ(effects.size(), 2u);
  EXPECT_EQ(effects[0].kind, PhysicalEffect::Kind::Copied);
  EXPECT_EQ(effects[1].kind, PhysicalEffect::Kind::Written);
  // The facts describe the state before: they hold again once [5,9] is stale in memory 1.
  for (const auto& f : facts) EXPECT_TRUE(s.holds(f)) << f.rect.str() << " mem " << f.mem;
  // Applying the effects to a state where [10,14] is stale in 1 makes a fact fail.
  s.written(0, root, 0, r1(10, 14), 0);
  bool all = true;
  for (const auto& f : facts) all = all && s.holds(f);
  EXPECT_FALSE(all);
  for (const auto& e : effects) s.apply(e);
  std::vector<CopyNeed> after;
  s.read(0, root, 0, r1(0, 9), 1, waits, after, folds);
  ASSERT_EQ(after.size(), 1u);  // the last effect was a write of [0,9] in memory 0
}

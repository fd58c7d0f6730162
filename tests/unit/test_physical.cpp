// The physical state: which memories hold valid data for each piece of a field, the copies a
// read needs, invalidation by writes, and the facts/effects journal that trace templates use.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <tuple>

#include "reprise_analysis/physical.h"
#include "reprise_analysis/rect_index.h"
#include "reprise_rt/rect_sets.h"

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
  detail::cut_away(a, hole, out);
  EXPECT_EQ(volume(out), a.volume() - (a & hole).volume());
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_FALSE(out[i].overlaps(hole));
    for (std::size_t j = i + 1; j < out.size(); ++j) EXPECT_FALSE(out[i].overlaps(out[j]));
  }
  out.clear();
  detail::cut_away(a, Domain(Rect<2>({20, 20}, {30, 30})), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], a);
  out.clear();
  detail::cut_away(a, a, out);
  EXPECT_TRUE(out.empty());
}

TEST(Physical, ReadsCopyWhatWritesInvalidated) {
  PhysicalState s;
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
    PhysicalState s;
    const Domain root = r1(0, 9);
    std::vector<Event> waits;
    std::vector<CopyNeed> needs;
    std::vector<FoldNeed> folds;
    s.written(0, root, 0, root, 1);        // memory 1 holds the data
    s.copied(0, root, 0, root, 0, ready);  // a copy fills memory 0 (event or not)
    s.read(0, root, 0, root, 2, waits, needs, folds);
    ASSERT_EQ(needs.size(), 1u);
    EXPECT_EQ(needs[0].src_mem, 1u) << "copy from the memory that wrote it";
    EXPECT_FALSE(needs[0].src_ready.exists());
  }
}

TEST(Physical, ReductionsKeepTheCopyTheyWaitFor) {
  PhysicalState s;
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
  PhysicalState s;
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

// -lg:shard_recording: a recording that keeps deferred writes pending (start_journal(true))
// journals what one that applied them first would: a write deferred before the trace is part
// of the state the trace starts from (facts, no effect), one the trace defers is journaled once,
// when deferred, and is the trace's doing once applied (no fact about it).
TEST(Physical, JournalOverDeferredWritesMatchesOneOverAppliedWrites) {
  const Domain root = r1(0, 19);
  const auto one_write = [&](const Domain& rect, std::uint32_t mem) {
    auto list = std::make_shared<detail::WriteList>();
    list->tree = 0;
    list->root = root;
    list->index.insert(rect, 0);
    list->hull = rect;
    list->entries.push_back(detail::WriteList::Entry{0, rect, mem});
    list->mask = 1;
    return list;
  };
  struct Journal {
    std::vector<PhysicalFact> facts;
    std::vector<PhysicalEffect> effects;
    std::vector<CopyNeed> needs;
  };
  const auto run = [&](bool deferred) {
    PhysicalState s;
    Journal j;
    s.written(0, root, 0, root, 0);
    if (deferred) {  // [10,14] written by memory 2 before the trace, still pending
      s.close_deferred(0, s.defer_list(one_write(r1(10, 14), 2)), 0);
      s.start_journal(true);
      s.journal_written(0, root, 0, r1(3, 5), 3);  // the trace's own, deferred
      s.close_deferred(0, s.defer_list(one_write(r1(3, 5), 3)), 0);
    } else {
      s.written(0, root, 0, r1(10, 14), 2);
      s.start_journal();
      s.written(0, root, 0, r1(3, 5), 3);
    }
    std::vector<Event> waits;
    std::vector<FoldNeed> folds;
    s.read(0, root, 0, r1(0, 12), 1, waits, j.needs, folds);
    s.stop_journal(j.facts, j.effects);
    return j;
  };
  const Journal eager = run(false), kept = run(true);
  ASSERT_EQ(eager.effects.size(), 1u);  // the trace's write of [3,5], once
  ASSERT_EQ(kept.effects.size(), 1u);
  EXPECT_EQ(kept.effects[0].kind, PhysicalEffect::Kind::Written);
  EXPECT_EQ(kept.effects[0].rect, r1(3, 5));
  EXPECT_EQ(kept.effects[0].mem, 3u);
  const auto key = [](const PhysicalFact& f) {
    return std::tuple(f.rect.lo[0], f.rect.hi[0], f.mem, f.valid);
  };
  std::set<std::tuple<coord_t, coord_t, std::uint32_t, bool>> a, b;
  for (const auto& f : eager.facts) a.insert(key(f));
  for (const auto& f : kept.facts) b.insert(key(f));
  EXPECT_EQ(a, b);
  // (Among them: [10,12] valid in memory 2, from the write before the trace; nothing about
  // [3,5], the trace's own.)
  EXPECT_TRUE(b.count(std::tuple(coord_t(10), coord_t(12), 2u, true)));
  for (const auto& f : kept.facts) EXPECT_FALSE(f.rect.overlaps(r1(3, 5))) << f.rect.str();
  ASSERT_EQ(eager.needs.size(), kept.needs.size());
  for (std::size_t i = 0; i < eager.needs.size(); ++i) {
    EXPECT_EQ(eager.needs[i].rect, kept.needs[i].rect);
    EXPECT_EQ(eager.needs[i].src_mem, kept.needs[i].src_mem);
  }
}

// The rectangle index finds every rectangle meeting a query (and the physical state built on
// it stays a tiling that agrees with a cell-by-cell model), whatever the shapes.
namespace {
Domain r2(coord_t x0, coord_t y0, coord_t x1, coord_t y1) {
  return Domain(Rect<2>({x0, y0}, {x1, y1}));
}
Domain random_rect(std::mt19937& rng, coord_t size) {
  std::uniform_int_distribution<coord_t> c(0, size - 1);
  coord_t x0 = c(rng), x1 = c(rng), y0 = c(rng), y1 = c(rng);
  return r2(std::min(x0, x1), std::min(y0, y1), std::max(x0, x1), std::max(y0, y1));
}
}  // namespace

TEST(Physical, RectIndexFindsEveryOverlap) {
  std::mt19937 rng(7);
  detail::RectIndex index;
  std::vector<Domain> rects;
  for (std::uint32_t i = 0; i < 200; ++i) {
    rects.push_back(random_rect(rng, 64));
    index.insert(rects.back(), i);
  }
  for (std::uint32_t i = 0; i < 200; i += 3) index.erase(rects[i], i);
  for (int q = 0; q < 300; ++q) {
    const Domain query = random_rect(rng, 64);
    std::set<std::uint32_t> found;
    index.candidates(query, [&](std::uint32_t id) {
      if (rects[id].overlaps(query)) found.insert(id);
    });
    std::set<std::uint32_t> expected;
    for (std::uint32_t i = 0; i < 200; ++i)
      if (i % 3 != 0 && rects[i].overlaps(query)) expected.insert(i);
    ASSERT_EQ(found, expected) << query.str();
  }
}

// Interleaved inserts, erases (the widest of a column included) and queries, in 1, 2 and 3
// dimensions (the index looks at dimensions 0 and 1; callers test the rest).
TEST(Physical, RectIndexStaysExactUnderChurn) {
  for (int dim = 1; dim <= 3; ++dim) {
    std::mt19937 rng{std::uint32_t(dim)};
    std::uniform_int_distribution<coord_t> c(0, 31);
    auto random_box = [&] {
      Domain d;
      d.dim = dim;
      for (int i = 0; i < dim; ++i) {
        coord_t a = c(rng), b = c(rng);
        d.lo[std::size_t(i)] = std::min(a, b);
        d.hi[std::size_t(i)] = std::max(a, b);
      }
      return d;
    };
    detail::RectIndex index;
    std::vector<Domain> rects;
    std::vector<bool> live;
    for (int step = 0; step < 3000; ++step) {
      const int what = int(rng() % 3);
      if (what == 0 || rects.empty()) {
        rects.push_back(random_box());
        live.push_back(true);
        index.insert(rects.back(), std::uint32_t(rects.size() - 1));
      } else if (what == 1) {
        const std::uint32_t i = std::uint32_t(rng() % rects.size());
        if (live[i]) index.erase(rects[i], i);
        live[i] = false;
      } else {
        const Domain query = random_box();
        std::set<std::uint32_t> found, expected;
        index.candidates(query, [&](std::uint32_t id) {
          ASSERT_TRUE(live[id]) << "a removed rectangle was visited";
          if (rects[id].overlaps(query)) found.insert(id);
        });
        for (std::uint32_t i = 0; i < rects.size(); ++i)
          if (live[i] && rects[i].overlaps(query)) expected.insert(i);
        ASSERT_EQ(found, expected) << "dim " << dim << " step " << step << " " << query.str();
      }
    }
  }
}

// Deferred writes defer a range of a launch's points at a time: the hull of any range of
// pieces (empty ones included) must be the bounding box of those pieces, whatever their count.
TEST(Physical, RangeHullsIsTheBoundingBoxOfAnyRange) {
  std::mt19937 rng{7};
  std::uniform_int_distribution<coord_t> c(-40, 40);
  for (std::size_t n :
       {std::size_t(1), std::size_t(2), std::size_t(5), std::size_t(16), std::size_t(37)}) {
    std::vector<Domain> rects(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (rng() % 5 == 0) continue;  // (an empty piece holds nothing)
      coord_t a = c(rng), b = c(rng), x = c(rng), y = c(rng);
      rects[i] =
          Domain(Rect<2>({std::min(a, b), std::min(x, y)}, {std::max(a, b), std::max(x, y)}));
    }
    const detail::RangeHulls hulls(rects);
    for (std::size_t first = 0; first <= n; ++first)
      for (std::size_t last = first; last <= n; ++last) {
        Domain expected;
        for (std::size_t i = first; i < last; ++i)
          expected = detail::bounding_union(expected, rects[i]);
        const Domain got = hulls.hull(first, last);
        ASSERT_EQ(got.empty(), expected.empty()) << n << " " << first << ".." << last;
        if (!expected.empty()) {
          EXPECT_EQ(got, expected) << n << " " << first << ".." << last;
        }
      }
  }
}

// Control replication: two shards hold the same pieces under other slot ids (a shard that
// deferred another shard's writes allocated its slots in another order); a query must visit
// them in the same order on both, or the copies they name differ (issue 15, deferred writes).
TEST(Physical, RectIndexVisitsPiecesInTheSameOrderWhateverTheirIds) {
  for (int dim = 1; dim <= 3; ++dim) {
    // A grid of 4^dim tiles that do not overlap; many share their low bounds in dimensions 0
    // and 1 (in 3-d), which only their low bound in dimension 2 tells apart.
    std::vector<Domain> tiles;
    const int n = dim == 1 ? 64 : dim == 2 ? 8 : 4;
    for (int k = 0; k < (dim == 1 ? n : dim == 2 ? n * n : n * n * n); ++k) {
      Domain d;
      d.dim = dim;
      int rest = k;
      for (int i = 0; i < dim; ++i) {
        d.lo[std::size_t(i)] = coord_t(rest % n) * 3;
        d.hi[std::size_t(i)] = d.lo[std::size_t(i)] + 2;
        rest /= n;
      }
      tiles.push_back(d);
    }
    std::mt19937 rng{std::uint32_t(7 + dim)};
    auto visit_order = [&](std::vector<std::uint32_t> ids) {
      std::shuffle(ids.begin(), ids.end(), rng);  // ids handed out in another order
      detail::RectIndex index;
      std::vector<std::uint32_t> order(tiles.size());
      for (std::size_t t = 0; t < order.size(); ++t) order[t] = std::uint32_t(t);
      std::shuffle(order.begin(), order.end(), rng);  // and inserted in another order
      std::vector<std::uint32_t> tile_of(ids.size());
      for (std::uint32_t t : order) {
        index.insert(tiles[t], ids[t]);
        tile_of[ids[t]] = t;
      }
      Domain all = tiles.front();
      for (const Domain& t : tiles) all = detail::bounding_union(all, t);
      std::vector<std::uint32_t> visited;
      index.candidates(all, [&](std::uint32_t id) { visited.push_back(tile_of[id]); });
      return visited;
    };
    std::vector<std::uint32_t> ids(tiles.size());
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::uint32_t(i);
    const auto first = visit_order(ids);
    ASSERT_EQ(first.size(), tiles.size());
    for (int round = 0; round < 5; ++round)
      EXPECT_EQ(visit_order(ids), first) << "dim " << dim << " round " << round;
  }
}

// Control replication: where a shard defers other shards' writes, its field keeps one wide
// piece beside its narrow tiles. A query among the tiles must not walk every tile within the
// wide piece's width (a shard in the middle of a 1-d layout walked all the pieces on its left:
// O(ranks) per query); and pieces of mixed widths are still visited in low-corner order.
TEST(Physical, RectIndexQueriesStayLocalBesideAWidePiece) {
  detail::RectIndex index;
  std::vector<Domain> rects;
  for (coord_t i = 0; i < 500; ++i) rects.push_back(Domain(Rect<2>({2 * i, 0}, {2 * i + 1, 7})));
  rects.push_back(Domain(Rect<2>({1000, 0}, {100000, 7})));  // the wide piece
  rects.push_back(Domain(Rect<2>({-5000, 0}, {-1, 7})));     // another, on the other side
  for (std::uint32_t i = 0; i < rects.size(); ++i) index.insert(rects[i], i);
  std::vector<std::uint32_t> visited;
  index.candidates(Domain(Rect<2>({500, 2}, {503, 3})),
                   [&](std::uint32_t id) { visited.push_back(id); });
  EXPECT_LE(visited.size(), 6u) << "the query walked the tiles within the wide piece's width";
  EXPECT_EQ(visited, (std::vector<std::uint32_t>{250, 251})) << "the tiles it meets, in order";
  // Across the bands, in the order of the low corners.
  visited.clear();
  index.candidates(Domain(Rect<2>({-10, 0}, {1003, 7})), [&](std::uint32_t id) {
    if (rects[id].overlaps(Domain(Rect<2>({-10, 0}, {1003, 7})))) visited.push_back(id);
  });
  ASSERT_EQ(visited.size(), 502u);
  EXPECT_EQ(visited.front(), 501u);
  EXPECT_EQ(visited.back(), 500u);
  for (std::size_t k = 1; k + 1 < visited.size(); ++k) EXPECT_EQ(visited[k], k - 1);
}

// A band's hull only shrinks when the band empties: once a field's first piece is cut into
// this shard's tiles and a wide remainder (in the same band as the whole was), queries skip
// the remainder's band by where its pieces start (RectIndex::may_meet) — but not where the
// remainder does reach the query.
TEST(Physical, RectIndexSkipsABandItsPiecesNoLongerReach) {
  detail::RectIndex index;
  const Domain whole(Rect<2>({0, 0}, {1023, 127}));
  index.insert(whole, 0);
  index.erase(whole, 0);
  index.insert(Domain(Rect<2>({192, 0}, {1023, 127})), 1);  // the remainder: whole's band
  std::uint32_t id = 2;
  for (coord_t x = 0; x < 192; x += 64) index.insert(Domain(Rect<2>({x, 0}, {x + 63, 127})), id++);
  std::vector<std::uint32_t> visited;
  index.candidates(Domain(Rect<2>({0, 0}, {63, 127})),
                   [&](std::uint32_t i) { visited.push_back(i); });
  EXPECT_EQ(visited, (std::vector<std::uint32_t>{2}));
  visited.clear();
  index.candidates(Domain(Rect<2>({150, 0}, {200, 127})),
                   [&](std::uint32_t i) { visited.push_back(i); });
  EXPECT_EQ(visited, (std::vector<std::uint32_t>{4, 1})) << "both bands, in low-corner order";
}

TEST(Physical, StateAgreesWithACellModel) {
  constexpr coord_t kSize = 12;
  constexpr std::uint32_t kMems = 3;
  std::mt19937 rng(11);
  PhysicalState s;
  const Domain root = r2(0, 0, kSize - 1, kSize - 1);
  // Per cell: the memories holding valid data.
  std::vector<std::uint32_t> model(kSize * kSize, (1u << kMems) - 1);
  const auto cell = [&](coord_t x, coord_t y) -> std::uint32_t& { return model[x * kSize + y]; };
  for (int step = 0; step < 2000; ++step) {
    const Domain rect = random_rect(rng, kSize);
    const std::uint32_t mem = std::uint32_t(rng() % kMems);
    switch (rng() % 4) {
      case 3: {
        // A fact holds exactly where every cell agrees with it (a replay's preconditions).
        coord_t held = 0;
        for (coord_t x = rect.lo[0]; x <= rect.hi[0]; ++x)
          for (coord_t y = rect.lo[1]; y <= rect.hi[1]; ++y)
            if (cell(x, y) & (1u << mem)) ++held;
        for (const bool valid : {true, false}) {
          const PhysicalFact fact{0, 0, rect, mem, valid};
          const bool expected = valid ? held == rect.volume() : held == 0;
          ASSERT_EQ(s.holds(fact), expected) << "step " << step << " " << rect.str();
        }
        break;
      }
      case 0:
        s.written(0, root, 0, rect, mem);
        for (coord_t x = rect.lo[0]; x <= rect.hi[0]; ++x)
          for (coord_t y = rect.lo[1]; y <= rect.hi[1]; ++y) cell(x, y) = 1u << mem;
        break;
      case 1:
        s.copied(0, root, 0, rect, mem, Event{});
        for (coord_t x = rect.lo[0]; x <= rect.hi[0]; ++x)
          for (coord_t y = rect.lo[1]; y <= rect.hi[1]; ++y) cell(x, y) |= 1u << mem;
        break;
      default: {
        std::vector<Event> waits;
        std::vector<CopyNeed> needs;
        std::vector<FoldNeed> folds;
        s.read(0, root, 0, rect, mem, waits, needs, folds);
        coord_t missing = 0;
        for (coord_t x = rect.lo[0]; x <= rect.hi[0]; ++x)
          for (coord_t y = rect.lo[1]; y <= rect.hi[1]; ++y)
            if (!(cell(x, y) & (1u << mem))) ++missing;
        coord_t needed = 0;
        for (const CopyNeed& n : needs) {
          ASSERT_TRUE(rect.contains(n.rect));
          needed += n.rect.volume();
          for (coord_t x = n.rect.lo[0]; x <= n.rect.hi[0]; ++x)
            for (coord_t y = n.rect.lo[1]; y <= n.rect.hi[1]; ++y) {
              ASSERT_FALSE(cell(x, y) & (1u << mem)) << "copies what is valid already";
              ASSERT_TRUE(cell(x, y) & (1u << n.src_mem)) << "copies from a stale memory";
            }
        }
        ASSERT_EQ(needed, missing) << "step " << step;
      }
    }
  }
  // A whole write leaves one piece (copies add holders; writes merge what other writes cut).
  s.written(0, root, 0, root, 0);
  EXPECT_EQ(s.piece_count(0, 0), 1u);
}

// Control replication: a replay defers the writes of other shards' points as one list per tree
// (PhysicalState::defer_list) and applies its own effects around it, each after the list's
// entries that came before it. Whatever is asked afterwards — a fact (read through the newest
// pending write where one covers it), a read (after settling) — must be answered as if every
// write had been applied at once, in order; and a newer replay of the same list supersedes the
// older one's pending entries.
namespace {
void deferred_lists_read_as_if_written_at_once(int dim) {
  std::mt19937 rng(11);
  // (2-d: the order of cuts shapes the pieces, so a read settles every pending write inside
  // the pieces it meets; 1-d: cuts commute, and a read settles only the writes meeting it.)
  const Domain root = dim == 2 ? r2(0, 0, 11, 11) : r1(0, 47);
  std::uniform_int_distribution<coord_t> at(0, dim == 2 ? 11 : 47);
  std::uniform_int_distribution<int> mem(0, 3), coin(0, 1);
  const auto random_rect = [&] {
    const coord_t x0 = at(rng), x1 = at(rng), y0 = at(rng), y1 = at(rng);
    if (dim == 1) return r1(std::min(x0, x1), std::min(x0, x1) + std::abs(x1 - x0) / 4);
    return r2(std::min(x0, x1), std::min(y0, y1), std::max(x0, x1), std::max(y0, y1));
  };
  const auto written = [&](const Domain& rect, std::uint32_t m) {
    return PhysicalEffect{0, 0, root, rect, m, PhysicalEffect::Kind::Written, Event{}};
  };
  int compared = 0;
  for (int round = 0; round < 150; ++round) {
    PhysicalState eager, deferred;
    for (int k = 0; k < 3; ++k) {  // some history, the same in both
      const Domain rect = random_rect();
      const std::uint32_t m = std::uint32_t(mem(rng));
      eager.written(0, root, 0, rect, m);
      deferred.written(0, root, 0, rect, m);
    }
    // A template's effects: writes "elsewhere" (deferred) and "here" (applied around them).
    std::vector<std::pair<PhysicalEffect, bool>> effects;
    for (int k = 0; k < 6; ++k)
      effects.emplace_back(written(random_rect(), std::uint32_t(mem(rng))), coin(rng) == 1);
    auto list = std::make_shared<detail::WriteList>();
    list->tree = 0;
    list->root = root;
    std::vector<std::uint32_t> before;  // per effect: the list entries before it
    for (const auto& [e, elsewhere] : effects) {
      before.push_back(std::uint32_t(list->entries.size()));
      if (!elsewhere) continue;
      list->index.insert(e.rect, std::uint32_t(list->entries.size()));
      list->hull = detail::bounding_union(list->entries.empty() ? Domain() : list->hull, e.rect);
      list->entries.push_back(detail::WriteList::Entry{e.field, e.rect, e.mem});
      list->mask |= 1;
    }
    for (int replay = 0; replay < 2; ++replay) {  // the second replay supersedes the first
      for (const auto& [e, elsewhere] : effects) eager.apply(e);
      const std::uint64_t launch = deferred.defer_list(list);
      for (std::size_t k = 0; k < effects.size(); ++k)
        if (!effects[k].second)
          deferred.apply(effects[k].first, detail::WriteOrder{launch, before[k]});
      deferred.close_deferred(0, launch, 0);  // (supersedes what the last replay left pending)
      for (int q = 0; q < 8; ++q) {
        const PhysicalFact f{0, 0, random_rect(), std::uint32_t(mem(rng)), coin(rng) == 1};
        EXPECT_EQ(eager.holds(f), deferred.holds(f))
            << "round " << round << " fact " << f.rect.str() << " mem " << f.mem;
        ++compared;
      }
      // A read settles what it meets: the copies it needs are the same.
      std::vector<Event> waits;
      std::vector<CopyNeed> a, b;
      std::vector<FoldNeed> folds;
      const Domain rect = random_rect();
      const std::uint32_t reader = std::uint32_t(mem(rng));
      eager.read(0, root, 0, rect, reader, waits, a, folds);
      deferred.read(0, root, 0, rect, reader, waits, b, folds);
      ASSERT_EQ(a.size(), b.size()) << "round " << round;
      for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].rect, b[i].rect);
        EXPECT_EQ(a[i].src_mem, b[i].src_mem);
      }
    }
    EXPECT_EQ(eager.piece_count(0, 0), deferred.piece_count(0, 0)) << "round " << round;
  }
  EXPECT_EQ(compared, 150 * 2 * 8);
}
}  // namespace

TEST(Physical, DeferredWriteListsReadAsIfWrittenAtOnce) {
  deferred_lists_read_as_if_written_at_once(2);
}

TEST(Physical, DeferredWritesOnALineSettleOnlyWhatMeetsTheRead) {
  deferred_lists_read_as_if_written_at_once(1);
}

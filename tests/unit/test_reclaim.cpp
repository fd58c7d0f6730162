// Region trees, regions and partitions are reclaimed after destruction: a program that
// creates and destroys them in a loop keeps the runtime's tables bounded, a reused slot never
// confuses the analysis, its caches or automatic tracing, and a handle of a destroyed node is
// an error even after its slot went to another node.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <random>
#include <string>
#include <vector>

#include "reprise_rt/runtime.h"

using namespace reprise;

namespace {
enum : TaskID { T_INIT = 9600, T_SUM };
enum : FieldID { FX = 0 };

void init(TaskContext& tc) {
  auto acc = tc.accessor<std::int64_t, 1>(0, FX);
  const auto base = tc.args<std::int64_t>();
  for (auto p : Rect<1>(tc.domain(0))) acc[p] = base + p[0];
}
std::int64_t sum(TaskContext& tc) {
  auto acc = tc.accessor<const std::int64_t, 1>(0, FX);
  std::int64_t s = 0;
  for (auto p : Rect<1>(tc.domain(0))) s += acc[p];
  return s;
}
void register_tasks() {
  TaskRegistry::add(T_INIT, "init", {cpu(init)});
  TaskRegistry::add(T_SUM, "sum", {cpu(sum)});
}

// Sum over i in [lo, hi] of base + i.
std::int64_t expected_sum(std::int64_t base, coord_t lo, coord_t hi) {
  if (hi < lo) return 0;
  return (hi - lo + 1) * base + (lo + hi) * (hi - lo + 1) / 2;
}

struct Check {
  Future got;
  std::int64_t want;
};

// One round: a region of n points in 4 pieces, written by pieces and read through the pieces
// shifted by one (an aliased partition), then both partitions are destroyed. The launches are
// a manual trace: a template recorded for nodes whose slots were reused must not replay.
Check round_on(Context& ctx, Region r, std::int64_t base, FieldSpace) {
  auto colors = ctx.create_index_space(Rect<1>({0}, {3}));
  Partition pieces = ctx.partition_equal(r, colors);
  Partition shifted = ctx.partition_by_translation(pieces, Point<1>(1));
  ctx.begin_trace(7);
  IndexLauncher set(T_INIT, colors, TaskArgs{base});
  set.add(pieces, Projection::identity(), Privilege::WriteDiscard, {FX});
  ctx.execute(set);
  IndexLauncher get(T_SUM, colors);
  get.add(shifted, Projection::identity(), Privilege::ReadOnly, {FX});
  Future total = ctx.reduce(ctx.execute(get), ReductionOp::Sum);
  ctx.end_trace(7);
  std::int64_t want = 0;
  for (coord_t c = 0; c < 4; ++c) {
    const Domain d = shifted.rect(Point<1>(c));
    if (!d.empty()) want += expected_sum(base, d.lo[0], d.hi[0]);
  }
  ctx.destroy(shifted);
  ctx.destroy(pieces);
  return Check{total, want};
}

void expect_bounded(Context& ctx, std::size_t rounds) {
  const auto slots = detail::Runtime::of(ctx).forest().slots();
  // Without reuse: one tree and nine regions per round; with it, what waits for reuse
  // (SlotRecycler::kQuarantine) plus what lives.
  EXPECT_LT(slots.trees, 100u) << rounds << " rounds";
  EXPECT_LT(slots.regions, 200u);
  EXPECT_LT(slots.partitions, 200u);
  EXPECT_EQ(slots.field_spaces, 1u);
}

void churn(const std::vector<std::string>& args) {
  register_tasks();
  reprise::run(args, [](Context& ctx) {
    std::vector<Check> checks;
    const int rounds = 600;
    for (int k = 0; k < rounds; ++k) {
      // Field spaces with the same fields are one; sizes change so that a reused slot with
      // stale rectangles would give another sum.
      auto fs = ctx.create_field_space({{FX, sizeof(std::int64_t)}});
      auto is = ctx.create_index_space(Rect<1>({0}, {coord_t(37 + k % 11)}));
      Region r = ctx.create_region(is, fs);
      checks.push_back(round_on(ctx, r, k, fs));
      ctx.destroy(r);
    }
    for (std::size_t i = 0; i < checks.size(); ++i)
      ASSERT_EQ(checks[i].got.get<std::int64_t>(), checks[i].want) << "round " << i;
    expect_bounded(ctx, rounds);
  });
}
}  // namespace

TEST(Reclaim, TreesAndPartitionsInALoopStayBounded) {
  churn({"-ll:cpu", "2"});
}

TEST(Reclaim, SeveralMemoriesAndNoAutoTracing) {
  churn({"-ll:cpu", "2", "-ll:numa", "2", "-lg:no_auto_tracing"});
}

TEST(Reclaim, PartitionsOfALongLivedRegion) {
  register_tasks();
  reprise::run({"-ll:cpu", "2"}, [](Context& ctx) {
    auto fs = ctx.create_field_space({{FX, sizeof(std::int64_t)}});
    Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {63})), fs);
    std::vector<Check> checks;
    for (int k = 0; k < 500; ++k) checks.push_back(round_on(ctx, r, 3 * k, fs));
    for (std::size_t i = 0; i < checks.size(); ++i)
      ASSERT_EQ(checks[i].got.get<std::int64_t>(), checks[i].want) << "round " << i;
    expect_bounded(ctx, 500);
  });
}

TEST(Reclaim, HandlesOfDestroyedNodesStayErrorsAfterReuse) {
  register_tasks();
  reprise::run({"-ll:cpu", "1"}, [](Context& ctx) {
    auto fs = ctx.create_field_space({{FX, sizeof(std::int64_t)}});
    auto is = ctx.create_index_space(Rect<1>({0}, {15}));
    auto colors = ctx.create_index_space(Rect<1>({0}, {1}));
    Region old = ctx.create_region(is, fs);
    Partition old_part = ctx.partition_equal(old, colors);
    ctx.destroy(old);
    // Enough creations and destructions that the old slots are taken by new nodes.
    Region now;
    for (int k = 0; k < 200; ++k) {
      now = ctx.create_region(is, fs);
      if (now.node() == old.node() || now.tree() == old.tree()) break;
      ctx.destroy(now);
    }
    ASSERT_TRUE(now.node() == old.node() || now.tree() == old.tree()) << "no slot was reused";
    EXPECT_FALSE(now == old);
    try {
      ctx.fill(old, FX, std::int64_t(1));
      FAIL() << "a fill of a destroyed region ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("was destroyed"), std::string::npos) << e.what();
    }
    EXPECT_THROW(ctx.partition_equal(old, colors), Error);
    EXPECT_THROW(old_part.rect(Point<1>(0)), Error);
    EXPECT_THROW(ctx.destroy(old_part), Error);
    // The node that took the slot works.
    ctx.fill(now, FX, std::int64_t(2));
    TaskLauncher get(T_SUM);
    get.add(now, Privilege::ReadOnly, {FX});
    EXPECT_EQ(ctx.execute(get).get<std::int64_t>(), 32);
  });
}

TEST(Reclaim, EqualFieldListsAreOneFieldSpace) {
  reprise::run({}, [](Context& ctx) {
    auto a = ctx.create_field_space({{FX, 8}, {1, 4}});
    auto b = ctx.create_field_space({{FX, 8}, {1, 4}});
    auto c = ctx.create_field_space({{1, 4}, {FX, 8}});  // another order: other accessors
    EXPECT_TRUE(a == b);
    EXPECT_FALSE(a == c);
    EXPECT_EQ(detail::Runtime::of(ctx).forest().slots().field_spaces, 2u);
  });
}

namespace {
// A single task that writes base + i over the region and one that sums it, as trace 7.
std::int64_t traced_sum(Context& ctx, Region r, std::int64_t base) {
  ctx.begin_trace(7);
  TaskLauncher set(T_INIT, TaskArgs{base});
  set.add(r, Privilege::WriteDiscard, {FX});
  ctx.execute(set);
  TaskLauncher get(T_SUM);
  get.add(r, Privilege::ReadOnly, {FX});
  Future f = ctx.execute(get);
  ctx.end_trace(7);
  return f.get<std::int64_t>();
}
}  // namespace

TEST(Reclaim, ATemplateNeverReplaysOnAReusedSlot) {
  register_tasks();
  reprise::run({"-ll:cpu", "1"}, [](Context& ctx) {
    auto fs = ctx.create_field_space({{FX, sizeof(std::int64_t)}});
    Region old = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {15})), fs);
    EXPECT_EQ(traced_sum(ctx, old, 1), expected_sum(1, 0, 15));
    EXPECT_EQ(traced_sum(ctx, old, 1), expected_sum(1, 0, 15));  // a replay
    ctx.destroy(old);
    // A bigger region in the same tree and node slots: the template recorded for the old
    // one (same trace, same slots, same fields) must not replay on it.
    auto bigger = ctx.create_index_space(Rect<1>({0}, {23}));
    Region now;
    for (int k = 0; k < 200; ++k) {
      now = ctx.create_region(bigger, fs);
      if (now.node() == old.node() && now.tree() == old.tree()) break;
      ctx.destroy(now);
    }
    ASSERT_TRUE(now.node() == old.node() && now.tree() == old.tree()) << "no slot was reused";
    EXPECT_EQ(traced_sum(ctx, now, 2), expected_sum(2, 0, 23));
    EXPECT_EQ(traced_sum(ctx, now, 2), expected_sum(2, 0, 23));
  });
}

TEST(Reclaim, RegionsOfMixedLifetimesKeepTheirData) {
  // A pool of live regions, one replaced every round while the others keep their contents
  // across rounds (their users stay in the analysis while other slots are reused).
  register_tasks();
  reprise::run({"-ll:cpu", "2", "-ll:numa", "2"}, [](Context& ctx) {
    std::mt19937 rng(7);  // the same on every shard
    auto fs = ctx.create_field_space({{FX, sizeof(std::int64_t)}});
    struct Live {
      Region r;
      coord_t n;
      std::int64_t base;  // what init wrote: base + i
    };
    auto make = [&](std::int64_t base) {
      const coord_t n = 20 + coord_t(rng() % 40);
      Live l{ctx.create_region(ctx.create_index_space(Rect<1>({0}, {n - 1})), fs), n, base};
      TaskLauncher set(T_INIT, TaskArgs{base});
      set.add(l.r, Privilege::WriteDiscard, {FX});
      ctx.execute(set);
      return l;
    };
    std::vector<Live> pool;
    for (int i = 0; i < 5; ++i) pool.push_back(make(1000 * i));
    std::vector<Check> checks;
    for (int round = 0; round < 400; ++round) {
      // Read two live regions (one through partitions made and destroyed this round).
      const Live& a = pool[rng() % pool.size()];
      TaskLauncher get(T_SUM);
      get.add(a.r, Privilege::ReadOnly, {FX});
      checks.push_back(Check{ctx.execute(get), expected_sum(a.base, 0, a.n - 1)});
      const Live& b = pool[rng() % pool.size()];
      auto colors = ctx.create_index_space(Rect<1>({0}, {2}));
      Partition p = ctx.partition_equal(b.r, colors);
      IndexLauncher parts(T_SUM, colors);
      parts.add(p, Projection::identity(), Privilege::ReadOnly, {FX});
      checks.push_back(Check{ctx.reduce(ctx.execute(parts), ReductionOp::Sum),
                             expected_sum(b.base, 0, b.n - 1)});
      ctx.destroy(p);
      // Replace one.
      const std::size_t k = rng() % pool.size();
      ctx.destroy(pool[k].r);
      pool[k] = make(round * 7 + 3);
    }
    for (std::size_t i = 0; i < checks.size(); ++i)
      ASSERT_EQ(checks[i].got.get<std::int64_t>(), checks[i].want) << "check " << i;
    expect_bounded(ctx, 400);
  });
}

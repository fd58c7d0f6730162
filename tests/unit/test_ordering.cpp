// The dependence analysis orders exactly what it must: true dependences (RAW, WAR, WAW,
// reductions vs others, overlapping aliased pieces) serialise; independent ops (other fields,
// read/read, disjoint pieces, same-operator reductions) run concurrently.
#include <gtest/gtest.h>

#include "probe.h"

using namespace reprise;

namespace {

enum : FieldID { FA = 1, FB = 2, FI = 3 };

struct World {
  Region r;
  Partition halves;  // disjoint
  Partition halo;    // aliased: halves grown by 1
};

World make_world(Context& ctx) {
  World w;
  auto is = ctx.create_index_space(Rect<1>({0}, {99}));
  auto fs = ctx.create_field_space({{FA, 8}, {FB, 8}, {FI, 8}});
  w.r = ctx.create_region(is, fs);
  auto two = ctx.create_index_space(Rect<1>({0}, {1}));
  w.halves = ctx.partition_equal(w.r, two);
  w.halo = ctx.partition_by_rects(
      w.r, two, [&](const DomainPoint& c) { return grow(w.halves.rect(c), 1) & w.r.bounds(); });
  return w;
}

Future single(Context& ctx, int id, int wait_for, Region r, Privilege p, FieldID f,
              ReductionOp op = ReductionOp::None) {
  TaskLauncher l(probe::kTask, TaskArgs{probe::Args{id, wait_for}});
  if (p == Privilege::Reduce)
    l.add_reduction(r, op, {f});
  else
    l.add(r, p, {f});
  return ctx.execute(l);
}

// Runs `program` on 2 CPUs; returns after everything finished. Not with eager launches: one
// issued when every earlier op has completed runs on the application thread before the next
// is issued (-lg:eager), so that a probe waiting for a later op's probe would wait for its own
// issue. (Under load a probe's op completed before the next launch often enough to fail.)
void run2(const std::function<void(Context&, World&)>& program) {
  probe::register_task();
  probe::log().reset();
  reprise::run({"-ll:cpu", "2", "-lg:eager", "0"}, [&](Context& ctx) {
    World w = make_world(ctx);
    program(ctx, w);
  });
}

void expect_concurrent(int first, int second) {
  EXPECT_FALSE(probe::log().timed_out[first])
      << "probe " << first << " waited for later probe " << second
      << " in vain: the runtime serialised independent ops";
}

}  // namespace

TEST(Ordering, ReadAfterWriteWaits) {
  run2([](Context& ctx, World& w) {
    single(ctx, 0, -1, w.r, Privilege::ReadWrite, FA);
    single(ctx, 1, -1, w.r, Privilege::ReadOnly, FA);
  });
  EXPECT_TRUE(probe::ordered(0, 1));
}

TEST(Ordering, WriteAfterReadAndWriteAfterWriteWait) {
  run2([](Context& ctx, World& w) {
    single(ctx, 0, -1, w.r, Privilege::ReadOnly, FA);
    single(ctx, 1, -1, w.r, Privilege::WriteDiscard, FA);
    single(ctx, 2, -1, w.r, Privilege::ReadWrite, FA);
  });
  EXPECT_TRUE(probe::ordered(0, 1));
  EXPECT_TRUE(probe::ordered(1, 2));
}

TEST(Ordering, DifferentFieldsRunConcurrently) {
  run2([](Context& ctx, World& w) {
    single(ctx, 0, 1, w.r, Privilege::ReadWrite, FA);
    single(ctx, 1, -1, w.r, Privilege::ReadWrite, FB);
  });
  expect_concurrent(0, 1);
}

TEST(Ordering, ReadersRunConcurrently) {
  run2([](Context& ctx, World& w) {
    single(ctx, 0, 1, w.r, Privilege::ReadOnly, FA);
    single(ctx, 1, -1, w.r, Privilege::ReadOnly, FA);
  });
  expect_concurrent(0, 1);
}

TEST(Ordering, DisjointSubregionsRunConcurrently) {
  run2([](Context& ctx, World& w) {
    single(ctx, 0, 1, w.halves[Point<1>(0)], Privilege::ReadWrite, FA);
    single(ctx, 1, -1, w.halves[Point<1>(1)], Privilege::ReadWrite, FA);
  });
  expect_concurrent(0, 1);
}

TEST(Ordering, SameOperatorReductionsCommute) {
  run2([](Context& ctx, World& w) {
    single(ctx, 0, 1, w.r, Privilege::Reduce, FI, ReductionOp::Sum);
    single(ctx, 1, -1, w.r, Privilege::Reduce, FI, ReductionOp::Sum);
  });
  expect_concurrent(0, 1);
}

TEST(Ordering, DifferentReductionsAndReadsAfterReductionsWait) {
  run2([](Context& ctx, World& w) {
    single(ctx, 0, -1, w.r, Privilege::Reduce, FI, ReductionOp::Sum);
    single(ctx, 1, -1, w.r, Privilege::Reduce, FI, ReductionOp::Max);
    single(ctx, 2, -1, w.r, Privilege::ReadOnly, FI);
  });
  EXPECT_TRUE(probe::ordered(0, 1));
  EXPECT_TRUE(probe::ordered(1, 2));
}

TEST(Ordering, AliasedPiecesAreComparedByIntersection) {
  run2([](Context& ctx, World& w) {
    // Writing half 0 ([0,49]) then reading halo piece 1 ([49,99]) overlaps at 49: ordered.
    single(ctx, 0, -1, w.halves[Point<1>(0)], Privilege::ReadWrite, FA);
    single(ctx, 1, -1, w.halo[Point<1>(1)], Privilege::ReadOnly, FA);
  });
  EXPECT_TRUE(probe::ordered(0, 1));
}

TEST(Ordering, SubregionOfAPartitionOfAPartition) {
  run2([](Context& ctx, World& w) {
    Region half = w.halves[Point<1>(1)];
    auto four = ctx.create_index_space(Rect<1>({0}, {3}));
    Partition quarters = ctx.partition_equal(half, four);
    // A write to the root orders a later read of a grandchild; grandchildren of the same
    // parent that do not overlap stay independent.
    single(ctx, 0, -1, w.r, Privilege::ReadWrite, FA);
    single(ctx, 1, 2, quarters[Point<1>(0)], Privilege::ReadWrite, FA);
    single(ctx, 2, -1, quarters[Point<1>(3)], Privilege::ReadWrite, FA);
    single(ctx, 3, -1, w.halves[Point<1>(0)], Privilege::ReadOnly, FA);
  });
  EXPECT_TRUE(probe::ordered(0, 1));
  EXPECT_TRUE(probe::ordered(0, 2));
  expect_concurrent(1, 2);
  EXPECT_TRUE(probe::ordered(0, 3));
}

TEST(Ordering, IndexLaunchPointsPairUpPointwise) {
  run2([](Context& ctx, World& w) {
    auto two = w.halves.color_space();
    IndexLauncher a(probe::kTask, two, TaskArgs{probe::Args{0, -1}});
    a.add(w.halves, Projection::identity(), Privilege::ReadWrite, {FA});
    ctx.execute(a);  // probes 0, 1
    // Point 0 of the second launch waits for point 1 of the same launch: points are
    // independent of each other, and each depends only on its own piece's writer.
    IndexLauncher b(probe::kTask, two, TaskArgs{probe::Args{10, 11}});
    b.add(w.halves, Projection::identity(), Privilege::ReadWrite, {FA});
    ctx.execute(b);  // probes 10, 11
  });
  EXPECT_TRUE(probe::ordered(0, 10));
  EXPECT_TRUE(probe::ordered(1, 11));
  expect_concurrent(10, 11);
}

TEST(Ordering, FenceOrdersEverything) {
  run2([](Context& ctx, World& w) {
    single(ctx, 0, -1, w.r, Privilege::ReadWrite, FA);
    ctx.fence();
    single(ctx, 1, -1, w.r, Privilege::ReadWrite, FB);
  });
  EXPECT_TRUE(probe::ordered(0, 1));
}

TEST(Ordering, FillsAndCopiesAreOrderedLikeTasks) {
  probe::register_task();
  std::vector<double> seen(100);
  TaskRegistry::add(9001, "grab", {cpu(+[](TaskContext& tc) {
                      auto out = tc.args<double*>();
                      auto acc = tc.accessor<const double, 1>(0, FB);
                      for (auto p : Rect<1>(tc.domain(0))) out[p[0]] = acc[p];
                    })});
  reprise::run({"-ll:cpu", "2", "-ll:util", "2"}, [&](Context& ctx) {
    World w = make_world(ctx);
    ctx.fill(w.r, FA, 1.5);
    ctx.fill(w.halves[Point<1>(1)], FA, 2.5);
    ctx.copy(CopyLauncher{w.r, {FA}, w.r, {FB}});
    ctx.fill(w.r, FA, 9.0);  // must not leak into the copy
    TaskLauncher g(9001, TaskArgs{seen.data()});
    g.add(w.r, Privilege::ReadOnly, {FB});
    ctx.execute(g).wait();
  });
  for (int i = 0; i < 100; ++i) EXPECT_EQ(seen[i], i < 50 ? 1.5 : 2.5) << i;
}

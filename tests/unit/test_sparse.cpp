// Sparse partitions (partition_by_rect_lists / partition_by_point_sets): pieces that are
// unions of rectangles, used by tasks like any region. A stencil over interleaved pieces (every
// piece spans the whole region, so bounding boxes would overlap everywhere) must give the
// serial result with several memories, in every trace mode; misuse is an Error. Also run on 3
// ranks (mpi_sparse_np3).
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <string>
#include <vector>

#include "error_text.h"

using namespace reprise;

namespace {
enum : TaskID { T_INIT = 10500, T_NEIGHBOURS, T_HALVE, T_SUM, T_COUNT, T_DEPOSIT, T_STRAY };
enum : FieldID { FX = 0, FY = 1, FZ = 2 };
constexpr coord_t kN = 96;
constexpr int kColors = 4;

// Every point of the piece's rectangles (only those: the bounding box holds other pieces').
template <class F>
void for_points(TaskContext& tc, int req, F&& f) {
  for (const Domain& d : tc.rects(req))
    for (auto p : Rect<1>(d)) f(p);
}
void init(TaskContext& tc) {
  auto x = tc.accessor<double, 1>(0, FX);
  for_points(tc, 0, [&](Point<1> p) { x[p] = double(p[0] % 7) + 0.25 * double(p[0]); });
}
// y = x + x of the next point (read through the ghost partition, req 1).
void neighbours(TaskContext& tc) {
  auto y = tc.accessor<double, 1>(0, FY);
  auto x = tc.accessor<const double, 1>(1, FX);
  auto xs = tc.accessor<const double, 1>(2, FX);
  for_points(tc, 0, [&](Point<1> p) { y[p] = xs[p] + x[Point<1>((p[0] + 1) % kN)]; });
}
// x = y / 2 + z / 8 + the piece's color: a point written by another piece's task would be
// wrong.
void halve(TaskContext& tc) {
  auto x = tc.accessor<double, 1>(0, FX);
  auto y = tc.accessor<const double, 1>(1, FY);
  auto z = tc.accessor<const double, 1>(1, FZ);
  const double color = double(tc.point()[0]);
  for_points(tc, 0, [&](Point<1> p) { x[p] = y[p] * 0.5 + z[p] * 0.125 + color; });
}
double sum(TaskContext& tc) {
  auto x = tc.accessor<const double, 1>(0, FX);
  auto z = tc.accessor<const double, 1>(0, FZ);
  double s = 0;
  for (auto p : Rect<1>(tc.domain(0))) s += x[p] * double(p[0] + 1) + z[p] * double(p[0] % 5);
  return s;
}
// How many points the piece has, and whether its bounding box is domain(0).
std::int64_t count(TaskContext& tc) {
  std::int64_t n = 0;
  Domain box = tc.domain(0);
  for (const Domain& d : tc.rects(0)) {
    if (!box.contains(d)) return -1;
    n += d.volume();
  }
  return n;
}
// z += color + 1 on the ghost points (req 0), z += 0.5 on the piece's own (req 1).
void deposit(TaskContext& tc) {
  auto ghost = tc.reducer<double, 1>(0, FZ);
  auto own = tc.reducer<double, 1>(1, FZ);
  const double color = double(tc.point()[0]);
  for_points(tc, 0, [&](Point<1> p) { ghost.reduce(p, color + 1); });
  for_points(tc, 1, [&](Point<1> p) { own.reduce(p, 0.5); });
}
// Folds into a point outside the piece.
void stray(TaskContext& tc) {
  auto r = tc.reducer<double, 1>(0, FZ);
  r.reduce(Point<1>(kN - 1), 1.0);
}
void register_all() {
  TaskRegistry::add(T_INIT, "init", {cpu(init)});
  TaskRegistry::add(T_NEIGHBOURS, "neighbours", {cpu(neighbours)});
  TaskRegistry::add(T_HALVE, "halve", {cpu(halve)});
  TaskRegistry::add(T_SUM, "sum", {cpu(sum)});
  TaskRegistry::add(T_COUNT, "count", {cpu(count)});
  TaskRegistry::add(T_DEPOSIT, "deposit", {cpu(deposit)});
  TaskRegistry::add(T_STRAY, "stray", {cpu(stray)});
}

// Color c owns the points i with (i / 3) % kColors == c: runs of 3, kN / 12 runs per piece.
std::vector<std::vector<coord_t>> owned_points() {
  std::vector<std::vector<coord_t>> pts(kColors);
  for (coord_t i = 0; i < kN; ++i) pts[std::size_t((i / 3) % kColors)].push_back(i);
  return pts;
}
// The points a color reads besides its own: the next point of each of its runs.
std::vector<std::vector<coord_t>> ghost_points() {
  std::vector<std::vector<coord_t>> pts(kColors);
  for (coord_t i = 2; i < kN; i += 3) pts[std::size_t((i / 3) % kColors)].push_back((i + 1) % kN);
  return pts;
}

double serial_reference(int iters) {
  std::vector<double> x(kN), y(kN), z(kN, 0.0);
  const auto ghosts = ghost_points();
  for (coord_t i = 0; i < kN; ++i) x[std::size_t(i)] = double(i % 7) + 0.25 * double(i);
  for (int it = 0; it < iters; ++it) {
    for (int c = 0; c < kColors; ++c)
      for (coord_t g : ghosts[std::size_t(c)]) z[std::size_t(g)] += double(c + 1);
    for (coord_t i = 0; i < kN; ++i) z[std::size_t(i)] += 0.5;
    for (coord_t i = 0; i < kN; ++i)
      y[std::size_t(i)] = x[std::size_t(i)] + x[std::size_t((i + 1) % kN)];
    for (coord_t i = 0; i < kN; ++i)
      x[std::size_t(i)] =
          y[std::size_t(i)] * 0.5 + z[std::size_t(i)] * 0.125 + double((i / 3) % kColors);
  }
  double s = 0;
  for (coord_t i = 0; i < kN; ++i)
    s += x[std::size_t(i)] * double(i + 1) + z[std::size_t(i)] * double(i % 5);
  return s;
}

double run_stencil(Context& ctx, int iters, const std::string& trace) {
  Region r = ctx.create_region(
      ctx.create_index_space(Rect<1>({0}, {kN - 1})),
      ctx.create_field_space({{FX, sizeof(double)}, {FY, sizeof(double)}, {FZ, sizeof(double)}}));
  ctx.fill(r, FZ, 0.0);
  IndexSpace colors = ctx.create_index_space(Rect<1>({0}, {kColors - 1}));
  Partition owned = ctx.partition_by_point_sets(r, colors, owned_points());
  Partition ghost = ctx.partition_by_point_sets(r, colors, ghost_points());
  EXPECT_TRUE(owned.disjoint());
  EXPECT_TRUE(owned.complete());
  IndexLauncher in(T_INIT, colors.bounds());
  in.add(owned, Projection::identity(), Privilege::WriteDiscard, {FX});
  ctx.execute(in);
  for (int it = 0; it < iters; ++it) {
    if (trace == "manual") ctx.begin_trace(1);
    // (First: its folds are read in the same iteration, so each trace starts with none
    // pending.)
    IndexLauncher dp(T_DEPOSIT, colors.bounds());
    dp.add_reduction(ghost, Projection::identity(), ReductionOp::Sum, {FZ});
    dp.add_reduction(owned, Projection::identity(), ReductionOp::Sum, {FZ});
    ctx.execute(dp);
    IndexLauncher nb(T_NEIGHBOURS, colors.bounds());
    nb.add(owned, Projection::identity(), Privilege::WriteDiscard, {FY});
    nb.add(ghost, Projection::identity(), Privilege::ReadOnly, {FX});
    nb.add(owned, Projection::identity(), Privilege::ReadOnly, {FX});
    ctx.execute(nb);
    IndexLauncher hv(T_HALVE, colors.bounds());
    hv.add(owned, Projection::identity(), Privilege::ReadWrite, {FX});
    hv.add(owned, Projection::identity(), Privilege::ReadOnly, {FY, FZ});
    ctx.execute(hv);
    if (trace == "manual") ctx.end_trace(1);
  }
  TaskLauncher s(T_SUM);
  s.add(r, Privilege::ReadOnly, {FX, FZ});
  const double result = ctx.execute(s).get<double>();
  ctx.fence().wait();
  if (trace != "none") {
    EXPECT_GT(ctx.trace_stats().replays, 0u) << trace;
  }
  return result;
}
}  // namespace

TEST(Sparse, InterleavedPiecesGiveTheSerialResultInEveryTraceMode) {
  register_all();
  const int iters = 40;
  const double expected = serial_reference(iters);
  for (const char* trace : {"none", "manual", "auto"}) {
    for (const char* numa : {"1", "3"}) {
      std::vector<std::string> flags = {"-ll:cpu", "3", "-ll:numa", numa};
      if (std::string(trace) != "auto") flags.push_back("-lg:no_auto_tracing");
      double got = 0;
      reprise::run(flags, [&](Context& ctx) { got = run_stencil(ctx, iters, trace); });
      EXPECT_EQ(got, expected) << trace << ", numa " << numa;
    }
  }
}

TEST(Sparse, PiecesHaveExactlyTheirPointsAndRunsCoalesce) {
  register_all();
  reprise::run({"-ll:cpu", "2"}, [&](Context& ctx) {
    Region r =
        ctx.create_region(ctx.create_index_space(Rect<1>({0}, {kN - 1})),
                          ctx.create_field_space({{FX, sizeof(double)}, {FZ, sizeof(double)}}));
    IndexSpace colors = ctx.create_index_space(Rect<1>({0}, {kColors - 1}));
    Partition owned = ctx.partition_by_point_sets(r, colors, owned_points());
    // The bounding boxes overlap, yet the pieces are disjoint and cover the region.
    EXPECT_TRUE(owned.disjoint());
    EXPECT_TRUE(owned.complete());
    EXPECT_EQ(owned.rect(DomainPoint(1)), Domain(Rect<1>({3}, {kN - 1 - 6})));
    IndexLauncher c(T_COUNT, colors.bounds());
    c.add(owned, Projection::identity(), Privilege::ReadOnly, {FX});
    FutureMap fm = ctx.execute(c);
    for (coord_t i = 0; i < kColors; ++i)
      EXPECT_EQ(fm.get(DomainPoint(i)).get<std::int64_t>(), kN / kColors);
    // A fill of a piece writes its points only: the sum of x afterwards counts them.
    ctx.fill(r, FX, 0.0);
    ctx.fill(owned[DomainPoint(3)], FX, 1.0);
    TaskLauncher total(T_SUM);
    total.add(r, Privilege::ReadOnly, {FX, FZ});
    double expected_sum = 0;
    const auto points = owned_points();
    for (coord_t i : points[3]) expected_sum += double(i + 1);
    EXPECT_EQ(ctx.execute(total).get<double>(), expected_sum);
    // A copy out of a piece copies its points only: FZ gets piece 3's ones (and 0 elsewhere,
    // although x is 5 there).
    ctx.fill(r, FZ, 0.0);
    ctx.fill(r, FX, 5.0);
    ctx.fill(owned[DomainPoint(3)], FX, 1.0);
    ctx.copy(CopyLauncher{owned[DomainPoint(3)], {FX}, r, {FZ}});
    TaskLauncher copied(T_SUM);
    copied.add(r, Privilege::ReadOnly, {FX, FZ});
    double with_z = 0;  // sum: x * (p + 1) + z * (p % 5)
    for (coord_t i = 0; i < kN; ++i) with_z += 5.0 * double(i + 1);
    for (coord_t i : points[3]) with_z += -4.0 * double(i + 1) + double(i % 5);
    EXPECT_EQ(ctx.execute(copied).get<double>(), with_z);
    // A single task on one piece sees the same rectangles.
    TaskLauncher one(T_COUNT);
    one.add(owned[DomainPoint(2)], Privilege::ReadOnly, {FX});
    EXPECT_EQ(ctx.execute(one).get<std::int64_t>(), kN / kColors);
    // Overlapping point sets make an aliased partition; repeated points are one.
    Partition aliased = ctx.partition_by_point_sets(r, ctx.create_index_space(Rect<1>({0}, {1})),
                                                    {{0, 1, 2, 2, 7}, {7, 8}});
    EXPECT_FALSE(aliased.disjoint());
    EXPECT_FALSE(aliased.complete());
    // Rectangle lists: adjacent 1-d runs join.
    Partition joined = ctx.partition_by_rect_lists(
        r, ctx.create_index_space(Rect<1>({0}, {0})),
        {{Domain(Rect<1>({10}, {19})), Domain(Rect<1>({0}, {9})), Domain(Rect<1>({30}, {39}))}});
    TaskLauncher j(T_COUNT);
    j.add(joined[DomainPoint(0)], Privilege::ReadOnly, {FX});
    EXPECT_EQ(ctx.execute(j).get<std::int64_t>(), 30);
    // Translation moves every rectangle.
    Partition moved = ctx.partition_by_translation(joined, DomainPoint(50));
    EXPECT_EQ(moved.rect(DomainPoint(0)), Domain(Rect<1>({50}, {89})));
    TaskLauncher m(T_COUNT);
    m.add(moved[DomainPoint(0)], Privilege::ReadOnly, {FX});
    EXPECT_EQ(ctx.execute(m).get<std::int64_t>(), 30);
  });
}

TEST(Sparse, CopiesIntoPiecesWriteTheirPointsOnly) {
  // Sparse to sparse (each owned piece into a wider piece of another partition, in a manual
  // trace, so that replays copy too), and dense into sparse (a block inside a piece of two
  // rectangles); 1 and 2 memories.
  register_all();
  for (const char* numa : {"1", "2"})
    reprise::run({"-ll:cpu", "2", "-ll:numa", numa}, [&](Context& ctx) {
      Region r =
          ctx.create_region(ctx.create_index_space(Rect<1>({0}, {kN - 1})),
                            ctx.create_field_space({{FX, sizeof(double)}, {FZ, sizeof(double)}}));
      IndexSpace colors = ctx.create_index_space(Rect<1>({0}, {kColors - 1}));
      const auto owned_pts = owned_points(), ghost_pts = ghost_points();
      auto wide_pts = owned_pts;
      for (std::size_t c = 0; c < wide_pts.size(); ++c)
        wide_pts[c].insert(wide_pts[c].end(), ghost_pts[c].begin(), ghost_pts[c].end());
      Partition owned = ctx.partition_by_point_sets(r, colors, owned_pts);
      Partition wide = ctx.partition_by_point_sets(r, colors, wide_pts);
      ctx.fill(r, FZ, 0.0);
      for (int it = 0; it < 4; ++it) {
        ctx.begin_trace(7);
        for (coord_t c = 0; c < kColors; ++c) {
          ctx.fill(owned[DomainPoint(c)], FX, double(c + 1 + it));
          ctx.copy(CopyLauncher{owned[DomainPoint(c)], {FX}, wide[DomainPoint(c)], {FZ}});
        }
        ctx.end_trace(7);
      }
      // z = x everywhere (every point is owned by one color), so the sum counts each point's
      // x twice over: x * (p + 1) + x * (p % 5).
      TaskLauncher total(T_SUM);
      total.add(r, Privilege::ReadOnly, {FX, FZ});
      double expected = 0;
      for (coord_t c = 0; c < kColors; ++c)
        for (coord_t i : owned_pts[std::size_t(c)])
          expected += double(c + 4) * double(i + 1) + double(c + 4) * double(i % 5);
      EXPECT_EQ(ctx.execute(total).get<double>(), expected) << numa << " memories";
      EXPECT_GE(ctx.trace_stats().replays, 2u);
      // Dense into sparse: [32..39] into a piece of [30..39] and [50..59]; only those 8 points.
      Partition joined =
          ctx.partition_by_rect_lists(r, ctx.create_index_space(Rect<1>({0}, {0})),
                                      {{Domain(Rect<1>({30}, {39})), Domain(Rect<1>({50}, {59}))}});
      Partition block = ctx.partition_by_rects(r, ctx.create_index_space(Rect<1>({0}, {0})),
                                               std::vector<Domain>{Rect<1>({32}, {39})});
      ctx.fill(r, FX, 2.0);
      ctx.fill(r, FZ, 0.0);
      ctx.copy(CopyLauncher{block[DomainPoint(0)], {FX}, joined[DomainPoint(0)], {FZ}});
      double with_z = 0;
      for (coord_t i = 0; i < kN; ++i) with_z += 2.0 * double(i + 1);
      for (coord_t i = 32; i <= 39; ++i) with_z += 2.0 * double(i % 5);
      EXPECT_EQ(ctx.execute(total).get<double>(), with_z) << numa << " memories";
      // A source point outside the destination's rectangles is an Error.
      Partition wider = ctx.partition_by_rects(r, ctx.create_index_space(Rect<1>({0}, {0})),
                                               std::vector<Domain>{Rect<1>({35}, {52})});
      EXPECT_ERROR(
          ctx.copy(CopyLauncher{wider[DomainPoint(0)], {FX}, joined[DomainPoint(0)], {FZ}}),
          "10 of the 18 points of the source [35..52] lie outside the sparse destination");
    });
}

TEST(Sparse, PartitionsOfPiecesHoldThePiecesPointsOnly) {
  register_all();
  for (const char* numa : {"1", "2"})
    reprise::run({"-ll:cpu", "2", "-ll:numa", numa}, [&](Context& ctx) {
      Region r = ctx.create_region(
          ctx.create_index_space(Rect<1>({0}, {kN - 1})),
          ctx.create_field_space(
              {{FX, sizeof(double)}, {FZ, sizeof(double)}, {FY, sizeof(coord_t)}}));
      IndexSpace colors = ctx.create_index_space(Rect<1>({0}, {kColors - 1}));
      IndexSpace two = ctx.create_index_space(Rect<1>({0}, {1}));
      Partition owned = ctx.partition_by_point_sets(r, colors, owned_points());
      const Region piece = owned[DomainPoint(1)];
      constexpr std::int64_t kHalf = kN / kColors / 2;  // 12 points of the piece in each half
      // By rectangles: each half of the region, cut to the piece's points.
      Partition halves = ctx.partition_by_rects(
          piece, two, std::vector<Domain>{Rect<1>({0}, {kN / 2 - 1}), Rect<1>({kN / 2}, {kN - 1})});
      EXPECT_TRUE(halves.disjoint());
      IndexLauncher c(T_COUNT, two.bounds());
      c.add(halves, Projection::identity(), Privilege::ReadOnly, {FX});
      FutureMap fm = ctx.execute(c);
      for (coord_t i = 0; i < 2; ++i) EXPECT_EQ(fm.get(DomainPoint(i)).get<std::int64_t>(), kHalf);
      // Equal blocks of the piece's box, cut to its points.
      Partition blocks = ctx.partition_equal(owned[DomainPoint(2)], two);
      IndexLauncher cb(T_COUNT, two.bounds());
      cb.add(blocks, Projection::identity(), Privilege::ReadOnly, {FX});
      FutureMap fb = ctx.execute(cb);
      EXPECT_EQ(
          fb.get(DomainPoint(0)).get<std::int64_t>() + fb.get(DomainPoint(1)).get<std::int64_t>(),
          kN / kColors);
      // Tasks write through the halves while others write the other pieces: each point is
      // written once, by its own piece's task.
      ctx.fill(r, FX, 0.0);
      ctx.fill(r, FZ, 0.0);
      IndexLauncher w(T_INIT, two.bounds());
      w.add(halves, Projection::identity(), Privilege::WriteDiscard, {FX});
      ctx.execute(w);
      for (coord_t other : {0, 2, 3}) ctx.fill(owned[DomainPoint(other)], FX, 1.0);
      TaskLauncher total(T_SUM);
      total.add(r, Privilege::ReadOnly, {FX, FZ});
      double expected = 0;
      for (coord_t i = 0; i < kN; ++i) {
        const bool mine = (i / 3) % kColors == 1;
        expected += (mine ? double(i % 7) + 0.25 * double(i) : 1.0) * double(i + 1);
      }
      EXPECT_EQ(ctx.execute(total).get<double>(), expected) << numa << " memories";
      // By field, of the piece: colors from its points only (the others hold color 0 too).
      ctx.fill(r, FY, coord_t(0));
      ctx.fill(halves[DomainPoint(1)], FY, coord_t(1));
      Partition by_color = ctx.partition_by_field(piece, FY, two);
      IndexLauncher cf(T_COUNT, two.bounds());
      cf.add(by_color, Projection::identity(), Privilege::ReadOnly, {FX});
      FutureMap ff = ctx.execute(cf);
      for (coord_t i = 0; i < 2; ++i) EXPECT_EQ(ff.get(DomainPoint(i)).get<std::int64_t>(), kHalf);
    });
}

TEST(Sparse, MisuseIsAnError) {
  register_all();
  reprise::run({"-ll:cpu", "2"}, [&](Context& ctx) {
    Region r =
        ctx.create_region(ctx.create_index_space(Rect<1>({0}, {kN - 1})),
                          ctx.create_field_space({{FX, sizeof(double)}, {FZ, sizeof(double)}}));
    IndexSpace two = ctx.create_index_space(Rect<1>({0}, {1}));
    EXPECT_ERROR(ctx.partition_by_rect_lists(
                     r, two, {{Domain(Rect<1>({0}, {9})), Domain(Rect<1>({5}, {12}))}, {}}),
                 "partition_by_rect_lists: the rectangles of color (0) overlap");
    EXPECT_ERROR(ctx.partition_by_rect_lists(r, two, {{}}),
                 "partition_by_rect_lists: 1 pieces given for 2 colors");
    Region grid = ctx.create_region(ctx.create_index_space(Rect<2>({0, 0}, {3, 3})),
                                    ctx.create_field_space({{FX, sizeof(double)}}));
    EXPECT_ERROR(ctx.partition_by_point_sets(grid, two, {{0}, {1}}),
                 "partition_by_point_sets: the region [0,0..3,3] is 2-d");
    Partition aliased = ctx.partition_by_point_sets(r, two, {{0, 1, 2}, {2, 3}});
    IndexLauncher w(T_INIT, two.bounds());
    w.add(aliased, Projection::identity(), Privilege::ReadWrite, {FX});
    EXPECT_ERROR(ctx.execute(w), "writes through an aliased partition");
    Partition owned = ctx.partition_by_point_sets(r, two, {{0, 1, 5}, {2, 3}});
    EXPECT_ERROR(ctx.copy(CopyLauncher{r, {FX}, owned[DomainPoint(0)], {FZ}}),
                 "lie outside the sparse destination");
  });
  // A fold outside the piece's rectangles has no instance to go to: an error even without
  // -lg:bounds_checks.
  EXPECT_ERROR(
      reprise::run({"-ll:cpu", "2"},
                   [&](Context& ctx) {
                     Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {kN - 1})),
                                                  ctx.create_field_space({{FZ, sizeof(double)}}));
                     IndexSpace two = ctx.create_index_space(Rect<1>({0}, {1}));
                     Partition owned = ctx.partition_by_point_sets(r, two, {{0, 1, 5}, {2, 3}});
                     IndexLauncher red(T_STRAY, two.bounds());
                     red.add_reduction(owned, Projection::identity(), ReductionOp::Sum, {FZ});
                     ctx.execute(red);
                   }),
      "point (95) is outside the requirement's bounds");
}

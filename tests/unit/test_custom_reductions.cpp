// User-defined reduction operators (reprise/reduction.h): region reductions of a struct type
// with an operator that is associative but not commutative (so the fold order shows), bit-
// identical to a serial model in every trace mode, on several memories and (tests/mpi) on
// several ranks; future-map reductions of a struct; and the errors of misuse.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <cstring>
#include <string>
#include <vector>

#include "error_text.h"

using namespace reprise;

namespace {

enum : TaskID {
  T_COMPOSE = 10200,
  T_DIGEST,
  T_ARGMIN,
  T_WRONG_TYPE,
  T_BUILTIN_STRUCT,
  T_HISTOGRAM,
  T_TOTAL
};
enum : FieldID { FA = 0 };

constexpr std::uint64_t kPrime = 1000003;

// An affine map x -> a x + b (mod a prime); folding composes maps in order: "then v".
struct Affine {
  std::uint64_t a, b;
};
struct Compose {
  using value_type = Affine;
  static Affine identity() { return Affine{1, 0}; }
  static void fold(Affine& acc, const Affine& v) {
    acc = Affine{acc.a * v.a % kPrime, (v.a * acc.b + v.b) % kPrime};
  }
};
struct MinLoc {
  double value;
  std::int64_t where;
};
struct ArgMin {
  using value_type = MinLoc;
  static MinLoc identity() { return MinLoc{1e300, -1}; }
  static void fold(MinLoc& acc, const MinLoc& v) {
    if (v.value < acc.value || (v.value == acc.value && v.where < acc.where)) acc = v;
  }
};

// Another operator, for the registration errors.
struct Other {
  using value_type = int;
  static int identity() { return 0; }
  static void fold(int& a, const int& b) { a += b; }
};

ReductionOp compose_op() {
  return register_reduction<Compose>(40, "compose");
}
ReductionOp argmin_op() {
  return register_reduction<ArgMin>(41, "argmin");
}

// The contribution of launch `l`, point `k` to element e (two per element, in order).
Affine contribution(int l, coord_t k, coord_t e, int which) {
  return Affine{std::uint64_t(2 + (l * 7 + k * 3 + e + which) % 11),
                std::uint64_t((l * 101 + k * 13 + e * 5 + which) % 97)};
}
void compose_task(TaskContext& tc) {
  auto red = tc.reducer<Affine, 1>(0, FA);
  const int l = tc.args<int>();
  const coord_t k = tc.point()[0];
  for (auto p : Rect<1>(tc.domain(0)))
    for (int which = 0; which < 2; ++which) red.reduce(p, contribution(l, k, p[0], which));
}
std::uint64_t digest(TaskContext& tc) {
  auto acc = tc.accessor<const Affine, 1>(0, FA);
  std::uint64_t h = 1469598103934665603ull;
  for (auto p : Rect<1>(tc.domain(0))) h = (h ^ (acc[p].a * 1000003 + acc[p].b)) * 1099511628211ull;
  return h;
}
MinLoc argmin_task(TaskContext& tc) {
  const coord_t k = tc.point()[0];
  return MinLoc{double((k * 37 + 11) % 23), std::int64_t(k)};
}
void wrong_type(TaskContext& tc) {
  (void)tc.reducer<std::int32_t, 1>(0, FA);
}
void builtin_struct(TaskContext& tc) {
  (void)tc.reducer<Affine, 1>(0, FA);
}

// A value bigger than a future's inline storage (64 bytes): a histogram of 50 bins.
struct Histogram {
  std::int64_t bins[50];
};
struct MergeHistograms {
  using value_type = Histogram;
  static Histogram identity() { return Histogram{}; }
  static void fold(Histogram& acc, const Histogram& v) {
    for (int i = 0; i < 50; ++i) acc.bins[i] = acc.bins[i] * 3 + v.bins[i];  // order shows
  }
};
Histogram histogram_of(coord_t k) {
  Histogram h{};
  for (int i = 0; i < 50; ++i) h.bins[i] = (k * 31 + i * 7) % 13;
  return h;
}
Histogram histogram_task(TaskContext& tc) {
  return histogram_of(tc.point()[0]);
}
// A single task reading a big future and returning another.
Histogram total_task(TaskContext& tc) {
  Histogram h = tc.future<Histogram>(0);
  for (auto& b : h.bins) b += 1;
  return h;
}

void register_all() {
  TaskRegistry::add(T_COMPOSE, "compose", {cpu(compose_task)});
  TaskRegistry::add(T_DIGEST, "digest", {cpu(digest)});
  TaskRegistry::add(T_ARGMIN, "argmin", {cpu(argmin_task)});
  TaskRegistry::add(T_WRONG_TYPE, "wrong_type", {cpu(wrong_type)});
  TaskRegistry::add(T_BUILTIN_STRUCT, "builtin_struct", {cpu(builtin_struct)});
  TaskRegistry::add(T_HISTOGRAM, "histogram", {cpu(histogram_task)});
  TaskRegistry::add(T_TOTAL, "total", {cpu(total_task)});
}

constexpr coord_t kN = 48;
constexpr coord_t kPoints = 6;
constexpr int kLaunches = 9;

// Every point reduces over the whole region, launch after launch; the region starts at the
// fill value (the identity) and every tenth launch is traced or not per `trace`.
std::uint64_t run_compose(const std::vector<std::string>& flags, bool trace) {
  std::uint64_t result = 0;
  const ReductionOp op = compose_op();
  reprise::run(flags, [&](Context& ctx) {
    Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {kN - 1})),
                                 ctx.create_field_space({{FA, sizeof(Affine)}}));
    ctx.fill(r, FA, Compose::identity());
    auto points = ctx.create_index_space(Rect<1>({0}, {kPoints - 1}));
    // Overlapping pieces: point k covers [4k, 4k + 19] (clipped), so elements gather
    // contributions from several points of one launch.
    Partition over = ctx.partition_by_rects(r, points, [&](const DomainPoint& c) {
      return Domain(Rect<1>({4 * c[0]}, {std::min<coord_t>(4 * c[0] + 19, kN - 1)}));
    });
    IndexLauncher l(T_COMPOSE, points);
    l.add_reduction(over, Projection::identity(), op, {FA});
    for (int launch = 0; launch < kLaunches; ++launch) {
      l.set_args(TaskArgs{launch});
      if (trace) ctx.begin_trace(5);
      ctx.execute(l);
      if (trace) ctx.end_trace(5);
    }
    TaskLauncher d(T_DIGEST);
    d.add(r, Privilege::ReadOnly, {FA});
    result = ctx.execute(d).get<std::uint64_t>();
  });
  return result;
}

std::uint64_t serial_compose() {
  std::vector<Affine> x(kN, Compose::identity());
  for (int launch = 0; launch < kLaunches; ++launch)
    for (coord_t k = 0; k < kPoints; ++k)
      for (coord_t e = 4 * k; e <= std::min<coord_t>(4 * k + 19, kN - 1); ++e)
        for (int which = 0; which < 2; ++which)
          Compose::fold(x[std::size_t(e)], contribution(launch, k, e, which));
  std::uint64_t h = 1469598103934665603ull;
  for (const Affine& v : x) h = (h ^ (v.a * 1000003 + v.b)) * 1099511628211ull;
  return h;
}

}  // namespace

TEST(CustomReductions, RegionReductionsFoldInLaunchOrderEverywhere) {
  register_all();
  const std::uint64_t want = serial_compose();
  EXPECT_EQ(run_compose({"-ll:cpu", "2"}, false), want);
  EXPECT_EQ(run_compose({"-ll:cpu", "2", "-lg:no_auto_tracing"}, true), want);
  EXPECT_EQ(run_compose({"-ll:cpu", "3", "-ll:numa", "3"}, false), want);
  EXPECT_EQ(run_compose({"-ll:cpu", "2", "-ll:numa", "2", "-lg:no_auto_tracing"}, true), want);
}

TEST(CustomReductions, FutureMapsReduceStructs) {
  register_all();
  const ReductionOp op = argmin_op();
  reprise::run({"-ll:cpu", "2"}, [&](Context& ctx) {
    FutureMap fm = ctx.execute(IndexLauncher(T_ARGMIN, Domain(Rect<1>({0}, {40}))));
    const MinLoc m = ctx.reduce(fm, op).get<MinLoc>();
    MinLoc want = ArgMin::identity();
    for (coord_t k = 0; k <= 40; ++k) ArgMin::fold(want, MinLoc{double((k * 37 + 11) % 23), k});
    EXPECT_EQ(m.value, want.value);
    EXPECT_EQ(m.where, want.where);
  });
  EXPECT_EQ(to_string(op), "argmin");
}

TEST(CustomReductions, FuturesOfAnySize) {
  register_all();
  const ReductionOp merge = register_reduction<MergeHistograms>(42, "merge_histograms");
  reprise::run({"-ll:cpu", "2"}, [&](Context& ctx) {
    const coord_t n = 17;
    FutureMap fm = ctx.execute(IndexLauncher(T_HISTOGRAM, Domain(Rect<1>({0}, {n - 1}))));
    EXPECT_EQ(fm.get(Point<1>(5)).get<Histogram>().bins[49], histogram_of(5).bins[49]);
    Future merged = ctx.reduce(fm, merge);
    TaskLauncher t(T_TOTAL);
    t.add_future(merged);
    const Histogram got = ctx.execute(t).get<Histogram>();
    Histogram want = MergeHistograms::identity();
    for (coord_t k = 0; k < n; ++k) MergeHistograms::fold(want, histogram_of(k));
    for (int i = 0; i < 50; ++i) EXPECT_EQ(got.bins[i], want.bins[i] + 1) << "bin " << i;
    // The map's values are not changed by the fold (it works on its own copy).
    EXPECT_EQ(fm.get(Point<1>(0)).get<Histogram>().bins[3], histogram_of(0).bins[3]);
  });
}

TEST(CustomReductionErrors, MisuseIsReported) {
  register_all();
  compose_op();
  EXPECT_NO_THROW(compose_op());  // the same operator again
  EXPECT_NE(error_text([] { register_reduction<Other>(3, "other"); }).find("reserved"),
            std::string::npos);
  EXPECT_NE(error_text([] { register_reduction<Other>(40, "other"); }).find("already"),
            std::string::npos);
  auto in_task = [&](TaskID task, ReductionOp op) {
    return error_text([&] {
      reprise::run({"-ll:cpu", "1"}, [&](Context& ctx) {
        Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {7})),
                                     ctx.create_field_space({{FA, sizeof(Affine)}}));
        TaskLauncher t(task);
        t.add_reduction(r, op, {FA});
        ctx.execute(t).wait();
      });
    });
  };
  EXPECT_NE(in_task(T_WRONG_TYPE, compose_op()).find("folds values of 16 bytes"),
            std::string::npos);
  EXPECT_NE(in_task(T_BUILTIN_STRUCT, ReductionOp::Sum).find("integers and floating-point"),
            std::string::npos);
  EXPECT_NE(in_task(T_COMPOSE, ReductionOp(77)).find("not registered"), std::string::npos);
}

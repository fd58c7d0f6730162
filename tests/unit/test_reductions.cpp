// Region reductions through reduction instances: every reducing point folds into an instance
// of its own, and the runtime folds those into the region, in launch order, before the data
// is used again. So floating-point results do not depend on timing, memories or tracing.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "reprise_rt/runtime.h"

using namespace reprise;

namespace {

enum : TaskID { T_ADD = 9700, T_MAXV, T_READ, T_TWO_TYPES, T_SCALE, T_SUMY };
enum : FieldID { FX = 0, FY = 1 };

struct AddArgs {
  double scale;
};

// Each point adds values to every element of its requirement's rectangle; values are chosen
// so that the sum depends on the order of the additions.
void add_values(TaskContext& tc) {
  auto red = tc.reducer<double, 1>(0, FX);
  const double scale = tc.args<AddArgs>().scale;
  const double k = double(tc.point()[0] + 1);
  for (auto p : Rect<1>(tc.domain(0)))
    red.reduce(p, scale * (1.0 / (k * 3.0 + double(p[0]))) + 1e-13 * k);
}
void max_values(TaskContext& tc) {
  auto red = tc.reducer<std::int64_t, 1>(0, FY);
  const std::int64_t k = tc.point()[0];
  for (auto p : Rect<1>(tc.domain(0))) red.reduce(p, (k * 7919 + p[0] * 104729) % 1000);
}
// The field's bit patterns, hashed (a future reaches every shard under control replication).
std::uint64_t hash_bits(const std::vector<double>& v) {
  std::uint64_t h = 1469598103934665603ull;
  for (double d : v) {
    std::uint64_t b;
    std::memcpy(&b, &d, sizeof b);
    h = (h ^ b) * 1099511628211ull;
  }
  return h;
}
std::uint64_t read_all(TaskContext& tc) {
  auto a = tc.accessor<const double, 1>(0, FX);
  std::vector<double> v;
  for (auto p : Rect<1>(tc.domain(0))) v.push_back(a[p]);
  return hash_bits(v);
}
std::int64_t sum_y(TaskContext& tc) {
  auto a = tc.accessor<const std::int64_t, 1>(0, FY);
  std::int64_t s = 0;
  for (auto p : Rect<1>(tc.domain(0)))
    s = std::int64_t(std::uint64_t(s) * 31 + std::uint64_t(a[p]));  // wraps
  return s;
}
void two_types(TaskContext& tc) {
  (void)tc.reducer<std::int64_t, 1>(0, FY);
  (void)tc.reducer<std::uint64_t, 1>(0, FY);
}
void scale_x(TaskContext& tc) {  // RW: x = x * 0.5 + 1
  auto a = tc.accessor<double, 1>(0, FX);
  for (auto p : Rect<1>(tc.domain(0))) a[p] = a[p] * 0.5 + 1.0;
}

void register_all() {
  TaskRegistry::add(T_ADD, "add_values", {cpu(add_values)});
  TaskRegistry::add(T_MAXV, "max_values", {cpu(max_values)});
  TaskRegistry::add(T_READ, "read_all", {cpu(read_all)});
  TaskRegistry::add(T_TWO_TYPES, "two_types", {cpu(two_types)});
  TaskRegistry::add(T_SCALE, "scale_x", {cpu(scale_x)});
  TaskRegistry::add(T_SUMY, "sum_y", {cpu(sum_y)});
}

constexpr coord_t kN = 64;
constexpr int kPoints = 8;

// The region every test uses (kN elements, fields FX and FY), its launch space and its
// kPoints equal pieces.
struct Setup {
  Region region;
  IndexSpace points;
  Partition part;
};
Setup make_region(Context& ctx) {
  auto is = ctx.create_index_space(Rect<1>({0}, {kN - 1}));
  Region r = ctx.create_region(is, ctx.create_field_space({{FX, 8}, {FY, 8}}));
  auto points = ctx.create_index_space(Rect<1>({0}, {kPoints - 1}));
  return Setup{r, points, ctx.partition_equal(r, points)};
}

// The serial reference: the region starts at `init`; reduction launches fold their points'
// contributions in point order (each point's instance starts at 0 and gets one value per
// element), then the next launch; scale_x runs between them when asked.
std::vector<double> serial(int launches, bool whole_region, bool scale_between) {
  std::vector<double> x(std::size_t(kN), 0.25);
  for (int l = 0; l < launches; ++l) {
    for (int pt = 0; pt < kPoints; ++pt) {
      const double k = double(pt + 1);
      const coord_t lo = whole_region ? 0 : pt * (kN / kPoints);
      const coord_t hi = whole_region ? kN - 1 : lo + kN / kPoints - 1;
      for (coord_t i = lo; i <= hi; ++i) {
        double inst = 0.0;
        inst = inst + (double(l + 1) * (1.0 / (k * 3.0 + double(i))) + 1e-13 * k);
        x[std::size_t(i)] = x[std::size_t(i)] + inst;
      }
    }
    if (scale_between)
      for (double& v : x) v = v * 0.5 + 1.0;
  }
  return x;
}

// Runs `launches` reduction launches of kPoints points (into the whole region or into the
// points' pieces), optionally inside a trace each, and hashes the region's contents; `check`
// then looks at the runtime before it stops.
std::uint64_t run_sums(std::vector<std::string> flags, int launches, bool whole_region,
                       bool scale_between, bool traced,
                       const std::function<void(Context&)>& check = {}) {
  std::uint64_t out = 0;
  reprise::run(flags, [&](Context& ctx) {
    auto [r, points, part] = make_region(ctx);
    ctx.fill(r, FX, 0.25);
    for (int l = 0; l < launches; ++l) {
      if (traced) ctx.begin_trace(1);
      IndexLauncher add(T_ADD, points, TaskArgs(AddArgs{double(l + 1)}));
      if (whole_region)
        add.add_reduction(r, ReductionOp::Sum, {FX});
      else
        add.add_reduction(part, Projection::identity(), ReductionOp::Sum, {FX});
      ctx.execute(add);
      if (scale_between) {
        IndexLauncher scale(T_SCALE, points);
        scale.add(part, Projection::identity(), Privilege::ReadWrite, {FX});
        ctx.execute(scale);
      }
      if (traced) ctx.end_trace(1);
    }
    TaskLauncher read(T_READ);
    read.add(r, Privilege::ReadOnly, {FX});
    out = ctx.execute(read).get<std::uint64_t>();
    if (check) check(ctx);
  });
  return out;
}

const std::vector<std::vector<std::string>> kConfigs = {
    {"-ll:cpu", "1"},
    {"-ll:cpu", "2"},
    {"-ll:cpu", "2", "-ll:numa", "2"},
    {"-ll:cpu", "4", "-ll:numa", "4"},
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

}  // namespace

TEST(Reductions, FloatingPointSumsFoldInLaunchOrderEverywhere) {
  register_all();
  for (bool whole : {true, false}) {
    const std::uint64_t want = hash_bits(serial(3, whole, false));
    for (const auto& flags : kConfigs)
      for (int run = 0; run < 3; ++run)
        ASSERT_EQ(run_sums(flags, 3, whole, false, false), want)
            << join(flags) << (whole ? " (whole region)" : " (pieces)");
  }
}

TEST(Reductions, TracedRunsMatchTheSerialFoldBitForBit) {
  register_all();
  const std::uint64_t want = hash_bits(serial(40, true, true));
  for (const auto& flags : kConfigs) {
    auto f = flags;
    f.push_back("-lg:no_auto_tracing");
    EXPECT_EQ(run_sums(f, 40, true, true, true), want) << "manual traces, " << join(f);
    EXPECT_EQ(run_sums(flags, 40, true, true, false), want) << "automatic tracing, " << join(flags);
  }
}

// A loop that reduces into a field every iteration and reads it only after the loop: a launch
// folds what the launches before the previous one left pending (Analysis::fold_earlier), so
// at most two launches' contributions are pending — not one per iteration — the result is the
// serial fold's bit for bit, and the loop's trace replays.
TEST(Reductions, ALoopReducingEveryIterationKeepsTwoLaunchesPending) {
  register_all();
  constexpr int kLaunches = 40;
  for (bool whole : {true, false}) {
    const std::uint64_t want = hash_bits(serial(kLaunches, whole, false));
    for (const auto& flags : kConfigs)
      for (int mode = 0; mode < 3; ++mode) {  // untraced, manual traces, automatic tracing
        auto f = flags;
        if (mode != 2) f.push_back("-lg:no_auto_tracing");
        const std::string what = join(f) + (whole ? " (whole region)" : " (pieces)") +
                                 (mode == 1 ? ", manual traces" : "");
        const std::uint64_t got =
            run_sums(f, kLaunches, whole, false, mode == 1, [&](Context& ctx) {
              // Two launches' instances (one per point each), three right after a run of replays
              // (the first launch analysed again does not know which launch came before it), where
              // every launch had its own before (kLaunches of them; 120 launches also give 3).
              EXPECT_LE(reprise::detail::Runtime::of(ctx).instances().reduction_instance_count(),
                        std::size_t(3 * kPoints))
                  << what;
              if (mode == 1) {
                EXPECT_GE(ctx.trace_stats().replays, std::uint64_t(kLaunches - 6)) << what;
              }
            });
        EXPECT_EQ(got, want) << what;
      }
  }
}

TEST(Reductions, ReplaysReuseTheSameReductionInstances) {
  register_all();
  for (const auto& flags : kConfigs) {
    auto f = flags;
    f.push_back("-lg:no_auto_tracing");
    reprise::run(f, [&](Context& ctx) {
      auto [r, points, part] = make_region(ctx);
      ctx.fill(r, FX, 0.0);
      for (int l = 0; l < 60; ++l) {
        ctx.begin_trace(7);
        IndexLauncher add(T_ADD, points, TaskArgs(AddArgs{1.0}));
        add.add_reduction(r, ReductionOp::Sum, {FX});
        ctx.execute(add);
        IndexLauncher scale(T_SCALE, points);
        scale.add(part, Projection::identity(), Privilege::ReadWrite, {FX});
        ctx.execute(scale);
        ctx.end_trace(7);
      }
      ctx.fence().wait();
      const auto stats = ctx.trace_stats();
      EXPECT_GE(stats.replays, 50u) << join(f);
      // One instance per reducing point (over the whole region), reused by every replay.
      EXPECT_EQ(reprise::detail::Runtime::of(ctx).instances().reduction_instance_count(),
                std::size_t(kPoints))
          << join(f);
    });
  }
}

TEST(Reductions, OperatorsFoldInOrderAndWritesDropPendingContributions) {
  register_all();
  // max after a fill, then a fill that discards a pending max, then max again.
  for (const auto& flags : kConfigs) {
    std::int64_t got = 0;
    reprise::run(flags, [&](Context& ctx) {
      auto [r, points, part] = make_region(ctx);
      ctx.fill(r, FY, std::int64_t(500));
      IndexLauncher mx(T_MAXV, points);
      mx.add_reduction(r, ReductionOp::Max, {FY});
      ctx.execute(mx);
      ctx.fill(part[Point<1>(3)], FY, std::int64_t(-5));  // drops what is pending there
      ctx.execute(mx);
      IndexLauncher mn(T_MAXV, points);
      mn.add_reduction(part, Projection::identity(), ReductionOp::Min, {FY});
      ctx.execute(mn);
      TaskLauncher sum(T_SUMY);
      sum.add(r, Privilege::ReadOnly, {FY});
      got = ctx.execute(sum).get<std::int64_t>();
    });
    // Serial: y = 500; max over all points; piece 3 = -5; max over all points; min per piece.
    std::vector<std::int64_t> y(std::size_t(kN), 500);
    auto contribution = [](std::int64_t k, coord_t i) { return (k * 7919 + i * 104729) % 1000; };
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1)
        for (coord_t i = 3 * (kN / kPoints); i < 4 * (kN / kPoints); ++i) y[std::size_t(i)] = -5;
      for (std::int64_t k = 0; k < kPoints; ++k)
        for (coord_t i = 0; i < kN; ++i)
          y[std::size_t(i)] = std::max(y[std::size_t(i)], contribution(k, i));
    }
    for (std::int64_t k = 0; k < kPoints; ++k)
      for (coord_t i = k * (kN / kPoints); i < (k + 1) * (kN / kPoints); ++i)
        y[std::size_t(i)] = std::min(y[std::size_t(i)], contribution(k, i));
    std::int64_t want = 0;
    for (std::int64_t v : y) want = std::int64_t(std::uint64_t(want) * 31 + std::uint64_t(v));
    EXPECT_EQ(got, want) << join(flags);
  }
}

TEST(Reductions, OneFieldAskedForWithTwoTypesIsAnError) {
  register_all();
  std::string what;
  try {
    reprise::run({"-ll:cpu", "1"}, [&](Context& ctx) {
      auto is = ctx.create_index_space(Rect<1>({0}, {kN - 1}));
      Region r = ctx.create_region(is, ctx.create_field_space({{FX, 8}, {FY, 8}}));
      TaskLauncher l(T_TWO_TYPES);
      l.add_reduction(r, ReductionOp::Sum, {FY});
      ctx.execute(l).wait();
    });
  } catch (const Error& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("two_types"), std::string::npos) << what;
  EXPECT_NE(what.find("another element type"), std::string::npos) << what;
}

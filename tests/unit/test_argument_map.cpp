// Per-point arguments of index launches (ArgumentMap, TaskContext::local_args): values per
// point, copy on write, traces replaying the current values (CPU, and GPU graphs captured
// again when a point's value changes), and the errors of a missing or mis-sized value.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <string>
#include <vector>

using namespace reprise;

namespace {
enum : TaskID { T_LOCAL = 10100, T_SCALE, T_SUM, T_WRONG_SIZE };
enum : FieldID { FV = 0 };

// Returns 10 × its local value + the launch's value, or -1 without a local value.
std::int64_t local_value(TaskContext& tc) {
  if (tc.local_arg_bytes().empty()) return -1;
  return 10 * tc.local_args<std::int64_t>() + tc.args<std::int64_t>();
}
// x[p] = (x[p] * k + p) mod a prime, with k this point's local value.
void scale_cpu(TaskContext& tc) {
  const auto k = tc.local_args<std::int64_t>();
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  for (auto p : Rect<1>(tc.domain(0))) acc[p] = (acc[p] * k + p[0]) % 1000003;
}
void scale_gpu(TaskContext& tc) {
  const auto k = tc.local_args<std::int64_t>();
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  kernel::for_each(tc, Rect<1>(tc.domain(0)),
                   [=](const Point<1>& p) { acc[p] = (acc[p] * k + p[0]) % 1000003; });
}
std::int64_t sum(TaskContext& tc) {
  auto acc = tc.accessor<const std::int64_t, 1>(0, FV);
  std::int64_t s = 0;
  for (auto p : Rect<1>(tc.domain(0))) s = (s * 31 + acc[p]) % 1000000007;
  return s;
}
std::int64_t wrong_size(TaskContext& tc) {
  return tc.local_args<std::int32_t>();
}

void register_all() {
  TaskRegistry::add(T_LOCAL, "local_value", {cpu(local_value)});
  TaskRegistry::add(T_SCALE, "scale", {cpu(scale_cpu), gpu(scale_gpu)});
  TaskRegistry::add(T_SUM, "sum", {cpu(sum)});
  TaskRegistry::add(T_WRONG_SIZE, "wrong_size", {cpu(wrong_size)});
}

unsigned last_run_shards = 1;

// `iters` traced iterations of "scale" over 4 pieces; point i's factor is 2 + i + (it / vary)
// (vary 0: the same factors every iteration). Returns a checksum of the region.
std::int64_t run_traced_scale(const std::vector<std::string>& flags, int iters, int vary,
                              Context::TraceStats* stats) {
  std::int64_t result = 0;
  reprise::run(flags, [&](Context& ctx) {
    Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {63})),
                                 ctx.create_field_space({{FV, sizeof(std::int64_t)}}));
    ctx.fill(r, FV, std::int64_t(1));
    Partition p = ctx.partition_by_blocks(r, Point<1>{16});
    IndexLauncher scale(T_SCALE, p.color_space());
    scale.add(p, Projection::identity(), Privilege::ReadWrite, {FV});
    ArgumentMap factors;
    for (int it = 0; it < iters; ++it) {
      for (coord_t i = 0; i < 4; ++i)
        factors.set_point(Point<1>(i), std::int64_t(2 + i + (vary ? it / vary : 0)));
      scale.set_argument_map(factors);
      ctx.begin_trace(1);
      ctx.execute(scale);
      ctx.end_trace(1);
    }
    TaskLauncher s(T_SUM);
    s.add(r, Privilege::ReadOnly, {FV});
    result = ctx.execute(s).get<std::int64_t>();
    ctx.fence().wait();
    if (stats) *stats = ctx.trace_stats();
    last_run_shards = ctx.num_shards();
  });
  return result;
}
}  // namespace

TEST(ArgumentMap, EachPointReadsItsOwnValue) {
  register_all();
  reprise::run({"-ll:cpu", "2"}, [](Context& ctx) {
    ArgumentMap m;
    for (coord_t i = 1; i <= 4; ++i) m.set_point(Point<1>(i), std::int64_t(i * i));
    m.set_point(Point<1>(99), std::int64_t(7));  // outside the launch domain: ignored
    EXPECT_TRUE(m.has_point(Point<1>(2)));
    EXPECT_FALSE(m.has_point(Point<1>(5)));
    EXPECT_EQ(m.size(), 5u);
    IndexLauncher l(T_LOCAL, Domain(Rect<1>({1}, {5})), TaskArgs{std::int64_t(3)});
    l.set_argument_map(m);
    FutureMap fm = ctx.execute(l);
    for (coord_t i = 1; i <= 4; ++i)
      EXPECT_EQ(fm.get(Point<1>(i)).get<std::int64_t>(), 10 * i * i + 3);
    EXPECT_EQ(fm.get(Point<1>(5)).get<std::int64_t>(), -1);  // no value for point 5
  });
}

TEST(ArgumentMap, ALaunchKeepsTheValuesItWasLaunchedWith) {
  register_all();
  reprise::run({"-ll:cpu", "1"}, [](Context& ctx) {
    ArgumentMap m;
    m.set_point(Point<1>(0), std::int64_t(1)).set_point(Point<1>(1), std::int64_t(2));
    IndexLauncher l(T_LOCAL, Domain(Rect<1>({0}, {1})), TaskArgs{std::int64_t(0)});
    l.set_argument_map(m);
    std::vector<FutureMap> maps;
    for (std::int64_t round = 0; round < 3; ++round) {
      maps.push_back(ctx.execute(l));
      // Changed at once, while the launch may still be waiting to run: it copies first.
      m.set_point(Point<1>(0), std::int64_t(100 * (round + 1)));
      l.set_argument_map(m);
    }
    EXPECT_EQ(maps[0].get(Point<1>(0)).get<std::int64_t>(), 10);
    EXPECT_EQ(maps[1].get(Point<1>(0)).get<std::int64_t>(), 1000);
    EXPECT_EQ(maps[2].get(Point<1>(0)).get<std::int64_t>(), 2000);
    for (const auto& fm : maps) EXPECT_EQ(fm.get(Point<1>(1)).get<std::int64_t>(), 20);
  });
}

TEST(ArgumentMap, ReplaysUseEachLaunchsCurrentValues) {
  register_all();
  for (const char* tracing : {"1", "0"}) {
    std::vector<std::string> flags = {"-ll:cpu", "2", "-lg:no_auto_tracing"};
    if (std::string(tracing) == "0") flags.push_back("-lg:no_tracing");
    Context::TraceStats stats;
    const std::int64_t traced = run_traced_scale(flags, 12, 1, &stats);
    EXPECT_EQ(traced, run_traced_scale({"-ll:cpu", "1", "-lg:inorder"}, 12, 1, nullptr));
    if (std::string(tracing) == "1") {
      EXPECT_GE(stats.replays, 10u);
    }
  }
}

TEST(ArgumentMap, GpuGraphsAreCapturedAgainWhenAPointsValueChanges) {
  register_all();
  const std::vector<std::string> gpus = {
      "-ll:cpu", "1", "-ll:gpu", "2", "-ll:gpu_backend", "host", "-lg:no_auto_tracing"};
  for (int vary : {0, 4}) {
    const std::int64_t want = run_traced_scale({"-ll:cpu", "2"}, 16, vary, nullptr);
    Context::TraceStats stats;
    EXPECT_EQ(run_traced_scale(gpus, 16, vary, &stats), want) << "vary " << vary;
    EXPECT_GT(stats.replays, 0u);
    if (last_run_shards == 1) {  // (under control replication replays launch no graphs yet)
      EXPECT_GT(stats.gpu_graph_launches, 0u);
    }
  }
}

TEST(ArgumentMap, AMissingOrMisSizedValueIsAnError) {
  register_all();
  // Point 0 has 8 bytes and reads 4; point 1 has none.
  for (coord_t point : {0, 1}) {
    std::string message;
    try {
      reprise::run({"-ll:cpu", "1"}, [&](Context& ctx) {
        ArgumentMap m;
        m.set_point(Point<1>(0), std::int64_t(1));
        IndexLauncher l(T_WRONG_SIZE, Domain(Rect<1>({point}, {point})));
        l.set_argument_map(m);
        ctx.execute(l).get(Point<1>(point)).get<std::int64_t>();
      });
    } catch (const Error& e) {
      message = e.what();
    }
    const char* want =
        point == 0 ? "local arguments have 8 bytes, asked for 4" : "argument map has no value";
    EXPECT_NE(message.find(want), std::string::npos) << "point " << point << ": " << message;
  }
}

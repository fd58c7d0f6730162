// Data model, futures, reductions and shutdown through the public API.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include "reprise_rt/runtime.h"
#include "runtime_threads.h"

using namespace reprise;

namespace {
enum : TaskID { T_SQUARE = 9100, T_SUM_REGION, T_SET, T_ADD_FUTURE, T_THROW };
enum : FieldID { FV = 0 };

std::int64_t square(TaskContext& tc) {
  std::int64_t x = tc.point()[0];
  return x * x;
}
double sum_region(TaskContext& tc) {
  auto acc = tc.accessor<const double, 2>(0, FV);
  double s = 0;
  for (auto p : Rect<2>(tc.domain(0))) s += acc[p];
  return s;
}
void set_coords(TaskContext& tc) {
  auto acc = tc.accessor<double, 2>(0, FV);
  for (auto p : Rect<2>(tc.domain(0))) acc[p] = double(p[0] * 100 + p[1]);
}
std::int64_t add_future(TaskContext& tc) {
  return tc.future<std::int64_t>(0) + tc.args<int>();
}
void throwing(TaskContext&) {
  throw std::runtime_error("boom in task");
}

void register_all() {
  TaskRegistry::add(T_SQUARE, "square", {cpu(square)});
  TaskRegistry::add(T_SUM_REGION, "sum_region", {cpu(sum_region)});
  TaskRegistry::add(T_SET, "set_coords", {cpu(set_coords)});
  TaskRegistry::add(T_ADD_FUTURE, "add_future", {cpu(add_future)});
  TaskRegistry::add(T_THROW, "throwing", {cpu(throwing)});
}

int thread_count() {
  return int(thread_names().size());
}
}  // namespace

TEST(Api, FutureMapReductions) {
  register_all();
  reprise::run({"-ll:cpu", "2"}, [](Context& ctx) {
    auto dom = ctx.create_index_space(Rect<1>({1}, {5}));
    FutureMap fm = ctx.execute(IndexLauncher(T_SQUARE, dom));
    EXPECT_EQ(ctx.reduce(fm, ReductionOp::Sum).get<std::int64_t>(), 1 + 4 + 9 + 16 + 25);
    EXPECT_EQ(ctx.reduce(fm, ReductionOp::Max).get<std::int64_t>(), 25);
    EXPECT_EQ(ctx.reduce(fm, ReductionOp::Min).get<std::int64_t>(), 1);
    EXPECT_EQ(ctx.reduce(fm, ReductionOp::Prod).get<std::int64_t>(), 14400);
    EXPECT_EQ(fm.get(Point<1>(3)).get<std::int64_t>(), 9);
    EXPECT_THROW(fm.get(Point<1>(9)), Error);
    // A future feeds a later task without the application waiting.
    Future f = ctx.reduce(fm, ReductionOp::Sum);
    TaskLauncher l(T_ADD_FUTURE, TaskArgs{7});
    l.add_future(f);
    EXPECT_EQ(ctx.execute(l).get<std::int64_t>(), 62);
  });
}

TEST(Api, PartitionsAndSubregions) {
  register_all();
  reprise::run({}, [](Context& ctx) {
    auto is = ctx.create_index_space(Rect<2>({0, 0}, {9, 9}));
    auto fs = ctx.create_field_space({{FV, sizeof(double)}});
    Region r = ctx.create_region(is, fs);
    auto colors = ctx.create_index_space(Rect<2>({0, 0}, {2, 1}));
    Partition eq = ctx.partition_equal(r, colors);
    EXPECT_TRUE(eq.disjoint());
    EXPECT_TRUE(eq.complete());
    EXPECT_EQ(eq.rect(Point<2>{0, 0}), Domain(Rect<2>({0, 0}, {2, 4})));
    EXPECT_EQ(eq.rect(Point<2>{2, 1}), Domain(Rect<2>({6, 5}, {9, 9})));
    Partition blocks = ctx.partition_by_blocks(r, Point<2>{4, 4});
    EXPECT_EQ(blocks.color_space(), Domain(Rect<2>({0, 0}, {2, 2})));
    EXPECT_EQ(blocks.rect(Point<2>{2, 2}), Domain(Rect<2>({8, 8}, {9, 9})));
    EXPECT_TRUE(blocks.disjoint() && blocks.complete());
    Partition halo = ctx.partition_by_rects(
        r, colors, [&](const DomainPoint& c) { return grow(eq.rect(c), 1) & r.bounds(); });
    EXPECT_FALSE(halo.disjoint());
    EXPECT_TRUE(halo.complete());
    Partition shifted = ctx.partition_by_translation(eq, Point<2>{1, 0});
    EXPECT_EQ(shifted.rect(Point<2>{0, 0}), Domain(Rect<2>({1, 0}, {3, 4})));
    EXPECT_FALSE(shifted.complete());  // row 0 is no longer covered
    Region sub = eq[Point<2>{1, 1}];
    auto two = ctx.create_index_space(Rect<2>({0, 0}, {1, 0}));
    Partition inner = ctx.partition_equal(sub, two);
    // eq's piece (1,1) is rows 3..5 (10 rows over 3 colors), columns 5..9.
    EXPECT_EQ(sub.bounds(), Domain(Rect<2>({3, 5}, {5, 9})));
    EXPECT_EQ(inner.rect(Point<2>{1, 0}), Domain(Rect<2>({4, 5}, {5, 9})));
    EXPECT_EQ(inner.parent(), sub);
    // Values written through pieces are seen through the root.
    IndexLauncher set(T_SET, colors);
    set.add(eq, Projection::identity(), Privilege::WriteDiscard, {FV});
    ctx.execute(set);
    TaskLauncher sum(T_SUM_REGION);
    sum.add(r, Privilege::ReadOnly, {FV});
    double expect = 0;
    for (int i = 0; i < 10; ++i)
      for (int j = 0; j < 10; ++j) expect += i * 100 + j;
    EXPECT_EQ(ctx.execute(sum).get<double>(), expect);
    TaskLauncher part_sum(T_SUM_REGION);
    part_sum.add(inner[Point<2>{0, 0}], Privilege::ReadOnly, {FV});
    EXPECT_EQ(ctx.execute(part_sum).get<double>(), 300.0 * 5 + (5 + 6 + 7 + 8 + 9));
  });
}

TEST(Api, TaskErrorsReachTheApplication) {
  register_all();
  try {
    reprise::run({"-ll:cpu", "2"}, [](Context& ctx) {
      ctx.execute(TaskLauncher(T_THROW)).wait();
      ADD_FAILURE() << "wait() should have rethrown";
    });
    FAIL() << "run() should have thrown";
  } catch (const std::runtime_error& e) {
    // The op, the task and then what the task threw.
    EXPECT_STREQ(e.what(), "op #0 (task 'throwing'): boom in task");
  }
  // Unobserved task errors surface when the program ends.
  EXPECT_THROW(reprise::run({}, [](Context& ctx) { ctx.execute(TaskLauncher(T_THROW)); }),
               std::runtime_error);
}

TEST(Api, RepeatedStartsLeaveNoThreadsBehind) {
  register_all();
  // (Without automatic tracing: its analyses run on oneTBB's worker pool, whose threads come
  // and go on their own schedule; an earlier test's may still be alive here, or exit.)
  // A pool an earlier test of the same process used may also still be starting a thread late:
  // the count may grow by a few, not by a thread a run (20 here). And no thread the runtime
  // named (rp-…, every one of its own) may be left.
  int before = thread_count();
  for (int i = 0; i < 20; ++i)
    reprise::run({"-ll:cpu", "2", "-ll:util", "2", "-lg:no_auto_tracing"}, [](Context& ctx) {
      auto dom = ctx.create_index_space(Rect<1>({0}, {7}));
      ctx.execute(IndexLauncher(T_SQUARE, dom));
    });
  EXPECT_LE(thread_count(), before + 2);
  for (const std::string& name : thread_names())
    EXPECT_NE(name.rfind("rp-", 0), 0u) << "a runtime thread is left: " << name;
}

TEST(Api, InorderModeGivesTheSameAnswers) {
  register_all();
  for (const char* mode : {"-lg:inorder", "-lg:bounds_checks"}) {
    reprise::run({mode}, [](Context& ctx) {
      auto dom = ctx.create_index_space(Rect<1>({0}, {9}));
      FutureMap fm = ctx.execute(IndexLauncher(T_SQUARE, dom));
      EXPECT_EQ(ctx.reduce(fm, ReductionOp::Sum).get<std::int64_t>(), 285);
    });
  }
}

TEST(Api, WindowBoundsOpsInFlight) {
  register_all();
  // A tiny window makes the application wait for the pipeline instead of running ahead.
  reprise::run({"-lg:window", "4"}, [](Context& ctx) {
    auto dom = ctx.create_index_space(Rect<1>({0}, {3}));
    Future last;
    for (int i = 0; i < 200; ++i)
      last = ctx.reduce(ctx.execute(IndexLauncher(T_SQUARE, dom)), ReductionOp::Sum);
    EXPECT_EQ(last.get<std::int64_t>(), 14);
  });
}

TEST(Api, DestroyReleasesInstancesOnceUsersFinish) {
  register_all();
  reprise::run({"-ll:cpu", "2"}, [](Context& ctx) {
    auto& instances = reprise::detail::Runtime::of(ctx).instances();
    auto is = ctx.create_index_space(Rect<2>({0, 0}, {99, 99}));
    auto fs = ctx.create_field_space({{FV, sizeof(double)}});
    for (int round = 0; round < 5; ++round) {
      Region r = ctx.create_region(is, fs);
      auto colors = ctx.create_index_space(Rect<2>({0, 0}, {1, 1}));
      Partition p = ctx.partition_equal(r, colors);
      IndexLauncher set(T_SET, colors);
      set.add(p, Projection::identity(), Privilege::WriteDiscard, {FV});
      ctx.execute(set);
      ctx.destroy(r);  // deferred until the launch is done
    }
    ctx.fence().wait();
    EXPECT_EQ(instances.instance_count(), 0u);
  });
}

namespace {
// Puts every point on the last CPU; or, when `bad`, on a CPU that does not exist.
class LastCpuMapper : public Mapper {
 public:
  explicit LastCpuMapper(bool bad) : bad_(bad) {}
  Processor select_processor(const MapperTaskInfo&, const MachineInfo& m) override {
    ++calls;
    return Processor{ProcessorKind::CPU, bad_ ? m.num_cpus : m.num_cpus - 1};
  }
  static inline std::atomic<int> calls{0};

 private:
  bool bad_;
};
}  // namespace

TEST(Api, CustomMappersAreConsultedAndChecked) {
  register_all();
  LastCpuMapper::calls = 0;
  reprise::run(
      {"-ll:cpu", "2", "-lg:no_auto_tracing"},
      [](Context& ctx) {
        auto dom = ctx.create_index_space(Rect<1>({0}, {5}));
        EXPECT_EQ(ctx.reduce(ctx.execute(IndexLauncher(T_SQUARE, dom)), ReductionOp::Sum)
                      .get<std::int64_t>(),
                  55);
      },
      std::make_unique<LastCpuMapper>(false));
  EXPECT_EQ(LastCpuMapper::calls.load(), 6);
  try {
    reprise::run(
        {"-ll:cpu", "2"},
        [](Context& ctx) {
          auto dom = ctx.create_index_space(Rect<1>({0}, {1}));
          ctx.execute(IndexLauncher(T_SQUARE, dom)).wait();
        },
        std::make_unique<LastCpuMapper>(true));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

namespace {
// Puts every requirement in memory `mem`, whatever the processor.
class FixedMemoryMapper : public DefaultMapper {
 public:
  explicit FixedMemoryMapper(MemoryID mem) : mem_(mem) {}
  MemoryID select_memory(const MapperTaskInfo&, Processor, std::size_t,
                         const MachineInfo&) override {
    return mem_;
  }

 private:
  MemoryID mem_;
};
}  // namespace

TEST(Api, MappersChooseMemoriesAndAreChecked) {
  register_all();
  auto program = [](Context& ctx) {
    auto is = ctx.create_index_space(Rect<1>({0}, {1 << 18}));
    auto fs = ctx.create_field_space({{FV, 8}});
    Region big = ctx.create_region(is, fs);
    auto dom = ctx.create_index_space(Rect<1>({0}, {3}));
    Partition p = ctx.partition_equal(big, dom);
    IndexLauncher l(T_SQUARE, dom);
    l.add(p, Projection::identity(), Privilege::ReadOnly, {FV});
    ctx.execute(l).wait();
  };
  // Memory 1 of two exists; with 1 MiB per memory the 2 MiB instance does not fit there.
  reprise::run({"-ll:cpu", "2", "-ll:numa", "2"}, program, std::make_unique<FixedMemoryMapper>(1));
  try {
    reprise::run({"-ll:cpu", "2", "-ll:numa", "2", "-ll:csize", "1"}, program,
                 std::make_unique<FixedMemoryMapper>(1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sysmem1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("capacity 1 MiB"), std::string::npos) << e.what();
  }
  try {
    reprise::run({"-ll:cpu", "2", "-ll:numa", "2"}, program,
                 std::make_unique<FixedMemoryMapper>(5));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("memory 5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2 memories"), std::string::npos) << e.what();
  }
}

TEST(Api, EmptySubregionsFillCopyAndLaunch) {
  register_all();
  reprise::run({"-ll:cpu", "2"}, [](Context& ctx) {
    auto is = ctx.create_index_space(Rect<2>({0, 0}, {3, 9}));
    auto fs = ctx.create_field_space({{FV, sizeof(double)}, {1, sizeof(double)}});
    Region r = ctx.create_region(is, fs);
    // Piece 1 is empty in the last dimension (columns 20..19), piece 2 in the first.
    auto three = ctx.create_index_space(Rect<1>({0}, {2}));
    Partition p = ctx.partition_by_rects(
        r, three,
        std::vector<Domain>{Rect<2>({0, 0}, {3, 9}), Rect<2>({1, 20}, {2, 19}),
                            Rect<2>({5, 0}, {4, 9})});
    for (coord_t c = 1; c <= 2; ++c) {
      Region e = p[Point<1>(c)];
      EXPECT_TRUE(e.bounds().empty());
      ctx.fill(e, FV, 3.0);
      ctx.copy(CopyLauncher{e, {FV}, e, {1}});
      TaskLauncher s(T_SUM_REGION);
      s.add(e, Privilege::ReadOnly, {FV});
      EXPECT_EQ(ctx.execute(s).get<double>(), 0.0);
    }
  });
}

// Mapper::shard_points (a sharding functor, control replication): the default mapper's ranges
// are exactly the points its select_processor places on each shard, for launches of every
// size over CPUs or GPUs; a mapper derived from it does not inherit them (its own
// select_processor may place points elsewhere).
TEST(Mapper, DefaultShardRangesAgreeWithSelectProcessor) {
  DefaultMapper mapper;
  for (std::uint32_t shards : {1u, 2u, 3u, 8u, 17u})
    for (std::uint32_t cpus : {1u, 3u})
      for (std::uint32_t gpus : {0u, 2u})
        for (coord_t volume : {1, 2, 5, 16, 33, 100}) {
          MachineInfo m{cpus, gpus, 0, shards};
          MapperTaskInfo t{TaskID(1),     "t",     Domain(Rect<1>({0}, {volume - 1})),
                           DomainPoint(), 0,       7 * std::uint64_t(volume),
                           true,          gpus > 0};
          std::vector<std::uint32_t> owner(static_cast<std::size_t>(volume));
          for (coord_t i = 0; i < volume; ++i) {
            t.point_index = std::uint64_t(i);
            owner[std::size_t(i)] = mapper.select_processor(t, m).shard;
          }
          std::uint64_t covered = 0;
          for (std::uint32_t s = 0; s < shards; ++s) {
            std::uint64_t first = 0, last = 0;
            ASSERT_TRUE(mapper.shard_points(t, m, s, first, last));
            for (std::uint64_t i = 0; i < std::uint64_t(volume); ++i)
              ASSERT_EQ(owner[i] == s, i >= first && i < last)
                  << "point " << i << " of " << volume << ", shard " << s << " of " << shards
                  << ", " << cpus << " cpus, " << gpus << " gpus";
            covered += last - first;
          }
          EXPECT_EQ(covered, std::uint64_t(volume));
        }
  struct Derived : DefaultMapper {};
  Derived derived;
  std::uint64_t first = 0, last = 0;
  MapperTaskInfo t{TaskID(1), "t", Domain(Rect<1>({0}, {9})), DomainPoint(), 0, 0, true, false};
  EXPECT_FALSE(derived.shard_points(t, MachineInfo{1, 0, 0, 2}, 0, first, last));
}

namespace {
void registry_cpu_body(TaskContext&) {}
int registry_gpu_body(TaskContext&) {
  return 3;
}
}  // namespace

TEST(Api, TheRegistryAnswersWhichVariantAKindOfProcessorRuns) {
  constexpr TaskID kId = 97001;
  EXPECT_FALSE(TaskRegistry::variant(kId, ProcessorKind::CPU).has_value());  // not registered
  TaskRegistry::add(kId, "registry_probe", {cpu(registry_cpu_body)});
  const auto on_cpu = TaskRegistry::variant(kId, ProcessorKind::CPU);
  ASSERT_TRUE(on_cpu.has_value());
  EXPECT_EQ(on_cpu->fn, reinterpret_cast<const void*>(&registry_cpu_body));
  EXPECT_EQ(on_cpu->result_kind, ValueKind::None);
  EXPECT_FALSE(TaskRegistry::variant(kId, ProcessorKind::GPU).has_value());
  // Registering again replaces the variants.
  TaskRegistry::add(kId, "registry_probe", {gpu(registry_gpu_body)});
  EXPECT_FALSE(TaskRegistry::variant(kId, ProcessorKind::CPU).has_value());
  const auto on_gpu = TaskRegistry::variant(kId, ProcessorKind::GPU);
  ASSERT_TRUE(on_gpu.has_value());
  EXPECT_EQ(on_gpu->fn, reinterpret_cast<const void*>(&registry_gpu_body));
  EXPECT_EQ(on_gpu->result_size, sizeof(int));
}

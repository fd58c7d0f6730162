// Bad input gets a reprise::Error naming the op and the problem; never a crash or a hang.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

using namespace reprise;

namespace {
enum : TaskID {
  T_OOB = 9200,
  T_WRONG_FIELD,
  T_NOOP,
  T_WRITE_RO,
  T_WRONG_TYPE,
  T_WRONG_DIM,
  T_NO_REQUIREMENT,
  T_ACCESSOR_ON_REDUCE
};
enum : FieldID { FA = 0, FB = 1 };

void out_of_bounds(TaskContext& tc) {
  auto acc = tc.accessor<double, 1>(0, FA);
  Rect<1> r = tc.domain(0);
  acc[Point<1>(r.hi[0] + 1)] = 1.0;
}
void wrong_field(TaskContext& tc) {
  (void)tc.accessor<const double, 1>(0, FB);
}
void noop(TaskContext&) {}
void write_read_only(TaskContext& tc) {
  (void)tc.accessor<double, 1>(0, FA);
}
void wrong_type(TaskContext& tc) {
  (void)tc.accessor<const float, 1>(0, FA);
}
void wrong_dim(TaskContext& tc) {
  // (With arguments, only when they say so: a trace records with 0 and then replays with 1.)
  if (tc.arg_bytes().empty() || tc.args<int>() == 1) (void)tc.accessor<const double, 2>(0, FA);
}
void no_requirement(TaskContext& tc) {
  (void)tc.accessor<const double, 1>(1, FA);
}
void accessor_on_reduce(TaskContext& tc) {
  (void)tc.accessor<double, 1>(0, FA);
}

void register_all() {
  TaskRegistry::add(T_OOB, "oob", {cpu(out_of_bounds)});
  TaskRegistry::add(T_WRONG_FIELD, "wrong_field", {cpu(wrong_field)});
  TaskRegistry::add(T_NOOP, "noop", {cpu(noop)});
  TaskRegistry::add(T_WRITE_RO, "write_ro", {cpu(write_read_only)});
  TaskRegistry::add(T_WRONG_TYPE, "wrong_type", {cpu(wrong_type)});
  TaskRegistry::add(T_WRONG_DIM, "wrong_dim", {cpu(wrong_dim)});
  TaskRegistry::add(T_NO_REQUIREMENT, "no_requirement", {cpu(no_requirement)});
  TaskRegistry::add(T_ACCESSOR_ON_REDUCE, "accessor_on_reduce", {cpu(accessor_on_reduce)});
}

struct Data {
  Region r;
  Partition part;  // 4 disjoint pieces
  Partition halo;  // aliased
  IndexSpace colors;
};

Data make(Context& ctx) {
  Data d;
  auto is = ctx.create_index_space(Rect<1>({0}, {99}));
  auto fs = ctx.create_field_space({{FA, sizeof(double)}, {FB, sizeof(double)}});
  d.r = ctx.create_region(is, fs);
  d.colors = ctx.create_index_space(Rect<1>({0}, {3}));
  d.part = ctx.partition_equal(d.r, d.colors);
  d.halo = ctx.partition_by_rects(
      d.r, d.colors, [&](const DomainPoint& c) { return grow(d.part.rect(c), 2) & d.r.bounds(); });
  return d;
}

// Runs program and expects a reprise::Error whose message contains every one of `words`.
void expect_error(const std::vector<std::string>& flags,
                  const std::function<void(Context&, Data&)>& program,
                  std::initializer_list<const char*> words) {
  register_all();
  try {
    reprise::run(flags, [&](Context& ctx) {
      Data d = make(ctx);
      program(ctx, d);
    });
    FAIL() << "expected a reprise::Error";
  } catch (const Error& e) {
    for (const char* w : words)
      EXPECT_NE(std::string(e.what()).find(w), std::string::npos)
          << "message lacks '" << w << "': " << e.what();
  }
}
}  // namespace

TEST(Errors, OutOfBoundsAccessorUseWithBoundsChecks) {
  expect_error({"-lg:bounds_checks"},
               [](Context& ctx, Data& d) {
                 TaskLauncher l(T_OOB);
                 l.add(d.part[Point<1>(0)], Privilege::ReadWrite, {FA});
                 ctx.execute(l).wait();
               },
               {"oob", "outside", "requirement 0", "field 0"});
}

TEST(Errors, FieldNotNamedByTheRequirement) {
  expect_error({},
               [](Context& ctx, Data& d) {
                 TaskLauncher l(T_WRONG_FIELD);
                 l.add(d.r, Privilege::ReadOnly, {FA});
                 ctx.execute(l).wait();
               },
               {"wrong_field", "does not name field 1"});
}

TEST(Errors, WritableAccessorOnAReadOnlyRequirement) {
  expect_error({},
               [](Context& ctx, Data& d) {
                 TaskLauncher l(T_WRITE_RO);
                 l.add(d.r, Privilege::ReadOnly, {FA});
                 ctx.execute(l).wait();
               },
               {"write_ro", "READ_ONLY"});
}

TEST(Errors, AccessorTypeOfTheWrongSize) {
  expect_error({},
               [](Context& ctx, Data& d) {
                 TaskLauncher l(T_WRONG_TYPE);
                 l.add(d.r, Privilege::ReadOnly, {FA});
                 ctx.execute(l).wait();
               },
               {"wrong_type", "8 bytes"});
}

TEST(Errors, AccessorOfTheWrongDimension) {
  expect_error({},
               [](Context& ctx, Data& d) {
                 TaskLauncher l(T_WRONG_DIM);
                 l.add(d.r, Privilege::ReadOnly, {FA});
                 ctx.execute(l).wait();
               },
               {"wrong_dim", "requirement 0 is 1-d, the accessor is 2-d"});
}

TEST(Errors, AccessorOfARequirementTheTaskDoesNotHave) {
  expect_error({},
               [](Context& ctx, Data& d) {
                 TaskLauncher l(T_NO_REQUIREMENT);
                 l.add(d.r, Privilege::ReadOnly, {FA});
                 ctx.execute(l).wait();
               },
               {"no_requirement", "requirement 1 does not exist (the task has 1)"});
}

TEST(Errors, AccessorOnAReductionRequirement) {
  expect_error({},
               [](Context& ctx, Data& d) {
                 TaskLauncher l(T_ACCESSOR_ON_REDUCE);
                 l.add_reduction(d.r, ReductionOp::Sum, {FA});
                 ctx.execute(l).wait();
               },
               {"accessor_on_reduce", "REDUCE; use reducer"});
}

// In a replayed trace the accessors are refused just the same (the replay shares its
// template's requirements and instances).
TEST(Errors, AccessorRefusedInAReplay) {
  expect_error({"-lg:no_auto_tracing"},
               [](Context& ctx, Data& d) {
                 for (int i = 0; i < 3; ++i) {
                   ctx.begin_trace(1);
                   IndexLauncher l(T_WRONG_DIM, d.colors.bounds(), TaskArgs{int(i == 2)});
                   l.add(d.part, Projection::identity(), Privilege::ReadOnly, {FA});
                   ctx.execute(l);
                   ctx.end_trace(1);
                   ctx.fence().wait();
                 }
               },
               {"wrong_dim", "is 1-d, the accessor is 2-d"});
}

// A launch without a future map has nothing to report its failure through but the program's
// next wait: here a fence after the failing replay.
TEST(Errors, AFailingLaunchWithoutAFutureMapIsReportedByTheNextWait) {
  expect_error({"-lg:no_auto_tracing"},
               [](Context& ctx, Data& d) {
                 for (int i = 0; i < 3; ++i) {
                   ctx.begin_trace(1);
                   IndexLauncher l(T_WRONG_DIM, d.colors.bounds(), TaskArgs{int(i == 2)});
                   l.set_future_map(false);
                   l.add(d.part, Projection::identity(), Privilege::ReadOnly, {FA});
                   EXPECT_FALSE(ctx.execute(l).valid());
                   ctx.end_trace(1);
                   ctx.fence().wait();
                 }
                 ADD_FAILURE() << "the fence after the failing replay did not report it";
               },
               {"wrong_dim", "is 1-d, the accessor is 2-d"});
}

TEST(Errors, UnknownTaskId) {
  expect_error({}, [](Context& ctx, Data&) { ctx.execute(TaskLauncher(424242)); },
               {"execute", "unknown task id 424242"});
}

TEST(Errors, LaunchDomainDoesNotMatchTheColorSpace) {
  expect_error({},
               [](Context& ctx, Data& d) {
                 IndexLauncher l(T_NOOP, Rect<1>({0}, {7}));
                 l.add(d.part, Projection::identity(), Privilege::ReadOnly, {FA});
                 ctx.execute(l);
               },
               {"index task 'noop'", "requirement 0", "does not match the color space"});
}

TEST(Errors, ProjectionLeavesThePartition) {
  expect_error({},
               [](Context& ctx, Data& d) {
                 IndexLauncher l(T_NOOP, d.colors);
                 l.add(d.part, Projection::translate(Point<1>(1)), Privilege::ReadOnly, {FA});
                 ctx.execute(l);
               },
               {"index task 'noop'", "leaves the partition", "(3)", "(4)"});
}

TEST(Errors, UseOfADestroyedRegion) {
  expect_error({},
               [](Context& ctx, Data& d) {
                 ctx.destroy(d.r);
                 TaskLauncher l(T_NOOP);
                 l.add(d.r, Privilege::ReadOnly, {FA});
                 ctx.execute(l);
               },
               {"task 'noop'", "destroyed"});
  expect_error({},
               [](Context& ctx, Data& d) {
                 ctx.destroy(d.part);
                 IndexLauncher l(T_NOOP, d.colors);
                 l.add(d.part, Projection::identity(), Privilege::ReadOnly, {FA});
                 ctx.execute(l);
               },
               {"index task 'noop'", "destroyed"});
}

TEST(Errors, WritesThroughAnAliasedPartitionOrAConstantProjection) {
  expect_error({},
               [](Context& ctx, Data& d) {
                 IndexLauncher l(T_NOOP, d.colors);
                 l.add(d.halo, Projection::identity(), Privilege::ReadWrite, {FA});
                 ctx.execute(l);
               },
               {"aliased partition"});
  expect_error({},
               [](Context& ctx, Data& d) {
                 IndexLauncher l(T_NOOP, d.colors);
                 l.add(d.part, Projection::constant(Point<1>(0)), Privilege::WriteDiscard, {FA});
                 ctx.execute(l);
               },
               {"several points"});
}

TEST(Errors, InterferingRequirementsOfOneLaunch) {
  expect_error({},
               [](Context& ctx, Data& d) {
                 IndexLauncher l(T_NOOP, d.colors);
                 l.add(d.part, Projection::identity(), Privilege::ReadWrite, {FA});
                 l.add(d.halo, Projection::identity(), Privilege::ReadOnly, {FA});
                 ctx.execute(l);
               },
               {"requirements 0 and 1 interfere"});
}

TEST(Errors, FieldNotInTheFieldSpace) {
  expect_error({},
               [](Context& ctx, Data& d) {
                 TaskLauncher l(T_NOOP);
                 l.add(d.r, Privilege::ReadOnly, {77});
                 ctx.execute(l);
               },
               {"task 'noop'", "field 77"});
}

TEST(Errors, MemoryFullNamesTheMemoryAndSizes) {
  expect_error({"-ll:csize", "1"},
               [](Context& ctx, Data&) {
                 auto is = ctx.create_index_space(Rect<1>({0}, {1 << 20}));
                 auto fs = ctx.create_field_space({{FA, 8}});
                 Region big = ctx.create_region(is, fs);
                 TaskLauncher l(T_NOOP);
                 l.add(big, Privilege::ReadWrite, {FA});
                 ctx.execute(l).wait();
               },
               {"sysmem0", "capacity 1 MiB", "8.0 MiB"});
}

TEST(Errors, BadFillsCopiesAndReductions) {
  expect_error({}, [](Context& ctx, Data& d) { ctx.fill(d.r, FA, 1.0f); }, {"fill", "4 bytes"});
  expect_error({},
               [](Context& ctx, Data& d) {
                 ctx.copy(CopyLauncher{d.r, {FA}, d.part[Point<1>(0)], {FB}});
               },
               {"copy", "do not contain"});
  expect_error({},
               [](Context& ctx, Data& d) {
                 ctx.copy(CopyLauncher{d.r, {FA}, d.r, {FA}});
               },
               {"copy", "overlap"});
  expect_error({},
               [](Context& ctx, Data& d) {
                 ctx.reduce(ctx.execute(IndexLauncher(T_NOOP, d.colors)), ReductionOp::Sum);
               },
               {"reduce", "does not return a number"});
}

TEST(Errors, FutureOfTheWrongType) {
  TaskRegistry::add(9250, "seven", {cpu(+[](TaskContext&) -> std::int64_t { return 7; })});
  expect_error({}, [](Context& ctx, Data&) { (void)ctx.execute(TaskLauncher(9250)).get<double>(); },
               {"Future::get", "int64", "double"});
}

TEST(Errors, ApplicationContinuesToFailFastAfterAnError) {
  // After a task failed, the next op issued rethrows at once instead of running on.
  register_all();
  int issued_after = 0;
  EXPECT_THROW(reprise::run({},
                            [&](Context& ctx) {
                              Data d = make(ctx);
                              TaskLauncher bad(T_WRONG_FIELD);
                              bad.add(d.r, Privilege::ReadOnly, {FA});
                              ctx.execute(bad);
                              ctx.fence().wait();
                              ++issued_after;
                            }),
               Error);
  EXPECT_EQ(issued_after, 0);
}

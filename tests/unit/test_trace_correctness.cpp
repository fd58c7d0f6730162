// Regression tests for wrong results and hangs around traces (issue 25): a replay that read a
// stale instance with three memories, end_trace deadlocking when a trace holds more ops than
// the window, and hangs when a task fails while a trace is open.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>

using namespace reprise;

namespace {

enum : TaskID { T_READ_ON0 = 9700, T_READ_ON1, T_WRITE_ON2, T_STEP, T_FAIL };
enum : FieldID { FX = 0 };

// Runs fn, failing the test (and ending the process: a hung runtime cannot be joined) when it
// takes longer than `seconds`.
template <class Fn>
void within(double seconds, const char* what, Fn&& fn) {
  auto done = std::async(std::launch::async, std::forward<Fn>(fn));
  if (done.wait_for(std::chrono::duration<double>(seconds)) == std::future_status::timeout) {
    std::fprintf(stderr, "%s: no result after %.0f s (a hang)\n", what, seconds);
    std::fflush(stderr);
    std::_Exit(1);
  }
  done.get();
}

std::int64_t weighted_sum(TaskContext& tc) {
  auto x = tc.accessor<const std::int64_t, 1>(0, FX);
  std::int64_t s = 0;
  for (auto p : Rect<1>(tc.domain(0))) s += x[p] * (p[0] + 1);
  return s;
}
void write_step(TaskContext& tc) {
  auto x = tc.accessor<std::int64_t, 1>(0, FX);
  const auto salt = tc.args<std::int64_t>();
  for (auto p : Rect<1>(tc.domain(0))) x[p] = x[p] * 3 + salt + p[0];
}
void add_one(TaskContext& tc) {
  auto x = tc.accessor<std::int64_t, 1>(0, FX);
  for (auto p : Rect<1>(tc.domain(0))) x[p] += 1;
}
void fail_later(TaskContext&) {
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  throw Error("deliberate task failure");
}

void register_all() {
  TaskRegistry::add(T_READ_ON0, "read_on0", {cpu(weighted_sum)});
  TaskRegistry::add(T_READ_ON1, "read_on1", {cpu(weighted_sum)});
  TaskRegistry::add(T_WRITE_ON2, "write_on2", {cpu(write_step)});
  TaskRegistry::add(T_STEP, "add_one", {cpu(add_one)});
  TaskRegistry::add(T_FAIL, "fail_later", {cpu(fail_later)});
}

// With -ll:cpu 3 -ll:numa 3, CPU k's memory is k: the task id says where a task runs.
class PinnedMapper : public Mapper {
 public:
  Processor select_processor(const MapperTaskInfo& t, const MachineInfo&) override {
    switch (t.task) {
      case T_READ_ON0:
        return Processor{ProcessorKind::CPU, 0, 0};
      case T_READ_ON1:
        return Processor{ProcessorKind::CPU, 1, 0};
      default:
        return Processor{ProcessorKind::CPU, 2, 0};
    }
  }
};

}  // namespace

// Before the loop the data is valid in memories 1 and 2. The first iteration (recorded) copies
// it into memory 0 and reads it in place in memory 1; its write then leaves only memory 2
// valid. The second iteration must not replay that recording: memory 1 is stale now. (The
// recording's preconditions named memories 0 and 2 but not 1, because the copy into 0 marked
// the whole piece as the trace's own doing.)
TEST(TraceCorrectness, ReplayWithThreeMemoriesDoesNotReadAStaleInstance) {
  register_all();
  constexpr coord_t n = 32;
  for (const bool inorder : {false, true}) {
    std::vector<std::string> flags = {"-ll:cpu", "3", "-ll:numa", "3", "-lg:no_auto_tracing"};
    if (inorder) flags.push_back("-lg:inorder");
    std::vector<std::int64_t> model(n, 1);
    auto model_write = [&](std::int64_t salt) {
      for (coord_t i = 0; i < n; ++i) model[std::size_t(i)] = model[std::size_t(i)] * 3 + salt + i;
    };
    auto model_read = [&] {
      std::int64_t s = 0;
      for (coord_t i = 0; i < n; ++i) s += model[std::size_t(i)] * (i + 1);
      return s;
    };
    std::uint64_t replays = 0;
    within(60, "stale-instance test", [&] {
      reprise::run(
          flags,
          [&](Context& ctx) {
            Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {n - 1})),
                                         ctx.create_field_space({{FX, sizeof(std::int64_t)}}));
            ctx.fill(r, FX, std::int64_t(1));
            auto write = [&](std::int64_t salt) {
              TaskLauncher l(T_WRITE_ON2, TaskArgs{salt});
              l.add(r, Privilege::ReadWrite, {FX});
              ctx.execute(l);
              model_write(salt);
            };
            auto read = [&](TaskID on) {
              TaskLauncher l(on);
              l.add(r, Privilege::ReadOnly, {FX});
              return ctx.execute(l);
            };
            write(5);
            EXPECT_EQ(read(T_READ_ON1).get<std::int64_t>(), model_read());
            for (int it = 0; it < 5; ++it) {
              ctx.begin_trace(1);
              Future a = read(T_READ_ON0);
              Future b = read(T_READ_ON1);
              const std::int64_t want = model_read();
              write(it);
              ctx.end_trace(1);
              EXPECT_EQ(a.get<std::int64_t>(), want) << "iteration " << it;
              EXPECT_EQ(b.get<std::int64_t>(), want) << "iteration " << it << " (memory 1)";
            }
            replays = ctx.trace_stats().replays;
          },
          std::make_unique<PinnedMapper>());
    });
    EXPECT_GT(replays, 0u) << "the loop should reach a replayable state";
  }
}

// A trace holding more ops than -lg:window lets through: end_trace must not wait for the window
// (the ops it waits for are held until end_trace arrives).
TEST(TraceCorrectness, ManualTraceLongerThanTheWindow) {
  register_all();
  struct Case {
    std::vector<std::string> flags;
    int launches;
  };
  const std::vector<Case> cases = {
      {{"-lg:window", "4", "-lg:no_auto_tracing"}, 6},
      {{"-lg:window", "4"}, 9},
      {{"-lg:window", "4", "-lg:inorder"}, 6},
      {{"-ll:cpu", "1"}, 600},  // more than the default window
  };
  for (const Case& c : cases) {
    std::int64_t got = 0;
    within(60, "long-trace test", [&] {
      reprise::run(c.flags, [&](Context& ctx) {
        Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {63})),
                                     ctx.create_field_space({{FX, sizeof(std::int64_t)}}));
        auto colors = ctx.create_index_space(Rect<1>({0}, {3}));
        Partition p = ctx.partition_equal(r, colors);
        ctx.fill(r, FX, std::int64_t(0));
        for (int it = 0; it < 3; ++it) {
          ctx.begin_trace(1);
          for (int k = 0; k < c.launches; ++k) {
            IndexLauncher l(T_STEP, colors);
            l.add(p, Projection::identity(), Privilege::ReadWrite, {FX});
            ctx.execute(l);
          }
          ctx.end_trace(1);
        }
        TaskLauncher l(T_READ_ON0);
        l.add(r, Privilege::ReadOnly, {FX});
        got = ctx.execute(l).get<std::int64_t>();
      });
    });
    // Every element was incremented 3 * launches times; sum of (i + 1) over 64 points = 2080.
    EXPECT_EQ(got, std::int64_t(3) * c.launches * 2080) << c.flags.front() << " " << c.launches;
  }
}

// A task fails while the application is inside a trace (before it, or in it): the program ends
// with that error instead of waiting forever for the trace's held ops.
TEST(TraceCorrectness, TaskFailureWhileATraceIsOpenEndsTheProgram) {
  register_all();
  const std::vector<std::vector<std::string>> configs = {
      {}, {"-lg:no_auto_tracing"}, {"-lg:inorder"}, {"-lg:window", "4"}, {"-ll:cpu", "1"}};
  for (const auto& flags : configs) {
    for (const bool fail_inside : {false, true}) {
      std::string error;
      if (std::getenv("REPRISE_TEST_VERBOSE"))
        std::fprintf(stderr, "flags %s inside %d\n", flags.empty() ? "" : flags.front().c_str(),
                     int(fail_inside));
      within(60, "failure-in-trace test", [&] {
        try {
          reprise::run(flags, [&](Context& ctx) {
            Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {63})),
                                         ctx.create_field_space({{FX, sizeof(std::int64_t)}}));
            auto colors = ctx.create_index_space(Rect<1>({0}, {3}));
            Partition p = ctx.partition_equal(r, colors);
            if (!fail_inside) ctx.execute(TaskLauncher(T_FAIL));
            for (int it = 0; it < 3; ++it) {
              ctx.begin_trace(1);
              if (fail_inside && it == 1) ctx.execute(TaskLauncher(T_FAIL));
              IndexLauncher l(T_STEP, colors);
              l.add(p, Projection::identity(), Privilege::ReadWrite, {FX});
              ctx.execute(l);
              std::this_thread::sleep_for(std::chrono::milliseconds(60));  // the failure lands
              ctx.end_trace(1);
            }
          });
        } catch (const Error& e) {
          error = e.what();
        }
      });
      EXPECT_NE(error.find("deliberate task failure"), std::string::npos)
          << "flags: " << (flags.empty() ? "" : flags.front()) << " inside: " << fail_inside
          << " error: '" << error << "'";
    }
  }
}

// The application itself throws inside a trace: the error comes back, nothing hangs.
TEST(TraceCorrectness, ApplicationErrorInsideATrace) {
  register_all();
  for (const auto& flags : std::vector<std::vector<std::string>>{{}, {"-lg:inorder"}}) {
    std::string error;
    within(60, "application-error test", [&] {
      try {
        reprise::run(flags, [&](Context& ctx) {
          Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {63})),
                                       ctx.create_field_space({{FX, sizeof(std::int64_t)}}));
          ctx.begin_trace(7);
          TaskLauncher l(T_STEP);
          l.add(r, Privilege::ReadWrite, {FX});
          ctx.execute(l);
          throw Error("the application gave up");
        });
      } catch (const Error& e) {
        error = e.what();
      }
    });
    EXPECT_NE(error.find("the application gave up"), std::string::npos) << error;
  }
}

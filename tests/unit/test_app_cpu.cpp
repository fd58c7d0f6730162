// -ll:app_cpu: the application thread runs the last CPU's points while it waits, in place of a
// worker thread of that CPU's own (by default where the application thread and the CPU workers
// would outnumber the cores).
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "error_text.h"
#include "runtime_threads.h"

using namespace reprise;

namespace {
enum : TaskID {
  T_ZERO = 9700,
  T_NEXT,
  T_ON_APP,
  T_READ_FOREIGN,
  T_ISSUED,
  T_BUMP,
  T_FAIL,
  T_PROBE,
  T_SLEEP
};
enum : FieldID { FV = 0 };

std::thread::id g_app_thread;
Future g_foreign;  // a future no task is given

std::int64_t zero(TaskContext&) {
  return 0;
}
std::int64_t next(TaskContext& tc) {
  return tc.future<std::int64_t>(0) + 1;
}
// 1 if the point ran on the application's thread, else 0.
std::atomic<int> g_on_app_ran{0};
std::int64_t on_app(TaskContext&) {
  g_on_app_ran.fetch_add(1);
  return std::this_thread::get_id() == g_app_thread ? 1 : 0;
}
std::int64_t read_foreign(TaskContext&) {
  return g_foreign.get<std::int64_t>();
}
// How many launches the program had issued when this point ran.
std::atomic<std::int64_t> g_issued{0};
std::int64_t issued(TaskContext&) {
  return g_issued.load();
}

// Adds 1 to every element of its piece.
std::atomic<std::int64_t> g_bumps{0};  // points of bump run so far
void bump(TaskContext& tc) {
  g_bumps.fetch_add(1);
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  for (auto p : Rect<1>(tc.domain(0))) acc[p] += 1;
}

void fail(TaskContext&) {
  throw std::runtime_error("eager point failed");
}
// Sleeps for its argument's milliseconds.
void sleep_ms(TaskContext& tc) {
  std::this_thread::sleep_for(std::chrono::milliseconds(tc.args<int>()));
}

// What a point was given: its argument bytes (hundreds), its per-point argument bytes (tens),
// its futures (units).
std::int64_t probe(TaskContext& tc) {
  std::int64_t futures = 0;
  for (;; ++futures) {
    try {
      (void)tc.future_handle(int(futures));
    } catch (const Error&) {
      break;
    }
  }
  return std::int64_t(tc.arg_bytes().size()) * 100 +
         std::int64_t(tc.local_arg_bytes().size()) * 10 + futures;
}

void register_all() {
  TaskRegistry::add(T_PROBE, "probe", {cpu(probe)});
  TaskRegistry::add(T_FAIL, "fail", {cpu(fail)});
  TaskRegistry::add(T_SLEEP, "sleep", {cpu(sleep_ms)});
  TaskRegistry::add(T_BUMP, "bump", {cpu(bump)});
  TaskRegistry::add(T_ZERO, "zero", {cpu(zero)});
  TaskRegistry::add(T_NEXT, "next", {cpu(next)});
  TaskRegistry::add(T_ON_APP, "on_app", {cpu(on_app)});
  TaskRegistry::add(T_READ_FOREIGN, "read_foreign", {cpu(read_foreign)});
  TaskRegistry::add(T_ISSUED, "issued", {cpu(issued)});
}

// An 8-element region of zeros, and a launch of bump over its pieces of `block` elements.
struct Bumped {
  Region r;
  IndexLauncher launch;
};
// An 8-element region of zeros.
Region zeroed_region(Context& ctx) {
  Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {7})),
                               ctx.create_field_space({{FV, sizeof(std::int64_t)}}));
  ctx.fill(FillLauncher::of(r, {FV}, std::int64_t(0)));
  return r;
}
// A launch of bump over the whole of r.
TaskLauncher bump_all_of(const Region& r) {
  TaskLauncher l(T_BUMP);
  l.add(r, Privilege::ReadWrite, {FV});
  return l;
}
Bumped bumped_region(Context& ctx, coord_t block) {
  Region r = zeroed_region(ctx);
  Partition p = ctx.partition_by_blocks(r, Point<1>{block});
  IndexLauncher l(T_BUMP, p.color_space());
  l.add(p, Projection::identity(), Privilege::ReadWrite, {FV});
  return {r, l};
}

// How many CPU worker threads (rp-cpu*) the runtime started.
int cpu_workers(const std::vector<std::string>& flags) {
  int workers = 0;
  for (const std::string& n : runtime_thread_names(flags))
    workers += n.rfind("rp-cpu", 0) == 0 ? 1 : 0;
  return workers;
}
}  // namespace

TEST(AppCpu, ByDefaultWhereTheApplicationAndTheWorkersWouldOutnumberTheCores) {
  if (std::getenv("REPRISE_ARGS")) GTEST_SKIP() << "REPRISE_ARGS may choose the threads";
  const int cores = usable_cores();
  if (cores <= 0) GTEST_SKIP() << "hwloc does not know the cores";
  const std::string cpus = std::to_string(cores);
  // As many CPUs as cores: the application thread serves the last, no thread is spare.
  EXPECT_EQ(cpu_workers({"-ll:cpu", cpus}), cores - 1);
  EXPECT_EQ(cpu_workers({"-ll:cpu", cpus, "-ll:app_cpu", "0"}), cores);
  // With a utility thread (no inline analysis) the CPUs keep their workers; and while an event
  // trace is recorded (the what-if model gives every CPU a thread).
  EXPECT_EQ(cpu_workers({"-ll:cpu", cpus, "-lg:no_inline_analysis"}), cores);
  const std::string trace = ::testing::TempDir() + "app_cpu_evtrace.txt";
  EXPECT_EQ(cpu_workers({"-ll:cpu", cpus, "-lg:evtrace", trace}), cores);
  std::remove(trace.c_str());
}

TEST(AppCpu, OneCpuServedByTheApplicationThreadAlone) {
  register_all();
  g_app_thread = std::this_thread::get_id();
  reprise::run({"-ll:cpu", "1", "-lg:inline_analysis", "-ll:app_cpu", "1", "-lg:window", "64"},
               [](Context& ctx) {
                 // A chain longer than the window: the application thread runs it while it
                 // waits for the window to drain, and at the end.
                 Future f = ctx.execute(TaskLauncher(T_ZERO));
                 for (int i = 0; i < 3000; ++i) f = ctx.execute(TaskLauncher(T_NEXT).add_future(f));
                 EXPECT_EQ(f.get<std::int64_t>(), 3000);
                 // A program that polls rather than waits still sees its task run.
                 Future polled = ctx.execute(TaskLauncher(T_ON_APP));
                 while (!polled.ready()) std::this_thread::yield();
                 EXPECT_EQ(polled.get<std::int64_t>(), 1);
               });
}

// How many launches were issued when the first of 600 independent ones ran, where the
// application thread is the only CPU (it runs points only when it waits).
std::int64_t issued_at_first_point(std::vector<std::string> flags) {
  register_all();
  std::int64_t first = -1;
  flags.insert(flags.end(), {"-ll:cpu", "1", "-lg:inline_analysis", "-ll:app_cpu", "1"});
  reprise::run(flags, [&](Context& ctx) {
    g_issued = 0;
    std::vector<Future> all;
    for (int i = 0; i < 600; ++i) {
      all.push_back(ctx.execute(TaskLauncher(T_ISSUED)));
      g_issued = i + 1;
    }
    first = all.front().get<std::int64_t>();
  });
  return first;
}

TEST(AppCpu, AShortWindowWhereTheApplicationThreadIsTheOnlyCpu) {
  // -lg:window auto is 64 there (with automatic tracing too, until it finds traces longer
  // than a quarter of it): the first point runs once the window is full, not at the first wait.
  // (Untraced launches run eagerly there, -lg:eager: the window is seen with that off.)
  const std::int64_t untraced = issued_at_first_point({"-lg:no_auto_tracing", "-lg:eager", "0"});
  EXPECT_GE(untraced, 64);
  EXPECT_LE(untraced, 65);
  const std::int64_t with_tracing = issued_at_first_point({"-lg:eager", "0"});
  EXPECT_GE(with_tracing, 64);
  EXPECT_LE(with_tracing, 65);
  // Given, the window is what it says.
  EXPECT_EQ(issued_at_first_point({"-lg:no_auto_tracing", "-lg:eager", "0", "-lg:window", "1024"}),
            600);
  EXPECT_LE(issued_at_first_point({"-lg:no_auto_tracing", "-lg:eager", "0", "-lg:window", "16"}),
            17);
}

// Untraced, each of those launches is issued when every earlier one has completed: it runs
// at once, before execute returns (-lg:eager auto), whatever the window.
TEST(AppCpu, UntracedLaunchesRunEagerlyWhereTheApplicationThreadIsTheOnlyCpu) {
  EXPECT_EQ(issued_at_first_point({"-lg:no_auto_tracing"}), 0);
  EXPECT_EQ(issued_at_first_point({"-lg:no_auto_tracing", "-lg:window", "1024"}), 0);
  // Automatic tracing holds no op of these (their repeats have no trace yet): the same.
  EXPECT_EQ(issued_at_first_point({}), 0);
  // Not where another thread runs points, nor where the runtime is told not to.
  EXPECT_GE(issued_at_first_point({"-lg:no_auto_tracing", "-lg:alone", "0"}), 64);
  EXPECT_GE(issued_at_first_point({"-lg:no_auto_tracing", "-lg:eager", "0"}), 64);
}

const std::vector<std::string> kOneCpu = {"-ll:cpu",     "1", "-lg:inline_analysis",
                                          "-ll:app_cpu", "1", "-lg:no_auto_tracing"};

// An op still in flight — here the hold of an inline mapping, until it is unmapped — keeps
// later launches from running eagerly: a launch that conflicts with it waits for the unmapping,
// and the launches after that one wait for it in turn, where the dependence analysis says.
TEST(AppCpu, LaunchesRunEagerlyOnlyWhenNothingEarlierIsInFlight) {
  register_all();
  reprise::run(kOneCpu, [](Context& ctx) {
    Region r = zeroed_region(ctx);
    TaskLauncher bump_all = bump_all_of(r);
    ctx.execute(bump_all);  // (eager: done when execute returns)
    PhysicalRegion m = ctx.map_region(r, Privilege::ReadWrite, {FV});
    auto x = m.accessor<std::int64_t, 1>(FV);
    EXPECT_EQ(x[Point<1>{3}], 1);
    x[Point<1>{3}] = 10;
    for (int i = 0; i < 3; ++i) ctx.execute(bump_all);
    g_issued = 0;
    Future later = ctx.execute(TaskLauncher(T_ISSUED));  // (no region: waits for nothing)
    g_issued = 1;
    // Not one of them has run: the mapping holds the region, and the last waits its turn.
    EXPECT_EQ(x[Point<1>{3}], 10);
    EXPECT_EQ(x[Point<1>{4}], 1);
    ctx.unmap_region(m);
    EXPECT_EQ(later.get<std::int64_t>(), 1);
    ctx.fence().wait();
    // Everything has completed: eager again.
    ctx.execute(bump_all);
    PhysicalRegion after = ctx.map_region(r, Privilege::ReadOnly, {FV});
    auto y = after.accessor<const std::int64_t, 1>(FV);
    EXPECT_EQ(y[Point<1>{3}], 14);
    EXPECT_EQ(y[Point<1>{4}], 5);
    ctx.unmap_region(after);
  });
}

// A replayed trace whose every earlier op has completed runs its points inline too, in the
// template's order, before end_trace returns (its recording, analysed, does not).
TEST(AppCpu, AReplayRunsInlineWhenNothingEarlierIsInFlight) {
  register_all();
  for (const bool eager : {true, false}) {
    std::vector<std::string> flags = kOneCpu;
    if (!eager) flags.insert(flags.end(), {"-lg:eager", "0"});
    reprise::run(flags, [&](Context& ctx) {
      auto [r, l] = bumped_region(ctx, 2);
      ctx.fence().wait();
      const auto before = ctx.trace_stats();
      std::int64_t base = 0;
      for (int i = 0; i < 4; ++i) {
        ctx.begin_trace(5);
        for (int k = 0; k < 3; ++k) ctx.execute(l);
        ctx.end_trace(5);
        if (i == 0) {
          ctx.fence().wait();  // (the recording's points ran deferred)
          base = g_bumps.load();
          continue;
        }
        // Nothing waited for: each replay's 12 points have run, or (not eager) none has.
        EXPECT_EQ(g_bumps.load() - base, eager ? 12 * i : 0)
            << "iteration " << i << (eager ? "" : ", -lg:eager 0");
      }
      ctx.fence().wait();
      EXPECT_EQ(ctx.trace_stats().replays - before.replays, 3u);
      PhysicalRegion m = ctx.map_region(r, Privilege::ReadOnly, {FV});
      EXPECT_EQ((m.accessor<const std::int64_t, 1>(FV)[Point<1>{5}]), 12);
      ctx.unmap_region(m);
    });
  }
}

// A point that fails while it runs eagerly fails the program as a deferred one would: the next
// call into the runtime reports it, here the launch after it.
TEST(AppCpu, AFailingEagerLaunchIsReportedByTheNextCall) {
  register_all();
  bool reported = false;
  try {
    reprise::run(kOneCpu, [&](Context& ctx) {
      ctx.execute(TaskLauncher(T_FAIL));
      try {
        ctx.execute(TaskLauncher(T_ZERO));
      } catch (const std::exception& e) {
        reported = std::string(e.what()).find("eager point failed") != std::string::npos;
        throw;
      }
      ADD_FAILURE() << "the launch after the failed one went in";
    });
    ADD_FAILURE() << "run did not report the failure";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("eager point failed"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(reported);
}

// An eager launch's op is the last launch's, renewed once that one has completed
// (Runtime::launch_op): nothing of the last launch — its arguments, per-point arguments,
// futures, future map, requirements or failure — reaches the next.
TEST(AppCpu, ALaunchOnARenewedOpHasNothingOfTheLastOne) {
  register_all();
  reprise::run(kOneCpu, [](Context& ctx) {
    const Domain two(Rect<1>({0}, {1}));
    ArgumentMap per_point;
    per_point.set_point(DomainPoint(0), TaskArgs(std::int32_t(7)));
    IndexLauncher full(T_PROBE, two, TaskArgs(std::int64_t(5)));
    full.set_argument_map(per_point);
    full.add_future(ctx.execute(TaskLauncher(T_ZERO)));
    FutureMap fm = ctx.execute(full);
    EXPECT_EQ(fm.get(DomainPoint(0)).get<std::int64_t>(), 8 * 100 + 4 * 10 + 1);
    EXPECT_EQ(fm.get(DomainPoint(1)).get<std::int64_t>(), 8 * 100 + 1);
    // The same task from bare launchers, at once after: none of it. (One without a future map
    // first: the last launch's map would get its values.)
    IndexLauncher quiet(T_PROBE, two);
    quiet.set_future_map(false);
    ctx.execute(quiet);
    ctx.fence().wait();
    EXPECT_EQ(fm.get(DomainPoint(0)).get<std::int64_t>(), 8 * 100 + 4 * 10 + 1);
    EXPECT_EQ(fm.get(DomainPoint(1)).get<std::int64_t>(), 8 * 100 + 1);
    EXPECT_EQ(ctx.execute(TaskLauncher(T_PROBE)).get<std::int64_t>(), 0);
    ctx.execute(full);
    FutureMap bare = ctx.execute(IndexLauncher(T_PROBE, two));
    EXPECT_EQ(bare.get(DomainPoint(0)).get<std::int64_t>(), 0);
    EXPECT_EQ(bare.get(DomainPoint(1)).get<std::int64_t>(), 0);
    // Requirements: a launcher on one region, then one on another, then the first again.
    Region a = zeroed_region(ctx), b = zeroed_region(ctx);
    TaskLauncher bump_a = bump_all_of(a), bump_b = bump_all_of(b);
    for (int i = 0; i < 3; ++i) ctx.execute(bump_a);
    ctx.execute(bump_b);
    ctx.execute(bump_a);
    PhysicalRegion ma = ctx.map_region(a, Privilege::ReadOnly, {FV});
    PhysicalRegion mb = ctx.map_region(b, Privilege::ReadOnly, {FV});
    EXPECT_EQ((ma.accessor<const std::int64_t, 1>(FV)[Point<1>{6}]), 4);
    EXPECT_EQ((mb.accessor<const std::int64_t, 1>(FV)[Point<1>{6}]), 1);
    ctx.unmap_region(ma);
    ctx.unmap_region(mb);
  });
  // A run whose eager launch failed leaves nothing to the next run's launches (within a run the
  // failure is the program's: AFailingEagerLaunchIsReportedByTheNextCall).
  EXPECT_THROW(reprise::run(kOneCpu,
                            [](Context& ctx) {
                              ctx.execute(TaskLauncher(T_FAIL));
                              ctx.fence().wait();
                            }),
               std::exception);
  reprise::run(kOneCpu, [](Context& ctx) {
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(ctx.execute(TaskLauncher(T_PROBE)).get<std::int64_t>(), 0);
  });
}

// The utility-time figure (util_busy_us) is the analysis', not the tasks' that run eagerly
// inside it: 64 points of 2 ms each would be 128 ms.
TEST(AppCpu, EagerPointsDoNotCountAsAnalysisTime) {
  register_all();
  reprise::run(kOneCpu, [](Context& ctx) {
    const auto before = ctx.trace_stats();
    for (int i = 0; i < 64; ++i) ctx.execute(TaskLauncher(T_SLEEP, TaskArgs{2}));
    ctx.fence().wait();
    const double busy_ms =
        double(ctx.trace_stats().utility_busy_ns - before.utility_busy_ns) * 1e-6;
    EXPECT_LT(busy_ms, 32.0);
  });
}

// The same where every launch is inside a manual trace (4 ops each): a trace's ops never wait
// for the window (end_trace releases them), so the trace waits before it begins — its marks are
// not ops the window counts.
TEST(AppCpu, AManuallyTracedLoopKeepsToTheWindow) {
  register_all();
  for (const std::int64_t window : {16, 64}) {
    std::int64_t first = -1;
    reprise::run({"-ll:cpu", "1", "-lg:inline_analysis", "-ll:app_cpu", "1", "-lg:window",
                  std::to_string(window), "-lg:no_auto_tracing"},
                 [&](Context& ctx) {
                   g_issued = 0;
                   std::vector<Future> all;
                   for (int i = 0; i < 600; ++i) {
                     if (i % 4 == 0) ctx.begin_trace(7);
                     all.push_back(ctx.execute(TaskLauncher(T_ISSUED)));
                     g_issued = i + 1;
                     if (i % 4 == 3) ctx.end_trace(7);
                   }
                   first = all.front().get<std::int64_t>();
                 });
    EXPECT_GE(first, window / 2) << "window " << window;
    EXPECT_LE(first, window + 4) << "window " << window;
  }
}

// With automatic tracing the window there starts at 64 and grows with the longest trace the
// tracer may hold (a quarter of it): once a long loop's maximal trace (64 ops) is found, to
// 256. Held to 64, the tracer would have to let those ops go untraced before the trace is
// whole: the loop would keep its short traces, four times as many replays.
TEST(AppCpu, TheWindowGrowsWithTheTracesAutomaticTracingHolds) {
  register_all();
  auto replays = [](std::vector<std::string> flags) {
    flags.insert(flags.end(), {"-ll:cpu", "1", "-lg:inline_analysis", "-ll:app_cpu", "1"});
    std::uint64_t n = 0;
    reprise::run(flags, [&](Context& ctx) {
      auto [r, l] = bumped_region(ctx, 4);
      const auto before = ctx.trace_stats();
      for (int i = 0; i < 8000; ++i) ctx.execute(l);
      ctx.fence().wait();
      n = ctx.trace_stats().replays - before.replays;
      PhysicalRegion m = ctx.map_region(r, Privilege::ReadOnly, {FV});
      auto x = m.accessor<const std::int64_t, 1>(FV);
      for (coord_t i = 0; i < 8; ++i) EXPECT_EQ(x[Point<1>{i}], 8000);
      ctx.unmap_region(m);
    });
    return n;
  };
  const std::uint64_t growing = replays({}), held = replays({"-lg:window", "64"});
  EXPECT_GT(growing, 0u);
  EXPECT_LT(4 * growing, 3 * held) << growing << " replays against " << held;
}

// Once a loop's automatic traces run back to back, the ops that go on its run are handed to the
// memoizer as they are issued (-lg:auto_trace:follow), and withdrawn where anything else comes
// first: here an op off the run, a wait on an op handed on, a fence. The tracer sees the same
// ops either way and decides alike: the same log, op by op, and the same data.
TEST(AppCpu, ASettledLoopsOpsAreHandedOnAsTheyAreIssued) {
  register_all();
  const std::string log_path = ::testing::TempDir() + "reprise_followed.log";
  auto run_loop = [&](const char* follow) {
    std::vector<std::string> flags = {"-ll:cpu",
                                      "1",
                                      "-lg:inline_analysis",
                                      "-ll:app_cpu",
                                      "1",
                                      "-lg:auto_trace:follow",
                                      follow,
                                      "-lg:auto_trace:log",
                                      log_path};
    const std::int64_t bumps = g_bumps.load();
    reprise::run(flags, [&](Context& ctx) {
      Region r = zeroed_region(ctx);
      const TaskLauncher bump_all = bump_all_of(r);
      for (int i = 0; i < 1500; ++i) {
        Future f = ctx.execute(bump_all);
        if (i == 700) ctx.execute(TaskLauncher(T_ZERO));  // off the run
        if (i == 900) f.wait();                           // on an op handed on
        if (i == 1100) ctx.fence();
      }
      PhysicalRegion m = ctx.map_region(r, Privilege::ReadOnly, {FV});
      auto x = m.accessor<const std::int64_t, 1>(FV);
      for (coord_t i = 0; i < 8; ++i) EXPECT_EQ(x[Point<1>{i}], 1500) << "follow " << follow;
      ctx.unmap_region(m);
    });
    EXPECT_EQ(g_bumps.load() - bumps, 1500);
    std::ifstream in(log_path);
    std::vector<std::string> lines;
    std::uint64_t ahead = 0, withdrawn = 0;
    for (std::string line; std::getline(in, line);)
      if (std::sscanf(line.c_str(), "# traces_ahead %lu withdrawn %lu", &ahead, &withdrawn) != 2)
        lines.push_back(line);
    return std::make_tuple(lines, ahead, withdrawn);
  };
  const auto [held_log, held_ahead, held_withdrawn] = run_loop("0");
  const auto [followed_log, ahead, withdrawn] = run_loop("auto");
  EXPECT_EQ(held_ahead + held_withdrawn, 0u);
  // Most of the 1,500 ops went in traces issued over ops handed on ahead (16 ops a trace); the
  // three interruptions withdrew some.
  EXPECT_GT(ahead, 50u);
  EXPECT_GT(withdrawn, 0u);
  EXPECT_EQ(followed_log, held_log);
  EXPECT_GT(held_log.size(), 1500u);
}

TEST(AppCpu, TheLastCpusPointsRunOnTheApplicationThread) {
  register_all();
  g_app_thread = std::this_thread::get_id();
  // No stealing: each CPU runs the points mapped to it, the last CPU's on the application
  // thread, the first's on its worker.
  reprise::run({"-ll:cpu", "2", "-lg:inline_analysis", "-ll:app_cpu", "1", "-ll:steal_ns", "0"},
               [](Context& ctx) {
                 FutureMap fm = ctx.execute(IndexLauncher(T_ON_APP, Domain(Rect<1>({0}, {7}))));
                 std::int64_t on_app = 0;
                 for (int p = 0; p < 8; ++p) on_app += fm.get(Point<1>{p}).get<std::int64_t>();
                 EXPECT_GT(on_app, 0);
                 EXPECT_LT(on_app, 8);
               });
}

// Beside a CPU worker, a launch issued when every earlier op has completed runs at once on the
// application thread — its points on both CPUs — while sampled points are shorter than
// -ll:keep_all_ns (too short to be worth a hand-off); not points that run longer, nor with
// -ll:keep_all_ns 0.
std::uint64_t points_inline(Context& ctx) {
  return ctx.trace_stats().points_inline;
}

TEST(AppCpu, ShortPointsRunOnTheApplicationThreadBesideAWorker) {
  register_all();
  g_app_thread = std::this_thread::get_id();
  const std::vector<std::string> two = {"-ll:cpu",     "2", "-lg:inline_analysis",
                                        "-ll:app_cpu", "1", "-lg:no_auto_tracing"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> flags = two;
    flags.insert(flags.end(), more.begin(), more.end());
    return flags;
  };
  // (A generous threshold: a sanitizer's or a busy machine's bump still counts as short.)
  reprise::run(with({"-ll:keep_all_ns", "50000000"}), [](Context& ctx) {
    Bumped b = bumped_region(ctx, 1);  // 8 points, over both CPUs
    for (int i = 0; i < 100; ++i) ctx.execute(b.launch);
    ctx.fence().wait();  // (every op completed: the next launch may run at once)
    const std::uint64_t before = points_inline(ctx);
    for (int i = 0; i < 100; ++i) ctx.execute(b.launch);
    EXPECT_EQ(points_inline(ctx) - before, 800u) << "a launch after the wait was handed off";
    FutureMap fm = ctx.execute(IndexLauncher(T_ON_APP, Domain(Rect<1>({0}, {7}))));
    std::int64_t on_app = 0;
    for (int p = 0; p < 8; ++p) on_app += fm.get(Point<1>{p}).get<std::int64_t>();
    EXPECT_EQ(on_app, 8);
    PhysicalRegion m = ctx.map_region(b.r, Privilege::ReadOnly, {FV});
    auto x = m.accessor<const std::int64_t, 1>(FV);
    for (coord_t i = 0; i < 8; ++i) EXPECT_EQ(x[Point<1>{i}], 200);
  });
  // Points of 2 ms: handed to their CPUs, as without eager launches.
  reprise::run(with({}), [](Context& ctx) {
    IndexLauncher naps(T_SLEEP, Domain(Rect<1>({0}, {1})), TaskArgs{2});
    for (int i = 0; i < 3; ++i) ctx.execute(naps);
    ctx.fence().wait();
    for (int i = 0; i < 3; ++i) ctx.execute(naps);
    ctx.fence().wait();
    EXPECT_EQ(points_inline(ctx), 0u);
  });
  reprise::run(with({"-ll:keep_all_ns", "0"}), [](Context& ctx) {
    Bumped b = bumped_region(ctx, 1);
    for (int i = 0; i < 50; ++i) ctx.execute(b.launch);
    ctx.fence().wait();
    for (int i = 0; i < 50; ++i) ctx.execute(b.launch);
    ctx.fence().wait();
    EXPECT_EQ(points_inline(ctx), 0u);
  });
}

// Beside a CPU worker, a task whose point ran long is not run eagerly again — it would hold the
// issue of the ops after it for its whole run, while the worker idles — until one of its points
// is timed short; other tasks still are. (Before: two independent 50 ms launches after short
// ones ran one after the other, 100 ms, at every round.)
TEST(AppCpu, ATaskWhosePointRanLongIsLeftToTheWorkers) {
  register_all();
  // (The points sampled on every thread count as short however slow the machine, 1 ms: what
  // holds a launch back here is its own task's last point, long from 32 ms.)
  reprise::run({"-ll:cpu", "2", "-lg:inline_analysis", "-ll:app_cpu", "1", "-lg:no_auto_tracing",
                "-ll:keep_all_ns", "1000000"},
               [](Context& ctx) {
                 Bumped b = bumped_region(ctx, 1);
                 for (int i = 0; i < 20; ++i) ctx.execute(b.launch);
                 ctx.fence().wait();
                 auto launch_waited = [&](const auto& launcher) {
                   const std::uint64_t before = points_inline(ctx);
                   ctx.execute(launcher);
                   ctx.fence().wait();
                   return points_inline(ctx) - before;
                 };
                 const TaskLauncher long_one(T_SLEEP, TaskArgs{100}),
                     short_one(T_SLEEP, TaskArgs{0});
                 EXPECT_EQ(launch_waited(long_one), 1u) << "its first point was not run eagerly";
                 EXPECT_EQ(launch_waited(long_one), 0u) << "it ran long, and ran eagerly again";
                 EXPECT_EQ(launch_waited(short_one), 0u) << "no point of it was timed short yet";
                 EXPECT_EQ(launch_waited(b.launch), 8u) << "another task is not held back";
                 // Its points are sampled where they run (one in 16 on each thread): short ones
                 // let it run eagerly again.
                 int handed_off = 1;
                 while (handed_off < 200 && launch_waited(short_one) == 0) ++handed_off;
                 EXPECT_LT(handed_off, 200) << "short points never cleared its long run";
               });
}

// Beside CPU workers that wait with nothing to run, eager launches run with the runtime alone
// (no locked instructions: reprise_rt/alone.h); a hand-off — here a fill on the utility
// thread (-ll:util 2) — leaves it first, and the short launches after it let the workers
// finish what they hold, then run at once and alone again, without the program waiting.
std::uint64_t points_inline_alone(Context& ctx) {
  return ctx.trace_stats().points_inline_alone;
}

TEST(AppCpu, EagerLaunchesBesideWaitingWorkersRunAloneAndComeBackWithoutAWait) {
  register_all();
  const std::vector<std::string> flags = {"-ll:cpu",
                                          "2",
                                          "-ll:util",
                                          "2",
                                          "-ll:app_cpu",
                                          "1",
                                          "-lg:inline_analysis",
                                          "-ll:keep_all_ns",
                                          "50000000",
                                          "-lg:no_auto_tracing"};
  // (Patient launches: where other programs hold the cores, as ctest -j2 does, the fill may
  // wait longer than the default 200 µs for one; then a launch would hand off.)
  std::vector<std::string> patient = flags;
  patient.insert(patient.end(), {"-lg:eager_wait_us", "5000000"});
  reprise::run(patient, [](Context& ctx) {
    Bumped b = bumped_region(ctx, 1);  // 8 points over both CPUs
    // No wait at all: the first launches go to the CPUs (no point sampled yet); a later one
    // finds the workers' points short and lets them finish instead, then runs at once.
    int launches = 0;
    while (launches < 20000 && points_inline(ctx) == 0) {
      ctx.execute(b.launch);
      ++launches;
    }
    EXPECT_GT(points_inline(ctx), 0u) << "no launch ran at once without a wait";
    // Fills hand off (to the utility thread) between runs of short launches, 30 times over;
    // the first launch after a fill lets it finish, then runs at once, and those after it too.
    const std::uint64_t before_fills = points_inline(ctx);
    for (int round = 0; round < 30; ++round) {
      ctx.fill(FillLauncher::of(b.r, {FV}, std::int64_t(round)));
      for (int i = 0; i < 10; ++i) ctx.execute(b.launch);
    }
    // (All 2,400 here; without the wait for the fill, none.)
    EXPECT_GE(points_inline(ctx) - before_fills, 240u);
    PhysicalRegion m = ctx.map_region(b.r, Privilege::ReadOnly, {FV});
    auto x = m.accessor<const std::int64_t, 1>(FV);
    for (coord_t i = 0; i < 8; ++i) EXPECT_EQ(x[Point<1>{i}], 29 + 10);
    ctx.unmap_region(m);
    const std::uint64_t before = points_inline(ctx), before_alone = points_inline_alone(ctx);
    ctx.fence().wait();
    for (int i = 0; i < 100; ++i) ctx.execute(b.launch);
    EXPECT_EQ(points_inline(ctx) - before, 800u);
    // (A worker comes back between lists a little after its last op completed — later where
    // other programs hold the cores: the first launches after the wait may still run with
    // locked instructions.)
    for (int i = 0; i < 20000 && points_inline_alone(ctx) - before_alone < 400; ++i)
      ctx.execute(b.launch);
    EXPECT_GE(points_inline_alone(ctx) - before_alone, 400u);
  });
  // -lg:alone 0: eager all the same, never alone.
  std::vector<std::string> shared = flags;
  shared.insert(shared.end(), {"-lg:alone", "0"});
  reprise::run(shared, [](Context& ctx) {
    Bumped b = bumped_region(ctx, 1);
    for (int i = 0; i < 20; ++i) ctx.execute(b.launch);
    ctx.fence().wait();
    for (int i = 0; i < 20; ++i) ctx.execute(b.launch);
    EXPECT_GE(points_inline(ctx), 160u);
    EXPECT_EQ(points_inline_alone(ctx), 0u);
  });
}

TEST(AppCpu, ItsPointsRunElsewhereWhileTheApplicationThreadIsBusy) {
  // While the application thread issues (here: computes, without waiting), the points mapped
  // to its CPU are taken by the other CPU's worker at once — not after -ll:steal_ns (100 ms
  // here), and woken for them where that worker sleeps (it spins 1 ms at most here).
  register_all();
  g_app_thread = std::this_thread::get_id();
  reprise::run({"-ll:cpu", "2", "-lg:inline_analysis", "-ll:app_cpu", "1", "-ll:steal_ns",
                "100000000", "-ll:spin", "1000"},
               [](Context& ctx) {
                 g_on_app_ran = 0;
                 // Sleeping workers first: nothing to run for longer than their spin.
                 std::this_thread::sleep_for(std::chrono::milliseconds(5));
                 FutureMap fm = ctx.execute(IndexLauncher(T_ON_APP, Domain(Rect<1>({0}, {7}))));
                 const auto deadline =
                     std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
                 while (g_on_app_ran.load() < 8 && std::chrono::steady_clock::now() < deadline) {
                 }
                 EXPECT_EQ(g_on_app_ran.load(), 8)
                     << "the application CPU's points waited for the application thread";
                 std::int64_t on_app = 0;
                 for (int p = 0; p < 8; ++p) on_app += fm.get(Point<1>{p}).get<std::int64_t>();
                 EXPECT_EQ(on_app, 0);
               });
}

TEST(AppCpu, APointOnTheApplicationThreadIsStillATask) {
  // Running on the application's thread gives a task body none of the top-level task's
  // rights: a future it was not given is refused as on a worker.
  register_all();
  EXPECT_ERROR(reprise::run({"-ll:cpu", "1", "-lg:inline_analysis", "-ll:app_cpu", "1"},
                            [](Context& ctx) {
                              g_foreign = ctx.execute(TaskLauncher(T_ZERO));
                              g_foreign.wait();
                              ctx.execute(TaskLauncher(T_READ_FOREIGN)).get<std::int64_t>();
                            }),
               "inside a task body");
  g_foreign = Future();
}

TEST(AppCpu, RefusedWhereItCannotServe) {
  EXPECT_ERROR(
      reprise::run({"-ll:cpu", "2", "-lg:no_inline_analysis", "-ll:app_cpu", "1"}, [](Context&) {}),
      "-ll:app_cpu 1");
  EXPECT_ERROR(
      reprise::run({"-ll:cpu", "2", "-lg:inline_analysis", "-ll:app_cpu", "1", "-ll:othr", "2"},
                   [](Context&) {}),
      "-ll:othr");
  EXPECT_ERROR(reprise::run({"-ll:app_cpu", "2"}, [](Context&) {}), "-ll:app_cpu");
}

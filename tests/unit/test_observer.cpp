// Observers (reprise/observer.h) hear of every task point, analysis, replay and wait as it
// ends, with the op, task, point and trace; none once cleared.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace reprise;

namespace {

enum : TaskID { T_OBS_STEP = 9950, T_OBS_SUM };
enum : FieldID { FV = 0 };
constexpr int kPoints = 8, kIters = 6;

void obs_step(TaskContext& tc) {
  auto a = tc.accessor<double, 1>(0, FV);
  for (auto p : Rect<1>(tc.domain(0))) a[p] = a[p] + 1.0;
}
double obs_sum(TaskContext& tc) {
  // (Long enough that the application asks for the sum before it is done, and so waits,
  // however the threads are scheduled: a sum done first left no wait to hear on a loaded
  // machine.)
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto a = tc.accessor<const double, 1>(0, FV);
  double s = 0;
  for (auto p : Rect<1>(tc.domain(0))) s += a[p];
  return s;
}

struct Recorder : Observer {
  std::mutex m;
  std::vector<Activity> seen;
  std::vector<std::string> tasks;  // seen[i].task, copied (valid during the call only)
  void on_activity(const Activity& a) override {
    std::lock_guard<std::mutex> g(m);
    seen.push_back(a);
    tasks.emplace_back(a.task);
  }
  std::size_t count(ActivityKind k) {
    std::lock_guard<std::mutex> g(m);
    std::size_t n = 0;
    for (const Activity& a : seen) n += a.kind == k;
    return n;
  }
};

double traced_loop(std::vector<std::string> flags) {
  double sum = 0;
  flags.push_back("-lg:no_auto_tracing");
  reprise::run(flags, [&](Context& ctx) {
    auto is = ctx.create_index_space(Rect<1>({0}, {63}));
    Region r = ctx.create_region(is, ctx.create_field_space({{FV, 8}}));
    auto points = ctx.create_index_space(Rect<1>({0}, {kPoints - 1}));
    Partition part = ctx.partition_equal(r, points);
    ctx.fill(r, FV, 0.0);
    for (int i = 0; i < kIters; ++i) {
      ctx.begin_trace(3);
      IndexLauncher step(T_OBS_STEP, points);
      step.add(part, Projection::identity(), Privilege::ReadWrite, {FV});
      ctx.execute(step);
      ctx.end_trace(3);
    }
    TaskLauncher s(T_OBS_SUM);
    s.add(r, Privilege::ReadOnly, {FV});
    sum = ctx.execute(s).get<double>();
  });
  return sum;
}

}  // namespace

TEST(Observer, HearsEveryPointAnalysisReplayAndWait) {
  TaskRegistry::add(T_OBS_STEP, "obs_step", {cpu(obs_step)});
  TaskRegistry::add(T_OBS_SUM, "obs_sum", {cpu(obs_sum)});
  auto rec = std::make_shared<Recorder>();
  Observers::add(rec);
  EXPECT_EQ(traced_loop({"-ll:cpu", "2"}), 64.0 * kIters);
  Observers::clear();

  std::map<coord_t, int> per_point;
  int replayed = 0, sums = 0;
  for (std::size_t i = 0; i < rec->seen.size(); ++i) {
    const Activity& a = rec->seen[i];
    EXPECT_LE(a.begin_ns, a.end_ns) << to_string(a.kind);
    if (a.kind != ActivityKind::Task) continue;
    if (rec->tasks[i] == "obs_sum") {
      ++sums;
      continue;
    }
    EXPECT_EQ(rec->tasks[i], "obs_step");
    EXPECT_EQ(a.trace, 3u);
    EXPECT_GT(a.op, 0u);
    ++per_point[a.point[0]];
    replayed += a.replayed;
  }
  EXPECT_EQ(sums, 1);
  ASSERT_EQ(per_point.size(), std::size_t(kPoints));
  for (const auto& [p, n] : per_point) EXPECT_EQ(n, kIters) << "point " << p;
  // The first iteration is recorded, the others replay.
  EXPECT_EQ(replayed, kPoints * (kIters - 1));
  EXPECT_EQ(rec->count(ActivityKind::Replay), std::size_t(kIters - 1));
  EXPECT_EQ(rec->count(ActivityKind::Recording), 1u);
  EXPECT_GE(rec->count(ActivityKind::Analysis), 3u);  // fill, the recorded launch, the sum
  EXPECT_GE(rec->count(ActivityKind::Fill), 1u);
  EXPECT_GE(rec->count(ActivityKind::Wait), 1u);  // the sum's future

  // Cleared: the next runtime has no observer.
  const std::size_t before = rec->seen.size();
  EXPECT_EQ(traced_loop({"-ll:cpu", "1"}), 64.0 * kIters);
  EXPECT_EQ(rec->seen.size(), before);
}

TEST(Observer, NamedRangesNestAndAStopWithoutAStartIsAnError) {
  auto rec = std::make_shared<Recorder>();
  Observers::add(rec);
  reprise::run({"-ll:cpu", "1"}, [](Context& ctx) {
    ctx.start_profiling_range();
    ctx.start_profiling_range();
    ctx.fence().wait();
    ctx.stop_profiling_range("inner");
    ctx.stop_profiling_range("outer");
    EXPECT_THROW(ctx.stop_profiling_range("none"), Error);
  });
  Observers::clear();
  std::vector<std::string> ranges;
  std::uint64_t inner_end = 0, outer_end = 0;
  for (std::size_t i = 0; i < rec->seen.size(); ++i)
    if (rec->seen[i].kind == ActivityKind::Range) {
      ranges.push_back(rec->tasks[i]);
      (rec->tasks[i] == "inner" ? inner_end : outer_end) = rec->seen[i].end_ns;
    }
  EXPECT_EQ(ranges, (std::vector<std::string>{"inner", "outer"}));
  EXPECT_LE(inner_end, outer_end);
  // Without a profiler (no observer, no -lg:prof) nothing is recorded, the check stays.
  reprise::run({"-ll:cpu", "1"}, [](Context& ctx) {
    ctx.start_profiling_range();
    ctx.stop_profiling_range("unrecorded");
    EXPECT_THROW(ctx.stop_profiling_range("none"), Error);
  });
}

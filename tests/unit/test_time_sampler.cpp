// TimeSampler: which plain launches' analyses are timed (Runtime::analysis_time_weight).
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "reprise_rt/time_sampler.h"

using namespace reprise;
using reprise::detail::TimeSampler;

namespace {
enum : TaskID { T_SAMPLED_STEP = 10800 };
enum : FieldID { FV = 0 };

void sampled_step(TaskContext& tc) {
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  for (auto p : Rect<1>(tc.domain(0))) acc[p] += 1;
}
}  // namespace

TEST(TimeSampler, TimesOneInEightAndCountsEachEightTimes) {
  TimeSampler s(12345);
  std::uint64_t timed = 0, total = 0;
  constexpr std::uint64_t kEvents = 80000;
  for (std::uint64_t k = 0; k < kEvents; ++k) {
    const std::uint64_t w = s.weight();
    ASSERT_TRUE(w == 0 || w == TimeSampler::kEvery) << w;
    timed += w != 0;
    total += w;
  }
  // (10,000 expected, one standard deviation ~94: within 4%, whatever the seed, by far.)
  EXPECT_NEAR(double(timed), double(kEvents) / double(TimeSampler::kEvery), 0.04 * kEvents / 8);
  EXPECT_NEAR(double(total), double(kEvents), 0.04 * kEvents);
}

// A program repeating with period P (a trace's ops, a stencil's two timestep shapes, a loop
// of hundreds of ops): every phase is timed about equally often, so that an expensive op at
// one phase is neither missed nor counted for the others. A fixed stride of 8 fails this for
// every even P; a Weyl sequence for periods near Fibonacci numbers (610, 987: phases never
// sampled in 1,000 rounds).
TEST(TimeSampler, SamplesEveryPhaseOfAPeriodicProgramAlike) {
  for (const std::uint64_t period : {2, 3, 4, 6, 8, 13, 16, 21, 24, 144, 233, 610, 987}) {
    TimeSampler s(period);
    std::vector<std::uint64_t> weight(period, 0);
    constexpr std::uint64_t kRounds = 2000;
    for (std::uint64_t r = 0; r < kRounds; ++r)
      for (std::uint64_t p = 0; p < period; ++p) weight[p] += s.weight();
    // (250 samples a phase expected, one standard deviation ~15: 6% of the weight.)
    for (std::uint64_t p = 0; p < period; ++p)
      EXPECT_NEAR(double(weight[p]) / double(kRounds), 1.0, 0.3)
          << "period " << period << ", phase " << p;
  }
}

// Untraced, one shard: the launches' analyses are sampled, and the estimate still counts them —
// 400 launches' analyses far more than a fence's (with no launch counted, the fences alone
// would be left).
TEST(TimeSampler, AnUntracedRunStillReportsItsAnalysisTime) {
  TaskRegistry::add(T_SAMPLED_STEP, "sampled_step", {cpu(sampled_step)});
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"-lg:inline_analysis", "-lg:no_auto_tracing"},
        std::vector<std::string>{"-lg:no_inline_analysis", "-lg:no_auto_tracing"}}) {
    std::uint64_t busy = 0, fence = 0;
    reprise::run(flags, [&](Context& ctx) {
      Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {3})),
                                   ctx.create_field_space({{FV, sizeof(std::int64_t)}}));
      ctx.fill(FillLauncher::of(r, {FV}, std::int64_t(0)));
      TaskLauncher l(T_SAMPLED_STEP);
      l.add(r, Privilege::ReadWrite, {FV});
      ctx.fence().wait();
      for (int k = 0; k < 3; ++k) {  // (the least of three: a fence's analysis preempted)
        const auto before = ctx.trace_stats();
        ctx.fence().wait();
        const std::uint64_t b = ctx.trace_stats().utility_busy_ns - before.utility_busy_ns;
        fence = k == 0 ? b : std::min(fence, b);
      }
      const auto before = ctx.trace_stats();
      for (int i = 0; i < 400; ++i) ctx.execute(l);
      ctx.fence().wait();
      busy = ctx.trace_stats().utility_busy_ns - before.utility_busy_ns;
      PhysicalRegion m = ctx.map_region(r, Privilege::ReadOnly, {FV});
      auto x = m.accessor<const std::int64_t, 1>(FV);
      for (coord_t i = 0; i < 4; ++i) EXPECT_EQ(x[Point<1>{i}], 400);
      ctx.unmap_region(m);
    });
    EXPECT_GT(busy, 10 * fence + 1) << flags[0] << ": a fence " << fence << " ns";
  }
}

// The Apophenia front-end on synthetic token streams, and automatic tracing in the runtime.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <fstream>
#include <map>
#include <random>

#include "autotrace_log.h"
#include "reprise_tracing/auto_tracer.h"

using namespace reprise::tracing;
using autotrace_test::Log;
using autotrace_test::run;
using autotrace_test::sync_options;

namespace {

std::size_t first_replay(const Log& log) {
  for (std::size_t i = 0; i < log.state.size(); ++i)
    if (log.state[i] == 2) return i;
  return log.state.size();
}

// A chain of 1-op steps (3,000 ops: Task Bench's stencil at width 1), then a new phase, a
// 3-op loop (1,000 iterations). The tracer's stats after the first phase and after both
// (flushed); log holds the 6,000 ops.
struct TwoPhases {
  AutoTraceStats after_chain, after_all;
};
TwoPhases chain_then_new_phase(Log& log) {
  TwoPhases stats;
  AutoTracer t(sync_options(), log);
  std::vector<std::uint64_t> s(3000, 1);
  run(t, log, s);
  stats.after_chain = t.stats();
  s.clear();
  for (int i = 0; i < 1000; ++i)
    for (std::uint64_t op : {5, 6, 7}) s.push_back(op);
  run(t, log, s);
  t.flush();
  stats.after_all = t.stats();
  return stats;
}

// Runs `tokens` through a tracer with the synchronous options, then flushes it; gives its
// stats from before the flush.
AutoTraceStats run_then_flush(Log& log, const std::vector<std::uint64_t>& tokens) {
  AutoTracer t(sync_options(), log);
  run(t, log, tokens);
  const AutoTraceStats stats = t.stats();
  t.flush();
  return stats;
}

// Both phases were found and replayed.
void expect_both_phases_replayed(const Log& log) {
  ASSERT_EQ(log.state.size(), 6000u);
  // (Less the recording of the chain's maximal trace, 64 ops, once its run has settled.)
  EXPECT_GE(log.replayed_fraction(100, 3000), 0.97);
  EXPECT_GE(log.replayed_fraction(3300, 6000), 0.95);
}

}  // namespace

TEST(AutoTrace, PlainLoopReachesFullCoverage) {
  Log log;
  {
    AutoTracer t(sync_options(), log);
    std::vector<std::uint64_t> s;
    for (int i = 0; i < 6000; ++i) s.push_back(1 + i % 2);  // stencil: two launches
    run(t, log, s);
    t.flush();
  }
  ASSERT_EQ(log.state.size(), 6000u);
  EXPECT_LT(first_replay(log), 300u);
  // Longer candidates take over as they are found (each switch records once); once traces
  // reach the maximum length, nearly everything replays.
  EXPECT_GE(log.replayed_fraction(400, 5800), 0.85);
  EXPECT_GE(log.replayed_fraction(3000, 5800), 0.95);
}

TEST(AutoTrace, ASettledLoopTakesMaximalTraces) {
  // A stencil's two launches: first traced 6 ops at a time (found by the first early probe,
  // 12 ops, fewer than the 16 a quarter of the maximal length needs: as few periods as reach
  // the minimum length, among those dividing the run seen); once that trace has run back to
  // back for four maximal lengths and its replays have cost, in fixed costs, what recording
  // the loop's maximal version (64 ops) costs (~2,970 ops at the default price), that version
  // is added, recorded once, and replayed from then on — a replay's fixed cost shared by ten
  // times the ops.
  Log log;
  std::vector<std::uint64_t> s;
  for (int i = 0; i < 6000; ++i) s.push_back(1 + i % 2);
  const AutoTraceStats stats = run_then_flush(log, s);
  EXPECT_EQ(stats.loops_lengthened, 1u);
  ASSERT_GT(log.lengths.size(), 20u);
  EXPECT_EQ(log.lengths.front(), 6u);
  // Maximal from then on, but for the ops held at the end (which go in short ones).
  std::size_t maximal = 0, short_ones = 0;
  for (std::size_t k = 0; k + 1 < log.lengths.size(); ++k) {
    const std::size_t ops = log.lengths[k];
    EXPECT_TRUE(ops == 6 || ops == 64) << ops;
    maximal += ops == 64;
    short_ones += ops == 6;
  }
  EXPECT_GE(maximal, (6000u - 3300u) / 64u);
  // Not before the rent was paid: ~495 short replays first.
  EXPECT_GE(short_ones, 480u);
  EXPECT_LE(short_ones, 520u);
  // (Less the maximal trace's recording.)
  EXPECT_GE(log.replayed_fraction(1000, 5900), 0.98);
}

TEST(AutoTrace, ALoopThatEndsSoonKeepsItsShortTrace) {
  // 1,000 iterations (Task Bench's METG runs): the maximal trace's recording would never be
  // repaid, so it is not made; a lower price makes it at once.
  std::vector<std::uint64_t> s;
  for (int i = 0; i < 2000; ++i) s.push_back(1 + i % 2);
  Log log;
  EXPECT_EQ(run_then_flush(log, s).loops_lengthened, 0u);
  EXPECT_GE(log.replayed_fraction(100, 1950), 0.99);
  AutoTraceOptions cheap = sync_options();
  cheap.record_op_in_replays = 0.5;
  Log log2;
  AutoTracer t(cheap, log2);
  run(t, log2, s);
  EXPECT_EQ(t.stats().loops_lengthened, 1u);
  t.flush();
}

TEST(AutoTrace, ALoopWhoseRunsNeverSettleKeepsItsTrace) {
  // Runs of 150 ops, each ended by an op seen nowhere else (it goes untraced), never run back
  // to back for four maximal lengths: the loop keeps its short trace, which fits every run.
  Log log;
  std::vector<std::uint64_t> s;
  for (int run_of = 0; run_of < 20; ++run_of) {
    for (int i = 0; i < 150; ++i) s.push_back(1 + i % 2);
    s.push_back(1000 + std::uint64_t(run_of));
  }
  const AutoTraceStats stats = run_then_flush(log, s);
  EXPECT_EQ(stats.loops_lengthened, 0u);
  EXPECT_GE(log.replayed_fraction(1510, 3020), 0.9);
}

TEST(AutoTrace, JacobiAlternationIsTracedInPairs) {
  // Figure 1: temporaries alternate between two regions, so one iteration's tokens differ from
  // the next and only pairs of iterations repeat.
  Log log;
  {
    AutoTracer t(sync_options(), log);
    std::vector<std::uint64_t> s;
    for (int i = 0; i < 2000; ++i)
      for (std::uint64_t op : {10, 11, 12}) s.push_back(op + (i % 2) * 100);
    run(t, log, s);
    t.flush();
  }
  EXPECT_GE(log.replayed_fraction(3000, 5800), 0.95);
}

TEST(AutoTrace, IrregularConvergenceChecksAndTwoPhases) {
  Log log;
  {
    AutoTracer t(sync_options(), log);
    std::vector<std::uint64_t> s;
    for (int i = 0; i < 1000; ++i) {
      for (std::uint64_t op : {1, 2, 3}) s.push_back(op);
      if (i % 10 == 9) s.push_back(0);  // a blocking convergence check
    }
    for (int i = 0; i < 1000; ++i)
      for (std::uint64_t op : {5, 6, 7, 8}) s.push_back(op);
    run(t, log, s);
    t.flush();
    EXPECT_GT(t.stats().traces_issued, 10u);
  }
  // Phase 1 has 3000 traceable ops in runs of 30 between checks, phase 2 4000 without
  // checks: both reach a steady state.
  EXPECT_GE(log.replayed_fraction(1500, 2950), 0.9);
  EXPECT_GE(log.replayed_fraction(3000 + 2000, 3000 + 3950), 0.85);
}

TEST(AutoTrace, NoRepetitionAddsBoundedLatencyAndNoTrace) {
  Log log;
  AutoTraceOptions o = sync_options();
  {
    AutoTracer t(o, log);
    std::mt19937_64 rng(3);
    std::vector<std::uint64_t> s(5000);
    for (auto& x : s) x = 1 + rng() % 1000000;
    run(t, log, s);
    t.flush();
    EXPECT_EQ(t.stats().traces_issued, 0u);
  }
  ASSERT_EQ(log.state.size(), 5000u);
  for (std::size_t i = 0; i < log.state.size(); ++i)
    ASSERT_LE(log.reported_at[i] - (i + 1), o.max_trace_length) << "op " << i << " held too long";
}

TEST(AutoTrace, RandomStreamsReportEveryOpOnceInOrder) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 40; ++trial) {
    Log log;
    AutoTraceOptions o = sync_options();
    o.min_trace_length = 1 + rng() % 6;
    o.max_trace_length = o.min_trace_length + rng() % 30;
    o.multi_scale_factor = 5 + rng() % 40;
    o.batchsize = o.multi_scale_factor * (1 + rng() % 8);
    o.visit_threshold = 1 + rng() % 3;
    {
      AutoTracer t(o, log);
      std::vector<std::uint64_t> s;
      // Loops of random bodies with noise and barriers.
      while (s.size() < 3000) {
        std::vector<std::uint64_t> body(1 + rng() % 9);
        for (auto& x : body) x = 1 + rng() % 5;
        int reps = 1 + int(rng() % 40);
        for (int r = 0; r < reps; ++r) {
          s.insert(s.end(), body.begin(), body.end());
          if (rng() % 50 == 0) s.push_back(0);
          if (rng() % 30 == 0) s.push_back(1 + rng() % 5);
        }
      }
      std::size_t traceable = 0;
      for (auto x : s) traceable += x != 0;
      run(t, log, s);
      t.flush();
      ASSERT_EQ(log.state.size(), traceable) << "trial " << trial;
    }
  }
}

TEST(AutoTrace, AsynchronousAnalysesGiveTheSameKindOfResult) {
  Log log;
  {
    AutoTraceOptions o;  // analyses on oneTBB threads
    AutoTracer t(o, log);
    std::vector<std::uint64_t> s;
    for (int i = 0; i < 6000; ++i) s.push_back(1 + i % 3);
    run(t, log, s);
    t.flush();
  }
  EXPECT_GE(log.replayed_fraction(3000, 5800), 0.9);
}

namespace {
// Another shard's verdicts, scripted: analysis `late_k` was late elsewhere. Checks the
// protocol: reports in order, verdicts asked for `kAgreementLag` analyses later, and every op
// from before the asked-for analysis already handed on (a shard still behind may wait on it).
struct ScriptedAgreement final : LateAgreement {
  const Log& log;
  std::uint64_t late_k;
  std::vector<std::uint64_t> ops_at_report;  // ops pushed when analysis k was reported
  std::vector<std::uint64_t> asked;
  ScriptedAgreement(const Log& l, std::uint64_t k) : log(l), late_k(k) {}
  void report(std::uint64_t k, bool late) override {
    EXPECT_EQ(k, ops_at_report.size());
    EXPECT_FALSE(late);  // synchronous analyses are never late here
    ops_at_report.push_back(log.pushed);
  }
  bool any_late(std::uint64_t k) override {
    EXPECT_EQ(k + AutoTracer::kAgreementLag, ops_at_report.size() - 1);
    EXPECT_GE(log.state.size(), ops_at_report[k]) << "ops held while waiting for shards";
    asked.push_back(k);
    return k == late_k;
  }
};
}  // namespace

TEST(AutoTrace, ShardsRaiseTheDelayTogether) {
  Log log;
  ScriptedAgreement agree(log, 1);
  AutoTraceOptions o = sync_options();
  o.multi_scale_factor = 10;  // analyses every 10 ops, traces up to 200: ops stay held long
  o.max_trace_length = 200;
  AutoTracer t(o, log, &agree);
  std::vector<std::uint64_t> s;
  for (int i = 0; i < 400; ++i) s.push_back(1 + (i % 37) % 5);
  std::vector<std::size_t> delays;
  for (std::uint64_t tok : s) {
    ++log.pushed;
    t.push(tok);
    delays.push_back(t.ingest_delay());
  }
  t.flush();
  ASSERT_EQ(log.state.size(), s.size());
  ASSERT_GE(agree.asked.size(), 3u);
  // Only another shard was late (on analysis 1): the delay doubles once, when analysis 3 is
  // taken in, and at no other time.
  EXPECT_EQ(t.ingest_delay(), o.ingest_delay * 2);
  const std::uint64_t raised_at = agree.ops_at_report[1 + AutoTracer::kAgreementLag];
  EXPECT_EQ(delays[raised_at - 2], o.ingest_delay);
  EXPECT_EQ(delays[raised_at - 1], o.ingest_delay * 2);
}

// --- in the runtime ---
namespace {
using namespace reprise;
enum : TaskID { T_STEP = 9400, T_SUM = 9401 };
void step(TaskContext& tc) {
  auto a = tc.accessor<std::int64_t, 1>(0, 0);
  for (auto p : Rect<1>(tc.domain(0)))
    a[p] = std::int64_t(std::uint64_t(a[p]) * 5 + std::uint64_t(p[0] + tc.args<int>()));
}
std::int64_t sum(TaskContext& tc) {
  auto a = tc.accessor<const std::int64_t, 1>(0, 0);
  std::int64_t s = 0;
  for (auto p : Rect<1>(tc.domain(0)))
    s = std::int64_t(std::uint64_t(s) * 7 + std::uint64_t(a[p]));  // wraps
  return s;
}
}  // namespace

TEST(AutoTrace, TheRuntimeReallyReplays) {
  TaskRegistry::add(T_STEP, "step", {cpu(step)});
  TaskRegistry::add(T_SUM, "sum", {cpu(sum)});
  std::vector<std::int64_t> results[2];
  Context::TraceStats stats{};
  for (int mode = 0; mode < 2; ++mode) {
    std::vector<std::string> flags = {"-ll:cpu", "2"};
    if (mode == 0) flags.push_back("-lg:no_auto_tracing");
    reprise::run(flags, [&](Context& ctx) {
      auto is = ctx.create_index_space(Rect<1>({0}, {63}));
      Region r = ctx.create_region(is, ctx.create_field_space({{0, 8}}));
      auto four = ctx.create_index_space(Rect<1>({0}, {3}));
      Partition p = ctx.partition_equal(r, four);
      for (int it = 0; it < 400; ++it) {
        IndexLauncher l(T_STEP, four, TaskArgs{it});
        l.add(p, Projection::identity(), Privilege::ReadWrite, {0});
        ctx.execute(l);
        TaskLauncher s(T_SUM);
        s.add(r, Privilege::ReadOnly, {0});
        Future f = ctx.execute(s);
        // A blocking wait on a possibly held op now and then must not deadlock.
        if (it % 97 == 0) results[mode].push_back(f.get<std::int64_t>());
      }
      TaskLauncher s(T_SUM);
      s.add(r, Privilege::ReadOnly, {0});
      results[mode].push_back(ctx.execute(s).get<std::int64_t>());
      if (mode == 1) stats = ctx.trace_stats();
    });
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_GT(stats.replays, 5u);
  EXPECT_GT(double(stats.points_replayed) / double(stats.points_launched), 0.5);
}

namespace {
enum : TaskID { T_MIX = 9402 };
// dst[i] = dst[i] * 3 + src[i] + it (the roles of the two regions alternate: only pairs of
// iterations repeat).
void mix(TaskContext& tc) {
  auto src = tc.accessor<const std::int64_t, 1>(0, 0);
  auto dst = tc.accessor<std::int64_t, 1>(1, 0);
  for (auto p : Rect<1>(tc.domain(1)))
    dst[p] = std::int64_t(std::uint64_t(dst[p]) * 3 + std::uint64_t(src[p]) +
                          std::uint64_t(tc.args<int>()));
}
}  // namespace

TEST(AutoTrace, ATailReplaysAPrefixOfItsTrace) {
  // 203 iterations of a loop whose traces hold whole pairs of iterations: the last iteration
  // (held when the program waits at the end) is the first half of a trace, and replays it —
  // the same results as untraced, with one memory and with three (physical effects of the
  // prefix only).
  TaskRegistry::add(T_MIX, "mix", {cpu(mix)});
  TaskRegistry::add(T_SUM, "sum", {cpu(sum)});
  for (const char* numa : {"1", "3"}) {
    std::vector<std::int64_t> results[2];
    std::vector<CoverageSample> coverage;
    const std::string log_path = ::testing::TempDir() + "reprise_tail_prefix.log";
    for (int mode = 0; mode < 2; ++mode) {
      std::vector<std::string> flags = {"-ll:cpu", "3", "-ll:numa", numa, "-lg:coverage_log"};
      if (mode == 0)
        flags.push_back("-lg:no_auto_tracing");
      else
        flags.insert(flags.end(), {"-lg:auto_trace:log", log_path});
      reprise::run(flags, [&](Context& ctx) {
        auto is = ctx.create_index_space(Rect<1>({0}, {47}));
        auto fs = ctx.create_field_space({{0, 8}});
        Region a = ctx.create_region(is, fs), b = ctx.create_region(is, fs);
        auto three = ctx.create_index_space(Rect<1>({0}, {2}));
        Partition pa = ctx.partition_equal(a, three), pb = ctx.partition_equal(b, three);
        ctx.fill(a, 0, std::int64_t(1));
        ctx.fill(b, 0, std::int64_t(2));
        for (int it = 0; it < 203; ++it) {
          const bool odd = it % 2 == 1;
          IndexLauncher l(T_MIX, three, TaskArgs{it});
          l.add(odd ? pb : pa, Projection::identity(), Privilege::ReadOnly, {0});
          l.add(odd ? pa : pb, Projection::identity(), Privilege::ReadWrite, {0});
          ctx.execute(l);
          TaskLauncher s(T_SUM);
          s.add(odd ? a : b, Privilege::ReadOnly, {0});
          results[mode].push_back(0);
          Future f = ctx.execute(s);
          if (it % 50 == 49 || it == 202) results[mode].back() = f.get<std::int64_t>();
        }
        if (mode == 1) coverage = ctx.coverage_log();
      });
    }
    EXPECT_EQ(results[0], results[1]) << "-ll:numa " << numa;
    std::ifstream log(log_path);
    std::string line, stats, summary;
    while (std::getline(log, line)) {
      if (line.rfind("# recorded_not_replayed", 0) == 0) stats = line;
      if (line.rfind("# coverage ", 0) == 0) summary = line;
    }
    // (Of 408 ops, the first ~27 run untraced or recorded; the rest replay but for one op
    // after each wait.)
    double fraction = 0;
    long long first_replay = -1, steady_at = -1;
    ASSERT_EQ(std::sscanf(summary.c_str(), "# coverage %lf first_replay %lld steady_at %lld",
                          &fraction, &first_replay, &steady_at),
              3)
        << summary;
    EXPECT_GT(fraction, 0.85) << summary;
    EXPECT_LT(first_replay, 60) << summary;
    EXPECT_GE(steady_at, 0) << summary;
    EXPECT_LT(steady_at, 204) << summary;
    EXPECT_NE(stats.find("prefix_replays "), std::string::npos) << stats;
    EXPECT_EQ(stats.find("prefix_replays 0"), std::string::npos) << stats;
    // The last iteration's launch ran replayed.
    ASSERT_FALSE(coverage.empty());
    std::uint64_t last_launch = 0;
    bool replayed = false;
    for (const CoverageSample& c : coverage)
      if (c.points == 3 && c.op_seq >= last_launch) {
        last_launch = c.op_seq;
        replayed = c.replayed;
      }
    EXPECT_TRUE(replayed) << "-ll:numa " << numa;
  }
}

TEST(AutoTrace, RepeatsJustOverTheMaximumLengthAreTracedWhole) {
  // A step of 67 ops ends at a blocking wait each time (a barrier): cut at the maximum length
  // (64), its 3-op tail would be shorter than the minimum (5) and stay untraced every step; it
  // joins the last piece instead.
  Log log;
  {
    AutoTraceOptions o = sync_options();
    o.max_trace_length = 64;
    o.min_trace_length = 5;
    AutoTracer t(o, log);
    std::vector<std::uint64_t> s;
    for (int step = 0; step < 300; ++step) {
      for (std::uint64_t k = 1; k <= 67; ++k) s.push_back(k);
      s.push_back(0);
    }
    run(t, log, s);
    t.flush();
  }
  const std::size_t n = log.state.size();
  ASSERT_EQ(n, 300u * 67u);
  EXPECT_GE(log.replayed_fraction(n / 2, n), 0.99);
}

TEST(AutoTrace, ALoopReplayingBackToBackIsNotMinedAgainUntilItsRunBreaks) {
  // Once the chain's loop replays back to back, mining slices of nothing but that loop could
  // only find it again — they are skipped (they cost two thirds of the utility thread). The
  // new phase breaks the run, and the slices reaching back across the break are mined: the
  // new loop is found and replays.
  Log log;
  const TwoPhases stats = chain_then_new_phase(log);
  // (Every 50 ops a slice is due: 60 in all; those reaching back before the run are mined up
  // to where it began — once: the same part again would find the same repeats.)
  EXPECT_GE(stats.after_chain.analyses_skipped, 50u);
  EXPECT_LE(stats.after_chain.analyses, 10u);
  expect_both_phases_replayed(log);
  EXPECT_GT(stats.after_all.analyses, stats.after_chain.analyses);  // the second phase was mined
}

TEST(AutoTrace, ARunAfterABarrierDoesNotMineTheLoopsRunBeforeIt) {
  // A program that waits on a fence every 301 ops (Task Bench's graph run twice, a fence
  // between: a first op of its own, then a 2-op loop). Once the loop replays after a barrier,
  // a slice reaching back into the run before the barrier holds only that loop there (and the
  // barrier, and the phase's first op): nothing is mined of it — before, the ruler function's
  // longer slices mined it whole, inline with the ops (~1.5 k instructions a token).
  Log log;
  AutoTracer t(sync_options(), log);
  std::vector<std::uint64_t> s;
  for (int phase = 0; phase < 8; ++phase) {
    s.push_back(9);
    for (int step = 0; step < 150; ++step)
      for (std::uint64_t op : {7, 8}) s.push_back(op);
    s.push_back(0);
  }
  run(t, log, s);
  t.flush();
  // (The start is mined: the early probes and the first slices, before the loop replays.)
  EXPECT_LE(t.stats().analyses, 4u);
  const std::size_t n = log.state.size();
  ASSERT_EQ(n, 8u * 301u);
  EXPECT_GE(log.replayed_fraction(301, n), 0.95);
}

TEST(AutoTrace, ALoopsLongRunFollowsOnlyTheMatchThatContinuesIt) {
  // Once the chain's traces have run back to back for four maximal trace lengths, a match is
  // started only where the run goes on (one per trace, not one per op); the new phase breaks
  // the run and is found and traced as before.
  Log log;
  const TwoPhases stats = chain_then_new_phase(log);
  const std::uint64_t settled_at = 4 * sync_options().max_trace_length + 200;
  EXPECT_LT(stats.after_chain.pointers_started,
            settled_at + 3000 / sync_options().min_trace_length);
  expect_both_phases_replayed(log);
}

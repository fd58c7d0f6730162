// Automatic tracing wastes little (issue 21): on streams of the shapes real programs have —
// loops whose roles alternate with period 2 and 3, phases separated by blocking ops, blocking
// checks every few iterations, a hand-off whose frequency changes, loops nested in loops —
// the tracer replays at least 95% of the ops overall, all of them (but a tail shorter than a
// trace) in steady state, records nothing there, and never replays noise.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "autotrace_log.h"

using namespace reprise::tracing;
using autotrace_test::Log;

namespace {

using Stream = std::vector<std::uint64_t>;  // token 0: a barrier (a blocking op)

void body(Stream& s, std::initializer_list<std::uint64_t> ops) {
  s.insert(s.end(), ops.begin(), ops.end());
}

// Paper Figure 1: three ops per iteration, x alternating between two regions.
Stream alternating(int period, int iterations) {
  Stream s;
  for (int i = 0; i < iterations; ++i) {
    const std::uint64_t r = std::uint64_t(i % period) * 10;
    body(s, {1 + r, 2 + r, 3 + r});
  }
  return s;
}

Stream phases(const std::vector<std::pair<int, int>>& body_and_iterations) {
  Stream s;
  std::uint64_t next = 1;
  for (auto [length, iterations] : body_and_iterations) {
    if (!s.empty()) s.push_back(0);
    const std::uint64_t first = next;
    next += std::uint64_t(length);
    for (int i = 0; i < iterations; ++i)
      for (int k = 0; k < length; ++k) s.push_back(first + std::uint64_t(k));
  }
  return s;
}

Stream blocking_every(int k, int iterations) {
  Stream s;
  for (int i = 0; i < iterations; ++i) {
    body(s, {1, 2, 3, 4});
    if (i % k == k - 1) s.push_back(0);
  }
  return s;
}

// A hand-off op every iteration for a while, then every tenth.
Stream hand_off(int iterations) {
  Stream s;
  for (int i = 0; i < iterations; ++i) {
    body(s, {1, 2, 3, 4, 5});
    if (i < 300 || i % 10 == 9) s.push_back(6);
  }
  return s;
}

// CFD-like: per step a few ops, 50 Poisson sweeps of three, a few more.
Stream nested(int steps) {
  Stream s;
  for (int t = 0; t < steps; ++t) {
    body(s, {1, 2, 3, 4, 5, 6});
    for (int j = 0; j < 50; ++j) body(s, {7, 8, 9});
    body(s, {10, 11, 12, 13});
  }
  return s;
}

struct Outcome {
  double overall = 0;
  // Per phase (the ops between barriers, or the whole stream): the replayed fraction of its
  // second half, and the ops recorded there.
  std::vector<double> second_half;
  std::vector<std::size_t> recorded_in_second_half;
  std::uint64_t traces = 0;
  std::size_t first_length = 0;  // ops of the first trace issued
  std::uint64_t lengthened = 0;  // loops whose maximal version was added
};

// visit_threshold: the runtime's default is 1, the front-end's own 2.
Outcome trace(const Stream& s, bool per_phase = false, std::size_t visit_threshold = 1) {
  Log log;
  Outcome o;
  {
    AutoTraceOptions options = autotrace_test::sync_options();
    options.visit_threshold = visit_threshold;
    AutoTracer t(options, log);
    autotrace_test::run(t, log, s);
    t.flush();
    o.traces = t.stats().traces_issued;
    o.lengthened = t.stats().loops_lengthened;
  }
  o.overall = log.replayed_fraction(0, log.state.size());
  o.first_length = log.lengths.empty() ? 0 : log.lengths.front();
  std::vector<std::size_t> ends;  // in ops of the log (barriers are not ops)
  std::size_t ops = 0;
  for (std::uint64_t x : s) {
    if (x == 0 && per_phase) ends.push_back(ops);
    ops += x != 0;
  }
  ends.push_back(ops);
  std::size_t begin = 0;
  for (std::size_t end : ends) {
    const std::size_t half = begin + (end - begin) / 2;
    o.second_half.push_back(log.replayed_fraction(half, end));
    o.recorded_in_second_half.push_back(log.recorded(half, end));
    begin = end;
  }
  return o;
}

// Steady state: every phase's second half replays all but at most a tail shorter than the
// longest trace (64 ops), and records nothing.
void expect_periodic(const Stream& s, double overall, const char* what, bool per_phase = false) {
  for (std::size_t threshold : {1u, 2u}) {
    const Outcome o = trace(s, per_phase, threshold);
    EXPECT_GE(o.overall, overall) << what << ", visit threshold " << threshold;
    for (std::size_t k = 0; k < o.second_half.size(); ++k) {
      EXPECT_GE(o.second_half[k], 0.97) << what << ", phase " << k;
      EXPECT_EQ(o.recorded_in_second_half[k], 0u) << what << ", phase " << k;
    }
  }
}

}  // namespace

TEST(AutoTraceQuality, RolesAlternatingWithPeriodTwoAndThree) {
  // (A settled loop's maximal trace is recorded once its short trace's replays have cost what
  // the recording does — in the first half: ~3,000 ops for period 2's 6-op first trace, found
  // by the first early probe; ~11,000 for period 3's 18-op one, a quarter of the maximal
  // length.)
  expect_periodic(alternating(2, 4000), 0.95, "period 2");
  expect_periodic(alternating(3, 10000), 0.95, "period 3");
  // Period 3's 9-op body is found by the second early probe (25 ops: two periods seen), and
  // traced in two periods, the fewest reaching a quarter of the maximal length; period 2's by
  // the first (12 ops: two periods, fewer than a quarter of the maximal length needs) in one.
  // Both are lengthened once their replays have paid for it.
  const Outcome two = trace(alternating(2, 4000)), three = trace(alternating(3, 10000));
  EXPECT_EQ(two.first_length, 6u);
  EXPECT_EQ(three.first_length, 18u);
  EXPECT_EQ(two.lengthened, 1u);
  EXPECT_EQ(three.lengthened, 1u);
}

TEST(AutoTraceQuality, PhasesAfterBlockingOps) {
  expect_periodic(phases({{25, 200}, {35, 200}}), 0.95, "two phases", true);
  expect_periodic(phases({{7, 300}, {11, 300}, {5, 300}}), 0.95, "three phases", true);
}

TEST(AutoTraceQuality, BlockingChecksEveryFewIterations) {
  // (Barriers are not ops of the log: every op of a 40-op run between checks is traceable.)
  expect_periodic(blocking_every(10, 1000), 0.95, "a check every 10 iterations");
  expect_periodic(blocking_every(7, 1000), 0.95, "a check every 7 iterations");
}

TEST(AutoTraceQuality, HandOffEveryIterationThenEveryTenth) {
  expect_periodic(hand_off(1000), 0.95, "hand-off");
}

TEST(AutoTraceQuality, LoopsNestedInLoops) {
  expect_periodic(nested(40), 0.95, "nested loops");
}

TEST(AutoTraceQuality, NoiseIsNeverTraced) {
  for (std::uint32_t seed : {1u, 2u, 3u}) {
    std::mt19937 rng(seed);
    Stream s(3000);
    for (auto& x : s) x = 1 + rng() % 20;
    EXPECT_EQ(trace(s).traces, 0u) << "seed " << seed;
  }
}

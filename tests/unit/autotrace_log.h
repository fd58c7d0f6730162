#pragma once
// A sink for the automatic tracer's decisions in tests: what became of every op (untraced,
// recorded, replayed), checked to be reported once and in order; and a driver that pushes a
// token stream (token 0: a barrier).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <vector>

#include "reprise_tracing/auto_tracer.h"

namespace autotrace_test {

using namespace reprise::tracing;

// Records every decision and checks that each op is reported once, in order.
struct Log final : AutoTraceSink {
  std::vector<int> state;                  // per op: 0 untraced, 1 recorded trace, 2 replayed trace
  std::vector<std::uint64_t> reported_at;  // ops pushed when the op was reported
  std::map<std::uint32_t, int> issues;
  std::vector<std::size_t> lengths;  // per trace issued, its ops
  std::uint64_t pushed = 0;
  int current = 0;
  void report(std::uint64_t op, int s) {
    ASSERT_EQ(op, state.size()) << "ops must be reported once, in order";
    state.push_back(s);
    reported_at.push_back(pushed);
  }
  void forward_untraced(std::uint64_t op) override { report(op, 0); }
  void begin_trace(std::uint32_t id, std::uint64_t, std::size_t ops) override {
    current = issues[id]++ ? 2 : 1;
    lengths.push_back(ops);
  }
  void forward_traced(std::uint64_t op) override { report(op, current); }
  void end_trace(std::uint32_t) override {}
  double replayed_fraction(std::size_t from, std::size_t to) const {
    std::size_t n = 0;
    for (std::size_t i = from; i < to; ++i) n += state[i] == 2;
    return double(n) / double(to - from);
  }
  // Ops of [from, to) that went into a recording.
  std::size_t recorded(std::size_t from, std::size_t to) const {
    std::size_t n = 0;
    for (std::size_t i = from; i < to; ++i) n += state[i] == 1;
    return n;
  }
};

inline AutoTraceOptions sync_options() {
  AutoTraceOptions o;
  o.synchronous = true;
  return o;
}

inline void run(AutoTracer& t, Log& log, const std::vector<std::uint64_t>& tokens) {
  for (std::uint64_t tok : tokens) {
    ++log.pushed;
    if (tok == 0)
      t.barrier();
    else
      t.push(tok);
  }
}

}  // namespace autotrace_test

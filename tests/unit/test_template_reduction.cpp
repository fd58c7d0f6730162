// Transitive reduction of a template's waits: exact on small templates, a bounded search on
// big ones (issue 24 item 4: recording in linear time). Synthetic templates, no runtime.
#include <gtest/gtest.h>

#include <vector>

#include "reprise_memoizer/trace_template.h"

using reprise::detail::Instruction;
using reprise::detail::TraceTemplate;

namespace {

// A template of `n` op instructions; instruction i (slot i + 1) waits for the slots in
// waits[i] (in-trace slots, each lower than i + 1) and on the entry fence.
TraceTemplate make_template(const std::vector<std::vector<std::uint32_t>>& waits) {
  TraceTemplate t;
  for (std::uint32_t i = 0; i < waits.size(); ++i) {
    Instruction in;
    in.op = i;
    in.uses_fence = true;
    in.out = t.num_slots++;
    in.pre_begin = std::uint32_t(t.pre_slots.size());
    in.pre_count = std::uint32_t(waits[i].size());
    t.pre_slots.insert(t.pre_slots.end(), waits[i].begin(), waits[i].end());
    t.instrs.push_back(in);
  }
  return t;
}

std::vector<std::uint32_t> waits_of(const TraceTemplate& t, std::size_t i) {
  const Instruction& in = t.instrs[i];
  return {t.pre_slots.begin() + in.pre_begin, t.pre_slots.begin() + in.pre_begin + in.pre_count};
}

// Chains of three (a, b after a, c after a and b) repeated `chains` times: every c's wait for
// its a is implied by its wait for b; only the first of each chain waits on the fence.
void check_chains(std::size_t chains) {
  std::vector<std::vector<std::uint32_t>> waits;
  for (std::uint32_t k = 0; k < chains; ++k) {
    const std::uint32_t a = 3 * k + 1;
    waits.push_back({});
    waits.push_back({a});
    waits.push_back({a, a + 1});
  }
  TraceTemplate t = make_template(waits);
  reduce_transitively(t);
  EXPECT_EQ(t.edges_recorded, 3 * chains);
  EXPECT_EQ(t.edges_after_reduction, 2 * chains);
  for (std::uint32_t k = 0; k < chains; ++k) {
    EXPECT_TRUE(t.instrs[3 * k].uses_fence);
    EXPECT_FALSE(t.instrs[3 * k + 1].uses_fence);
    EXPECT_FALSE(t.instrs[3 * k + 2].uses_fence);
    EXPECT_EQ(waits_of(t, 3 * k + 2), std::vector<std::uint32_t>{3 * k + 2});
  }
}

}  // namespace

TEST(TemplateReduction, ExactOnSmallTemplates) {
  check_chains(100);
}

// Above 8,192 slots the reduction searches backwards with a bound instead of keeping n² bits
// (before, such templates kept every wait).
TEST(TemplateReduction, BoundedSearchOnBigTemplates) {
  check_chains(10'000);
}

TEST(TemplateReduction, KeepsWhatItCannotProveOnBigTemplates) {
  // A long chain 1 <- 2 <- ... <- m, and after it one instruction that waits for the chain's
  // end and an early slot: that one is implied, but 3,000 steps back, beyond the search's
  // budget; the wait is kept (safe), and the short-range waits of the chain stay exact.
  const std::uint32_t m = 9'000;
  std::vector<std::vector<std::uint32_t>> waits(1);
  for (std::uint32_t s = 1; s < m; ++s) waits.push_back({s});
  waits.push_back({m, m - 2});         // m - 2 is two steps back: found, dropped
  waits.push_back({m + 1, m - 3000});  // m - 3000: beyond the budget, kept
  TraceTemplate t = make_template(waits);
  reduce_transitively(t);
  EXPECT_EQ(waits_of(t, m), std::vector<std::uint32_t>{m});
  EXPECT_EQ(waits_of(t, m + 1), (std::vector<std::uint32_t>{m - 3000, m + 1}));
}

TEST(TemplateReduction, OtherShardsInstructionsImplyNothing) {
  // b runs on another shard: waiting for it says nothing about a, so c keeps both waits (small
  // and big templates alike).
  for (std::size_t pad : {std::size_t(0), std::size_t(9'000)}) {
    std::vector<std::vector<std::uint32_t>> waits(pad);
    const std::uint32_t a = std::uint32_t(pad) + 1;
    waits.push_back({});
    waits.push_back({a});
    waits.push_back({a, a + 1});
    TraceTemplate t = make_template(waits);
    std::vector<bool> here(waits.size(), true);
    here[pad + 1] = false;
    reduce_transitively(t, here);
    EXPECT_EQ(waits_of(t, pad + 2), (std::vector<std::uint32_t>{a, a + 1})) << pad;
  }
}

// The repeat finder against the paper's examples, naive suffix arrays, and a brute-force
// validity check on random strings.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "reprise_tracing/repeats.h"

using namespace reprise::tracing;

namespace {
std::vector<std::uint64_t> of(const std::string& s) {
  return std::vector<std::uint64_t>(s.begin(), s.end());
}
std::string show(const std::vector<RepeatGroup>& gs) {
  std::string out;
  for (const auto& g : gs) {
    for (const auto& o : g.occurrences)
      out += std::to_string(o.start) + ":" + std::to_string(o.end) + " ";
    out += "| ";
  }
  return out;
}
}  // namespace

TEST(Repeats, PaperAndNotesExamples) {
  EXPECT_EQ(show(find_repeats(of("aabcbcbaa"))), "0:2 7:9 | 2:4 4:6 | ");
  EXPECT_EQ(show(find_repeats(of("banana"))), "1:3 3:5 | ");
  EXPECT_EQ(show(find_repeats(of("named banana ban"))), "5:9 12:16 | 0:2 10:12 | ");
  EXPECT_EQ(show(find_repeats(of("abababab"))), "0:4 4:8 | ");
  EXPECT_TRUE(find_repeats(of("abcdef")).empty());
  EXPECT_TRUE(find_repeats(of("")).empty());
}

TEST(Repeats, SuffixArrayAndLcpMatchNaive) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    int alphabet = 1 + trial % 5;
    std::size_t n = 1 + rng() % 80;
    std::vector<std::uint64_t> s(n);
    for (auto& x : s) x = trial % 7 == 0 ? rng() : rng() % alphabet;
    std::vector<std::int32_t> naive(n);
    for (std::size_t i = 0; i < n; ++i) naive[i] = std::int32_t(i);
    std::sort(naive.begin(), naive.end(), [&](std::int32_t a, std::int32_t b) {
      return std::lexicographical_compare(s.begin() + a, s.end(), s.begin() + b, s.end());
    });
    auto sa = suffix_array(s);
    ASSERT_EQ(sa, naive) << "trial " << trial;
    auto lcp = lcp_kasai(s, sa);
    for (std::size_t i = 1; i < n; ++i) {
      std::int32_t h = 0;
      while (sa[i - 1] + h < std::int32_t(n) && sa[i] + h < std::int32_t(n) &&
             s[std::size_t(sa[i - 1] + h)] == s[std::size_t(sa[i] + h)])
        ++h;
      ASSERT_EQ(lcp[i], h) << "trial " << trial << " i " << i;
    }
  }
}

namespace {
void check_valid(const std::vector<std::uint64_t>& s, const std::vector<RepeatGroup>& groups,
                 const RepeatOptions& opt, const std::string& where) {
  std::vector<int> owner(s.size(), -1);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& occ = groups[g].occurrences;
    ASSERT_GE(occ.size(), opt.min_repeats) << where;
    const std::size_t len = groups[g].length();
    ASSERT_GE(len, opt.min_length) << where;
    ASSERT_LE(len, opt.max_length) << where;
    for (std::size_t k = 0; k < occ.size(); ++k) {
      ASSERT_EQ(occ[k].end - occ[k].start, len) << where;
      ASSERT_LE(occ[k].end, s.size()) << where;
      if (k) {
        ASSERT_GE(occ[k].start, occ[k - 1].end) << where;
      }
      ASSERT_TRUE(std::equal(s.begin() + std::ptrdiff_t(occ[k].start),
                             s.begin() + std::ptrdiff_t(occ[k].end),
                             s.begin() + std::ptrdiff_t(occ[0].start)))
          << where << ": occurrence " << k << " differs from the first";
      for (std::size_t p = occ[k].start; p < occ[k].end; ++p) {
        ASSERT_EQ(owner[p], -1) << where << ": position " << p << " claimed twice";
        owner[p] = int(g);
      }
    }
  }
}
}  // namespace

TEST(Repeats, RandomStringsGiveValidSelections) {
  std::mt19937 rng(11);
  const RepeatOptions opts[] = {RepeatOptions{}, RepeatOptions{3, 4, 3}, RepeatOptions{2, 1000, 2}};
  for (int trial = 0; trial < 600; ++trial) {
    std::size_t n = rng() % 300;
    int alphabet = 1 + trial % 6;
    std::vector<std::uint64_t> s(n);
    for (auto& x : s) x = rng() % alphabet;
    for (const auto& o : opts)
      check_valid(s, find_repeats(s, o), o, "trial " + std::to_string(trial));
  }
}

TEST(Repeats, LoopsAreCoveredAlmostEntirely) {
  // A task-stream-like string: a 7-token loop body, 50 times.
  std::vector<std::uint64_t> s;
  for (int i = 0; i < 50; ++i)
    for (std::uint64_t t = 0; t < 7; ++t) s.push_back(100 + t);
  auto groups = find_repeats(s, RepeatOptions{5, 1000, 2});
  std::size_t covered = 0;
  for (const auto& g : groups) covered += g.length() * g.occurrences.size();
  EXPECT_GE(double(covered) / double(s.size()), 0.9);
}

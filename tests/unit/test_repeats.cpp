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

// Expected selections computed with the authors' reference algorithm (a private port of
// david-broman/matching-substrings run on these inputs; token i = digit i): ours must agree.
TEST(Repeats, AgreesWithTheReferenceImplementation) {
  struct Case {
    const char* tokens;
    std::size_t min_length, max_length, min_repeats;
    const char* expected;  // groups separated by " | "
  };
  const Case cases[] = {
      {"001110000101", 1, 0, 3, "1:3 8:10 10:12"},
      {"000010100010100001", 2, 0, 2, "1:7 7:13"},
      {"01101101002022200020011212200101", 3, 0, 3, "0:3 3:6 20:23"},
      {"000111211222001011210110", 2, 0, 2, "14:18 19:23 | 4:7 7:10 | 0:2 12:14"},
      {"01000100100011010111011", 1, 4, 2, "2:6 9:13 | 15:19 19:23"},
      {"011001101010110001101101100110000010011", 3, 4, 3, ""},
      {"00100000101000000111101101", 1, 0, 3, "8:11 20:23 23:26"},
      {"001000101111100011010110100110101110", 3, 4, 2, "3:7 13:17 | 7:11 31:35 | 17:21 22:26"},
      {"0100100110001111101100010010010000010", 1, 0, 3, "21:24 24:27 27:30"},
      {"01112021020200200002122", 3, 0, 2, "12:15 17:20 | 4:7 9:12"},
      {"01111012000202222211000012111102", 3, 4, 2, "2:6 27:31 | 8:11 21:24"},
      {"0110001", 1, 4, 2, "0:2 5:7 | 3:4 4:5"},
      {"00000000000000000000000000000000000", 2, 4, 2, "26:30 30:34"},
      {"0000000000", 2, 4, 3, ""},
      {"01002220100112011", 1, 4, 2, "0:4 7:11 | 11:13 15:17 | 4:5 5:6 13:14"},
      {"0000000000000000000000000000", 2, 4, 2, "19:23 23:27"},
      {"0000011010000110100010000", 1, 0, 2, "1:9 9:17 | 21:23 23:25"},
      {"00000000000000000000000000", 2, 0, 2, "0:13 13:26"},
      {"0000000", 3, 0, 2, "0:3 3:6"},
      {"00010102202102122", 3, 4, 2, "9:12 12:15"},
      {"011100", 2, 0, 3, ""},
      {"00010110000100001101001000001110011", 1, 0, 2, "9:16 20:27 | 5:9 29:33 | 3:4 33:34"},
      {"001101110000000110", 1, 0, 3, "2:5 6:9 15:18"},
      {"0000011010101", 3, 0, 2, ""},
      {"0000000000000000000000000", 2, 4, 3, ""},
      {"012202221000022220121202001101121", 3, 0, 3, ""},
      {"000011101101110110000101110", 1, 0, 2, "3:10 10:17 | 0:3 18:21 | 17:18 26:27"},
      {"000000", 3, 4, 2, "0:3 3:6"},
      {"01101212010211010201002121", 2, 4, 3, "0:2 3:5 8:10 | 5:7 11:13 24:26"},
      {"010101110100100011", 1, 4, 3, "0:3 8:11 11:14"},

  };
  for (const Case& c : cases) {
    std::vector<std::uint64_t> s;
    for (const char* p = c.tokens; *p; ++p) s.push_back(std::uint64_t(*p - '0'));
    RepeatOptions o;
    o.min_length = c.min_length;
    if (c.max_length) o.max_length = c.max_length;
    o.min_repeats = c.min_repeats;
    std::string got;
    for (const auto& g : find_repeats(s, o)) {
      if (!got.empty()) got += " | ";
      for (std::size_t k = 0; k < g.occurrences.size(); ++k) {
        if (k) got.push_back(' ');
        got.append(std::to_string(g.occurrences[k].start));
        got.push_back(':');
        got.append(std::to_string(g.occurrences[k].end));
      }
    }
    EXPECT_EQ(got, c.expected) << c.tokens << " min " << c.min_length << " max " << c.max_length
                               << " repeats " << c.min_repeats;
  }
}

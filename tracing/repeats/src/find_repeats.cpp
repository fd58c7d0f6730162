#include <algorithm>

#include "reprise_tracing/repeats.h"

namespace reprise::tracing {

namespace {
struct Candidate {
  std::size_t length;
  std::size_t group;  // changes whenever the length changes along the suffix array
  std::size_t start;
};
}  // namespace

std::vector<RepeatGroup> find_repeats(std::span<const std::uint64_t> tokens,
                                      const RepeatOptions& opt) {
  const std::size_t n = tokens.size();
  std::vector<RepeatGroup> out;
  if (n < 2) return out;
  const auto sa = suffix_array(tokens);
  const auto lcp = lcp_kasai(tokens, sa);

  // Each pair of neighbouring suffixes proposes two occurrences of one string.
  std::vector<Candidate> cands;
  cands.reserve(2 * n);
  std::size_t group = 0, prev_len = 0;
  for (std::size_t i = 1; i < n; ++i) {
    const std::size_t p = std::size_t(lcp[i]);
    std::size_t a = std::size_t(sa[i - 1]), b = std::size_t(sa[i]);
    if (a > b) std::swap(a, b);
    const std::size_t d = b - a;
    std::size_t len = 0, second = b;
    if (p >= d) {
      // The suffixes overlap: a periodic run of period d. Take the longest multiple of d
      // that fits twice, at a and right after it.
      len = ((p + d) / 2) / d * d;
      second = a + len;
    } else {
      len = p;
    }
    if (len != prev_len) ++group;
    prev_len = len;
    // Outside the length bounds a candidate is dropped (as in the authors' reference); the
    // automatic tracer asks for unbounded lengths and cuts long traces itself.
    if (len == 0 || len < opt.min_length || len > opt.max_length) continue;
    cands.push_back(Candidate{len, group, a});
    cands.push_back(Candidate{len, group, second});
  }
  // Longest first; a group's occurrences together, by start.
  std::sort(cands.begin(), cands.end(), [](const Candidate& x, const Candidate& y) {
    if (x.length != y.length) return x.length > y.length;
    if (x.group != y.group) return x.group < y.group;
    return x.start < y.start;
  });

  std::vector<bool> claimed(n, false);
  std::vector<Occurrence> taken;
  for (std::size_t i = 0; i < cands.size();) {
    std::size_t j = i;
    taken.clear();
    for (;
         j < cands.size() && cands[j].group == cands[i].group && cands[j].length == cands[i].length;
         ++j) {
      const Candidate& c = cands[j];
      if (!taken.empty() && c.start < taken.back().end) continue;  // overlaps the previous one
      if (claimed[c.start] || claimed[c.start + c.length - 1]) continue;
      taken.push_back(Occurrence{c.start, c.start + c.length});
    }
    // Claimed only once the group is complete and repeats often enough.
    if (taken.size() >= std::max<std::size_t>(2, opt.min_repeats)) {
      for (const Occurrence& o : taken)
        std::fill(claimed.begin() + std::ptrdiff_t(o.start),
                  claimed.begin() + std::ptrdiff_t(o.end), true);
      out.push_back(RepeatGroup{taken});
    }
    i = j;
  }
  return out;
}

}  // namespace reprise::tracing

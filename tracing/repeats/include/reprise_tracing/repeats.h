#pragma once
// The repeat finder of Apophenia (ASPLOS'25, Algorithm 2): selects non-overlapping repeated
// substrings of a token sequence from its suffix array and LCP array, longest first, in the
// grouped variant of the authors' reference implementation (a group's occurrences are claimed
// only once the whole group is known to repeat often enough).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace reprise::tracing {

struct RepeatOptions {
  std::size_t min_length = 1;
  std::size_t max_length = std::numeric_limits<std::size_t>::max();  // longer repeats dropped
  std::size_t min_repeats = 2;
};

struct Occurrence {
  std::size_t start, end;  // [start, end)
};

struct RepeatGroup {
  std::vector<Occurrence> occurrences;  // sorted by start; all the same token string
  std::size_t length() const {
    return occurrences.empty() ? 0 : occurrences.front().end - occurrences.front().start;
  }
};

// Groups in selection order (longest strings first).
std::vector<RepeatGroup> find_repeats(std::span<const std::uint64_t> tokens,
                                      const RepeatOptions& opt = {});

// Building blocks, exposed for tests and benchmarks.
// Suffix array by prefix doubling with radix sorts: O(n log n).
std::vector<std::int32_t> suffix_array(std::span<const std::uint64_t> tokens);
// lcp[i] = longest common prefix of suffixes sa[i-1] and sa[i] (lcp[0] = 0), by Kasai.
std::vector<std::int32_t> lcp_kasai(std::span<const std::uint64_t> tokens,
                                    std::span<const std::int32_t> sa);

}  // namespace reprise::tracing

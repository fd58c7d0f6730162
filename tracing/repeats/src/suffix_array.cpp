#include <algorithm>
#include <numeric>

#include "reprise_tracing/repeats.h"

namespace reprise::tracing {

namespace {
// Stable counting sort of `order` by key[i] (keys in [0, buckets)).
void counting_sort(std::vector<std::int32_t>& order, const std::vector<std::int32_t>& key,
                   std::size_t buckets, std::vector<std::int32_t>& scratch,
                   std::vector<std::int32_t>& count) {
  count.assign(buckets + 1, 0);
  for (std::int32_t i : order) ++count[std::size_t(key[std::size_t(i)]) + 1];
  for (std::size_t b = 1; b <= buckets; ++b) count[b] += count[b - 1];
  scratch.resize(order.size());
  for (std::int32_t i : order) scratch[std::size_t(count[std::size_t(key[std::size_t(i)])]++)] = i;
  order.swap(scratch);
}
}  // namespace

std::vector<std::int32_t> suffix_array(std::span<const std::uint64_t> tokens) {
  const std::size_t n = tokens.size();
  std::vector<std::int32_t> sa(n);
  if (n == 0) return sa;
  // Ranks of the tokens themselves (compressed to 1..k; 0 means "past the end").
  std::vector<std::uint64_t> sorted(tokens.begin(), tokens.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<std::int32_t> rank(n), second(n), next(n), scratch, count;
  for (std::size_t i = 0; i < n; ++i)
    rank[i] =
        std::int32_t(std::lower_bound(sorted.begin(), sorted.end(), tokens[i]) - sorted.begin()) +
        1;
  std::iota(sa.begin(), sa.end(), 0);
  std::size_t buckets = sorted.size() + 1;
  for (std::size_t k = 1;; k <<= 1) {
    // Sort by (rank[i], rank[i + k]): radix, least significant key first.
    for (std::size_t i = 0; i < n; ++i) second[i] = i + k < n ? rank[i + k] : 0;
    counting_sort(sa, second, buckets, scratch, count);
    counting_sort(sa, rank, buckets, scratch, count);
    next[std::size_t(sa[0])] = 1;
    for (std::size_t j = 1; j < n; ++j) {
      std::size_t a = std::size_t(sa[j - 1]), b = std::size_t(sa[j]);
      next[b] = next[a] + ((rank[a] != rank[b] || second[a] != second[b]) ? 1 : 0);
    }
    rank.swap(next);
    buckets = std::size_t(rank[std::size_t(sa[n - 1])]) + 1;
    if (buckets - 1 == n || k >= n) break;  // all ranks distinct
  }
  return sa;
}

std::vector<std::int32_t> lcp_kasai(std::span<const std::uint64_t> tokens,
                                    std::span<const std::int32_t> sa) {
  const std::size_t n = tokens.size();
  std::vector<std::int32_t> lcp(n, 0), inv(n);
  for (std::size_t i = 0; i < n; ++i) inv[std::size_t(sa[i])] = std::int32_t(i);
  std::size_t h = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t r = std::size_t(inv[i]);
    if (r == 0) {
      h = 0;
      continue;
    }
    std::size_t j = std::size_t(sa[r - 1]);
    while (i + h < n && j + h < n && tokens[i + h] == tokens[j + h]) ++h;
    lcp[r] = std::int32_t(h);
    if (h > 0) --h;
  }
  return lcp;
}

}  // namespace reprise::tracing

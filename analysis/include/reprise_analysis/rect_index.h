#pragma once
// An index of rectangles by id that finds those meeting a query rectangle without looking at
// all of them: ids are kept sorted by their rectangle's low bound in dimension 0, and a query
// looks only at ids whose low bound lies within the widest indexed extent of the query's
// dimension-0 range. For pieces that tile a region (a partition's tiles and the cuts reads make
// of them) a query costs O(log n + the pieces it meets + pieces sharing its columns), not O(n):
// this keeps the physical analysis of one op from growing with every other piece of the tree.
// Visits are in a deterministic order (low bound, then id), the same on every shard that built
// the index by the same calls.
#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include "reprise/geometry.h"

namespace reprise::detail {

class RectIndex {
 public:
  void insert(const Domain& r, std::uint32_t id) {
    by_lo_.emplace(r.lo[0], id);
    widths_.insert(r.hi[0] - r.lo[0]);
  }
  // r must be the rectangle id was inserted with.
  void erase(const Domain& r, std::uint32_t id) {
    by_lo_.erase({r.lo[0], id});
    widths_.erase(widths_.find(r.hi[0] - r.lo[0]));
  }
  // Calls fn(id) for every id whose rectangle may meet q (a superset: callers test overlap).
  template <class Fn>
  void candidates(const Domain& q, Fn&& fn) const {
    if (by_lo_.empty()) return;
    const coord_t widest = *widths_.rbegin();
    const coord_t from = q.lo[0] < std::numeric_limits<coord_t>::min() + widest
                             ? std::numeric_limits<coord_t>::min()
                             : q.lo[0] - widest;
    for (auto it = by_lo_.lower_bound({from, 0}); it != by_lo_.end() && it->first <= q.hi[0]; ++it)
      fn(it->second);
  }

 private:
  std::set<std::pair<coord_t, std::uint32_t>> by_lo_;
  std::multiset<coord_t> widths_;  // hi[0] - lo[0] of every indexed rectangle
};

}  // namespace reprise::detail

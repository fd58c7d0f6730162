#pragma once
// An index of rectangles by id that finds those meeting a query rectangle without looking at
// all of them. Rectangles are grouped into columns by their low bound in dimension 0 and
// sorted within a column by their low bound in dimension 1; a query visits only the columns
// whose low bound lies within the widest indexed extent of its dimension-0 range and, in each,
// only the rectangles whose dimension-1 low bound lies within that column's widest extent of
// its dimension-1 range. For pieces that tile a region (a partition's tiles and the cuts reads
// make of them) a query costs O(log n + the columns it spans + the pieces it meets), in one
// dimension or two (a one-dimension index visited every piece of a 2-d grid's column band:
// O(sqrt n) per query, which made recording and checking big 2-d templates superlinear).
// Visits are in a deterministic order (dimension-0 low bound, dimension-1 low bound, id), the
// same on every shard that built the index by the same calls.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "reprise/geometry.h"

namespace reprise::detail {

class RectIndex {
 public:
  void insert(const Domain& r, std::uint32_t id) {
    Column& c = columns_[r.lo[0]];
    const Entry e{lo1(r), hi1(r) - lo1(r), id};
    c.entries.insert(std::upper_bound(c.entries.begin(), c.entries.end(), e), e);
    c.widest = std::max(c.widest, e.width);
    widths_.insert(r.hi[0] - r.lo[0]);
  }
  // r must be the rectangle id was inserted with.
  void erase(const Domain& r, std::uint32_t id) {
    auto col = columns_.find(r.lo[0]);
    Column& c = col->second;
    const Entry e{lo1(r), hi1(r) - lo1(r), id};
    c.entries.erase(std::lower_bound(c.entries.begin(), c.entries.end(), e));
    if (c.entries.empty()) {
      columns_.erase(col);
    } else if (e.width == c.widest) {
      c.widest = 0;
      for (const Entry& x : c.entries) c.widest = std::max(c.widest, x.width);
    }
    widths_.erase(widths_.find(r.hi[0] - r.lo[0]));
  }
  // Calls fn(id) for every id whose rectangle may meet q (a superset: callers test overlap).
  template <class Fn>
  void candidates(const Domain& q, Fn&& fn) const {
    if (columns_.empty()) return;
    const coord_t q_lo1 = lo1(q), q_hi1 = hi1(q);
    for (auto col = columns_.lower_bound(reach_below(q.lo[0], *widths_.rbegin()));
         col != columns_.end() && col->first <= q.hi[0]; ++col) {
      const Column& c = col->second;
      const Entry from{reach_below(q_lo1, c.widest), 0, 0};
      for (auto it = std::lower_bound(c.entries.begin(), c.entries.end(), from);
           it != c.entries.end() && it->lo <= q_hi1; ++it)
        fn(it->id);
    }
  }

 private:
  static coord_t lo1(const Domain& r) { return r.dim > 1 ? r.lo[1] : 0; }
  static coord_t hi1(const Domain& r) { return r.dim > 1 ? r.hi[1] : 0; }
  // The smallest low bound a rectangle at most `widest` wide may have and still reach `lo`.
  static coord_t reach_below(coord_t lo, coord_t widest) {
    return lo < std::numeric_limits<coord_t>::min() + widest ? std::numeric_limits<coord_t>::min()
                                                             : lo - widest;
  }
  struct Entry {
    coord_t lo;     // dimension-1 low bound
    coord_t width;  // hi[1] - lo[1]
    std::uint32_t id;
    // (The width is a function of the rectangle: (lo, id) orders entries.)
    bool operator<(const Entry& o) const { return lo != o.lo ? lo < o.lo : id < o.id; }
  };
  // A column is short (the pieces of one dimension-0 low bound): a sorted vector costs less
  // than a tree, and its widest entry is recomputed only when that one leaves.
  struct Column {
    std::vector<Entry> entries;  // sorted by (lo, id)
    coord_t widest = 0;
  };
  std::map<coord_t, Column> columns_;  // by dimension-0 low bound
  std::multiset<coord_t> widths_;      // hi[0] - lo[0] of every indexed rectangle
};

}  // namespace reprise::detail

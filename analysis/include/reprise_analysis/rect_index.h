#pragma once
// An index of rectangles by id that finds those meeting a query rectangle without looking at
// all of them. Rectangles are kept sorted by their low bound in dimension 0, then in
// dimension 1; a query walks the dimension-0 low bounds within the widest indexed extent of
// its dimension-0 range and, within each such column, jumps to the dimension-1 low bounds
// within the widest dimension-1 extent of its dimension-1 range. For pieces that tile a region
// (a partition's tiles and the cuts reads make of them) a query costs O(log n + the columns it
// spans + the pieces it meets) in one dimension or two; a column of one rectangle (one-row
// layouts) costs no jump. (Sorting by dimension 0 alone made a query visit a 2-d grid's whole
// column band: O(sqrt n), which made recording and checking big 2-d templates superlinear.)
// Visits are in a deterministic order (the low corner, then id): rectangles that do not overlap
// are visited alike on every shard that holds them, whatever ids they were given.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "reprise/geometry.h"
#include "reprise_rt/bounding_box.h"

namespace reprise::detail {

// The bounding box of any contiguous range of a fixed list of rectangles (a partition's pieces
// in color order) in O(log n): a segment tree of bounding boxes. Deferring a launch's points
// range by range then costs a shard O(log n) per range, not a look at every point.
class RangeHulls {
 public:
  explicit RangeHulls(std::vector<Domain> rects) : n_(rects.size()), tree_(2 * rects.size()) {
    std::move(rects.begin(), rects.end(), tree_.begin() + std::ptrdiff_t(n_));
    for (std::size_t i = n_; i-- > 1;) tree_[i] = bounding_union(tree_[2 * i], tree_[2 * i + 1]);
  }
  std::size_t size() const { return n_; }
  // The smallest rectangle holding rectangles first .. last-1.
  Domain hull(std::size_t first, std::size_t last) const {
    Domain h;
    for (first += n_, last += n_; first < last; first /= 2, last /= 2) {
      if (first & 1) grow(h, tree_[first++]);
      if (last & 1) grow(h, tree_[--last]);
    }
    return h;
  }

 private:
  std::size_t n_;
  std::vector<Domain> tree_;  // [n + i]: rectangle i; [i]: the hull of 2i and 2i + 1
};

class RectIndex {
 public:
  void insert(const Domain& r, std::uint32_t id) {
    hull_ = bounding_union(by_lo_.empty() ? Domain() : hull_, r);
    by_lo_.insert(Key{r.lo[0], lo1(r), lo2(r), id});
    ++widths_[r.hi[0] - r.lo[0]];
    ++heights_[hi1(r) - lo1(r)];
  }
  // r must be the rectangle id was inserted with.
  void erase(const Domain& r, std::uint32_t id) {
    by_lo_.erase(Key{r.lo[0], lo1(r), lo2(r), id});  // (hull_ only shrinks when it empties)
    forget(widths_, r.hi[0] - r.lo[0]);
    forget(heights_, hi1(r) - lo1(r));
  }
  // Calls fn(id) for every id whose rectangle has the low bounds of q in dimensions 0 and 1
  // (of rectangles that tile without overlapping: at most one in 1-d and 2-d), until fn
  // returns true.
  template <class Fn>
  void at_low_corner(const Domain& q, Fn&& fn) const {
    for (auto it = by_lo_.lower_bound(Key{q.lo[0], lo1(q), kLowest, 0});
         it != by_lo_.end() && it->lo0 == q.lo[0] && it->lo1 == lo1(q); ++it)
      if (fn(it->id)) return;
  }
  // Calls fn(id) for every indexed id.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (const Key& k : by_lo_) fn(k.id);
  }
  // Calls fn(id) for every id whose rectangle may meet q (a superset: callers test overlap).
  template <class Fn>
  void candidates(const Domain& q, Fn&& fn) const {
    // (A query far from every rectangle — another shard's point against this shard's pieces —
    // ends here.)
    if (by_lo_.empty() || !q.overlaps(hull_)) return;
    const coord_t lowest = std::numeric_limits<coord_t>::min();
    const coord_t from1 = reach_below(lo1(q), heights_.rbegin()->first), to1 = hi1(q);
    auto it =
        by_lo_.lower_bound(Key{reach_below(q.lo[0], widths_.rbegin()->first), lowest, kLowest, 0});
    while (it != by_lo_.end() && it->lo0 <= q.hi[0]) {
      const coord_t column = it->lo0;
      if (it->lo1 < from1) it = by_lo_.lower_bound(Key{column, from1, kLowest, 0});
      for (; it != by_lo_.end() && it->lo0 == column && it->lo1 <= to1; ++it) fn(it->id);
      if (it != by_lo_.end() && it->lo0 == column)  // the rest of the column lies above q
        it = column == std::numeric_limits<coord_t>::max()
                 ? by_lo_.end()
                 : by_lo_.lower_bound(Key{column + 1, lowest, kLowest, 0});
    }
  }

 private:
  static coord_t lo1(const Domain& r) { return r.dim > 1 ? r.lo[1] : 0; }
  static coord_t hi1(const Domain& r) { return r.dim > 1 ? r.hi[1] : 0; }
  // (Only orders the rectangles of one column and row: by their whole low corner, which
  // rectangles that do not overlap never share, rather than by id — so that the order does
  // not depend on how ids were handed out.)
  static coord_t lo2(const Domain& r) { return r.dim > 2 ? r.lo[2] : 0; }
  static constexpr coord_t kLowest = std::numeric_limits<coord_t>::min();
  // The smallest low bound a rectangle at most `widest` wide may have and still reach `lo`.
  static coord_t reach_below(coord_t lo, coord_t widest) {
    return lo < std::numeric_limits<coord_t>::min() + widest ? std::numeric_limits<coord_t>::min()
                                                             : lo - widest;
  }
  struct Key {
    coord_t lo0, lo1, lo2;
    std::uint32_t id;
    bool operator<(const Key& o) const {
      return lo0 != o.lo0   ? lo0 < o.lo0
             : lo1 != o.lo1 ? lo1 < o.lo1
             : lo2 != o.lo2 ? lo2 < o.lo2
                            : id < o.id;
    }
  };
  // Extents counted by value: tiles repeat a few extents, so counting allocates only for a
  // new one (a multiset allocated a node per rectangle).
  using Extents = std::map<coord_t, std::uint32_t>;
  static void forget(Extents& e, coord_t extent) {
    auto it = e.find(extent);
    if (--it->second == 0) e.erase(it);
  }
  std::set<Key> by_lo_;
  Domain hull_;      // holds every indexed rectangle (and perhaps erased ones)
  Extents widths_;   // hi[0] - lo[0] of the indexed rectangles
  Extents heights_;  // hi[1] - lo[1] of the indexed rectangles
};

// A partition's pieces in color order (point c of a launch that names the partition whole
// used piece c): which pieces meet a rectangle, and the hull of a range of them. Built once
// per partition and shared by the logical analysis and the deferred writes.
struct PartitionPieces {
  RectIndex index;
  RangeHulls hulls;
};

}  // namespace reprise::detail

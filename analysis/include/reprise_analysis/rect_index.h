#pragma once
// An index of rectangles by id that finds those meeting a query rectangle without looking at
// all of them. Rectangles are kept in bands by their dimension-0 extent (powers of two), each
// sorted by the low bound in dimension 0, then in dimension 1; a query walks, in each band,
// the dimension-0 low bounds within the band's widest extent of its dimension-0 range and,
// within each such column, jumps to the dimension-1 low bounds within the widest dimension-1
// extent of its dimension-1 range. For pieces that tile a region
// (a partition's tiles and the cuts reads make of them) a query costs O(log n + the columns it
// spans + the pieces it meets) in one dimension or two; a column of one rectangle (one-row
// layouts) costs no jump. (Sorting by dimension 0 alone made a query visit a 2-d grid's whole
// column band: O(sqrt n), which made recording and checking big 2-d templates superlinear.)
// Visits are in a deterministic order (the low corner, then id): rectangles that do not overlap
// are visited alike on every shard that holds them, whatever ids they were given.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "reprise/geometry.h"
#include "reprise_rt/bounding_box.h"
#include "reprise_rt/inline_vector.h"

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
    hull_ = bounding_union(size_ == 0 ? Domain() : hull_, r);
    Band& b = band_of(r);
    b.hull = bounding_union(b.by_lo.empty() ? Domain() : b.hull, r);
    b.by_lo.insert(Key{r.lo[0], lo1(r), lo2(r), id});
    const coord_t w = r.hi[0] - r.lo[0], h = hi1(r) - lo1(r);
    b.widths.add(w);
    b.heights.add(h);
    b.widest = b.by_lo.size() == 1 ? w : std::max(b.widest, w);
    b.tallest = b.by_lo.size() == 1 ? h : std::max(b.tallest, h);
    ++size_;
  }
  // r must be the rectangle id was inserted with.
  void erase(const Domain& r, std::uint32_t id) {
    const int n = band_number(r);
    Band& b = bands_[std::size_t(n)];
    b.by_lo.erase(Key{r.lo[0], lo1(r), lo2(r), id});  // (the hulls only shrink when empty)
    b.widths.remove(r.hi[0] - r.lo[0]);
    b.heights.remove(hi1(r) - lo1(r));
    if (b.by_lo.empty()) {
      used_ &= ~(std::uint64_t(1) << n);
    } else {
      b.widest = b.widths.largest();
      b.tallest = b.heights.largest();
    }
    --size_;
  }
  // Calls fn(id) for every id whose rectangle has the low bounds of q in dimensions 0 and 1
  // (of rectangles that tile without overlapping: at most one in 1-d and 2-d), until fn
  // returns true.
  template <class Fn>
  void at_low_corner(const Domain& q, Fn&& fn) const {
    Found found;
    each_band([&](const Band& b) {
      for (auto it = b.by_lo.lower_bound(Key{q.lo[0], lo1(q), kLowest, 0});
           it != b.by_lo.end() && it->lo0 == q.lo[0] && it->lo1 == lo1(q); ++it)
        found.push_back(*it);
    });
    std::sort(found.begin(), found.end());
    for (const Key& k : found)
      if (fn(k.id)) return;
  }
  // Calls fn(id) for every indexed id (in no particular order).
  template <class Fn>
  void for_each(Fn&& fn) const {
    each_band([&](const Band& b) {
      for (const Key& k : b.by_lo) fn(k.id);
    });
  }
  // Calls fn(id) for every id whose rectangle may meet q (a superset: callers test overlap),
  // in the order of their low corners.
  template <class Fn>
  void candidates(const Domain& q, Fn&& fn) const {
    // (A query far from every rectangle — another shard's point against this shard's pieces —
    // ends here.)
    if (size_ == 0 || !q.overlaps(hull_)) return;
    std::uint64_t near = 0;  // the bands with a rectangle that may meet q
    for (std::uint64_t u = used_; u; u &= u - 1)
      if (may_meet(bands_[std::size_t(std::countr_zero(u))], q)) near |= u & (~u + 1);
    if ((near & (near - 1)) == 0) {  // one band (or none): its walk is in order already
      if (near)
        walk(bands_[std::size_t(std::countr_zero(near))], q, [&](const Key& k) { fn(k.id); });
      return;
    }
    // Each band's walk is in order: two runs merge, more are sorted.
    Found found;
    std::size_t runs = 0, first_run = 0;
    for (std::uint64_t u = near; u; u &= u - 1) {
      const std::size_t before = found.size();
      walk(bands_[std::size_t(std::countr_zero(u))], q, [&](const Key& k) { found.push_back(k); });
      if (found.size() == before) continue;
      if (runs++ == 0) first_run = found.size();
    }
    if (runs == 2) {
      Found merged;
      std::merge(found.begin(), found.begin() + std::ptrdiff_t(first_run),
                 found.begin() + std::ptrdiff_t(first_run), found.end(),
                 std::back_inserter(merged));
      for (const Key& k : merged) fn(k.id);
      return;
    }
    if (runs > 2) std::sort(found.begin(), found.end());
    for (const Key& k : found) fn(k.id);
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
  // Extents counted by value, in ascending order: tiles repeat a few extents, so a short
  // sorted list (a map allocated a node per extent and cost ~100 instructions a lookup).
  struct Extents {
    struct Count {
      coord_t extent;
      std::uint32_t n;
    };
    InlineVector<Count, 4> counts;
    void add(coord_t extent) {
      Count* it = std::lower_bound(counts.begin(), counts.end(), extent,
                                   [](const Count& c, coord_t x) { return c.extent < x; });
      if (it != counts.end() && it->extent == extent) {
        ++it->n;
        return;
      }
      const std::size_t at = std::size_t(it - counts.begin());
      counts.push_back(Count{extent, 1});
      for (std::size_t k = counts.size() - 1; k > at; --k) counts[k] = counts[k - 1];
      counts[at] = Count{extent, 1};
    }
    void remove(coord_t extent) {
      std::size_t at = 0;
      while (counts[at].extent != extent) ++at;
      if (--counts[at].n > 0) return;
      for (std::size_t k = at; k + 1 < counts.size(); ++k) counts[k] = counts[k + 1];
      counts.pop_back();
    }
    coord_t largest() const { return counts[counts.size() - 1].extent; }
  };
  // Rectangles banded by their dimension-0 extent (powers of two): a query walks each band
  // from as far below as that band's widest reaches. With one band for all, a single wide
  // rectangle — under control replication, the part of a field where other shards' writes
  // are deferred — made every query walk every rectangle within its width: a shard in the
  // middle of a 1-d layout walked all the pieces on its left, O(ranks) per query.
  struct Band {
    std::set<Key> by_lo;
    Extents widths;                   // hi[0] - lo[0] of its rectangles
    Extents heights;                  // hi[1] - lo[1] of its rectangles
    coord_t widest = 0, tallest = 0;  // their largest (read by every query: rbegin walks)
    Domain hull;                      // holds its rectangles (and perhaps erased ones)
  };
  // Whether a rectangle of b may meet q: its hull (which only shrinks when b empties), and
  // the dimension-0 span its low bounds now reach (a band whose wide piece was cut keeps its
  // old hull: under control replication, the field's first piece, before this shard's tiles
  // were cut out of it, would send every query near them through two bands).
  static bool may_meet(const Band& b, const Domain& q) {
    return q.overlaps(b.hull) && b.by_lo.begin()->lo0 <= q.hi[0] &&
           reach_below(q.lo[0], b.widest) <= b.by_lo.rbegin()->lo0;
  }
  static int band_number(const Domain& r) {
    const coord_t w = r.hi[0] - r.lo[0];
    return w <= 0 ? 0 : int(std::bit_width(std::uint64_t(w)));
  }
  // The band r goes in, made if need be (and counted as holding rectangles).
  Band& band_of(const Domain& r) {
    const int n = band_number(r);
    if (bands_.size() <= std::size_t(n)) bands_.resize(std::size_t(n) + 1);
    used_ |= std::uint64_t(1) << n;
    return bands_[std::size_t(n)];
  }
  template <class Fn>
  void each_band(Fn&& fn) const {
    for (std::uint64_t u = used_; u; u &= u - 1) fn(bands_[std::size_t(std::countr_zero(u))]);
  }
  // The walk of one band, in the order of the low corners: dimension-0 low bounds within the
  // band's widest extent of q's dimension-0 range and, within each such column, a jump to the
  // dimension-1 low bounds within its widest dimension-1 extent of q's dimension-1 range.
  template <class Fn>
  static void walk(const Band& b, const Domain& q, Fn&& fn) {
    const coord_t lowest = std::numeric_limits<coord_t>::min();
    const coord_t from1 = reach_below(lo1(q), b.tallest), to1 = hi1(q);
    auto it = b.by_lo.lower_bound(Key{reach_below(q.lo[0], b.widest), lowest, kLowest, 0});
    while (it != b.by_lo.end() && it->lo0 <= q.hi[0]) {
      const coord_t column = it->lo0;
      if (it->lo1 < from1) it = b.by_lo.lower_bound(Key{column, from1, kLowest, 0});
      for (; it != b.by_lo.end() && it->lo0 == column && it->lo1 <= to1; ++it) fn(*it);
      if (it != b.by_lo.end() && it->lo0 == column)  // the rest of the column lies above q
        it = column == std::numeric_limits<coord_t>::max()
                 ? b.by_lo.end()
                 : b.by_lo.lower_bound(Key{column + 1, lowest, kLowest, 0});
    }
  }
  using Found = InlineVector<Key, 16>;
  std::vector<Band> bands_;  // by band_number
  std::uint64_t used_ = 0;   // the bands that hold rectangles
  std::size_t size_ = 0;
  Domain hull_;  // holds every indexed rectangle (and perhaps erased ones)
};

// A partition's pieces in color order (point c of a launch that names the partition whole
// used piece c): which pieces meet a rectangle, and the hull of a range of them. Built once
// per partition and shared by the logical analysis and the deferred writes.
struct PartitionPieces {
  RectIndex index;
  RangeHulls hulls;
  std::vector<std::uint32_t> nonempty_before;  // [c]: how many of pieces 0 .. c-1 are not empty
  std::uint32_t nonempty(std::size_t first, std::size_t last) const {
    return nonempty_before[last] - nonempty_before[first];
  }
};

}  // namespace reprise::detail

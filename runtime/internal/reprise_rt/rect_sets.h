#pragma once
// Sets of points as disjoint rectangles of one dimension (1 to 3): the pieces dependent
// partitioning computes. 1-d sets are sorted, coalesced runs (merges in linear time); N-d sets
// are rectangles merged along each dimension where they line up (the algebra is quadratic in
// rectangles there, which suits the few rectangles a blocky colouring makes).
#include <optional>
#include <vector>

#include "reprise/geometry.h"

namespace reprise::detail {

using RectSet = std::vector<Domain>;  // disjoint rectangles of one dimension

// An empty rectangle of dimension dim.
inline Domain empty_rect(int dim) {
  Domain d;
  d.dim = dim;
  d.hi[0] = -1;
  return d;
}

// When every piece is one rectangle or none: the pieces as a dense partition's rectangles (an
// empty one for none); otherwise nothing (the pieces make a sparse partition).
inline std::optional<std::vector<Domain>> single_rects(const std::vector<RectSet>& pieces,
                                                       int dim) {
  std::vector<Domain> rects;
  rects.reserve(pieces.size());
  for (const RectSet& p : pieces) {
    if (p.size() > 1) return std::nullopt;
    rects.push_back(p.empty() ? empty_rect(dim) : p.front());
  }
  return rects;
}

// The parts of rect outside hole (at most two slabs per dimension), appended to out; nothing
// for an empty rect. (Inline: the physical analysis cuts pieces with it on every write.)
inline void cut_away(const Domain& rect, const Domain& hole, RectSet& out) {
  if (!rect.overlaps(hole)) {
    if (!rect.empty()) out.push_back(rect);
    return;
  }
  // Peel slabs off rect, one dimension at a time, until what remains is inside the hole.
  Domain rest = rect;
  for (int d = 0; d < rect.dim; ++d) {
    if (rest.lo[d] < hole.lo[d]) {
      Domain slab = rest;
      slab.hi[d] = hole.lo[d] - 1;
      out.push_back(slab);
      rest.lo[d] = hole.lo[d];
    }
    if (rest.hi[d] > hole.hi[d]) {
      Domain slab = rest;
      slab.lo[d] = hole.hi[d] + 1;
      out.push_back(slab);
      rest.hi[d] = hole.hi[d];
    }
  }
}

// The points of `bounds` whose row-major positions (0 .. volume-1) are `linear`, sorted and
// distinct, as rectangles: rows of consecutive positions, merged where they line up.
RectSet rects_of_positions(const Domain& bounds, const std::vector<coord_t>& linear);
// Any rectangles of dimension dim (overlapping or not) as a disjoint set.
RectSet normalized(RectSet rects, int dim);
// Of disjoint sets.
RectSet intersect(const RectSet& a, const RectSet& b);
RectSet subtract(const RectSet& a, const RectSet& b);

// Rectangles ordered by their first coordinate, for finding the ones a rectangle meets without
// a scan of all (each has a tag: a color, an index).
class RectLookup {
 public:
  void add(const Domain& r, std::size_t tag);
  void finish();  // after the last add
  // Calls fn(tag) for each rectangle that overlaps want.
  template <class Fn>
  void overlapping(const Domain& want, Fn&& fn) const {
    std::size_t it = first_after(want.hi[0]);
    while (it-- > 0) {
      const Entry& e = entries_[it];
      if (e.rect.lo[0] + longest_ <= want.lo[0]) break;
      if (e.rect.overlaps(want)) fn(e.tag);
    }
  }

 private:
  struct Entry {
    Domain rect;
    std::size_t tag;
  };
  std::size_t first_after(coord_t x) const;  // entries with lo[0] <= x come before
  std::vector<Entry> entries_;
  coord_t longest_ = 0;  // the largest extent along the first dimension
};

}  // namespace reprise::detail

#pragma once
// Bounding boxes of rectangles: the hull of a partition's pieces, of what a shard wrote, of a
// range of points (one definition for the forest and the analysis).
#include <algorithm>

#include "reprise/geometry.h"

namespace reprise::detail {

// The smallest rectangle holding a and b (an empty one holds nothing).
inline Domain bounding_union(const Domain& a, const Domain& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  Domain u = a;
  for (int i = 0; i < a.dim; ++i) {
    u.lo[i] = std::min(a.lo[i], b.lo[i]);
    u.hi[i] = std::max(a.hi[i], b.hi[i]);
  }
  return u;
}

// box grows to hold r too, in place (for loops over every point of a launch).
inline void grow(Domain& box, const Domain& r) {
  if (r.empty()) return;
  if (box.empty()) {
    box = r;
    return;
  }
  for (int i = 0; i < r.dim; ++i) {
    box.lo[i] = std::min(box.lo[i], r.lo[i]);
    box.hi[i] = std::max(box.hi[i], r.hi[i]);
  }
}

}  // namespace reprise::detail

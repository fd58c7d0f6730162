#include "reprise_rt/rect_sets.h"

#include <algorithm>
#include <array>

namespace reprise::detail {

namespace {

Domain run(coord_t lo, coord_t hi) {
  return Domain(Rect<1>({lo}, {hi}));
}

// Merges rectangles that are equal in every dimension but d and adjacent along d.
void merge_along(RectSet& rects, int d) {
  const int dim = rects.empty() ? 0 : rects.front().dim;
  const auto key = [&](const Domain& r) {
    std::array<coord_t, 2 * kMaxDim + 1> k{};
    int n = 0;
    for (int i = 0; i < dim; ++i)
      if (i != d) {
        k[std::size_t(n++)] = r.lo[i];
        k[std::size_t(n++)] = r.hi[i];
      }
    k[std::size_t(n)] = r.lo[d];
    return k;
  };
  std::sort(rects.begin(), rects.end(),
            [&](const Domain& a, const Domain& b) { return key(a) < key(b); });
  std::size_t out = 0;
  for (std::size_t i = 1; i < rects.size(); ++i) {
    Domain& last = rects[out];
    const Domain& r = rects[i];
    bool same = r.lo[d] == last.hi[d] + 1;
    for (int k = 0; same && k < dim; ++k)
      same = k == d || (r.lo[k] == last.lo[k] && r.hi[k] == last.hi[k]);
    if (same)
      last.hi[d] = r.hi[d];
    else
      rects[++out] = r;
  }
  if (!rects.empty()) rects.resize(out + 1);
}

// Disjoint N-d rectangles merged where they line up, along the last dimension first.
void coalesce(RectSet& rects) {
  if (rects.empty()) return;
  for (int d = rects.front().dim; d-- > 0;) merge_along(rects, d);
}

RectLookup lookup_of(const RectSet& rects) {
  RectLookup l;
  for (std::size_t i = 0; i < rects.size(); ++i) l.add(rects[i], i);
  l.finish();
  return l;
}

}  // namespace

void RectLookup::add(const Domain& r, std::size_t tag) {
  if (r.empty()) return;
  entries_.push_back(Entry{r, tag});
  longest_ = std::max(longest_, r.hi[0] - r.lo[0] + 1);
}

void RectLookup::finish() {
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) { return a.rect.lo[0] < b.rect.lo[0]; });
}

std::size_t RectLookup::first_after(coord_t x) const {
  return std::size_t(std::partition_point(entries_.begin(), entries_.end(),
                                          [&](const Entry& e) { return e.rect.lo[0] <= x; }) -
                     entries_.begin());
}

RectSet rects_of_positions(const Domain& bounds, const std::vector<coord_t>& linear) {
  RectSet out;
  if (linear.empty()) return out;
  const int dim = bounds.dim;
  const coord_t row = bounds.hi[dim - 1] - bounds.lo[dim - 1] + 1;
  for (std::size_t i = 0; i < linear.size();) {
    std::size_t j = i + 1;
    while (j < linear.size() && linear[j] == linear[j - 1] + 1 &&
           linear[j] / row == linear[i] / row)
      ++j;
    // (Row-major: the row's index gives the other coordinates, the last one varies fastest.)
    out.push_back(
        Domain::from_points(bounds.delinearize(linear[i]), bounds.delinearize(linear[j - 1])));
    i = j;
  }
  if (dim > 1)
    for (int d = dim - 1; d-- > 0;) merge_along(out, d);
  return out;
}

RectSet normalized(RectSet rects, int dim) {
  std::erase_if(rects, [](const Domain& r) { return r.empty(); });
  if (dim == 1) {
    std::sort(rects.begin(), rects.end(),
              [](const Domain& a, const Domain& b) { return a.lo[0] < b.lo[0]; });
    RectSet out;
    for (const Domain& r : rects) {
      if (!out.empty() && r.lo[0] <= out.back().hi[0] + 1)
        out.back().hi[0] = std::max(out.back().hi[0], r.hi[0]);
      else
        out.push_back(r);
    }
    return out;
  }
  RectSet out, pieces, next;
  for (const Domain& r : rects) {
    pieces.assign(1, r);
    for (const Domain& o : out) {
      next.clear();
      for (const Domain& p : pieces) cut_away(p, o, next);
      pieces.swap(next);
      if (pieces.empty()) break;
    }
    out.insert(out.end(), pieces.begin(), pieces.end());
  }
  coalesce(out);
  return out;
}

RectSet intersect(const RectSet& a, const RectSet& b) {
  RectSet out;
  if (a.empty() || b.empty()) return out;
  if (a.front().dim == 1) {
    for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
      const coord_t lo = std::max(a[i].lo[0], b[j].lo[0]), hi = std::min(a[i].hi[0], b[j].hi[0]);
      if (lo <= hi) out.push_back(run(lo, hi));
      (a[i].hi[0] < b[j].hi[0]) ? ++i : ++j;
    }
    return out;
  }
  const RectLookup in_b = lookup_of(b);
  for (const Domain& x : a) in_b.overlapping(x, [&](std::size_t k) { out.push_back(x & b[k]); });
  coalesce(out);
  return out;
}

RectSet subtract(const RectSet& a, const RectSet& b) {
  RectSet out;
  if (a.empty()) return out;
  if (a.front().dim == 1) {
    std::size_t j = 0;
    for (const Domain& r : a) {
      coord_t lo = r.lo[0];
      while (j < b.size() && b[j].hi[0] < lo) ++j;
      for (std::size_t k = j; k < b.size() && b[k].lo[0] <= r.hi[0]; ++k) {
        if (b[k].lo[0] > lo) out.push_back(run(lo, b[k].lo[0] - 1));
        lo = std::max(lo, b[k].hi[0] + 1);
      }
      if (lo <= r.hi[0]) out.push_back(run(lo, r.hi[0]));
    }
    return out;
  }
  const RectLookup in_b = lookup_of(b);
  RectSet pieces, next;
  std::vector<std::size_t> cuts;
  for (const Domain& x : a) {
    cuts.clear();
    in_b.overlapping(x, [&](std::size_t k) { cuts.push_back(k); });
    pieces.assign(1, x);
    for (std::size_t k : cuts) {
      next.clear();
      for (const Domain& p : pieces) cut_away(p, b[k], next);
      pieces.swap(next);
    }
    out.insert(out.end(), pieces.begin(), pieces.end());
  }
  coalesce(out);
  return out;
}

}  // namespace reprise::detail

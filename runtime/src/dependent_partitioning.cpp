// Dependent partitioning (Context::partition_by_field, _by_image, _by_preimage, the set
// operations and pending partitions) on regions of 1 to 3 dimensions. The field-reading kinds
// map the fields read-only, as an inline mapping does: the mapping is ordered after the ops
// issued before it that write them, and under control replication every shard reads the same
// values in its own memory, so every shard computes the same pieces. Pieces are kept as sets of
// disjoint rectangles (reprise_rt/rect_sets.h); a result whose pieces are all one rectangle is
// a dense partition, any other a sparse one.
#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "reprise/context.h"
#include "reprise/error.h"
#include "reprise_rt/rect_sets.h"
#include "reprise_rt/runtime.h"

namespace reprise {

namespace {

using detail::RectSet;

// Calls fn with std::integral_constant<int, dim> (a region's dimension, 1 to 3).
template <class Fn>
void with_dim(int dim, Fn&& fn) {
  if (dim == 1)
    fn(std::integral_constant<int, 1>{});
  else if (dim == 2)
    fn(std::integral_constant<int, 2>{});
  else
    fn(std::integral_constant<int, 3>{});
}

// Sorted, distinct 1-d points as runs.
RectSet runs_of_points(std::vector<coord_t> points) {
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  RectSet out;
  for (std::size_t i = 0; i < points.size();) {
    std::size_t j = i + 1;
    while (j < points.size() && points[j] == points[j - 1] + 1) ++j;
    out.push_back(Domain(Rect<1>({points[i]}, {points[j - 1]})));
    i = j;
  }
  return out;
}

// Each color's positions (row-major in bounds, ascending) as rectangles.
std::vector<RectSet> rects_of_position_sets(const Domain& bounds,
                                            const std::vector<std::vector<coord_t>>& positions) {
  std::vector<RectSet> pieces;
  pieces.reserve(positions.size());
  for (const auto& p : positions) pieces.push_back(detail::rects_of_positions(bounds, p));
  return pieces;
}

struct PartitionView {
  Region parent;
  Domain colors;
  std::vector<RectSet> pieces;  // per color, row-major
};

// A partition's pieces as rectangle sets (a dense piece is one rectangle, or none when empty).
PartitionView view_of(detail::Runtime& rt, const Partition& p, const char* op) {
  rt.forest().check_partition(p, op);
  const auto& pn = rt.forest().partition(p.node());
  PartitionView v;
  v.parent = rt.forest().region_handle(pn.parent_region);
  v.colors = pn.colors;
  v.pieces.resize(pn.pieces->size());
  for (std::size_t c = 0; c < v.pieces.size(); ++c) {
    if (pn.sparse())
      v.pieces[c] = (*pn.runs)[c];
    else if (!pn.piece(c).empty())
      v.pieces[c] = {pn.piece(c)};
  }
  return v;
}

// The size of field `fid` of r's field space, or an Error naming the op.
std::size_t field_size(detail::Runtime& rt, const Region& r, FieldID fid, const char* op) {
  const auto& fs = rt.forest().field_space(rt.forest().tree(r.tree()).field_space);
  for (const FieldDef& f : fs.fields)
    if (f.id == fid) return f.size;
  throw Error(fmt::format("{}: the region {} has no field {} (fields {})", op, r.bounds().str(),
                          fid, rt.forest().field_list(rt.forest().tree(r.tree()).field_space)));
}

// Whether a pointer field into `dim`-d points holds a point (false) or a rectangle (true) per
// element, from its size; an Error for any other size.
bool holds_rects(detail::Runtime& rt, const Region& r, FieldID fid, int dim, const char* op) {
  const std::size_t size = field_size(rt, r, fid, op), point = sizeof(coord_t) * std::size_t(dim);
  if (size == point) return false;
  if (size == 2 * point) return true;
  throw Error(fmt::format(
      "{}: field {} has {} bytes; a pointer field into {}-d points holds a Point<{}> ({} bytes{}) "
      "or a Rect<{}> ({} bytes) per element",
      op, fid, size, dim, dim, point, dim == 1 ? ", or a coord_t" : "", dim, 2 * point));
}

// A region's points: its bounds, or a sparse piece's rectangles.
RectSet points_of(const detail::RegionForest& forest, const Region& r) {
  if (forest.sparse_partition_of(r.node()) != kInvalidId) return forest.rects_of_sparse(r.node());
  return r.bounds().empty() ? RectSet{} : RectSet{r.bounds()};
}

// Positions gathered rectangle by rectangle of a sparse region, in order.
void sort_positions(std::vector<std::vector<coord_t>>& positions) {
  for (auto& p : positions) std::sort(p.begin(), p.end());
}

// What pointer field `fid` of the mapped region holds at each point of `where` (Ns-d), as a
// rectangle of the target's Nt-d points (one point, or a range that may be empty):
// fn(position of the element in `frame` (row-major), its rectangle).
template <int Ns, int Nt, class Fn>
void each_pointer(const PhysicalRegion& pr, FieldID fid, bool rects, const Domain& where,
                  const Domain& frame, Fn&& fn) {
  if (rects) {
    auto range = pr.accessor<const Rect<Nt>, Ns>(fid);
    for (auto i : Rect<Ns>(where)) fn(frame.linearize(DomainPoint(i)), Domain(range[i]));
  } else {
    auto point = pr.accessor<const Point<Nt>, Ns>(fid);
    for (auto i : Rect<Ns>(where)) {
      const Point<Nt> t = point[i];
      fn(frame.linearize(DomainPoint(i)), Domain(Rect<Nt>(t, t)));
    }
  }
}

}  // namespace

// Every piece a single rectangle (or empty): a dense partition; else a sparse one.
Partition Context::partition_from_runs(Region parent, const Domain& colors,
                                       std::vector<std::vector<Domain>> pieces) {
  const bool dense = std::all_of(pieces.begin(), pieces.end(),
                                 [](const std::vector<Domain>& p) { return p.size() <= 1; });
  if (!dense) return partition_by_rect_lists(parent, create_index_space(colors), std::move(pieces));
  std::vector<Domain> rects;
  rects.reserve(pieces.size());
  for (const auto& p : pieces)
    rects.push_back(p.empty() ? detail::empty_rect(parent.bounds().dim) : p.front());
  return partition_by_rects(parent, create_index_space(colors), rects);
}

Partition Context::partition_by_point_sets(Region parent, const IndexSpace& colors,
                                           const std::vector<std::vector<coord_t>>& points) {
  rt("partition_by_point_sets").forest().check_region(parent, "partition_by_point_sets");
  if (parent.bounds().dim != 1)
    throw Error(
        fmt::format("partition_by_point_sets: the region {} is {}-d; point sets "
                    "partition 1-d regions (use partition_by_rect_lists)",
                    parent.bounds().str(), parent.bounds().dim));
  std::vector<RectSet> pieces;
  pieces.reserve(points.size());
  for (const auto& p : points) pieces.push_back(runs_of_points(p));
  return partition_by_rect_lists(parent, colors, std::move(pieces));
}

Partition Context::partition_by_field(Region parent, FieldID color_field,
                                      const IndexSpace& colors) {
  const char* op = "partition_by_field";
  detail::Runtime& rtm = rt(op);
  rtm.check_not_in_trace(op);
  rtm.forest().check_region(parent, op);
  const Domain& cs = colors.bounds();
  const Domain bounds = parent.bounds();
  if (const std::size_t size = field_size(rtm, parent, color_field, op);
      size != sizeof(coord_t) * std::size_t(cs.dim))
    throw Error(
        fmt::format("{}: field {} has {} bytes; a color field holds a color of the {}-d color "
                    "space {} per element: a Point<{}> ({} bytes{})",
                    op, color_field, size, cs.dim, cs.str(), cs.dim,
                    sizeof(coord_t) * std::size_t(cs.dim), cs.dim == 1 ? ", or a coord_t" : ""));
  std::vector<std::vector<coord_t>> positions(std::size_t(cs.volume()));
  const RectSet points = points_of(rtm.forest(), parent);
  {
    PhysicalRegion pr = map_region(parent, Privilege::ReadOnly, {color_field});
    with_dim(bounds.dim, [&](auto n) {
      with_dim(cs.dim, [&](auto k) {
        constexpr int N = decltype(n)::value, K = decltype(k)::value;
        auto color = pr.accessor<const Point<K>, N>(color_field);
        for (const Domain& r : points)
          for (auto i : Rect<N>(r)) {
            const DomainPoint c(color[i]);
            if (cs.contains(c))
              positions[std::size_t(cs.linearize(c))].push_back(bounds.linearize(DomainPoint(i)));
          }
      });
    });
  }
  if (points.size() > 1) sort_positions(positions);
  return partition_from_runs(parent, cs, rects_of_position_sets(bounds, positions));
}

Partition Context::partition_by_image(Region target, const Partition& source, FieldID pointer) {
  const char* op = "partition_by_image";
  detail::Runtime& rtm = rt(op);
  rtm.check_not_in_trace(op);
  rtm.forest().check_region(target, op);
  const PartitionView src = view_of(rtm, source, op);
  const Domain tb = target.bounds();
  const bool rects = holds_rects(rtm, src.parent, pointer, tb.dim, op);
  std::vector<std::vector<Domain>> pieces(src.pieces.size());
  {
    PhysicalRegion pr = map_region(src.parent, Privilege::ReadOnly, {pointer});
    std::vector<coord_t> positions;
    RectSet ranges;
    for (std::size_t c = 0; c < src.pieces.size(); ++c) {
      positions.clear();
      ranges.clear();
      // (Pointers outside the target point at nothing.)
      const auto add = [&](coord_t, const Domain& to) {
        if (rects)
          ranges.push_back(to & tb);
        else if (const DomainPoint t = to.lo_point(); tb.contains(t))
          positions.push_back(tb.linearize(t));
      };
      with_dim(src.parent.bounds().dim, [&](auto ns) {
        with_dim(tb.dim, [&](auto nt) {
          for (const Domain& r : src.pieces[c])
            each_pointer<decltype(ns)::value, decltype(nt)::value>(pr, pointer, rects, r, r, add);
        });
      });
      if (rects) {
        pieces[c] = detail::normalized(std::move(ranges), tb.dim);
      } else {
        std::sort(positions.begin(), positions.end());
        positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
        pieces[c] = detail::rects_of_positions(tb, positions);
      }
    }
  }
  return partition_from_runs(target, src.colors, std::move(pieces));
}

Partition Context::partition_by_preimage(const Partition& target, Region source, FieldID pointer) {
  const char* op = "partition_by_preimage";
  detail::Runtime& rtm = rt(op);
  rtm.check_not_in_trace(op);
  rtm.forest().check_region(source, op);
  const PartitionView dst = view_of(rtm, target, op);
  const Domain sb = source.bounds();
  const int nt = dst.parent.bounds().dim;
  const bool rects = holds_rects(rtm, source, pointer, nt, op);
  // Which colors hold a target point: the target's rectangles (those of an aliased target may
  // overlap: every color whose rectangles meet the pointer).
  detail::RectLookup index;
  for (std::size_t c = 0; c < dst.pieces.size(); ++c)
    for (const Domain& r : dst.pieces[c]) index.add(r, c);
  index.finish();
  std::vector<std::vector<coord_t>> positions(dst.pieces.size());
  const RectSet points = points_of(rtm.forest(), source);
  {
    PhysicalRegion pr = map_region(source, Privilege::ReadOnly, {pointer});
    std::vector<std::size_t> hit;
    const auto add = [&](coord_t at, const Domain& to) {
      if (to.empty()) return;
      hit.clear();
      index.overlapping(to, [&](std::size_t c) { hit.push_back(c); });
      std::sort(hit.begin(), hit.end());
      hit.erase(std::unique(hit.begin(), hit.end()), hit.end());
      for (std::size_t c : hit) positions[c].push_back(at);
    };
    with_dim(sb.dim, [&](auto ns) {
      with_dim(nt, [&](auto t) {
        for (const Domain& r : points)
          each_pointer<decltype(ns)::value, decltype(t)::value>(pr, pointer, rects, r, sb, add);
      });
    });
  }
  if (points.size() > 1) sort_positions(positions);
  return partition_from_runs(source, dst.colors, rects_of_position_sets(sb, positions));
}

Partition Context::partition_set_operation(const Partition& a, const Partition& b, int kind,
                                           const char* op) {
  detail::Runtime& rtm = rt(op);
  rtm.check_not_in_trace(op);
  const PartitionView va = view_of(rtm, a, op), vb = view_of(rtm, b, op);
  if (!(va.parent == vb.parent))
    throw Error(fmt::format("{}: the partitions are of different regions ({} and {})", op,
                            va.parent.bounds().str(), vb.parent.bounds().str()));
  if (!(va.colors == vb.colors))
    throw Error(fmt::format("{}: the color spaces differ ({} and {})", op, va.colors.str(),
                            vb.colors.str()));
  const int dim = va.parent.bounds().dim;
  std::vector<std::vector<Domain>> pieces(va.pieces.size());
  for (std::size_t c = 0; c < pieces.size(); ++c) {
    if (kind == 0) {
      RectSet both = va.pieces[c];
      both.insert(both.end(), vb.pieces[c].begin(), vb.pieces[c].end());
      pieces[c] = detail::normalized(std::move(both), dim);
    } else if (kind == 1) {
      pieces[c] = detail::intersect(va.pieces[c], vb.pieces[c]);
    } else {
      pieces[c] = detail::subtract(va.pieces[c], vb.pieces[c]);
    }
  }
  return partition_from_runs(va.parent, va.colors, std::move(pieces));
}

Partition Context::partition_pending(
    Region parent, const IndexSpace& colors,
    const std::function<std::vector<Region>(const DomainPoint&)>& regions_of, PieceOp kind) {
  const char* op = "partition_pending";
  detail::Runtime& rtm = rt(op);
  rtm.check_not_in_trace(op);
  const auto& forest = rtm.forest();
  forest.check_region(parent, op);
  const int dim = parent.bounds().dim;
  auto runs_of = [&](const Region& r) -> RectSet {
    forest.check_region(r, op);
    if (r.tree() != parent.tree())
      throw Error(fmt::format("{}: region {} is not in the tree of {}", op, r.bounds().str(),
                              parent.bounds().str()));
    return points_of(forest, r);
  };
  const Domain& cs = colors.bounds();
  const RectSet bounds = points_of(forest, parent);
  std::vector<std::vector<Domain>> pieces(std::size_t(cs.volume()));
  for (std::size_t c = 0; c < pieces.size(); ++c) {
    const std::vector<Region> regions = regions_of(cs.delinearize(coord_t(c)));
    RectSet piece;
    for (std::size_t k = 0; k < regions.size(); ++k) {
      RectSet next = runs_of(regions[k]);
      if (k == 0)
        piece = std::move(next);
      else if (kind == PieceOp::Union)
        piece.insert(piece.end(), next.begin(), next.end());
      else if (kind == PieceOp::Intersection)
        piece = detail::intersect(detail::normalized(std::move(piece), dim),
                                  detail::normalized(std::move(next), dim));
      else
        piece = detail::subtract(detail::normalized(std::move(piece), dim),
                                 detail::normalized(std::move(next), dim));
    }
    pieces[c] = detail::intersect(detail::normalized(std::move(piece), dim), bounds);
  }
  return partition_from_runs(parent, cs, std::move(pieces));
}

Partition Context::partition_union(const Partition& a, const Partition& b) {
  return partition_set_operation(a, b, 0, "partition_union");
}
Partition Context::partition_intersection(const Partition& a, const Partition& b) {
  return partition_set_operation(a, b, 1, "partition_intersection");
}
Partition Context::partition_difference(const Partition& a, const Partition& b) {
  return partition_set_operation(a, b, 2, "partition_difference");
}

}  // namespace reprise

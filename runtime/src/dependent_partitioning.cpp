// Dependent partitioning (Context::partition_by_field, _by_image, _by_preimage, the set
// operations and pending partitions) on 1-d regions. The field-reading kinds map the fields
// read-only, as an inline mapping does: the mapping is ordered after the ops issued before it that
// write them, and under control replication every shard reads the same values in its own memory, so
// every shard computes the same pieces. Pieces are kept as sorted, disjoint point runs; a result
// whose pieces are all single runs is a dense partition, any other a sparse one.
#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "reprise/context.h"
#include "reprise/error.h"
#include "reprise_rt/runtime.h"

namespace reprise {

namespace {

using Runs = std::vector<Domain>;  // sorted, disjoint 1-d rectangles

Domain run(coord_t lo, coord_t hi) {
  return Domain(Rect<1>({lo}, {hi}));
}

// Sorted, distinct points as runs.
Runs runs_of_points(std::vector<coord_t> points) {
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  Runs out;
  for (std::size_t i = 0; i < points.size();) {
    std::size_t j = i + 1;
    while (j < points.size() && points[j] == points[j - 1] + 1) ++j;
    out.push_back(run(points[i], points[j - 1]));
    i = j;
  }
  return out;
}

// Each color's points as runs.
std::vector<Runs> runs_of_point_sets(std::vector<std::vector<coord_t>> points) {
  std::vector<Runs> pieces;
  pieces.reserve(points.size());
  for (auto& p : points) pieces.push_back(runs_of_points(std::move(p)));
  return pieces;
}

// Any rectangles as sorted, disjoint, coalesced runs.
Runs normalized(Runs rects) {
  std::erase_if(rects, [](const Domain& r) { return r.empty(); });
  std::sort(rects.begin(), rects.end(),
            [](const Domain& a, const Domain& b) { return a.lo[0] < b.lo[0]; });
  Runs out;
  for (const Domain& r : rects) {
    if (!out.empty() && r.lo[0] <= out.back().hi[0] + 1)
      out.back().hi[0] = std::max(out.back().hi[0], r.hi[0]);
    else
      out.push_back(r);
  }
  return out;
}

Runs intersect(const Runs& a, const Runs& b) {
  Runs out;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const coord_t lo = std::max(a[i].lo[0], b[j].lo[0]), hi = std::min(a[i].hi[0], b[j].hi[0]);
    if (lo <= hi) out.push_back(run(lo, hi));
    (a[i].hi[0] < b[j].hi[0]) ? ++i : ++j;
  }
  return out;
}

Runs subtract(const Runs& a, const Runs& b) {
  Runs out;
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

void check_1d(const Region& r, const char* op) {
  if (r.bounds().dim != 1)
    throw Error(fmt::format("{}: the region {} is {}-d; dependent partitioning takes 1-d regions",
                            op, r.bounds().str(), r.bounds().dim));
}

struct PartitionView {
  Region parent;
  Domain colors;
  std::vector<Runs> pieces;  // per color, row-major
};

// A partition's pieces as runs (a dense piece is one run, or none when empty).
PartitionView view_of(detail::Runtime& rt, const Partition& p, const char* op) {
  rt.forest().check_partition(p, op);
  const auto& pn = rt.forest().partition(p.node());
  PartitionView v;
  v.parent = rt.forest().region_handle(pn.parent_region);
  v.colors = pn.colors;
  check_1d(v.parent, op);
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

// What a pointer field holds per element: a point (coord_t) or a range (Rect<1>).
struct PointerField {
  Accessor<const coord_t, 1> point;
  Accessor<const Rect<1>, 1> range;
  bool ranges = false;
  // The target runs element i points to, appended to out.
  void add(coord_t i, std::vector<coord_t>& points, Runs& ranges_out) const {
    if (!ranges)
      points.push_back(point[Point<1>(i)]);
    else if (const Rect<1> r = range[Point<1>(i)]; !r.empty())
      ranges_out.push_back(Domain(r));
  }
};

PointerField pointer_field(detail::Runtime& rt, const PhysicalRegion& pr, const Region& r,
                           FieldID fid, const char* op) {
  PointerField f;
  const std::size_t size = field_size(rt, r, fid, op);
  if (size == sizeof(coord_t)) {
    f.point = pr.accessor<const coord_t, 1>(fid);
  } else if (size == sizeof(Rect<1>)) {
    f.ranges = true;
    f.range = pr.accessor<const Rect<1>, 1>(fid);
  } else {
    throw Error(
        fmt::format("{}: field {} has {} bytes; a pointer field holds a coord_t ({} "
                    "bytes) or a Rect<1> ({} bytes) per element",
                    op, fid, size, sizeof(coord_t), sizeof(Rect<1>)));
  }
  return f;
}

}  // namespace

// Every piece a single run (or empty): a dense partition; else a sparse one.
Partition Context::partition_from_runs(Region parent, const Domain& colors,
                                       std::vector<std::vector<Domain>> pieces) {
  const bool dense = std::all_of(pieces.begin(), pieces.end(),
                                 [](const std::vector<Domain>& p) { return p.size() <= 1; });
  if (!dense) return partition_by_rect_lists(parent, create_index_space(colors), std::move(pieces));
  std::vector<Domain> rects;
  rects.reserve(pieces.size());
  for (const auto& p : pieces) rects.push_back(p.empty() ? run(1, 0) : p.front());
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
  return partition_by_rect_lists(parent, colors, runs_of_point_sets(points));
}

Partition Context::partition_by_field(Region parent, FieldID color_field,
                                      const IndexSpace& colors) {
  const char* op = "partition_by_field";
  detail::Runtime& rtm = rt(op);
  rtm.check_not_in_trace(op);
  rtm.forest().check_region(parent, op);
  check_1d(parent, op);
  const Domain& cs = colors.bounds();
  if (cs.dim != 1)
    throw Error(fmt::format("{}: the color space {} is {}-d; colors are coord_t values (1-d)", op,
                            cs.str(), cs.dim));
  if (const std::size_t size = field_size(rtm, parent, color_field, op); size != sizeof(coord_t))
    throw Error(
        fmt::format("{}: field {} has {} bytes; a color field holds a coord_t ({} bytes) "
                    "per element",
                    op, color_field, size, sizeof(coord_t)));
  std::vector<std::vector<coord_t>> points(std::size_t(cs.volume()));
  {
    PhysicalRegion pr = map_region(parent, Privilege::ReadOnly, {color_field});
    auto color = pr.accessor<const coord_t, 1>(color_field);
    for (auto i : Rect<1>(parent.bounds())) {
      const coord_t c = color[i];
      if (cs.contains(DomainPoint(c))) points[std::size_t(c - cs.lo[0])].push_back(i[0]);
    }
  }
  return partition_from_runs(parent, cs, runs_of_point_sets(std::move(points)));
}

Partition Context::partition_by_image(Region target, const Partition& source, FieldID pointer) {
  const char* op = "partition_by_image";
  detail::Runtime& rtm = rt(op);
  rtm.check_not_in_trace(op);
  rtm.forest().check_region(target, op);
  check_1d(target, op);
  const PartitionView src = view_of(rtm, source, op);
  std::vector<std::vector<Domain>> pieces(src.pieces.size());
  {
    PhysicalRegion pr = map_region(src.parent, Privilege::ReadOnly, {pointer});
    const PointerField f = pointer_field(rtm, pr, src.parent, pointer, op);
    const Runs bounds = {target.bounds()};
    for (std::size_t c = 0; c < src.pieces.size(); ++c) {
      std::vector<coord_t> points;
      Runs ranges;
      for (const Domain& r : src.pieces[c])
        for (auto i : Rect<1>(r)) f.add(i[0], points, ranges);
      Runs all = runs_of_points(std::move(points));
      all.insert(all.end(), ranges.begin(), ranges.end());
      pieces[c] = intersect(normalized(std::move(all)), bounds);  // (pointers outside: none)
    }
  }
  return partition_from_runs(target, src.colors, std::move(pieces));
}

Partition Context::partition_by_preimage(const Partition& target, Region source, FieldID pointer) {
  const char* op = "partition_by_preimage";
  detail::Runtime& rtm = rt(op);
  rtm.check_not_in_trace(op);
  rtm.forest().check_region(source, op);
  check_1d(source, op);
  const PartitionView dst = view_of(rtm, target, op);
  // Which colors hold a target point: the target's runs, sorted, with their colors.
  std::vector<std::pair<Domain, std::size_t>> index;
  for (std::size_t c = 0; c < dst.pieces.size(); ++c)
    for (const Domain& r : dst.pieces[c]) index.emplace_back(r, c);
  std::sort(index.begin(), index.end(),
            [](const auto& a, const auto& b) { return a.first.lo[0] < b.first.lo[0]; });
  coord_t longest = 0;  // the runs that can meet a pointer start at most this far before it
  for (const auto& e : index) longest = std::max(longest, e.first.volume());
  std::vector<std::vector<coord_t>> points(dst.pieces.size());
  {
    PhysicalRegion pr = map_region(source, Privilege::ReadOnly, {pointer});
    const PointerField f = pointer_field(rtm, pr, source, pointer, op);
    std::vector<std::size_t> hit;
    for (auto i : Rect<1>(source.bounds())) {
      std::vector<coord_t> to;
      Runs ranges;
      f.add(i[0], to, ranges);
      for (coord_t t : to) ranges.push_back(run(t, t));
      hit.clear();
      // Runs of an aliased target may overlap: every color whose runs meet the pointer.
      for (const Domain& want : ranges) {
        auto it = std::partition_point(index.begin(), index.end(),
                                       [&](const auto& e) { return e.first.lo[0] <= want.hi[0]; });
        while (it != index.begin()) {
          --it;
          if (it->first.lo[0] + longest <= want.lo[0]) break;
          if (it->first.overlaps(want)) hit.push_back(it->second);
        }
      }
      std::sort(hit.begin(), hit.end());
      hit.erase(std::unique(hit.begin(), hit.end()), hit.end());
      for (std::size_t c : hit) points[c].push_back(i[0]);
    }
  }
  return partition_from_runs(source, dst.colors, runs_of_point_sets(std::move(points)));
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
  std::vector<std::vector<Domain>> pieces(va.pieces.size());
  for (std::size_t c = 0; c < pieces.size(); ++c) {
    if (kind == 0) {
      Runs both = va.pieces[c];
      both.insert(both.end(), vb.pieces[c].begin(), vb.pieces[c].end());
      pieces[c] = normalized(std::move(both));
    } else if (kind == 1) {
      pieces[c] = intersect(va.pieces[c], vb.pieces[c]);
    } else {
      pieces[c] = subtract(va.pieces[c], vb.pieces[c]);
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
  check_1d(parent, op);
  // A region's points as runs: its own bounds, or a sparse piece's rectangles.
  auto runs_of = [&](const Region& r) -> Runs {
    forest.check_region(r, op);
    if (r.tree() != parent.tree())
      throw Error(fmt::format("{}: region {} is not in the tree of {}", op, r.bounds().str(),
                              parent.bounds().str()));
    const std::uint32_t sparse = forest.sparse_partition_of(r.node());
    if (sparse == kInvalidId) return r.bounds().empty() ? Runs{} : Runs{r.bounds()};
    const auto& pn = forest.partition(sparse);
    return (*pn.runs)[std::size_t(pn.colors.linearize(forest.region(r.node()).color))];
  };
  const Domain& cs = colors.bounds();
  const Runs bounds = {parent.bounds()};
  std::vector<std::vector<Domain>> pieces(std::size_t(cs.volume()));
  for (std::size_t c = 0; c < pieces.size(); ++c) {
    const std::vector<Region> regions = regions_of(cs.delinearize(coord_t(c)));
    Runs piece;
    for (std::size_t k = 0; k < regions.size(); ++k) {
      Runs next = runs_of(regions[k]);
      if (k == 0)
        piece = std::move(next);
      else if (kind == PieceOp::Union)
        piece.insert(piece.end(), next.begin(), next.end());
      else if (kind == PieceOp::Intersection)
        piece = intersect(normalized(std::move(piece)), normalized(std::move(next)));
      else
        piece = subtract(normalized(std::move(piece)), normalized(std::move(next)));
    }
    pieces[c] = intersect(normalized(std::move(piece)), bounds);
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

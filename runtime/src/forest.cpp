#include "reprise_rt/forest.h"

#include <fmt/core.h>

#include <algorithm>
#include <numeric>

#include "reprise/error.h"

namespace reprise::detail {

namespace {

bool pieces_disjoint(const std::vector<Domain>& pieces) {
  std::vector<std::size_t> order(pieces.size());
  std::iota(order.begin(), order.end(), 0);
  std::erase_if(order, [&](std::size_t i) { return pieces[i].empty(); });
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return pieces[a].lo[0] < pieces[b].lo[0]; });
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Domain& a = pieces[order[i]];
    for (std::size_t j = i + 1; j < order.size() && pieces[order[j]].lo[0] <= a.hi[0]; ++j)
      if (a.overlaps(pieces[order[j]])) return false;
  }
  return true;
}

// Whether the union of the pieces covers `bounds`; exact by coordinate compression when small,
// otherwise reported as incomplete (completeness only enables optimisations).
bool pieces_cover(const Domain& bounds, const std::vector<Domain>& pieces, bool disjoint) {
  if (disjoint) {
    coord_t v = 0;
    for (const auto& p : pieces) v += (p & bounds).volume();
    return v == bounds.volume();
  }
  if (pieces.size() > 64) return false;
  std::array<std::vector<coord_t>, kMaxDim> cuts;
  for (int d = 0; d < bounds.dim; ++d) {
    cuts[d] = {bounds.lo[d], bounds.hi[d] + 1};
    for (const auto& p : pieces) {
      cuts[d].push_back(std::clamp(p.lo[d], bounds.lo[d], bounds.hi[d] + 1));
      cuts[d].push_back(std::clamp(p.hi[d] + 1, bounds.lo[d], bounds.hi[d] + 1));
    }
    std::sort(cuts[d].begin(), cuts[d].end());
    cuts[d].erase(std::unique(cuts[d].begin(), cuts[d].end()), cuts[d].end());
  }
  // Every cell of the compressed grid must lie in some piece.
  std::array<std::size_t, kMaxDim> idx{};
  for (;;) {
    DomainPoint cell;
    cell.dim = bounds.dim;
    for (int d = 0; d < bounds.dim; ++d) cell.x[d] = cuts[d][idx[d]];
    bool covered = false;
    for (const auto& p : pieces)
      if (p.contains(cell)) covered = true;
    if (!covered) return false;
    int d = bounds.dim - 1;
    for (; d >= 0; --d) {
      if (++idx[d] + 1 < cuts[d].size()) break;
      idx[d] = 0;
    }
    if (d < 0) return true;
  }
}

}  // namespace

IndexSpace RegionForest::create_index_space(const Domain& bounds) {
  if (bounds.dim < 1 || bounds.dim > kMaxDim)
    throw Error(fmt::format("create_index_space: dimension {} given; it must be 1..3", bounds.dim));
  IndexSpace is;
  is.id = std::uint32_t(index_spaces_.push_back(bounds, "the table of index spaces"));
  is.domain = bounds;
  return is;
}

FieldSpace RegionForest::create_field_space(const std::vector<FieldDef>& fields) {
  if (fields.empty()) throw Error("create_field_space: a field space needs at least one field");
  if (fields.size() > kMaxFields)
    throw Error(fmt::format("create_field_space: {} fields given, at most {} are supported",
                            fields.size(), kMaxFields));
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].size == 0)
      throw Error(fmt::format("create_field_space: field {} has size 0", fields[i].id));
    for (std::size_t j = 0; j < i; ++j)
      if (fields[j].id == fields[i].id)
        throw Error(fmt::format("create_field_space: field id {} given twice", fields[i].id));
  }
  FieldSpace fs;
  fs.id =
      std::uint32_t(field_spaces_.push_back(FieldSpaceInfo{fields}, "the table of field spaces"));
  return fs;
}

Region RegionForest::create_region(const IndexSpace& is, FieldSpace fs) {
  if (!is.valid() || is.id >= index_spaces_.size())
    throw Error("create_region: invalid index space");
  if (!fs.valid() || fs.id >= field_spaces_.size())
    throw Error("create_region: invalid field space");
  std::uint32_t tree = std::uint32_t(trees_.size());
  RegionNode root;
  root.tree = tree;
  root.bounds = index_spaces_[is.id];
  std::uint32_t node = std::uint32_t(regions_.push_back(root, "the table of regions"));
  TreeInfo t;
  t.root = node;
  t.field_space = fs.id;
  trees_.push_back(std::move(t), "the table of region trees");
  return Region(tree, node, root.bounds, fs);
}

Partition RegionForest::create_partition(Region parent, const Domain& colors,
                                         std::vector<Domain> pieces) {
  const RegionNode& pr = regions_[parent.node()];
  for (auto& p : pieces) {
    if (p.dim != pr.bounds.dim)
      throw Error(fmt::format("partition of {}: piece {} has the wrong dimension", pr.bounds.str(),
                              p.str()));
    p = p & pr.bounds;
  }
  PartitionNode pn;
  pn.tree = parent.tree();
  pn.parent_region = parent.node();
  pn.colors = colors;
  pn.disjoint = pieces_disjoint(pieces);
  pn.complete = pieces_cover(pr.bounds, pieces, pn.disjoint);
  std::uint32_t node = std::uint32_t(partitions_.size());
  pn.children.reserve(pieces.size());
  for (std::size_t c = 0; c < pieces.size(); ++c) {
    RegionNode child;
    child.tree = parent.tree();
    child.parent_partition = node;
    child.bounds = pieces[c];
    child.color = colors.delinearize(coord_t(c));
    pn.children.push_back(std::uint32_t(regions_.push_back(child, "the table of regions")));
  }
  pn.pieces = std::move(pieces);
  bool disjoint = pn.disjoint, complete = pn.complete;
  partitions_.push_back(std::move(pn), "the table of partitions");
  return Partition(parent.tree(), node, colors, disjoint, complete);
}

Region RegionForest::region_handle(std::uint32_t node) const {
  const RegionNode& r = regions_[node];
  return Region(r.tree, node, r.bounds, FieldSpace{trees_[r.tree].field_space});
}

Partition RegionForest::partition_handle(std::uint32_t node) const {
  const PartitionNode& p = partitions_[node];
  return Partition(p.tree, node, p.colors, p.disjoint, p.complete);
}

std::string RegionForest::field_list(std::uint32_t field_space) const {
  std::string s = "{";
  for (const auto& f : field_spaces_[field_space].fields)
    s += fmt::format("{}{}", s.size() > 1 ? ", " : "", f.id);
  return s + "}";
}

void RegionForest::check_region(const Region& r, const char* op) const {
  if (!r.valid() || r.node() >= regions_.size() || regions_[r.node()].tree != r.tree())
    throw Error(fmt::format("{}: invalid region handle", op));
  if (trees_[r.tree()].destroyed)
    throw Error(fmt::format("{}: region {} with fields {} was destroyed", op, r.bounds().str(),
                            field_list(trees_[r.tree()].field_space)));
  std::uint32_t part = regions_[r.node()].parent_partition;
  while (part != kInvalidId) {
    if (partitions_[part].destroyed)
      throw Error(
          fmt::format("{}: subregion {} belongs to a destroyed partition", op, r.bounds().str()));
    part = regions_[partitions_[part].parent_region].parent_partition;
  }
}

void RegionForest::check_partition(const Partition& p, const char* op) const {
  if (!p.valid() || p.node() >= partitions_.size() || partitions_[p.node()].tree != p.tree())
    throw Error(fmt::format("{}: invalid partition handle", op));
  if (partitions_[p.node()].destroyed)
    throw Error(fmt::format("{}: the partition of region {} into colors {} was destroyed", op,
                            regions_[partitions_[p.node()].parent_region].bounds.str(),
                            partitions_[p.node()].colors.str()));
  check_region(region_handle(partitions_[p.node()].parent_region), op);
}

}  // namespace reprise::detail

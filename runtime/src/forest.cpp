#include "reprise_rt/forest.h"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <utility>

#include "reprise/error.h"
#include "reprise_rt/assert.h"
#include "reprise_rt/bounding_box.h"
#include "reprise_rt/rect_sets.h"

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
  is.id = next_index_space_++;
  if (is.id == kInvalidId) next_index_space_ = is.id = 0;  // ids only tell handles apart
  is.domain = bounds;
  return is;
}

FieldSpace RegionForest::create_field_space(const std::vector<FieldDef>& fields) {
  if (fields.empty()) throw Error("create_field_space: a field space needs at least one field");
  if (fields.size() > kMaxFields)
    throw Error(fmt::format("create_field_space: {} fields given, at most {} are supported",
                            fields.size(), kMaxFields));
  std::vector<std::pair<FieldID, std::size_t>> key;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].size == 0)
      throw Error(fmt::format("create_field_space: field {} has size 0", fields[i].id));
    for (std::size_t j = 0; j < i; ++j)
      if (fields[j].id == fields[i].id)
        throw Error(fmt::format("create_field_space: field id {} given twice", fields[i].id));
    key.emplace_back(fields[i].id, fields[i].size);
  }
  auto [it, fresh] = field_space_ids_.try_emplace(std::move(key), 0);
  if (fresh)
    it->second =
        std::uint32_t(field_spaces_.push_back(FieldSpaceInfo{fields}, "the table of field spaces"));
  return FieldSpace{it->second};
}

template <class T>
std::uint32_t RegionForest::place(StableVector<T>& table, SlotRecycler& recycler, T value,
                                  const char* what) {
  if (auto slot = recycler.take([&](Event e) {
        if (e.exists() && wait_) wait_(e);
      })) {
    table[*slot] = std::move(value);
    return *slot;
  }
  return std::uint32_t(table.push_back(std::move(value), what));
}

Region RegionForest::create_region(const IndexSpace& is, FieldSpace fs) {
  if (!is.valid() || is.domain.dim < 1 || is.domain.dim > kMaxDim)
    throw Error("create_region: invalid index space");
  if (!fs.valid() || fs.id >= field_spaces_.size())
    throw Error("create_region: invalid field space");
  const std::uint32_t tree = place(trees_, free_trees_, TreeInfo{}, "the table of region trees");
  RegionNode root;
  root.tree = tree;
  root.bounds = is.domain;
  root.uid = next_uid_++;
  const std::uint64_t uid = root.uid;
  const std::uint32_t node =
      place(regions_, free_regions_, std::move(root), "the table of regions");
  trees_[tree] = TreeInfo{node, fs.id};
  return Region(tree, node, uid, is.domain, fs);
}

const std::vector<Domain>& RegionForest::rects_of_sparse(std::uint32_t region) const {
  const PartitionNode& pn = partitions_[regions_[region].sparse_partition];
  return (*pn.runs)[std::size_t(pn.colors.linearize(regions_[region].color))];
}

Partition RegionForest::create_partition(Region parent, const Domain& colors,
                                         std::vector<Domain> pieces, std::uint32_t into) {
  if (regions_[parent.node()].sparse_partition == kInvalidId)
    return create_dense_partition(parent, colors, std::move(pieces), into);
  // A partition of a sparse piece: each piece cut to the piece's rectangles, a sparse
  // partition (its bounding boxes and run partitions are dense partitions of the piece).
  std::vector<std::vector<Domain>> lists(pieces.size());
  for (std::size_t c = 0; c < pieces.size(); ++c) lists[c].push_back(pieces[c]);
  return create_sparse_partition(parent, colors, std::move(lists), "partition", into);
}

Partition RegionForest::create_dense_partition(Region parent, const Domain& colors,
                                               std::vector<Domain> pieces, std::uint32_t into) {
  const Domain parent_bounds = regions_[parent.node()].bounds;
  for (auto& p : pieces) {
    if (p.dim != parent_bounds.dim)
      throw Error(fmt::format("partition of {}: piece {} has the wrong dimension",
                              parent_bounds.str(), p.str()));
    p = p & parent_bounds;
  }
  PartitionNode pn;
  pn.tree = parent.tree();
  pn.parent_region = parent.node();
  pn.colors = colors;
  pn.disjoint = pieces_disjoint(pieces);
  pn.complete = pieces_cover(parent_bounds, pieces, pn.disjoint);
  pn.uid = into == kInvalidId ? next_uid_++ : partitions_[into].uid;
  const bool disjoint = pn.disjoint, complete = pn.complete;
  const std::uint64_t uid = pn.uid;
  const std::uint32_t node = into != kInvalidId ? into
                                                : place(partitions_, free_partitions_,
                                                        PartitionNode{}, "the table of partitions");
  pn.children.reserve(pieces.size());
  for (std::size_t c = 0; c < pieces.size(); ++c) {
    RegionNode child;
    child.tree = parent.tree();
    child.parent_partition = node;
    child.bounds = pieces[c];
    child.color = colors.delinearize(coord_t(c));
    child.uid = next_uid_++;
    pn.children.push_back(place(regions_, free_regions_, std::move(child), "the table of regions"));
  }
  for (const Domain& piece : pieces) grow(pn.hull, piece);
  pn.pieces = std::make_shared<const std::vector<Domain>>(std::move(pieces));
  partitions_[node] = std::move(pn);
  if (into == kInvalidId) regions_[parent.node()].partitions.push_back(node);
  return Partition(parent.tree(), node, uid, colors, disjoint, complete);
}

Partition RegionForest::create_sparse_partition(Region parent, const Domain& colors,
                                                std::vector<std::vector<Domain>> runs,
                                                const char* op) {
  return create_sparse_partition(parent, colors, std::move(runs), op, kInvalidId);
}

Partition RegionForest::create_pending_partition(Region parent, const Domain& colors,
                                                 std::shared_ptr<PendingPieces> pending) {
  std::erase_if(unfinished_, [](const auto& p) { return p->finished(); });
  PartitionNode pn;
  pn.tree = parent.tree();
  pn.parent_region = parent.node();
  pn.colors = colors;
  pn.pending = std::move(pending);
  pn.uid = next_uid_++;
  const std::uint64_t uid = pn.uid;
  const std::uint32_t node =
      place(partitions_, free_partitions_, std::move(pn), "the table of partitions");
  regions_[parent.node()].partitions.push_back(node);
  return Partition(parent.tree(), node, uid, colors, false, false, /*pending=*/true);
}

void RegionForest::settle(std::uint32_t node) {
  if (!partitions_[node].pending) return;
  const std::shared_ptr<PendingPieces> pending = partitions_[node].pending;
  pending->wait();  // (throws, the node still pending, if computing the pieces failed)
  partitions_[node].pending.reset();
  const PartitionNode& pn = partitions_[node];
  const Region parent = region_handle(pn.parent_region);
  const Domain colors = pn.colors;
  // (Read, not taken: a computation that reads this partition may still be running.)
  const std::vector<std::vector<Domain>>& pieces = pending->pieces;
  REPRISE_ASSERT(coord_t(pieces.size()) == colors.volume(),
                 "a dependent partition computes a piece per color");
  if (auto rects = single_rects(pieces, parent.bounds().dim))
    create_partition(parent, colors, std::move(*rects), node);
  else
    create_sparse_partition(parent, colors, pieces, "dependent partitioning", node);
}

Partition RegionForest::create_sparse_partition(Region parent, const Domain& colors,
                                                std::vector<std::vector<Domain>> runs,
                                                const char* op, std::uint32_t into) {
  const Domain parent_bounds = regions_[parent.node()].bounds;
  if (coord_t(runs.size()) != colors.volume())
    throw Error(fmt::format("{}: {} pieces given for {} colors", op, runs.size(), colors.volume()));
  std::size_t most = 1;  // run partitions: at least one, so that a sparse partition has them
  std::vector<Domain> boxes(runs.size()), all;
  const bool of_sparse = regions_[parent.node()].sparse_partition != kInvalidId;
  for (std::size_t c = 0; c < runs.size(); ++c) {
    auto& list = runs[c];
    for (auto& r : list) {
      if (r.dim != parent_bounds.dim)
        throw Error(fmt::format("{}: color {}: rectangle {} has dimension {}, the region {} has {}",
                                op, colors.delinearize(coord_t(c)).str(), r.str(), r.dim,
                                parent_bounds.str(), parent_bounds.dim));
      r = r & parent_bounds;
    }
    if (of_sparse) {
      // (A partition of a sparse piece holds the piece's points only: each rectangle is cut
      // to the piece's, which are disjoint, so a color's pieces stay disjoint.)
      std::vector<Domain> cut;
      for (const Domain& r : list)
        for (const Domain& mine : rects_of_sparse(parent.node()))
          if (const Domain d = r & mine; !d.empty()) cut.push_back(d);
      list = std::move(cut);
    }
    std::erase_if(list, [](const Domain& r) { return r.empty(); });
    std::sort(list.begin(), list.end(), [](const Domain& a, const Domain& b) {
      for (int d = 0; d < a.dim; ++d)
        if (a.lo[d] != b.lo[d]) return a.lo[d] < b.lo[d];
      return false;
    });
    if (!pieces_disjoint(list))
      throw Error(fmt::format("{}: the rectangles of color {} overlap", op,
                              colors.delinearize(coord_t(c)).str()));
    // Adjacent 1-d runs become one (a point set given point by point).
    if (parent_bounds.dim == 1 && !list.empty()) {
      std::size_t out = 0;
      for (std::size_t i = 1; i < list.size(); ++i) {
        if (list[i].lo[0] == list[out].hi[0] + 1)
          list[out].hi[0] = list[i].hi[0];
        else
          list[++out] = list[i];
      }
      list.resize(out + 1);
    }
    for (const auto& r : list) grow(boxes[c], r);
    if (list.empty()) boxes[c] = empty_rect(parent_bounds.dim);
    most = std::max(most, list.size());
    all.insert(all.end(), list.begin(), list.end());
  }
  // The bounding boxes make the partition's node (handles, subregions' bounds); disjointness
  // and completeness are those of the runs themselves.
  Partition bounding = create_dense_partition(parent, colors, boxes, into);
  PartitionNode& pn = partitions_[bounding.node()];
  // (Each color's runs are disjoint, checked above: the colors are disjoint when all the
  // runs are.)
  const bool disjoint = pieces_disjoint(all);
  pn.disjoint = disjoint;
  pn.complete = pieces_cover(parent_bounds, all, disjoint);
  for (std::size_t j = 0; j < most; ++j) {
    std::vector<Domain> run_j(runs.size(), empty_rect(parent_bounds.dim));
    for (std::size_t c = 0; c < runs.size(); ++c)
      if (j < runs[c].size()) run_j[c] = runs[c][j];
    // (Its own node: no uid the program can name; retired with the sparse partition.)
    partitions_[bounding.node()].run_partitions.push_back(
        create_dense_partition(parent, colors, std::move(run_j)).node());
  }
  PartitionNode& done = partitions_[bounding.node()];
  for (std::uint32_t child : done.children) regions_[child].sparse_partition = bounding.node();
  done.runs = std::make_shared<const std::vector<std::vector<Domain>>>(std::move(runs));
  return partition_handle(bounding.node());
}

Partition RegionForest::cut_by_piece(Region src, std::uint32_t piece) {
  const std::uint32_t sparse = regions_[piece].sparse_partition;
  REPRISE_ASSERT(sparse != kInvalidId, "a cut is by the rectangles of a sparse piece");
  const auto key = std::pair(regions_[src.node()].uid, regions_[piece].uid);
  if (auto it = cuts_.find(key);
      it != cuts_.end() && partitions_[it->second.first].uid == it->second.second)
    return partition_handle(it->second.first);
  const PartitionNode& pn = partitions_[sparse];
  std::vector<Domain> rects = (*pn.runs)[std::size_t(pn.colors.linearize(regions_[piece].color))];
  const Domain colors(Rect<1>({0}, {coord_t(rects.size()) - 1}));
  const Partition cut = create_partition(src, colors, std::move(rects));
  cuts_[key] = {cut.node(), partitions_[cut.node()].uid};
  return cut;
}

void RegionForest::retire_region(std::uint32_t node, Event released, bool with_partition) {
  RegionNode& rn = regions_[node];
  for (std::uint32_t below : rn.partitions) retire_below(below, released, with_partition);
  rn.partitions.clear();
  rn.retired_uid = std::exchange(rn.uid, 0);
  rn.retired_with_partition = with_partition;
  free_regions_.retire(node, released);
}

void RegionForest::retire_below(std::uint32_t node, Event released, bool with_partition) {
  PartitionNode& pn = partitions_[node];
  if (pn.pending) unfinished_.push_back(std::move(pn.pending));
  pn.retired_uid = std::exchange(pn.uid, 0);
  pn.retired_with_region = !with_partition;
  for (std::uint32_t child : pn.children) retire_region(child, released, with_partition);
  free_partitions_.retire(node, released);
}

std::uint64_t RegionForest::next_serial() {
  static std::atomic<std::uint64_t> count{0};
  return count.fetch_add(1, std::memory_order_relaxed) + 1;
}

void RegionForest::retire_tree(std::uint32_t tree, Event released) {
  ++retirements_;
  retire_region(trees_[tree].root, released, false);
  free_trees_.retire(tree, released);
}

void RegionForest::retire_partition(std::uint32_t node, Event released) {
  ++retirements_;
  auto& siblings = regions_[partitions_[node].parent_region].partitions;
  std::erase(siblings, node);
  for (std::uint32_t run : partitions_[node].run_partitions) {
    std::erase(siblings, run);
    retire_below(run, released, true);
  }
  retire_below(node, released, true);
}

RegionForest::Slots RegionForest::slots() const {
  return Slots{trees_.size(), regions_.size(), partitions_.size(), field_spaces_.size()};
}

Region RegionForest::region_handle(std::uint32_t node) const {
  const RegionNode& r = regions_[node];
  return Region(r.tree, node, r.uid, r.bounds, FieldSpace{trees_[r.tree].field_space});
}

Partition RegionForest::partition_handle(std::uint32_t node) const {
  const PartitionNode& p = partitions_[node];
  return Partition(p.tree, node, p.uid, p.colors, p.disjoint, p.complete);
}

std::string RegionForest::field_list(std::uint32_t field_space) const {
  std::string s = "{";
  for (const auto& f : field_spaces_[field_space].fields)
    s += fmt::format("{}{}", s.size() > 1 ? ", " : "", f.id);
  return s + "}";
}

void RegionForest::check_region(const Region& r, const char* op) const {
  if (!r.valid() || r.node() >= regions_.size() || r.uid() == 0 || r.uid() >= next_uid_)
    throw Error(fmt::format("{}: invalid region handle", op));
  const RegionNode& n = regions_[r.node()];
  if (n.uid == r.uid()) return;
  if (n.retired_uid == r.uid() && n.retired_with_partition)
    throw Error(
        fmt::format("{}: subregion {} belongs to a destroyed partition", op, r.bounds().str()));
  throw Error(fmt::format("{}: region {} with fields {} was destroyed", op, r.bounds().str(),
                          field_list(r.field_space().id)));
}

void RegionForest::check_partition(const Partition& p, const char* op, bool settle_it) {
  if (!p.valid() || p.node() >= partitions_.size() || p.uid() == 0 || p.uid() >= next_uid_)
    throw Error(fmt::format("{}: invalid partition handle", op));
  const PartitionNode& n = partitions_[p.node()];
  if (n.uid == p.uid()) {
    if (settle_it) settle(p.node());
    return;
  }
  if (n.retired_uid == p.uid() && n.retired_with_region) {
    // Its slot still holds it: name the region that was destroyed, as its users know it.
    const RegionNode& parent = regions_[n.parent_region];
    const std::uint64_t parent_uid = parent.uid ? parent.uid : parent.retired_uid;
    check_region(Region(n.tree, n.parent_region, parent_uid, parent.bounds,
                        FieldSpace{trees_[n.tree].field_space}),
                 op);
  }
  throw Error(
      fmt::format("{}: the partition into colors {} was destroyed", op, p.color_space().str()));
}

}  // namespace reprise::detail

#include "reprise_analysis/deferred_writes.h"

#include <algorithm>

#include "reprise_rt/assert.h"
#include "reprise_rt/instance.h"

namespace reprise::detail {

namespace {
// Beyond this many launches pending on one tree (launches through partitions that never cover
// one another) the oldest is applied whole: taking a write then stays a few index lookups.
constexpr std::size_t kMaxRecords = 16;
}  // namespace

bool DeferredWrites::covers(const Record& newer, const Record& older) {
  // (A replay's list: only the same list again, written in the same order.)
  if (newer.list || older.list) return newer.list == older.list;
  if (newer.reductions) return false;
  // Contributions still pending lie outside the pieces newer's analysed points wrote (those
  // settled them first), so inside newer's pending points: a write through a complete
  // partition over them folds them away and overwrites them wherever it is applied.
  if (older.reductions) return newer.covers.contains(older.hull);
  // The same pieces again: every point of older is a point of newer, with the same rectangle,
  // so newer's write cuts the pieces older's would have cut the same way. (A launch that
  // writes the same elements through other pieces would cut them otherwise.)
  return newer.op->reqs[newer.req].uid == older.op->reqs[older.req].uid &&
         newer.op->domain.contains(older.op->domain);
}

void DeferredWrites::drop_done(std::vector<Record>& records) {
  const std::size_t before = records.size();
  std::erase_if(records, [&](const Record& r) {
    const bool done = !r.open && (r.left == 0 || r.mask == 0);
    reductions_ -= done && r.reductions;
    return done;
  });
  records_ -= before - records.size();
  if (records.empty()) near_[std::size_t(&records - trees_.data())] = Domain();
}

std::uint64_t DeferredWrites::open(const OpRef& op, std::uint32_t req,
                                   std::shared_ptr<const PartitionPieces> pieces,
                                   std::uint64_t launch,
                                   std::shared_ptr<const DeferredReductions> reductions,
                                   std::size_t k, const Domain& covers) {
  const ReqInfo& q = op->reqs[req];
  REPRISE_ASSERT(q.whole_partition, "deferred writes name their points' pieces by color");
  if (trees_.size() <= q.tree) {
    trees_.resize(q.tree + 1);
    near_.resize(q.tree + 1);
  }
  if (launch == UINT64_MAX) launch = next_launch_++;
  Record r{op, req, launch, q.mask, std::move(pieces), {}, 0, UINT32_MAX, true, {}};
  r.reductions = std::move(reductions);
  reductions_ += r.reductions != nullptr;
  r.reduction = k;
  r.covers = covers;
  r.pending.assign(op->num_points(), false);
  trees_[q.tree].push_back(std::move(r));
  ++records_;
  return trees_[q.tree].back().launch;
}

std::uint64_t DeferredWrites::add_list(std::shared_ptr<const WriteList> list) {
  const std::uint32_t tree = list->tree;
  if (trees_.size() <= tree) {
    trees_.resize(tree + 1);
    near_.resize(tree + 1);
  }
  const std::size_t n = list->entries.size();
  ++generation_;
  Record r;
  r.launch = next_launch_++;
  r.mask = list->mask;
  r.pending.assign(n, true);
  r.left = n;
  r.first = 0;
  r.last = std::uint32_t(n);
  r.hull = list->hull;
  r.list = std::move(list);
  trees_[tree].push_back(std::move(r));
  ++records_;
  return trees_[tree].back().launch;
}

DeferredWrites::Record& DeferredWrites::find(std::uint32_t tree, std::uint64_t launch,
                                             std::uint32_t req) {
  auto& records = trees_[tree];
  // (The launch named last, usually: a launch defers its points one after the other.)
  if (found_at_ < records.size() && records[found_at_].launch == launch &&
      records[found_at_].req == req)
    return records[found_at_];
  for (std::size_t at = records.size(); at-- > 0;)
    if (records[at].launch == launch && records[at].req == req) {
      found_at_ = at;
      return records[at];
    }
  REPRISE_ASSERT(false, "a deferred launch stays until it is closed");
  return records.back();
}

void DeferredWrites::defer_range(std::uint32_t tree, std::uint64_t launch, std::uint32_t req,
                                 std::uint32_t first, std::uint32_t last) {
  if (first >= last) return;
  Record& r = find(tree, launch, req);
  ++generation_;
  std::fill(r.pending.begin() + first, r.pending.begin() + last, true);
  if (first < r.gap_last && last > r.gap_first) r.gap_first = r.gap_last = 0;  // (not ascending)
  if (r.left > 0 && first > r.last && first - r.last > r.gap_last - r.gap_first) {
    r.gap_first = r.last;  // (nothing from r.last to first is pending)
    r.gap_last = first;
  }
  // (A point whose piece is empty writes nothing: it is not counted, so that a record of a
  // partition with empty pieces — a ghost partition's later rectangle runs — is done once
  // its non-empty points are.)
  r.left += r.pieces->nonempty(first, last);
  r.first = std::min(r.first, first);
  r.last = std::max(r.last, last);
  if (r.gap_first < r.gap_last)
    r.refresh_hull();
  else
    grow(r.hull, r.pieces->hulls.hull(first, last));
}

void DeferredWrites::Record::refresh_hull() {
  if (gap_first < gap_last && first < gap_first && gap_last < last) {
    below = pieces->hulls.hull(first, gap_first);
    above = pieces->hulls.hull(gap_last, last);
    hull = bounding_union(below, above);
  } else {
    gap_first = gap_last = 0;
    hull = pieces->hulls.hull(first, last);
  }
}

void DeferredWrites::close(std::uint32_t tree, std::uint64_t launch, std::uint32_t req,
                           std::vector<Taken>& overflow) {
  Record& r = find(tree, launch, req);
  r.open = false;
  near_[tree] = bounding_union(near_[tree], r.hull);
  auto& records = trees_[tree];
  // What an older launch still has pending lies outside the pieces this launch's analysed
  // points wrote (those were settled first); if this launch writes the same pieces, its
  // write wins wherever it is applied, and the older one need never be.
  if (r.left > 0)
    for (Record& old : records)
      if (old.launch < launch && !old.open && (old.mask & r.mask) && covers(r, old))
        old.mask &= ~r.mask;
  drop_done(records);
  // (Launches, not records: a launch has one per writing or reducing requirement, adjacent.)
  std::size_t launches = 0;
  for (std::size_t at = 0; at < records.size(); ++at)
    launches += at == 0 || records[at].launch != records[at - 1].launch;
  if (launches > kMaxRecords) {
    // (Nothing older is pending under the oldest launch's points.)
    const std::uint64_t oldest = records.front().launch;
    while (auto w = take_first(records, oldest)) overflow.push_back(std::move(*w));
  }
}

std::optional<std::uint32_t> DeferredWrites::Record::memory(std::uint32_t q) const {
  if (list) return list->entries[q].mem;
  if (const Instance* i = instance(q)) return i->memory();
  return std::nullopt;
}

DeferredWrites::Taken DeferredWrites::take(std::vector<Record>& records, std::size_t at,
                                           std::uint32_t q) {
  Record& r = records[at];
  Taken t;
  t.order = WriteOrder{r.launch, q, r.req};
  t.rect = r.rect(q);
  if (r.list) {
    const WriteList::Entry& e = r.list->entries[q];
    t.tree = r.list->tree;
    if (r.mask & (FieldMask(1) << e.field)) t.fields.push_back(e.field);
  } else {
    if (!r.instance(q)) {
      REPRISE_ASSERT(map_, "a deferred point's memories are chosen when it is applied");
      map_(map_ctx_, *r.op, q);
    }
    const ReqInfo& req = r.op->reqs[r.req];
    t.tree = req.tree;
    for (int fi : req.field_indices)
      if (r.mask & (FieldMask(1) << fi)) t.fields.push_back(fi);
  }
  t.mem = *r.memory(q);  // (chosen above for a launch's point)
  if (r.reductions) {
    t.op = r.op;
    t.reduce_order = r.reductions->order(q, r.reduction);
    t.older = r.reductions->reqs[r.reduction].older;
    t.mark = r.reductions->mark;
  }
  r.pending[q] = false;
  if ((r.list || !t.rect.empty()) && --r.left == 0) r.hull = Domain();
  const std::uint32_t first = r.first, last = r.last;
  while (r.first < r.pending.size() && !r.pending[r.first]) ++r.first;
  while (r.last > r.first && !r.pending[r.last - 1]) --r.last;
  // A launch's points are taken mostly from the ends of its pending range (the pieces next to
  // this shard's): the hull shrinks to the range left, so that the settles after the take do
  // not look into the record again for a piece it no longer writes.
  if (r.left > 0 && r.pieces && (r.first != first || r.last != last)) r.refresh_hull();
  if (r.left == 0) drop_done(records);
  return t;
}

std::optional<DeferredWrites::Taken> DeferredWrites::take_oldest(std::uint32_t tree, int fi,
                                                                 std::span<const Domain> rects,
                                                                 WriteOrder before) {
  if (!any(tree)) return std::nullopt;
  auto& records = trees_[tree];
  const FieldMask bit = FieldMask(1) << fi;
  // The oldest: the first launch with a candidate, and within it (several requirements of one
  // launch) the lowest point, then requirement.
  std::size_t best_at = SIZE_MAX;
  std::uint32_t best = UINT32_MAX;
  for (std::size_t at = 0; at < records.size() && records[at].launch <= before.launch; ++at) {
    const Record& r = records[at];
    if (best_at != SIZE_MAX && r.launch != records[best_at].launch) break;
    if (!(r.mask & bit) || r.left == 0) continue;
    // (Of the launch `before` names: only the points, or requirements of its point, before it.)
    const bool same = r.launch == before.launch;
    const std::uint32_t below =
        !same ? UINT32_MAX : before.point + (r.req < before.req && before.point != UINT32_MAX);
    std::uint32_t lowest = UINT32_MAX;
    for (const Domain& rect : rects)
      r.each_pending(fi, rect, [&](std::uint32_t q) {
        if (q < below) lowest = std::min(lowest, q);
      });
    if (lowest < best || (lowest == best && lowest != UINT32_MAX && r.req < records[best_at].req)) {
      best = lowest;
      best_at = at;
    }
  }
  if (best_at != SIZE_MAX) return take(records, best_at, best);
  return std::nullopt;
}

DeferredWrites::Newest DeferredWrites::newest_meeting(std::uint32_t tree, int fi,
                                                      const Domain& rect) const {
  Newest n;
  if (!any(tree)) return n;
  const FieldMask bit = FieldMask(1) << fi;
  const auto& records = trees_[tree];
  for (std::size_t at = records.size(); at-- > 0;) {  // (newest launch first)
    const Record& r = records[at];
    if (!(r.mask & bit) || r.left == 0) continue;
    std::uint32_t newest = 0;
    r.each_pending(fi, rect, [&](std::uint32_t q) {
      newest = n.found ? std::max(newest, q) : q;
      n.found = true;
    });
    if (!n.found) continue;
    if (r.reductions) return n;  // (a contribution: not known here; the caller settles)
    n.rect = r.rect(newest);
    if (const auto mem = r.memory(newest)) {
      n.mem = *mem;
      n.known = true;
    }
    return n;
  }
  return n;
}

bool DeferredWrites::contribution_meets(std::uint32_t tree, int fi, const Domain& rect) const {
  if (reductions_ == 0 || !any(tree)) return false;
  const FieldMask bit = FieldMask(1) << fi;
  for (const Record& r : trees_[tree]) {
    if (!r.reductions || !(r.mask & bit) || r.left == 0) continue;
    bool meets = false;
    r.each_pending(fi, rect, [&](std::uint32_t) { meets = true; });
    if (meets) return true;
  }
  return false;
}

Domain DeferredWrites::contribution_hull(std::uint32_t tree, int fi) const {
  Domain hull;
  if (reductions_ == 0 || !any(tree)) return hull;
  const FieldMask bit = FieldMask(1) << fi;
  for (const Record& r : trees_[tree])
    if (r.reductions && (r.mask & bit) && r.left > 0) hull = bounding_union(hull, r.hull);
  return hull;
}

bool DeferredWrites::may_meet(std::uint32_t tree, int fi, const Domain& box,
                              WriteOrder before) const {
  if (!any(tree)) return false;
  // (near_ holds the closed launches' points; the open one's, still growing, are looked at.)
  const FieldMask bit = FieldMask(1) << fi;
  auto meets = [&](const Record& r) {
    return r.launch <= before.launch && (r.mask & bit) && r.left > 0 && r.may_hold(box);
  };
  const auto& records = trees_[tree];
  if (!box.overlaps(near_[tree])) {
    // (Only the open launch's records, the newest, can meet it.)
    for (auto it = records.rbegin(); it != records.rend() && it->open; ++it)
      if (meets(*it)) return true;
    return false;
  }
  for (const Record& r : records) {
    if (r.launch > before.launch) break;
    if (meets(r)) return true;
  }
  return false;
}

std::optional<DeferredWrites::Taken> DeferredWrites::take_first(std::vector<Record>& records,
                                                                std::uint64_t only_launch) {
  // (The records of one launch are in requirement order: a tie keeps the lower requirement.)
  std::size_t best = SIZE_MAX;
  for (std::size_t at = 0; at < records.size(); ++at) {
    const Record& r = records[at];
    if (r.left == 0 || (only_launch != UINT64_MAX && r.launch != only_launch)) continue;
    if (best != SIZE_MAX && r.launch != records[best].launch) break;
    if (best == SIZE_MAX || r.first < records[best].first) best = at;
  }
  if (best == SIZE_MAX) return std::nullopt;
  return take(records, best, records[best].first);
}

std::optional<DeferredWrites::Taken> DeferredWrites::take_oldest(std::uint32_t tree) {
  if (!any(tree)) return std::nullopt;
  return take_first(trees_[tree]);
}

std::optional<DeferredWrites::Taken> DeferredWrites::take_oldest() {
  for (std::uint32_t t = 0; t < trees_.size(); ++t)
    if (auto w = take_oldest(t)) return w;
  return std::nullopt;
}

void DeferredWrites::forget_tree(std::uint32_t tree) {
  if (!any(tree)) return;
  records_ -= trees_[tree].size();
  for (const Record& r : trees_[tree]) reductions_ -= r.reductions != nullptr;
  trees_[tree].clear();
}

}  // namespace reprise::detail

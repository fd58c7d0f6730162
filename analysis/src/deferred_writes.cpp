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
  // The same pieces again: every point of older is a point of newer, with the same rectangle,
  // so newer's write cuts the pieces older's would have cut the same way. (A launch that
  // writes the same elements through other pieces would cut them otherwise.)
  return newer.op->reqs[newer.req].uid == older.op->reqs[older.req].uid &&
         newer.op->domain.contains(older.op->domain);
}

void DeferredWrites::drop_done(std::vector<Record>& records) {
  const std::size_t before = records.size();
  std::erase_if(records, [](const Record& r) { return !r.open && (r.left == 0 || r.mask == 0); });
  records_ -= before - records.size();
  if (records.empty()) near_[std::size_t(&records - trees_.data())] = Domain();
}

std::uint64_t DeferredWrites::open(const OpRef& op, std::uint32_t req,
                                   std::shared_ptr<const PartitionPieces> pieces) {
  const ReqInfo& q = op->reqs[req];
  REPRISE_ASSERT(q.whole_partition, "deferred writes name their points' pieces by color");
  if (trees_.size() <= q.tree) {
    trees_.resize(q.tree + 1);
    near_.resize(q.tree + 1);
  }
  Record r{op, req, next_launch_++, q.mask, std::move(pieces), {}, 0, UINT32_MAX, true, {}};
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

DeferredWrites::Record& DeferredWrites::find(std::uint32_t tree, std::uint64_t launch) {
  auto& records = trees_[tree];
  // (The launch named last, usually: a launch defers its points one after the other.)
  if (found_at_ < records.size() && records[found_at_].launch == launch) return records[found_at_];
  for (std::size_t at = records.size(); at-- > 0;)
    if (records[at].launch == launch) {
      found_at_ = at;
      return records[at];
    }
  REPRISE_ASSERT(false, "a deferred launch stays until it is closed");
  return records.back();
}

void DeferredWrites::defer_range(std::uint32_t tree, std::uint64_t launch, std::uint32_t first,
                                 std::uint32_t last) {
  if (first >= last) return;
  Record& r = find(tree, launch);
  std::fill(r.pending.begin() + first, r.pending.begin() + last, true);
  grow(r.hull, r.pieces->hulls.hull(first, last));
  r.left += last - first;
  r.first = std::min(r.first, first);
  r.last = std::max(r.last, last);
}

void DeferredWrites::close(std::uint32_t tree, std::uint64_t launch, std::vector<Taken>& overflow) {
  Record& r = find(tree, launch);
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
  if (records.size() > kMaxRecords) {
    // (Nothing older is pending under the oldest launch's points.)
    const std::uint64_t oldest = records.front().launch;
    while (!records.empty() && records.front().launch == oldest)
      overflow.push_back(take(records, 0, records.front().first));
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
  t.order = WriteOrder{r.launch, q};
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
  r.pending[q] = false;
  if (--r.left == 0) r.hull = Domain();
  const std::uint32_t first = r.first, last = r.last;
  while (r.first < r.pending.size() && !r.pending[r.first]) ++r.first;
  while (r.last > r.first && !r.pending[r.last - 1]) --r.last;
  // A launch's points are taken mostly from the ends of its pending range (the pieces next to
  // this shard's): the hull shrinks to the range left, so that the settles after the take do
  // not look into the record again for a piece it no longer writes.
  if (r.left > 0 && r.pieces && (r.first != first || r.last != last))
    r.hull = r.pieces->hulls.hull(r.first, r.last);
  if (r.left == 0) drop_done(records);
  return t;
}

std::optional<DeferredWrites::Taken> DeferredWrites::take_oldest(std::uint32_t tree, int fi,
                                                                 std::span<const Domain> rects,
                                                                 WriteOrder before) {
  if (!any(tree)) return std::nullopt;
  auto& records = trees_[tree];
  const FieldMask bit = FieldMask(1) << fi;
  for (std::size_t at = 0; at < records.size() && records[at].launch <= before.launch; ++at) {
    const Record& r = records[at];
    if (!(r.mask & bit) || r.left == 0) continue;
    if (std::none_of(rects.begin(), rects.end(),
                     [&](const Domain& rect) { return rect.overlaps(r.hull); }))
      continue;
    const std::uint32_t below = r.launch < before.launch ? UINT32_MAX : before.point;
    std::uint32_t lowest = UINT32_MAX;
    for (const Domain& rect : rects)
      r.index().candidates(rect, [&](std::uint32_t q) {
        if (q < lowest && q < below && r.pending_write(q, fi, rect)) lowest = q;
      });
    if (lowest != UINT32_MAX) return take(records, at, lowest);
  }
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
    if (!(r.mask & bit) || r.left == 0 || !rect.overlaps(r.hull)) continue;
    std::uint32_t newest = 0;
    r.index().candidates(rect, [&](std::uint32_t q) {
      if ((!n.found || q > newest) && r.pending_write(q, fi, rect)) {
        newest = q;
        n.found = true;
      }
    });
    if (!n.found) continue;
    n.rect = r.rect(newest);
    if (const auto mem = r.memory(newest)) {
      n.mem = *mem;
      n.known = true;
    }
    return n;
  }
  return n;
}

bool DeferredWrites::may_meet(std::uint32_t tree, int fi, const Domain& box,
                              WriteOrder before) const {
  if (!any(tree)) return false;
  // (near_ holds the closed launches' points; the open one's, still growing, are looked at.)
  const bool near = box.overlaps(near_[tree]);
  const FieldMask bit = FieldMask(1) << fi;
  for (const Record& r : trees_[tree]) {
    if (r.launch > before.launch) break;
    if ((near || r.open) && (r.mask & bit) && r.left > 0 && box.overlaps(r.hull)) return true;
  }
  return false;
}

std::optional<DeferredWrites::Taken> DeferredWrites::take_oldest(std::uint32_t tree) {
  if (!any(tree)) return std::nullopt;
  for (std::size_t at = 0; at < trees_[tree].size(); ++at)
    if (trees_[tree][at].left > 0) return take(trees_[tree], at, trees_[tree][at].first);
  return std::nullopt;
}

std::optional<DeferredWrites::Taken> DeferredWrites::take_oldest() {
  for (std::uint32_t t = 0; t < trees_.size(); ++t)
    if (auto w = take_oldest(t)) return w;
  return std::nullopt;
}

void DeferredWrites::forget_tree(std::uint32_t tree) {
  if (!any(tree)) return;
  records_ -= trees_[tree].size();
  trees_[tree].clear();
}

}  // namespace reprise::detail

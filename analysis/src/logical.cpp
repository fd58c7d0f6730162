#include "reprise_analysis/logical.h"

#include <algorithm>

#include "reprise_analysis/physical.h"
#include "reprise_rt/assert.h"

namespace reprise::detail {

void PointPreconditions::reset(std::size_t points) {
  if (lists_.size() < points) lists_.resize(points);
  ++generation_;
  common_.clear();
  read_ = false;
  points_ = points;
}

void PointPreconditions::add_all(Event e) {
  REPRISE_ASSERT(!read_, "add_all's events are appended to a list when it is first read");
  for (Event x : common_)
    if (x == e) return;
  common_.push_back(e);
}

std::span<const Event> PointPreconditions::of(std::size_t point) {
  List& l = list(point);
  read_ = true;
  if (!l.sealed) {
    l.sealed = true;
    for (Event e : common_) add(point, e);
  }
  return l.events;
}

bool privileges_conflict(const ReqInfo& a, const ReqInfo& b) {
  if (a.privilege == Privilege::ReadOnly && b.privilege == Privilege::ReadOnly) return false;
  if (a.privilege == Privilege::Reduce && b.privilege == Privilege::Reduce && a.redop == b.redop)
    return false;
  return true;
}

void LogicalAnalysis::compute_rects(Op& op) const {
  const std::size_t points = op.num_points(), nreq = op.reqs.size();
  // A partition named whole gives its points its own list of pieces: nothing per point.
  // (Written only where they differ: a list shared with the launcher stays shared.)
  bool listed = false;
  for (std::size_t r = 0; r < nreq; ++r) {
    if (op.reqs[r].whole_partition) {
      const PartitionNode& part = forest_.partition(op.reqs[r].partition);
      op.reqs.set_pieces(r, part.pieces);
      op.reqs.set_bbox(r, part.hull);
    } else {
      op.reqs.set_pieces(r, nullptr);
      listed = true;
    }
  }
  if (!listed) {
    op.point_rects.clear();
    return;
  }
  op.point_rects.resize(points * nreq);
  for (std::size_t r = 0; r < nreq; ++r) {
    const ReqInfo& q = op.reqs[r];
    if (q.pieces) continue;
    Domain bbox;
    if (q.partition == kInvalidId) {
      // A copy writes its destination only where the source lies.
      Domain rect =
          (op.kind == OpKind::Copy && r == 1) ? op.rect(0, 0) : forest_.region(q.region).bounds;
      for (std::size_t p = 0; p < points; ++p) op.point_rects[p * nreq + r] = rect;
      bbox = rect;
    } else {
      // (Projected, or by identity over part of the color space.)
      const PartitionNode& part = forest_.partition(q.partition);
      for (std::size_t p = 0; p < points; ++p) {
        DomainPoint c = q.projection.apply(op.domain.delinearize(coord_t(p)));
        const Domain& rect = part.piece(std::size_t(part.colors.linearize(c)));
        op.point_rects[p * nreq + r] = rect;
        grow(bbox, rect);
      }
    }
    op.reqs.set_bbox(r, bbox);  // (q is not used after: this may copy the list)
  }
}

namespace {
// Up to this many points, comparing against every point of the earlier op costs less than a
// piece-index query and a sort (the same pieces, found in the same color order).
constexpr std::size_t kScanPoints = 16;
// From this many pairs of points (a scan's rectangle tests) a pair of partition requirements
// looks its answer up instead (LogicalAnalysis::pair_meets); kept answers beyond kMaxPairs are
// dropped all at once.
constexpr std::size_t kLookUpPairs = 64;
constexpr std::size_t kMaxPairs = 4096;
}  // namespace

template <class Fn>
void LogicalAnalysis::each_meeting(const Op& op, std::uint32_t r, const Op& prev, std::uint32_t req,
                                   const PointSubset& subset, Fn&& fn) const {
  const ReqInfo& b = prev.reqs[req];
  const std::size_t points = op.num_points(), prev_points = prev.num_points();
  if (b.whole_partition && prev_points > kScanPoints) {
    // prev's point q used piece q of its partition: ask the partition's index which pieces
    // each point meets (in color order, like the scan below).
    const RectIndex& index = piece_index(prev, req);
    subset.each(points, [&](std::size_t p) {
      const Domain& rp = op.rect(p, r);
      if (!rp.overlaps(b.bbox)) return;
      colors_.clear();
      index.candidates(rp, [&](std::uint32_t q) {
        if (rp.overlaps(prev.rect(q, req))) colors_.push_back(q);
      });
      std::sort(colors_.begin(), colors_.end());
      for (std::uint32_t q : colors_) fn(p, q);
    });
    return;
  }
  subset.each(points, [&](std::size_t p) {
    const Domain& rp = op.rect(p, r);
    if (!rp.overlaps(b.bbox)) return;
    for (std::size_t q = 0; q < prev_points; ++q)
      if (rp.overlaps(prev.rect(q, req))) fn(p, std::uint32_t(q));
  });
}

LogicalAnalysis::LogicalAnalysis(const RegionForest& forest, EventTable& events,
                                 bool prune_completed, std::shared_ptr<Caches> caches)
    : forest_(forest),
      events_(events),
      prune_completed_(prune_completed),
      caches_(caches ? std::move(caches) : std::make_shared<Caches>()) {}

std::size_t LogicalAnalysis::PairKeyHash::operator()(const PairKey& k) const {
  // Looked up for every pair of launches a shard analyses: a multiply-xor per word, not the
  // Hasher's finaliser per word (~330 instructions a key). Projections enter by kind only —
  // launches of one pair of partitions and domains seldom differ by their maps alone, and
  // equality tells those apart.
  std::uint64_t h = 0;
  const auto mix = [&h](std::uint64_t w) {
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  };
  for (int i = 0; i < 2; ++i) {
    mix(k.uid[i] << 3 | std::uint64_t(k.whole[i]) << 2 | std::uint64_t(k.projection[i].kind()));
    const Domain& d = k.domain[i];
    for (int j = 0; j < d.dim; ++j) mix(std::uint64_t(d.lo[j]) << 32 ^ std::uint64_t(d.hi[j]));
  }
  return std::size_t(h);
}

const LogicalAnalysis::PairMeets& LogicalAnalysis::pair_meets(const Op& op, std::uint32_t r,
                                                              const Op& prev,
                                                              std::uint32_t req) const {
  const ReqInfo& a = op.reqs[r];
  const ReqInfo& b = prev.reqs[req];
  const PairKey key{{a.uid, b.uid},
                    {a.projection, b.projection},
                    {op.domain, prev.domain},
                    {a.whole_partition, b.whole_partition}};
  auto& meets = caches_->meets;
  if (auto it = meets.find(key); it != meets.end()) return it->second;
  if (meets.size() >= kMaxPairs) meets.clear();
  PairMeets m;
  const std::size_t points = op.num_points();
  m.begin.assign(points + 1, 0);
  each_meeting(op, r, prev, req, PointSubset{}, [&](std::size_t p, std::uint32_t q) {
    ++m.begin[p + 1];
    m.points.push_back(q);
  });
  for (std::size_t p = 0; p < points; ++p) m.begin[p + 1] += m.begin[p];
  return meets.emplace(key, std::move(m)).first->second;
}

namespace {
// The same rectangle, written the same way (an empty one written otherwise is another key: a
// miss, not a wrong answer).
inline bool same_key(const Domain& a, const Domain& b) {
  if (a.dim != b.dim) return false;
  for (int i = 0; i < a.dim; ++i)
    if (a.lo[i] != b.lo[i] || a.hi[i] != b.hi[i]) return false;
  return true;
}
}  // namespace

const LogicalAnalysis::PairMeets& LogicalAnalysis::small_pair_meets(const Op& op, std::uint32_t r,
                                                                    const Op& prev,
                                                                    std::uint32_t req) const {
  constexpr std::size_t kSlots = 64;
  const std::uint64_t uid0 = op.reqs[r].uid, uid1 = prev.reqs[req].uid;
  // (The slot from the uids and where each launch starts: cheap, and launches of one pair of
  // partitions seldom differ in their domains otherwise.)
  std::uint64_t h = (uid0 << 32 ^ uid1) ^ std::uint64_t(op.domain.lo[0]) * 0x9e3779b97f4a7c15ull ^
                    std::uint64_t(prev.domain.lo[0]);
  h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull;
  if (small_pairs_.empty()) small_pairs_.resize(kSlots);
  SmallPair& slot = small_pairs_[(h >> 58) % kSlots];
  if (slot.uid[0] == uid0 && slot.uid[1] == uid1 && same_key(slot.domain[0], op.domain) &&
      same_key(slot.domain[1], prev.domain))
    return slot.meets;
  // (A partition's uid is never reused and its pieces never change: a slot stays right for
  // its key until another pair takes it.)
  slot.uid[0] = uid0;
  slot.uid[1] = uid1;
  slot.domain[0] = op.domain;
  slot.domain[1] = prev.domain;
  PairMeets& m = slot.meets;
  const std::size_t points = op.num_points();
  m.begin.assign(points + 1, 0);
  m.points.clear();
  each_meeting(op, r, prev, req, PointSubset{}, [&](std::size_t p, std::uint32_t q) {
    ++m.begin[p + 1];
    m.points.push_back(q);
  });
  for (std::size_t p = 0; p < points; ++p) m.begin[p + 1] += m.begin[p];
  return m;
}

void LogicalAnalysis::forget_partition(std::uint64_t uid) {
  caches_->pieces.erase(uid);
  std::erase_if(caches_->meets,
                [&](const auto& kv) { return kv.first.uid[0] == uid || kv.first.uid[1] == uid; });
}

void LogicalAnalysis::add_pair(const Op& op, std::uint32_t r, const LogicalUser& u,
                               PointPreconditions& pre, const PointSubset& subset) const {
  Op& prev = *u.op;
  const ReqInfo& a = op.reqs[r];
  const ReqInfo& b = prev.reqs[u.req];
  // (Users are compared by uid: another user's partition may have been destroyed, and its
  // slot reused; only the current op's nodes are read from the forest.)
  if (a.partition != kInvalidId && b.partition != kInvalidId && a.uid == b.uid &&
      forest_.partition(a.partition).disjoint &&
      a.projection.kind() == Projection::Kind::Identity &&
      b.projection.kind() == Projection::Kind::Identity) {
    add_point_by_point(op, prev, pre, subset);
    return;
  }
  const std::size_t points = op.num_points();
  // A recurring pair is looked up, also for a subset (control replication: a shard's own
  // points): its answer for every point is computed once and kept, so each later launch costs
  // the subset's points only, where a scan would test each of them against every point of
  // the earlier op.
  if (a.partition != kInvalidId && b.partition != kInvalidId &&
      points * prev.num_points() >= kLookUpPairs) {
    add_meets(pair_meets(op, r, prev, u.req), prev, pre, subset, points);
    return;
  }
  each_meeting(op, r, prev, u.req, subset,
               [&](std::size_t p, std::uint32_t q) { pre.add(p, prev.point_done[q]); });
}

void LogicalAnalysis::add_point_by_point(const Op& op, const Op& prev, PointPreconditions& pre,
                                         const PointSubset& subset) {
  const bool same_domain = op.domain == prev.domain;
  subset.each(op.num_points(), [&](std::size_t p) {
    if (same_domain) {
      pre.add(p, prev.point_done[p]);
    } else {
      DomainPoint c = op.domain.delinearize(coord_t(p));
      if (prev.domain.contains(c))
        pre.add(p, prev.point_done[std::size_t(prev.domain.linearize(c))]);
    }
  });
}

bool LogicalAnalysis::small_pair(const Op& op, const ReqInfo& a, const Op& prev,
                                 const ReqInfo& b) const {
  return a.partition != kInvalidId && b.partition != kInvalidId && a.uid != b.uid &&
         a.projection.kind() == Projection::Kind::Identity &&
         b.projection.kind() == Projection::Kind::Identity &&
         op.num_points() * prev.num_points() < kLookUpPairs;
}

void LogicalAnalysis::add_small_pairs(const Op& op, std::uint32_t r, const LogicalUser& u,
                                      PointPreconditions& pre, const PointSubset& subset) const {
  add_meets(small_pair_meets(op, r, *u.op, u.req), *u.op, pre, subset, op.num_points());
}

void LogicalAnalysis::add_meets(const PairMeets& m, const Op& prev, PointPreconditions& pre,
                                const PointSubset& subset, std::size_t points) {
  const std::uint32_t* meets = m.points.data();
  const std::span<const Event> done(prev.point_done.data(), prev.point_done.size());
  subset.each(points, [&](std::size_t p) {
    pre.add_each(p, done, meets + m.begin[p], meets + m.begin[p + 1]);
  });
}

std::shared_ptr<const PartitionPieces> LogicalAnalysis::partition_pieces(const Op& prev,
                                                                         std::uint32_t req) const {
  const ReqInfo& b = prev.reqs[req];
  auto [it, fresh] = caches_->pieces.try_emplace(b.uid, PiecesOf{b.tree, nullptr});
  if (fresh) {
    const std::size_t points = prev.num_points();
    std::vector<Domain> pieces(points);
    std::vector<std::uint32_t> nonempty_before(points + 1, 0);
    RectIndex index;
    for (std::uint32_t c = 0; c < points; ++c) {
      pieces[c] = prev.rect(c, req);
      if (!pieces[c].empty()) index.insert(pieces[c], c);
      nonempty_before[c + 1] = nonempty_before[c] + (pieces[c].empty() ? 0 : 1);
    }
    it->second.pieces = std::make_shared<const PartitionPieces>(PartitionPieces{
        std::move(index), RangeHulls(std::move(pieces)), std::move(nonempty_before)});
  }
  return it->second.pieces;
}

void LogicalAnalysis::dependences(const Op& op, PointPreconditions& pre, PointSubset points) const {
  each_conflict(op, [&](std::uint32_t r, const ReqInfo& a, std::size_t, const LogicalUser& u,
                        const ReqInfo& b) {
    add_user(op, r, a, u, b, pre, points);
    return true;
  });
}

bool LogicalAnalysis::covers(const Op& op, std::uint32_t r, const LogicalUser& u) const {
  const ReqInfo& a = op.reqs[r];
  const Op& prev = *u.op;
  const ReqInfo& b = prev.reqs[u.req];
  // A region's footprint is its bbox; so is every piece of a complete partition's (pieces are
  // clipped to the parent: their hull, the bbox, is the parent, and they leave none of it).
  if (a.partition == kInvalidId || (a.whole_partition && forest_.partition(a.partition).complete))
    return a.bbox.contains(b.bbox);
  // Otherwise only the same pieces, each written again.
  return a.projection.kind() == Projection::Kind::Identity && b.partition != kInvalidId &&
         b.uid == a.uid && b.projection.kind() == Projection::Kind::Identity &&
         op.domain.contains(prev.domain);
}

void LogicalAnalysis::drop_completed(std::vector<LogicalUser>& users) const {
  std::erase_if(users, [&](const LogicalUser& u) { return events_.has_triggered(u.op->done); });
}

void LogicalAnalysis::record(const OpRef& op) {
  recorded_since_clear_ = true;
  if (memo_pending_.memo) {
    if (memo_pending_.op.get() == op.get()) {
      MemoPending pending = std::move(memo_pending_);
      memo_pending_ = {};
      if (!pending.hit) {
        record_captured(op, *pending.memo);
      } else if (memo_mode_ == 2) {
        check_steps(*pending.memo, op);
      } else {
        apply_steps(*pending.memo, op);
      }
      return;
    }
    memo_pending_ = {};  // (that launch failed before its record)
  }
  record_plain(op);
}

void LogicalAnalysis::record_plain(const OpRef& op) {
  for (std::uint32_t r = 0; r < op->reqs.size(); ++r) {
    const ReqInfo& a = op->reqs[r];
    if (a.tree >= trees_.size()) trees_.resize(a.tree + 1);
    auto& users = trees_[a.tree];
    set_stamp(a.tree, 0);
    if (a.writes()) {
      // A write that covers an earlier user's footprint orders everything after it behind
      // that user (transitively), so the user is no longer needed for those fields.
      for (auto& u : users)
        if ((u.mask & a.mask) && u.op.get() != op.get() &&
            !(keep_summaries_ && u.op->kind == OpKind::Summary) && covers(*op, r, u))
          u.mask &= ~a.mask;
      std::erase_if(users, [](const LogicalUser& u) { return u.mask == 0; });
    } else if (order_through_readers_ && a.privilege == Privilege::ReadOnly &&
               op->kind != OpKind::Summary) {
      // (A summary's reads are a replay's, not points that each waited for what they read.)
      for (auto& u : users)
        if ((u.mask & a.mask) && privileges_conflict(a, u.op->reqs[u.req]) && covers(*op, r, u))
          u.read_over |= u.mask & a.mask;
    }
    users.push_back(LogicalUser{op, r, a.mask});
    // Long runs of readers: completed users impose nothing any more.
    if (prune_completed_ && users.size() > 64 && users.size() % 32 == 0) drop_completed(users);
  }
}

void LogicalAnalysis::users_of(std::uint32_t tree, std::vector<Event>& out) const {
  if (tree >= trees_.size()) return;
  for (const auto& u : trees_[tree]) out.push_back(u.op->done);
}

void LogicalAnalysis::forget_tree(std::uint32_t tree) {
  if (tree < trees_.size()) trees_[tree].clear();
  set_stamp(tree, 0);
  // (The memo holds requirement lists that name the tree: they go with it.)
  memos_.clear();
  memo_pending_ = {};
  memo_found_op_ = nullptr;
  memo_found_ = nullptr;
  std::erase_if(caches_->pieces, [&](const auto& entry) { return entry.second.tree == tree; });
}

void LogicalAnalysis::clear() {
  for (auto& t : trees_) t.clear();
  tree_stamps_.assign(tree_stamps_.size(), 0);
  recorded_since_clear_ = false;
}

std::size_t LogicalAnalysis::user_count() const {
  std::size_t n = 0;
  for (const auto& t : trees_) n += t.size();
  return n;
}

}  // namespace reprise::detail

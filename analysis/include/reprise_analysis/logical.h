#pragma once
// Logical dependence analysis: per region tree, the users (op requirements) that later ops may
// have to wait for, with field masks and footprints. Computes per-point preconditions.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "reprise_analysis/rect_index.h"
#include "reprise_rt/event.h"
#include "reprise_rt/forest.h"
#include "reprise_rt/op.h"

namespace reprise::detail {

class EventTable;

// One requirement of an earlier op that is still relevant.
struct LogicalUser {
  OpRef op;
  std::uint32_t req = 0;
  FieldMask mask = 0;
  // Fields a later reader read all of after this user (see set_order_through_readers): a later
  // op that conflicts with that reader waits for it, and so, through it, for this user.
  FieldMask read_over = 0;
};

// The events each point of a launch waits for. Only the points looked at cost anything: a
// point's list is cleared when it is first touched after reset (a shard looks at its own
// points and the few that meet its data, not every point of a launch), and add_all's events
// join a list when it is read. (The lists are reused across ops to avoid allocation.)
class PointPreconditions {
 public:
  void reset(std::size_t points);
  // (Inline: a stencil's point gets a handful of these per launch, mostly duplicates.)
  void add(std::size_t point, Event e) { add_to(list(point).events, e); }
  // Adds each of prev's point_done[index] for index in [first, last) to point's list (one
  // look at the list's generation for them all: a stencil's point meets a few of each).
  void add_each(std::size_t point, std::span<const Event> done, const std::uint32_t* first,
                const std::uint32_t* last) {
    if (first == last) return;
    auto& events = list(point).events;
    for (; first != last; ++first) add_to(events, done[*first]);
  }
  // e joins every point's list (after its own events). Before any list is read.
  void add_all(Event e);
  std::span<const Event> of(std::size_t point);
  std::size_t points() const { return points_; }

 private:
  struct List {
    std::vector<Event> events;
    std::uint64_t generation = 0;  // of the reset it was cleared after
    bool sealed = false;           // add_all's events were appended
  };
  static void add_to(std::vector<Event>& events, Event e) {
    for (Event x : events)
      if (x == e) return;
    events.push_back(e);
  }
  // point's list, cleared if last used before the reset
  List& list(std::size_t point) {
    List& l = lists_[point];
    if (l.generation != generation_) {
      l.events.clear();
      l.generation = generation_;
      l.sealed = false;
    }
    return l;
  }
  std::vector<List> lists_;
  std::vector<Event> common_;  // add_all's, this generation
  std::uint64_t generation_ = 0;
  bool read_ = false;  // a list was read this generation
  std::size_t points_ = 0;
};

// The points of a launch whose preconditions to compute: [begin, end), or only those in
// `list` (ascending, when given: a shard's own points cost it nothing per other point).
struct PointSubset {
  std::size_t begin = 0, end = SIZE_MAX;
  const std::vector<std::uint32_t>* list = nullptr;
  // Calls fn(p) for each point of the subset below `points`.
  template <class Fn>
  void each(std::size_t points, Fn&& fn) const {
    if (list) {
      for (std::uint32_t p : *list)
        if (p < points) fn(std::size_t(p));
      return;
    }
    for (std::size_t p = begin, e = std::min(points, end); p < e; ++p) fn(p);
  }
};

// Whether a and b conflict (anything but two reads, or two reductions by one operator).
bool privileges_conflict(const ReqInfo& a, const ReqInfo& b);

class LogicalAnalysis {
 public:
  // What pair_meets and partition_pieces keep: facts about partitions alone, the same for
  // every analysis of one runtime (a template's elision links analyse its ops again, and
  // share the runtime analysis' instead of building every piece index and pair anew).
  struct Caches;
  // prune_completed: drop users whose op has completed (off when the events are not real).
  // caches: shared with another analysis (null: its own).
  LogicalAnalysis(const RegionForest& forest, EventTable& events, bool prune_completed = true,
                  std::shared_ptr<Caches> caches = nullptr);
  const std::shared_ptr<Caches>& caches() const { return caches_; }
  // Gives each point its rectangles (ReqInfo::pieces, else op.point_rects) and each
  // requirement its bbox.
  void compute_rects(Op& op) const;
  // compute_rects() for a launch the memo holds, complete, with the same requirement list and
  // domain: its captured launch's point rectangles (that list's pieces and bboxes are set
  // already: compute_rects set them on this very list, which cannot have changed since);
  // compute_rects() where the memo holds no such launch. (-lg:dependence_memo 2: checked.)
  void rects_memoized(Op& op);
  // An op analysed without dependences_memoized (an eager launch): its point rectangles are
  // kept for the next launch of its list and domain, unless rects_memoized found them kept.
  void keep_rects(const Op& op) {
    if (memo_found_op_ == &op && memo_found_) return;  // (rects_memoized found them kept)
    keep_rects_anew(op);
  }
  // Adds the events of earlier conflicting users to each point's list (of the points in
  // `points`: control replication computes other shards' points only when it needs them).
  void dependences(const Op& op, PointPreconditions& pre, PointSubset points = {}) const;
  // Records op's requirements as users, pruning users they make irrelevant.
  void record(const OpRef& op);
  // dependences() for every point of a launch analysed whole (untraced, or recorded), through
  // the memo where it may: a
  // launch of a kept launcher whose earlier users look as they did at the last launch of the
  // same requirements (same requirement lists, domains, fields and masks, in the same order)
  // takes that launch's answer — which point waits for which point of which user — and its
  // record() then makes the users' changes that launch's record made (logical_memo.cpp).
  // Every launch of a stencil's timestep asks the same as the one two timesteps before.
  void dependences_memoized(const OpRef& op, PointPreconditions& pre);
  // -lg:dependence_memo: 0 off, 1 on, 2 on with every reuse checked against the full analysis.
  void set_memo(int mode) { memo_mode_ = mode; }
  std::uint64_t memo_hits() const { return memo_hits_; }
  // Every user of a tree (for destruction).
  void users_of(std::uint32_t tree, std::vector<Event>& out) const;
  void forget_tree(std::uint32_t tree);
  // The partition (by uid) was destroyed: its piece index and the point pairs it is part of
  // are no longer worth keeping.
  void forget_partition(std::uint64_t uid);
  // After a fence every earlier user has completed before anything later may start.
  void clear();
  // Every op recorded so far has completed (an eager launch, Analysis::run_eagerly): nothing
  // later waits for any of them, and the memo's launch in progress is dropped. (Cheap when
  // nothing was recorded since the last time.)
  void forget_completed() {
    if (recorded_since_clear_) clear();
    memo_pending_ = {};
    memo_found_op_ = nullptr;
    memo_found_ = nullptr;
  }
  // While a trace is recorded every in-trace dependence must be seen, finished or not.
  void set_prune_completed(bool on) { prune_completed_ = on; }
  // Control replication: a replay's summary stands for accesses no other record of this
  // shard holds, and a write on another shard that covers it orders nothing here: it stays
  // until it completes or a fence.
  void set_keep_summaries(bool on) { keep_summaries_ = on; }
  // A reader that read all of an earlier conflicting user's footprint waited for it point by
  // point (each of the user's pieces is read by some point of the reader, which waited for
  // it), and any later op that conflicts with the reader waits for the reader's points that
  // read what it touches: on those fields the later op needs no edge of its own to the user
  // (a stencil's write of its rows at timestep t waits for t-1's readers, not also for t-2's
  // writer). Only where every point's own preconditions are real events: not under control
  // replication, where another shard's reader may stand for nothing here.
  void set_order_through_readers(bool on) { order_through_readers_ = on; }
  std::size_t user_count() const;
  // The pieces of the partition that requirement `req` of `prev` names over its whole color
  // space (point c used piece c), indexed once per partition (by uid: a partition never
  // changes, and its uid is never reused) so that a point finds the pieces its rectangle meets
  // without a scan. Built from prev's rectangles, not the forest: prev may have outlived its
  // partition, whose slot then names another.
  const RectIndex& piece_index(const Op& prev, std::uint32_t req) const {
    return partition_pieces(prev, req)->index;
  }
  std::shared_ptr<const PartitionPieces> partition_pieces(const Op& prev, std::uint32_t req) const;

 private:
  // Calls fn(r, a, k, u, b) for each requirement r of op and each user u (the k-th of its tree)
  // that r conflicts with, in order; stops, returning false, where fn does. (a, b: the two
  // requirements, for add_user.)
  template <class Fn>
  bool each_conflict(const Op& op, Fn&& fn) const {
    for (std::uint32_t r = 0; r < op.reqs.size(); ++r) {
      const ReqInfo& a = op.reqs[r];
      if (a.tree >= trees_.size()) continue;
      // (A ReadOnly requirement does not conflict with the reader that read a user over.)
      const FieldMask through = a.privilege == Privilege::ReadOnly ? 0 : ~FieldMask(0);
      // (Walked by pointer: fn does not change the users, and the bounds then stay in registers.)
      const LogicalUser* const first = trees_[a.tree].data();
      const LogicalUser* const last = first + trees_[a.tree].size();
      for (const LogicalUser* u = first; u != last; ++u) {
        if (!(u->mask & a.mask & ~(u->read_over & through))) continue;
        const ReqInfo& b = u->op->reqs[u->req];
        if (!privileges_conflict(a, b) || !a.bbox.overlaps(b.bbox)) continue;
        if (!fn(r, a, std::size_t(u - first), *u, b)) return false;
      }
    }
    return true;
  }
  // Adds to each point of op in `points` the events of u's points that requirement r (a)
  // meets (b: u's requirement).
  void add_user(const Op& op, std::uint32_t r, const ReqInfo& a, const LogicalUser& u,
                const ReqInfo& b, PointPreconditions& pre, const PointSubset& points) const {
    if (small_pair(op, a, *u.op, b))
      add_small_pairs(op, r, u, pre, points);
    else
      add_pair(op, r, u, pre, points);
  }
  void add_pair(const Op& op, std::uint32_t r, const LogicalUser& u, PointPreconditions& pre,
                const PointSubset& points) const;
  // add_pair for one disjoint partition named by identity by both: point c meets point c.
  // (A function of its own, small: the hot loop of a launch after a launch of the same pieces
  // keeps its calls inlined, whatever add_pair's other paths weigh.)
  static void add_point_by_point(const Op& op, const Op& prev, PointPreconditions& pre,
                                 const PointSubset& subset);
  // Whether a and b (requirements of op and prev) are a small pair of partitions named by
  // identity that small_pair_meets answers (not one partition, which add_pair answers point
  // by point, nor a large pair, which pair_meets keeps).
  bool small_pair(const Op& op, const ReqInfo& a, const Op& prev, const ReqInfo& b) const;
  // add_pair for such a pair (apart from add_pair: its own paths' code stays as it was).
  void add_small_pairs(const Op& op, std::uint32_t r, const LogicalUser& u, PointPreconditions& pre,
                       const PointSubset& subset) const;
  // Calls fn(p, q) for each point p of op in `points` and each point q of prev whose
  // rectangles of requirements r and req overlap, q ascending for each p.
  template <class Fn>
  void each_meeting(const Op& op, std::uint32_t r, const Op& prev, std::uint32_t req,
                    const PointSubset& points, Fn&& fn) const;
  // Which points of prev each point of op meets, for requirements that both name partitions:
  // the answer depends only on the two partitions (uids), projections and launch domains, so
  // it is kept while that pair of requirements recurs (every timestep of a stencil asks the
  // same). CSR lists: point p meets q for q in points[begin[p] .. begin[p + 1]).
  struct PairMeets {
    std::vector<std::uint32_t> begin, points;
  };
  struct PairKey {
    std::uint64_t uid[2];
    Projection projection[2];
    Domain domain[2];
    bool whole[2];
    bool operator==(const PairKey&) const = default;
  };
  struct PairKeyHash {
    std::size_t operator()(const PairKey& k) const;
  };
  const PairMeets& pair_meets(const Op& op, std::uint32_t r, const Op& prev,
                              std::uint32_t req) const;
  // The same answer for a small pair (fewer than kLookUpPairs pairs of points) of partitions
  // both named by identity, kept in a small direct-mapped table of this analysis: a stencil's
  // every timestep asks it, and both a scan (~400 instructions a pair of requirements at two
  // points each) and pair_meets' key (projections and all) cost more than this look-up.
  const PairMeets& small_pair_meets(const Op& op, std::uint32_t r, const Op& prev,
                                    std::uint32_t req) const;
  // Adds to each point p of op in `subset` (of its `points`) prev's points that m says p meets.
  static void add_meets(const PairMeets& m, const Op& prev, PointPreconditions& pre,
                        const PointSubset& subset, std::size_t points);
  struct SmallPair {
    std::uint64_t uid[2] = {0, 0};  // (0: an empty slot; partition uids start at 1)
    Domain domain[2];
    PairMeets meets;
  };
  mutable std::vector<SmallPair> small_pairs_;  // sized on first use
  bool covers(const Op& op, std::uint32_t r, const LogicalUser& u) const;
  void drop_completed(std::vector<LogicalUser>& users) const;
  void record_plain(const OpRef& op);

  // The memo (logical_memo.cpp): per kept requirement list, the users its last launch met
  // and what it did with them.
  struct MemoUser {    // a user as the key compares it
    const void* reqs;  // its op's requirement list (held by Memo::held)
    Domain domain;
    std::uint32_t req;
    FieldMask mask, read_over;
  };
  // Point `point` waits for points edge_points[begin, end) of user `user` of tree `tree`; or,
  // `diagonal`, each point p in [point, end) for the user's point p (one partition, point by
  // point: stored and applied without a list per point).
  struct MemoEdges {
    std::uint16_t tree, user;
    bool diagonal;
    std::uint32_t point, begin, end;
  };

  struct MemoStep {     // a tree's users after the launch: an earlier one (from) or the launch's
    std::int32_t from;  // index before the launch, or -1: the launch's requirement `req`
    std::uint32_t req;
    FieldMask mask, read_over;
  };
  struct Memo {
    ReqList reqs;  // the launch's requirements (held: while held they cannot change)
    Domain domain;
    std::vector<std::uint32_t> trees;        // the trees the launch names, each once
    std::vector<std::uint32_t> users_begin;  // per tree, its first user in `users`; then the end
    std::vector<MemoUser> users;
    std::vector<ReqList> held;  // the users' requirement lists
    std::vector<MemoEdges> edges;
    std::vector<std::uint32_t> edge_points;
    std::vector<std::uint32_t> steps_begin;  // per tree, its first step; then the end
    std::vector<MemoStep> steps;
    // Per tree: the stamp apply_steps leaves on it (its users are then a function of this
    // capture alone), and the stamp under which users_match last found the tree's users as
    // `users` holds them (0: none) — the same stamp again, the same users (tree_stamps_).
    std::vector<std::uint64_t> leaves, seen;
    std::vector<Domain> rects;  // the launch's point_rects (rects_memoized)
    // Drops what the slot holds (it keeps its counts).
    void free() {
      reqs = {};
      held.clear();
      complete = false;
      rects_kept = false;
    }
    bool complete = false;       // record() has filled the steps
    bool rects_kept = false;     // `rects` are the launch's (complete, or keep_rects)
    std::uint32_t hits = 0;      // since the last capture
    std::uint32_t misses = 0;    // captures in a row that were never reused
    std::uint32_t skip = 0;      // launches that go the full way before the next capture
    std::uint64_t last_use = 0;  // (of the two slots a list may take, the older is replaced)
  };
  struct MemoPending {  // the launch between its dependences_memoized() and its record()
    OpRef op;
    Memo* memo = nullptr;
    bool hit = false;
  };
  void keep_rects_anew(const Op& op);
  Memo* memo_for(const Op& op);
  // The slot that holds op's requirement list, complete, for op's domain (no side effects).
  Memo* memo_holding(const Op& op);
  bool users_match(Memo& m) const;
  bool capture(Memo& m, const Op& op);
  void apply_edges(const Memo& m, PointPreconditions& pre) const;
  void apply_steps(const Memo& m, const OpRef& op);
  void record_captured(const OpRef& op, Memo& m);
  void check_edges(const Memo& m, const Op& op) const;
  void check_steps(const Memo& m, const OpRef& op);

  const RegionForest& forest_;
  EventTable& events_;
  bool prune_completed_;
  bool keep_summaries_ = false;
  bool order_through_readers_ = false;
  std::vector<std::vector<LogicalUser>> trees_;
  bool recorded_since_clear_ = false;  // (forget_completed)
  // Per tree, a stamp that names its users' shape as users_match compares it (0: unknown):
  // set by a memo's apply_steps only, cleared by every other change to the tree's users.
  // Stamps are never reused. A stencil's launch met the users its other timestep shape left,
  // compared user by user at every launch (~180 instructions).
  std::vector<std::uint64_t> tree_stamps_;
  std::uint64_t stamp_clock_ = 0;
  std::uint64_t stamp_of(std::uint32_t tree) const {
    return tree < tree_stamps_.size() ? tree_stamps_[tree] : 0;
  }
  void set_stamp(std::uint32_t tree, std::uint64_t stamp) {
    if (tree >= tree_stamps_.size()) tree_stamps_.resize(tree + 1, 0);
    tree_stamps_[tree] = stamp;
  }
  struct PiecesOf {
    std::uint32_t tree;
    std::shared_ptr<const PartitionPieces> pieces;
  };
  std::shared_ptr<Caches> caches_;
  mutable std::vector<std::uint32_t> colors_;
  int memo_mode_ = 0;
  std::uint64_t memo_hits_ = 0;
  std::vector<Memo> memos_;  // two slots per requirement list (sized on first use)
  std::uint64_t memo_clock_ = 0;
  MemoPending memo_pending_;
  // The slot rects_memoized found holding the launch being analysed: dependences_memoized,
  // next for the same launch, takes it instead of finding its slot again.
  const Op* memo_found_op_ = nullptr;
  Memo* memo_found_ = nullptr;
  mutable PointPreconditions memo_scratch_, memo_check_;
  std::vector<std::pair<const Op*, std::uint32_t>> memo_before_;
};

struct LogicalAnalysis::Caches {
  std::unordered_map<std::uint64_t, PiecesOf> pieces;  // by partition uid
  std::unordered_map<PairKey, PairMeets, PairKeyHash> meets;
};

}  // namespace reprise::detail

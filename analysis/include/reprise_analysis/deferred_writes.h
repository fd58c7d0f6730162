#pragma once
// Control replication, untraced: the writes of other shards' points that met none of this
// shard's data when their launch was analysed, kept per launch (the op, a requirement and the
// points) instead of applied to the write layer one by one. PhysicalState settles them —
// applies them, oldest first — before anything looks at or changes the part of a field they
// wrote; most are never settled, only superseded by the next launch that writes the same
// pieces. So another shard's point costs a shard a bit in a bitmap, not a change of its write
// layer (docs/ctrlrepl.md, "Deferred writes").
//
// Why settling a part is enough, and what "a part" is: the write layer's pieces — hence the
// rectangles of the copies two shards must agree on — depend on the order of the writes that
// cut them. A deferred write may be applied after a later operation only where the two commute:
// where the later one touches no piece the deferred write meets. So before anything touches
// the pieces meeting a rectangle, every pending write meeting one of them is applied, oldest
// first, each after the older pending writes meeting the pieces it touches (PhysicalState::
// settle); then the state is the one eager application would have made, wherever it is looked
// at.
#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "reprise/geometry.h"
#include "reprise_analysis/rect_index.h"
#include "reprise_rt/op.h"

namespace reprise::detail {

// Where a deferred write stands among writes: its launch's place among deferred launches, then
// its point (a launch's points write in point order), then its requirement (a point's
// reductions through several requirements of one field, in requirement order).
struct WriteOrder {
  std::uint64_t launch = UINT64_MAX;
  std::uint32_t point = UINT32_MAX;
  std::uint32_t req = 0;  // (WriteOrder{launch, point}: before the point's requirements)
  auto operator<=>(const WriteOrder&) const = default;
};

// A launch whose other shards' points reduce, deferred (its records share it): what applying
// one of its contributions needs besides the rectangle. Eager application numbers the
// contributions (PhysicalState::reduction_order, one reduced() call per field of a point's
// non-empty rectangle, point by point, requirement by requirement), and folds are ordered by
// those numbers: a deferred contribution keeps the number it would have had, whenever it is
// applied.
struct DeferredReductions {
  std::uint64_t mark = 0;  // PhysicalState::reduce_mark() when the launch's analysis began
  struct Req {
    std::uint32_t req;     // the requirement
    std::uint32_t fields;  // its fields: reduced() calls per non-empty rectangle
    std::uint64_t older;   // Analysis::fold_earlier's bound for its tree in the launch
    std::shared_ptr<const PartitionPieces> pieces;
  };
  std::vector<Req> reqs;  // the launch's reducing requirements, in order
  // The calls points first .. last-1 make.
  std::uint64_t calls(std::uint32_t first, std::uint32_t last) const {
    std::uint64_t n = 0;
    for (const Req& r : reqs) n += std::uint64_t(r.fields) * r.pieces->nonempty(first, last);
    return n;
  }
  // The number of point q's contribution through reqs[k] (its last field's call).
  std::uint64_t order(std::uint32_t q, std::size_t k) const {
    std::uint64_t n = mark + calls(0, q);
    for (std::size_t j = 0; j <= k; ++j)
      n += std::uint64_t(reqs[j].fields) * reqs[j].pieces->nonempty(q, q + 1);
    return n;
  }
};

// Control replication, a replay: the writes of other shards' points to one tree that a trace
// template journaled, in journal order (shared by the template's replays). Deferred as one
// launch whose points are the entries (DeferredWrites::add_list).
struct WriteList {
  struct Entry {
    int field;
    Domain rect;
    std::uint32_t mem;
  };
  std::uint32_t tree = 0;
  Domain root;  // the tree's root rectangle
  std::vector<Entry> entries;
  RectIndex index;  // entry rectangles, by position
  Domain hull;
  FieldMask mask = 0;  // the fields the entries write
};

class DeferredWrites {
 public:
  // A deferred write taken to be applied: `fields` of tree over rect, by memory mem. Or a
  // contribution (op set): point order.point of op through requirement order.req, numbered
  // `reduce_order`, its launch's fold_earlier bounds `older` and `mark`.
  struct Taken {
    WriteOrder order;
    std::uint32_t tree = 0;
    FieldIndexList fields;
    Domain rect;
    std::uint32_t mem = 0;
    OpRef op;  // (a contribution's)
    std::uint64_t reduce_order = 0, older = 0, mark = 0;
  };

  // Chooses the memories of point p of op (op.point_instances), when they were not chosen.
  using MapPoint = void (*)(void* ctx, Op& op, std::uint32_t p);
  void set_mapper(MapPoint fn, void* ctx) {
    map_ = fn;
    map_ctx_ = ctx;
  }

  bool any(std::uint32_t tree) const { return tree < trees_.size() && !trees_[tree].empty(); }
  // The place (WriteOrder::launch) the next launch deferred will take: launches from there on
  // come after everything pending now.
  std::uint64_t next_launch() const { return next_launch_; }
  bool any() const { return records_ != 0; }
  // Changes whenever writes become pending (never when they are taken): what was found not
  // to meet anything pending stays so until it changes.
  std::uint64_t generation() const { return generation_; }
  // While op is analysed, its points that are not analysed here write requirement req — a
  // disjoint partition named by identity over its whole color space (ReqInfo::whole_partition)
  // — through defer(), until close(). Returns the launch's place (WriteOrder::launch): a new
  // one, or `launch` (another requirement of the same op). reductions: the points reduce
  // through req (reductions->reqs[k].req == req; any partition named whole). covers: for a
  // write through a complete partition, its parent's rectangle (it supersedes the older
  // launches' pending contributions inside it, see close()).
  std::uint64_t open(const OpRef& op, std::uint32_t req,
                     std::shared_ptr<const PartitionPieces> pieces,
                     std::uint64_t launch = UINT64_MAX,
                     std::shared_ptr<const DeferredReductions> reductions = nullptr,
                     std::size_t k = 0, const Domain& covers = Domain());
  // Points first .. last-1 of the launch `launch` (open) write their pieces of tree, later
  // (O(log points): the hull of a range of pieces is looked up).
  void defer_range(std::uint32_t tree, std::uint64_t launch, std::uint32_t req, std::uint32_t first,
                   std::uint32_t last);
  // The launch is analysed. Appends to overflow the writes to apply now (the oldest launch's,
  // when a tree has too many pending).
  void close(std::uint32_t tree, std::uint64_t launch, std::uint32_t req,
             std::vector<Taken>& overflow);
  // Every entry of list pending, as an open launch (after every launch so far) whose points
  // are the entries, in order; returns its place. close() it once the effects applied around
  // it are (an older launch of the same list is superseded then: the same writes again).
  std::uint64_t add_list(std::shared_ptr<const WriteList> list);
  // The newest pending write of field fi of tree that meets rect, left pending: found (some
  // write meets rect), known (its memory is chosen) and, then, its rectangle and memory. A
  // rectangle inside it is, once the writes are applied, valid in that memory alone: nothing
  // applied since touched it (it would have been settled first).
  struct Newest {
    bool found = false, known = false;
    Domain rect;
    std::uint32_t mem = 0;
  };
  Newest newest_meeting(std::uint32_t tree, int fi, const Domain& rect) const;
  // Whether a deferred contribution (a launch that reduces) is pending on field fi of tree
  // over rect; the bounding box of all those pending on field fi of tree.
  bool contribution_meets(std::uint32_t tree, int fi, const Domain& rect) const;
  Domain contribution_hull(std::uint32_t tree, int fi) const;
  // Whether a pending write before `before` writes field fi of tree within `box` (a cheap
  // test that may answer yes when none does).
  bool may_meet(std::uint32_t tree, int fi, const Domain& box, WriteOrder before) const;
  // Takes the oldest pending write before `before` that writes field fi of tree and meets one
  // of rects, if any.
  std::optional<Taken> take_oldest(std::uint32_t tree, int fi, std::span<const Domain> rects,
                                   WriteOrder before);
  // Takes the oldest pending write of tree (of any tree), if any.
  std::optional<Taken> take_oldest(std::uint32_t tree);
  std::optional<Taken> take_oldest();
  void forget_tree(std::uint32_t tree);

 private:
  struct Record {
    OpRef op;
    std::uint32_t req = 0;
    std::uint64_t launch = 0;  // its place among deferred launches
    FieldMask mask = 0;        // the fields it still writes (newer covering launches clear bits)
    std::shared_ptr<const PartitionPieces> pieces;  // point -> its rectangle of req
    std::vector<bool> pending;                      // per point of op
    std::size_t left = 0;                           // points pending
    std::uint32_t first = UINT32_MAX;               // no point below it is pending
    bool open = true;                               // its launch is being analysed
    Domain hull;                                    // holds every pending point's rectangle
    std::shared_ptr<const WriteList> list;  // instead of op, req and pieces: a replay's writes
    std::uint32_t last = 0;                 // no point from it on is pending
    std::shared_ptr<const DeferredReductions> reductions;  // the points reduce (not write)
    std::size_t reduction = 0;                             // req is reductions->reqs[it]
    Domain covers;  // a write through a complete partition: its parent's rectangle
    // A launch's points are deferred in ascending order, and a shard's own points and those
    // near them are not: the widest run of points inside first .. last-1 left out (none
    // pending) splits the hull in two, so that a rectangle in the run — this shard's data,
    // where most settles look — is passed over without a look at the record's points
    // (a middle shard's records hold points on both sides of it).
    std::uint32_t gap_first = 0, gap_last = 0;
    Domain below, above;  // hulls of the pending points before and after the run, if any
    // Whether a pending point's rectangle may meet rect.
    bool may_hold(const Domain& rect) const {
      return rect.overlaps(hull) &&
             (gap_first >= gap_last || rect.overlaps(below) || rect.overlaps(above));
    }
    // Sets hull (and below, above) from first, last and the run.
    void refresh_hull();
    const Domain& rect(std::uint32_t q) const {
      return list ? list->entries[q].rect : op->rect(q, req);
    }
    // Whether point q writes field fi (every field of the record, for a launch).
    bool writes(std::uint32_t q, int fi) const { return !list || list->entries[q].field == fi; }
    // The points by rectangle.
    const RectIndex& index() const { return list ? list->index : pieces->index; }
    // A launch's point q's instance of req (null until its memories are chosen).
    Instance* instance(std::uint32_t q) const {
      return op->point_instances[std::size_t(q) * op->reqs.size() + req];
    }
    // Whether point q still writes field fi somewhere in rect (a candidate of index()).
    bool pending_write(std::uint32_t q, int fi, const Domain& rect) const {
      return pending[q] && writes(q, fi) && this->rect(q).overlaps(rect);
    }
    // Calls fn(q) for each point still writing field fi somewhere in rect.
    template <class Fn>
    void each_pending(int fi, const Domain& rect, Fn&& fn) const {
      if (!may_hold(rect)) return;
      index().candidates(rect, [&](std::uint32_t q) {
        if (pending_write(q, fi, rect)) fn(q);
      });
    }
    // The memory point q writes into, if chosen.
    std::optional<std::uint32_t> memory(std::uint32_t q) const;
  };
  // Whether every element that older writes may still hold pending is written by newer.
  static bool covers(const Record& newer, const Record& older);
  Record& find(std::uint32_t tree, std::uint64_t launch, std::uint32_t req);
  // Takes point q of records[at] (dropping the record when it has no point left).
  Taken take(std::vector<Record>& records, std::size_t at, std::uint32_t q);
  // Takes the oldest pending point of records (of launch only_launch), if any.
  std::optional<Taken> take_first(std::vector<Record>& records,
                                  std::uint64_t only_launch = UINT64_MAX);
  void drop_done(std::vector<Record>& records);

  std::vector<std::vector<Record>> trees_;  // per tree, oldest first
  std::vector<Domain> near_;                // per tree: holds every closed record's hull
  std::uint64_t next_launch_ = 0;
  std::size_t found_at_ = 0;  // where find() found the last launch in its tree
  MapPoint map_ = nullptr;
  void* map_ctx_ = nullptr;
  std::size_t records_ = 0;
  std::uint64_t generation_ = 0;
  std::size_t reductions_ = 0;  // records of launches that reduce
};

}  // namespace reprise::detail

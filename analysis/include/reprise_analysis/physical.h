#pragma once
// The physical state of DESIGN.md §5: per (region tree, field), the root's rectangle cut into
// pieces (by writes, folds and reductions), each with the memories whose instance holds its
// current data (the writer all of it, copies parts of it: see Holder) and the copies still
// making it so, and the reduction instances whose
// contributions are still to be folded in (in the order they were launched). Reads find what
// must be copied in and folded first; writes leave the written memory the only valid one and
// drop pending reductions.
//
// While a trace is recorded the state keeps a journal: the facts about the state before the
// trace that the recording relied on (its preconditions) and the changes it made (its
// postconditions, applied again after each replay).
#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "reprise/geometry.h"
#include "reprise_analysis/deferred_writes.h"
#include "reprise_analysis/rect_index.h"
#include "reprise_rt/event.h"
#include "reprise_rt/inline_vector.h"

namespace reprise::detail {

class Instance;

// Valid: "field `field` of `tree` over `rect` is (not) valid in memory `mem`."
// Pending: "the reductions pending on `tree` (every field) are the ones with signature
// `pending`" (recorded when a trace first touches the tree: which folds it issues and which
// reduction instances it may reuse follow from them; almost always: none).
struct PhysicalFact {
  enum class Kind : std::uint8_t { Valid, Pending };
  std::uint32_t tree;
  int field;
  Domain rect;
  std::uint32_t mem;
  bool valid;
  Kind kind = Kind::Valid;
  std::uint64_t pending = 0;
};

// A change a trace made, applied again after each replay:
// Copied: rect became valid in `mem` too, once `ready` triggers (a replay substitutes its own
// copy's completion); Written: only `mem` holds rect; Folded: only `mem` holds rect, once
// `ready` (the last fold) triggers, and nothing is pending there; Reduced: `reduction`'s
// contributions are pending over rect.
struct PhysicalEffect {
  enum class Kind : std::uint8_t { Copied, Written, Folded, Reduced };
  std::uint32_t tree;
  int field;
  Domain root;  // the tree's root rectangle
  Domain rect;
  std::uint32_t mem;
  Kind kind;
  Event ready;
  Instance* reduction = nullptr;
};

// A part of a read over which reduction instances must first be folded into the reader's
// memory, in the order of the list.
struct FoldNeed {
  int field;
  Domain rect;
  std::uint32_t list;  // see PhysicalState::pending_list
};

// A part of a read that must first be copied into the reader's memory.
struct CopyNeed {
  int field;
  Domain rect;
  std::uint32_t src_mem;
  Event src_ready;  // a copy still filling the source, or none
};

class PhysicalState {
 public:
  // A read of field fi of tree over rect from memory mem (root: the tree's root rectangle):
  // appends to waits the copies into mem still in flight that it needs, and to needs the
  // parts that are not valid in mem (with the memory to copy each from).
  // Parts with pending reductions go to folds (their copy, if any, is in needs too).
  // only_written_here (control replication, a read of another shard's point): only the pieces
  // this shard's memories wrote are looked at for copies — their copies' send halves run here,
  // and what the reader holds of them came from here, so this shard knows it exactly — and
  // every part with pending reductions for folds (they change the write layer, which every
  // shard keeps). Costs the pieces it finds, not the pieces the read meets.
  void read(std::uint32_t tree, const Domain& root, int fi, const Domain& rect, std::uint32_t mem,
            std::vector<Event>& waits, std::vector<CopyNeed>& needs, std::vector<FoldNeed>& folds,
            bool only_written_here = false);
  // Control replication: this shard's memories are [first, first + count) (see read).
  void set_local_memories(std::uint32_t first, std::uint32_t count) {
    local_first_ = first;
    local_count_ = count;
  }
  // Control replication, untraced: whether a read of field fi of tree over rect may meet a
  // piece this shard's memories wrote or one with pending reductions (what a read of another
  // shard's point looks at): when no requirement of such a point may, the point is not
  // analysed here. (May answer yes for a piece a deferred write has taken over since.)
  // written_over: the point writes what it reads (a ReadWrite requirement, the only one of
  // the launch on those fields) or reduces there: a piece pending only on other shards'
  // reduction instances is then none of this shard's business (the write supersedes the
  // folds; a contribution's own folds are redone when it is applied, PhysicalState::
  // fold_older); one pending on an instance here still is (the fold's copy starts here).
  // Otherwise (a read that does not write) a deferred contribution counts too: the read
  // would fold it, which changes the write layer.
  bool meets_local(std::uint32_t tree, int fi, const Domain& rect, bool written_over) const;
  // The bounding box of what meets_local looks at (a read outside it meets nothing).
  Domain local_hull(std::uint32_t tree, int fi, bool written_over) const;
  // Control replication, untraced: other shards' points of op (mapped only when applied, see
  // set_point_mapper) that are not analysed here write requirement req — a disjoint partition named
  // by identity over its whole color space; their writes are applied only when something here looks
  // at the pieces they meet (DeferredWrites). open_deferred returns the launch's place,
  // defer_written names the points first .. last-1 (in point order, among the points analysed
  // here), close_deferred ends the launch. partition: its pieces (LogicalAnalysis::
  // partition_pieces).
  // A launch whose points reduce through req (reductions; see DeferredReductions) is deferred
  // the same way: their contributions are applied when something here looks at the pieces
  // they meet, each numbered as eager application would have (the launch's deferred points
  // take their numbers at once: reserve_reductions). covers: see DeferredWrites::open.
  std::uint64_t open_deferred(const OpRef& op, std::uint32_t req, const Domain& root,
                              std::shared_ptr<const PartitionPieces> partition,
                              std::uint64_t launch = UINT64_MAX,
                              std::shared_ptr<const DeferredReductions> reductions = nullptr,
                              std::size_t k = 0, const Domain& covers = Domain());
  void defer_written(std::uint32_t tree, std::uint64_t launch, std::uint32_t req,
                     std::uint32_t first, std::uint32_t last) {
    deferred_.defer_range(tree, launch, req, first, last);
  }
  void reserve_reductions(std::uint64_t calls) { reduce_calls_ += calls; }
  void close_deferred(std::uint32_t tree, std::uint64_t launch, std::uint32_t req);
  // How a deferred point's memories are chosen when its write is applied (they are left
  // unchosen while nothing here needs them).
  void set_point_mapper(DeferredWrites::MapPoint fn, void* ctx) { deferred_.set_mapper(fn, ctx); }
  // How a deferred contribution gets its reduction instance when it is applied (after the
  // older writes and contributions it meets, in every field: settles here go no further than
  // the contribution's place). Returns the instance (the point's, from now on).
  using ReducePoint = Instance* (*)(void* ctx, const DeferredWrites::Taken& w);
  void set_reduce_point(ReducePoint fn, void* ctx) {
    reduce_point_ = fn;
    reduce_ctx_ = ctx;
  }
  // The data of rect is in mem too once `ready` (the copy) triggers.
  void copied(std::uint32_t tree, const Domain& root, int fi, const Domain& rect, std::uint32_t mem,
              Event ready);
  // rect was written in mem: mem holds the only valid copy.
  void written(std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
               std::uint32_t mem);
  // A point reduces into `reduction` over rect: its contributions are pending there. order:
  // their reduction_order, when given (a deferred contribution's; else the next number).
  void reduced(std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
               Instance* reduction, std::uint64_t order = 0);
  // The fields (of `fields`, of tree) with contributions pending over rect that began at or
  // before `older` (reduction_order) — none if some field has one that began after `recent`:
  // what a reducer folds into its instance before it reduces (Analysis::fold_earlier).
  FieldIndexList older_pending_fields(std::uint32_t tree, const FieldIndexList& fields,
                                      const Domain& rect, std::uint64_t older,
                                      std::uint64_t recent);
  // Folds the older_pending_fields over rect into mem: what Analysis::fold_earlier does to the
  // state for a point whose folds are all between other shards (a deferred contribution,
  // applied).
  void fold_older(std::uint32_t tree, const Domain& root, const FieldIndexList& fields,
                  const Domain& rect, std::uint64_t older, std::uint64_t recent, std::uint32_t mem);
  // The pending reductions over rect were folded into mem, done once `ready` triggers.
  void folded(std::uint32_t tree, const Domain& root, int fi, const Domain& rect, std::uint32_t mem,
              Event ready);
  // Whether some field of tree has contributions of `reduction` pending inside rect.
  // (settle_first false: the same tree and rect were just asked about, nothing changed since.)
  bool in_use(std::uint32_t tree, const Domain& rect, const Instance* reduction,
              bool settle_first = true);
  // The contributions pending over rect in field fi, by when they began (reduction_order):
  // whether some began at or before `old`, and whether some began after `recent`.
  struct PendingAges {
    bool old = false, recent = false;
  };
  PendingAges pending_ages(std::uint32_t tree, int fi, const Domain& rect, std::uint64_t old,
                           std::uint64_t recent);
  // The count of reduced() calls so far (reduction_order of the next contributions, less one).
  std::uint64_t reduce_mark() const { return reduce_calls_; }
  // Whether tree has had reductions (since it was created): with one memory, ops on such a
  // tree take the physical path from then on (the fast path does not track folds).
  bool has_pending(std::uint32_t tree) const {
    return tree < pending_trees_.size() && pending_trees_[tree];
  }
  // The reduction instances of a FoldNeed's list, in fold order.
  const std::vector<Instance*>& pending_list(std::uint32_t list) const { return lists_[list]; }
  // When `reduction`'s current contributions began (a counter of reduced() calls): every
  // pending list holds its instances in this order, so folding whole instances in it keeps
  // every element's fold order.
  std::uint64_t reduction_order(const Instance* reduction) const {
    auto it = reduced_at_.find(reduction);
    return it == reduced_at_.end() ? 0 : it->second;
  }
  // While journaling: the first time a trace touches tree, its pending reductions become a fact.
  void note_tree(std::uint32_t tree) {
    if (journaling_) note_tree_journaled(tree);
  }
  void forget_tree(std::uint32_t tree);

  // copies_dropped: as if drop_copies() had been called first.
  // (Not const: deferred writes over the fact's rectangle are applied first.)
  bool holds(const PhysicalFact& f, bool copies_dropped = false);
  // Control replication: every memory forgets the copies it holds of data another memory
  // wrote (the next reads copy again; always safe). What remains is the write layer, which
  // every shard keeps alike, while a shard knows only some of the copies between two other
  // shards (see read): the memoizer calls this before it checks or records a template, so
  // that every shard takes the same decision from the same state. keep_deferred: the writes
  // still deferred stay so (applied later, each makes its piece its writer's alone, as if it
  // had been applied before: dropping copies does not cut pieces, so the two commute).
  void drop_copies(bool keep_deferred = false);
  void apply(const PhysicalEffect& e);
  // apply, as if only the deferred writes before `horizon` had been made (a replay applies its
  // own effects around the list of other shards' writes it defers: defer_list).
  void apply(const PhysicalEffect& e, WriteOrder horizon) {
    horizon_ = horizon;
    apply(e);
    horizon_ = WriteOrder{};
  }
  // Control replication, a replay: the writes of other shards' points in list are deferred
  // (DeferredWrites::add_list); returns their launch's place (entry k is point k). Then the
  // effects around it are applied (apply(e, horizon)), and close_deferred(list's tree, launch)
  // ends it: only then does it supersede what the last replay's list left pending, which
  // those effects settled where they looked, as older writes.
  std::uint64_t defer_list(std::shared_ptr<const WriteList> list);

  // keep_deferred (-lg:shard_recording, control replication): the writes deferred so far are
  // not applied first; the recording applies those it meets as part of the state it starts
  // from (apply_deferred), and may defer writes of its own (journal_written).
  void start_journal(bool keep_deferred = false);
  // While journaling: a write that the recording defers (another shard's point that meets
  // nothing here), journaled now, in its place among the trace's effects; once applied it is
  // the trace's doing, not journaled again (apply_deferred).
  void journal_written(std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
                       std::uint32_t mem) {
    if (journaling_)
      effects_.push_back(
          PhysicalEffect{tree, fi, root, rect, mem, PhysicalEffect::Kind::Written, kNoEvent});
  }
  bool journaling() const { return journaling_; }
  // Effects journaled so far (while journaling).
  std::size_t journaled_effects() const { return effects_.size(); }
  // Ends the journal and hands over what it collected.
  void stop_journal(std::vector<PhysicalFact>& facts, std::vector<PhysicalEffect>& effects);

  // For tests: the pieces field fi of tree is cut into.
  std::size_t piece_count(std::uint32_t tree, int fi);

 private:
  // A memory that holds (part of) a piece's current data.
  struct Holder {
    // The part it holds: the whole piece for the memory that wrote it (or folded into it),
    // the rectangles copied into it for the others. A field's pieces are cut only by writes,
    // folds and reductions; copies add holders instead of cutting, so that a tile's halo
    // copies do not cut it into strips that its next write merges again (the write layer
    // and the copy layer of docs/ctrlrepl.md). One memory's holders never overlap.
    Domain rect;
    std::uint32_t mem;
    // The memory that wrote the piece (or folded into it): the first holder of every piece
    // that is not valid everywhere, and the source of every copy out of it (DESIGN §8: the
    // last writer's memory), so that no choice depends on copies — under control
    // replication a shard does not see every copy between two other shards.
    bool writer = false;
    bool decided = false;  // the current journal made this holder (see Piece)
    Event ready{};         // the copy still making it valid there, or none
  };
  struct Piece {
    Domain rect;
    // Valid in every memory (the region's zero-filled initial contents); holders then only
    // carry the copies still in flight.
    bool everywhere = false;
    // The writer first, then the copies in the order they were made. Any number of memories
    // (one per shard and NUMA domain); usually one to three.
    InlineVector<Holder, 2> holders;
    std::uint32_t stamp = 0;  // the journal that last changed it
    // That journal decided every memory's validity (a write or a fold); otherwise only over
    // its holders marked `decided` (copies it made): the rest still comes from before the
    // trace and needs facts.
    bool decided_all = false;
    std::uint32_t pending = 0;  // reductions to fold in (a list; 0: none)
    bool in_local = false;      // in Pieces::local (see there)
  };
  // The pieces of one field: they tile the root without overlapping. Slots of removed pieces
  // (empty rect) are reused; `index` finds the pieces meeting a rectangle.
  struct Pieces {
    std::vector<Piece> slots;
    std::vector<std::uint32_t> free_slots;
    RectIndex index;
    // Control replication: the pieces a read of another shard's point looks at (written by
    // this shard's memories, or with pending reductions), indexed alike.
    RectIndex local;
    std::size_t live() const { return slots.size() - free_slots.size(); }
  };
  struct Tree {
    Domain root;
    std::vector<Pieces> fields;  // by field index; empty until first use
  };
  Pieces& pieces(std::uint32_t tree, const Domain& root, int fi);
  // Applies the deferred writes (older than `before`) that meet the pieces of field fi of tree
  // meeting rect, before anything looks at those pieces or changes them (DeferredWrites).
  // Returns whether hits_ holds the pieces meeting rect (as meeting() would find them now).
  bool settle(std::uint32_t tree, int fi, const Domain& rect, WriteOrder before = {}) {
    return deferred_.any(tree) &&
           settle_pieces(tree, fi, rect, before == WriteOrder{} ? horizon_ : before);
  }
  bool settle_pieces(std::uint32_t tree, int fi, const Domain& rect, WriteOrder before);
  // settle() over `piece`, the rectangle of one of field fi's pieces now; whether it applied
  // a write (the other pieces may have changed since).
  bool settle_piece(std::uint32_t tree, int fi, const Domain& piece);
  // Applies every deferred write (of tree).
  void settle_all();
  void settle_tree(std::uint32_t tree);
  // Applies a deferred write, after the older ones meeting the pieces it writes (oldest: w is
  // its tree's oldest pending write, taken in order — none is left to apply first).
  void apply_deferred(const DeferredWrites::Taken& w, bool oldest = false);
  // written() without settling first. journal: journaling, the write is an effect of the
  // trace (not one it journaled when it deferred it).
  void write(std::uint32_t tree, const Domain& root, int fi, const Domain& rect, std::uint32_t mem,
             bool journal = true);
  const Pieces* find(std::uint32_t tree, int fi) const;
  // Fills hits_ with the slots of the pieces of f that meet rect, in index order (of
  // f.local's pieces only: `local`).
  void meeting(const Pieces& f, const Domain& rect, bool local = false) const;
  // Keeps piece `slot` in f.local or out of it, as its state now says.
  void sync_local(Pieces& f, std::uint32_t slot);
  bool is_local(std::uint32_t mem) const { return mem - local_first_ < local_count_; }
  // Whether a memory of this shard wrote p (it is not valid everywhere; its writer is first).
  bool written_here(const Piece& p) const {
    return !p.everywhere && !p.holders.empty() && is_local(p.holders.front().mem);
  }
  // Whether a reduction instance in a memory of this shard is pending on p.
  bool pending_here(const Piece& p) const;
  // Whether meets_local counts p (a piece of the local index), see there.
  bool counts_as_local(const Piece& p, bool written_over) const {
    return !written_over || written_here(p) || pending_here(p);
  }
  std::uint32_t add(Pieces& f, const Piece& p);
  void remove(Pieces& f, std::uint32_t slot);
  void reshape(Pieces& f, std::uint32_t slot, const Domain& rect);
  // Cuts the pieces overlapping rect so that every piece is inside or outside it; calls
  // fn(piece) for each piece inside.
  template <class Fn>
  void cut(Pieces& f, const Domain& rect, Fn&& fn);
  // Adds the parts of piece `slot` outside rect as pieces of their own (same state).
  void add_outside(Pieces& f, std::uint32_t slot, const Domain& rect);
  // From now on has_pending(tree) (see there).
  void mark_reduced(std::uint32_t tree);
  // The interned list `list` with `add` appended.
  std::uint32_t append(std::uint32_t list, Instance* add);
  std::uint64_t pending_signature(std::uint32_t tree) const;
  void note_tree_journaled(std::uint32_t tree);
  // Drops what p's holders hold outside p.rect (after p was cut).
  static void clip(Piece& p);
  // Adds to p a holder of mem, made by a copy that is done once `ready` triggers, for the
  // parts of rect (inside p) that mem does not hold yet.
  void add_holder(Piece& p, const Domain& rect, std::uint32_t mem, Event ready);
  // The memory to copy u (inside p, not held by the reader) from: the writer's.
  static const Holder& source(const Piece& p, const Domain& u);
  // Takes hole out of the rectangles in uncovered_.
  void uncover_minus(const Domain& hole);
  // Whether the current journal decided p's validity everywhere, or made holder h.
  bool decided(const Piece& p, const Holder* h) const {
    return journaling_ && p.stamp == epoch_ && (p.decided_all || (h && h->decided));
  }
  // While journaling: p is the current trace's doing from now on (its stamp), everywhere or
  // only in the holders it marks decided.
  void decide_all(Piece& p) const;
  void touch(Piece& p) const;

  std::vector<Tree> trees_;
  DeferredWrites deferred_;
  std::vector<DeferredWrites::Taken> overflow_;
  ReducePoint reduce_point_ = nullptr;
  void* reduce_ctx_ = nullptr;
  WriteOrder horizon_{};  // what settle applies by default (see apply(e, horizon))
  // The last settles that left nothing pending before `before` meeting rect (of field fi of
  // tree), at the deferred writes' generation: a settle inside one, no later, has nothing to do
  // until something more is deferred (one point's requirements settle one rectangle several
  // times: its read and its write, its fold, its reduction slot, its reduction). In 2-d the
  // pieces meeting rect must also be those it found (no piece cut since: `shapes`).
  struct Settled {
    std::uint32_t tree = UINT32_MAX;
    int fi = -1;
    Domain rect;
    WriteOrder before;
    std::uint64_t generation = 0;
    std::uint64_t shapes = 0;  // (shapes_ then; not compared on a line)
  };
  std::array<Settled, 4> settled_{};
  std::uint32_t settled_next_ = 0;  // the entry replaced next
  std::uint64_t shapes_ = 0;        // counts pieces added, removed and reshaped
  bool settled_before(std::uint32_t tree, int fi, const Domain& rect, WriteOrder before) const;
  void note_settled(std::uint32_t tree, int fi, const Domain& rect, WriteOrder before);
  std::uint32_t local_first_ = 0, local_count_ = 0;  // none: no Pieces::local
  mutable std::vector<std::uint32_t> hits_;
  std::vector<Domain> parts_, uncovered_, scratch_;
  bool journaling_ = false;
  // While journaling: deferred launches from this place on are the recording's own (its
  // effects, journaled when deferred); those before it come from before the trace.
  std::uint64_t journal_from_ = 0;
  std::uint32_t epoch_ = 0;
  std::vector<PhysicalFact> facts_;
  std::vector<PhysicalEffect> effects_;
  // Pending-reduction lists, interned (pieces are copied often; lists repeat): 0 is empty.
  std::vector<std::vector<Instance*>> lists_{std::vector<Instance*>{}};
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> list_index_;
  // Per tree: has_pending (bytes, not bits: asked for each requirement of every launch).
  std::vector<std::uint8_t> pending_trees_;
  std::unordered_map<const Instance*, std::uint64_t> reduced_at_;
  std::uint64_t reduce_calls_ = 0;
  // Per tree: the reduction instances in reduced_at_ (forgotten with the tree, so the map
  // does not grow with every tree a program creates and destroys).
  std::vector<std::vector<const Instance*>> reduced_in_;
  std::vector<std::uint32_t> noted_;  // per tree: the journal that recorded its Pending fact
};

}  // namespace reprise::detail

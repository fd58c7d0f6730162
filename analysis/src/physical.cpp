#include "reprise_analysis/physical.h"

#include <algorithm>
#include <span>

#include "reprise_rt/assert.h"
#include "reprise_rt/hasher.h"
#include "reprise_rt/instance.h"
#include "reprise_rt/rect_sets.h"

namespace reprise::detail {

PhysicalState::Pieces& PhysicalState::pieces(std::uint32_t tree, const Domain& root, int fi) {
  if (trees_.size() <= tree) trees_.resize(tree + 1);
  Tree& t = trees_[tree];
  if (t.fields.empty()) t.root = root;
  if (t.fields.size() <= std::size_t(fi)) t.fields.resize(std::size_t(fi) + 1);
  Pieces& f = t.fields[std::size_t(fi)];
  if (f.slots.empty()) {
    // A new instance is zero-filled, like the region's initial contents: valid everywhere.
    Piece whole;
    whole.rect = t.root;
    whole.everywhere = true;
    add(f, whole);
  }
  return f;
}

const PhysicalState::Pieces* PhysicalState::find(std::uint32_t tree, int fi) const {
  if (tree >= trees_.size() || trees_[tree].fields.size() <= std::size_t(fi)) return nullptr;
  const Pieces& f = trees_[tree].fields[std::size_t(fi)];
  return f.slots.empty() ? nullptr : &f;
}

void PhysicalState::meeting(const Pieces& f, const Domain& rect, bool local) const {
  hits_.clear();
  (local ? f.local : f.index).candidates(rect, [&](std::uint32_t slot) {
    if (f.slots[slot].rect.overlaps(rect)) hits_.push_back(slot);
  });
}

void PhysicalState::sync_local(Pieces& f, std::uint32_t slot) {
  if (local_count_ == 0) return;
  Piece& p = f.slots[slot];
  const bool want = p.pending != 0 || written_here(p);
  if (want == p.in_local) return;
  if (want)
    f.local.insert(p.rect, slot);
  else
    f.local.erase(p.rect, slot);
  p.in_local = want;
}

std::uint32_t PhysicalState::add(Pieces& f, const Piece& p) {
  std::uint32_t slot;
  if (f.free_slots.empty()) {
    slot = std::uint32_t(f.slots.size());
    f.slots.push_back(p);
  } else {
    slot = f.free_slots.back();
    f.free_slots.pop_back();
    f.slots[slot] = p;
  }
  f.index.insert(p.rect, slot);
  ++shapes_;
  f.slots[slot].in_local = false;  // (p may be a copy of an indexed piece)
  sync_local(f, slot);
  return slot;
}

void PhysicalState::remove(Pieces& f, std::uint32_t slot) {
  ++shapes_;
  f.index.erase(f.slots[slot].rect, slot);
  if (f.slots[slot].in_local) f.local.erase(f.slots[slot].rect, slot);
  f.slots[slot] = Piece{};  // an empty rect marks a free slot
  f.free_slots.push_back(slot);
}

void PhysicalState::reshape(Pieces& f, std::uint32_t slot, const Domain& rect) {
  ++shapes_;
  f.index.erase(f.slots[slot].rect, slot);
  if (f.slots[slot].in_local) {
    f.local.erase(f.slots[slot].rect, slot);
    f.local.insert(rect, slot);
  }
  f.slots[slot].rect = rect;
  f.index.insert(rect, slot);
}

void PhysicalState::add_outside(Pieces& f, std::uint32_t slot, const Domain& rect) {
  parts_.clear();
  cut_away(f.slots[slot].rect, rect, parts_);
  if (parts_.empty()) return;
  const Piece whole = f.slots[slot];  // (add may move the slots)
  for (const Domain& d : parts_) {
    Piece part = whole;
    part.rect = d;
    clip(part);
    add(f, part);
  }
}

void PhysicalState::clip(Piece& p) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < p.holders.size(); ++i) {
    Holder h = p.holders[i];
    h.rect = h.rect & p.rect;
    if (!h.rect.empty()) p.holders[kept++] = h;
  }
  p.holders.resize(kept);
}

template <class Fn>
void PhysicalState::cut(Pieces& f, const Domain& rect, Fn&& fn) {
  // (add, remove and reshape leave hits_ alone: it can be walked while pieces change.)
  meeting(f, rect);
  for (std::uint32_t slot : hits_) {
    if (!rect.contains(f.slots[slot].rect)) {
      const Domain part = f.slots[slot].rect & rect;
      add_outside(f, slot, rect);
      reshape(f, slot, part);
      clip(f.slots[slot]);
    }
    fn(f.slots[slot]);
    sync_local(f, slot);
  }
}

void PhysicalState::read(std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
                         std::uint32_t mem, std::vector<Event>& waits, std::vector<CopyNeed>& needs,
                         std::vector<FoldNeed>& folds, bool only_written_here) {
  if (rect.empty()) return;
  bool have_hits = false;  // (settle found the pieces meeting rect)
  if (only_written_here && deferred_.any(tree) && !deferred_.contribution_meets(tree, fi, rect)) {
    // Only this shard's pieces are looked at: only the deferred writes meeting them matter
    // (they may have taken a piece over; they never give one to this shard). A deferred
    // contribution would be folded by the read wherever it lies: then all of rect settles.
    if (const Pieces* f = find(tree, fi)) {
      meeting(*f, rect, true);
      InlineVector<Domain, 4> local;  // (settling changes hits_ and the slots)
      for (std::uint32_t slot : hits_) local.push_back(f->slots[slot].rect);
      // (On a line, only what meets the read itself: see settle_pieces.)
      // (Each is still a piece until a write is applied: then the others may have changed.)
      bool applied = false;
      for (const Domain& piece : local)
        if (rect.dim == 1)
          settle(tree, fi, piece & rect);
        else if (!applied)
          applied = settle_piece(tree, fi, piece);
        else
          settle(tree, fi, piece);
    }
  } else {
    have_hits = settle(tree, fi, rect);
  }
  Pieces& f = pieces(tree, root, fi);
  REPRISE_ASSERT(!only_written_here || local_count_ > 0,
                 "a read restricted to this shard's pieces needs to know its memories");
  if (!have_hits) meeting(f, rect, only_written_here);
  for (std::uint32_t slot : hits_) {
    const Piece& p = f.slots[slot];
    const Domain part = p.rect & rect;
    if (p.pending) folds.push_back(FoldNeed{fi, part, p.pending});
    if (only_written_here && !written_here(p))
      continue;  // (in f.local for its pending reductions only)
    // What mem holds of the part is valid there (once its copies are done); a fact for each
    // such fragment whose validity the recording relies on and did not make itself.
    uncovered_.assign(1, part);
    bool made = false;  // (everywhere: whether a copy of the trace made all of the part valid)
    for (const Holder& h : p.holders) {
      if (h.mem != mem || !h.rect.overlaps(part)) continue;
      if (h.ready.exists()) waits.push_back(h.ready);
      made = made || (decided(p, &h) && h.rect.contains(part));
      if (p.everywhere) continue;
      if (journaling_ && !decided(p, &h))
        facts_.push_back(PhysicalFact{tree, fi, h.rect & part, mem, true});
      if (h.rect.contains(part))
        uncovered_.clear();  // (the usual case: one holder holds all of it)
      else
        uncover_minus(h.rect);
    }
    if (p.everywhere) {
      if (journaling_ && !decided(p, nullptr) && !made)
        facts_.push_back(PhysicalFact{tree, fi, part, mem, true});
      continue;
    }
    // The rest is copied in, each fragment from one memory that holds all of it.
    for (const Domain& u : uncovered_) {
      const Holder& src = source(p, u);
      needs.push_back(CopyNeed{fi, u, src.mem, src.ready});
      if (journaling_ && !decided(p, nullptr))
        facts_.push_back(PhysicalFact{tree, fi, u, mem, false});
      if (journaling_ && !decided(p, &src))
        facts_.push_back(PhysicalFact{tree, fi, u, src.mem, true});
    }
  }
}

const PhysicalState::Holder& PhysicalState::source(const Piece& p,
                                                   [[maybe_unused]] const Domain& u) {
  REPRISE_ASSERT(
      !p.holders.empty() && p.holders.front().writer && p.holders.front().rect.contains(u),
      "the memory that wrote a piece (or folded into it) holds all of it, first");
  return p.holders.front();
}

void PhysicalState::uncover_minus(const Domain& hole) {
  scratch_.clear();
  for (const Domain& u : uncovered_) cut_away(u, hole, scratch_);
  uncovered_.swap(scratch_);
}

void PhysicalState::add_holder(Piece& p, const Domain& rect, std::uint32_t mem, Event ready) {
  uncovered_.assign(1, rect & p.rect);
  for (const Holder& h : p.holders)
    if (h.mem == mem && h.rect.overlaps(rect)) uncover_minus(h.rect);
  touch(p);
  for (const Domain& u : uncovered_)
    if (!u.empty()) p.holders.push_back(Holder{u, mem, false, journaling_, ready});
}

void PhysicalState::copied(std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
                           std::uint32_t mem, Event ready) {
  if (rect.empty()) return;
  const bool have_hits = settle(tree, fi, rect);
  if (journaling_)
    effects_.push_back(
        PhysicalEffect{tree, fi, root, rect, mem, PhysicalEffect::Kind::Copied, ready});
  // (No cut: the copy adds holders, see Holder.)
  Pieces& f = pieces(tree, root, fi);
  if (!have_hits) meeting(f, rect);
  for (std::uint32_t slot : hits_) add_holder(f.slots[slot], rect, mem, ready);
}

void PhysicalState::written(std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
                            std::uint32_t mem) {
  if (rect.empty()) return;
  settle(tree, fi, rect);
  write(tree, root, fi, rect, mem);
}

void PhysicalState::write(std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
                          std::uint32_t mem, bool journal) {
  if (journaling_ && journal)
    effects_.push_back(
        PhysicalEffect{tree, fi, root, rect, mem, PhysicalEffect::Kind::Written, kNoEvent});
  Pieces& f = pieces(tree, root, fi);
  const Domain whole = rect & trees_[tree].root;
  if (whole.empty()) return;
  // Steady state: the written rectangle is a piece already (the same tile written again);
  // pieces do not overlap, so no other piece meets it (found by its low corner, without a
  // range query: control replication applies every shard's writes).
  std::uint32_t keep = UINT32_MAX;
  f.index.at_low_corner(whole, [&](std::uint32_t slot) {
    if (f.slots[slot].rect != whole) return false;
    keep = slot;
    return true;
  });
  // Otherwise it becomes one piece again: a write undoes the cuts of earlier writes, folds
  // and reductions.
  if (keep == UINT32_MAX) {
    meeting(f, rect);
    for (std::uint32_t slot : hits_) {
      add_outside(f, slot, rect);
      remove(f, slot);
    }
    Piece w;
    w.rect = whole;
    keep = add(f, w);
  }
  Piece& w = f.slots[keep];
  w.everywhere = false;
  w.holders.assign({Holder{whole, mem, true}});
  w.pending = 0;
  w.stamp = 0;
  decide_all(w);
  sync_local(f, keep);
}

void PhysicalState::reduced(std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
                            Instance* reduction, std::uint64_t order) {
  if (rect.empty()) return;
  settle(tree, fi, rect);
  if (journaling_)
    effects_.push_back(PhysicalEffect{tree, fi, root, rect, 0, PhysicalEffect::Kind::Reduced,
                                      kNoEvent, reduction});
  // (Validity does not change: the piece's stamp stays, so later reads still record facts.)
  cut(pieces(tree, root, fi), rect, [&](Piece& p) { p.pending = append(p.pending, reduction); });
  auto [at, fresh] = reduced_at_.insert_or_assign(reduction, order ? order : ++reduce_calls_);
  (void)at;
  if (fresh) {
    if (reduced_in_.size() <= tree) reduced_in_.resize(tree + 1);
    reduced_in_[tree].push_back(reduction);
  }
  mark_reduced(tree);
}

void PhysicalState::folded(std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
                           std::uint32_t mem, Event ready) {
  if (rect.empty()) return;
  settle(tree, fi, rect);
  if (journaling_)
    effects_.push_back(
        PhysicalEffect{tree, fi, root, rect, mem, PhysicalEffect::Kind::Folded, ready});
  mark_reduced(tree);
  cut(pieces(tree, root, fi), rect, [&](Piece& p) {
    p.pending = 0;
    p.everywhere = false;
    p.holders.assign({Holder{p.rect, mem, true, false, ready}});  // (the folder is the writer)
    decide_all(p);
  });
}

void PhysicalState::decide_all(Piece& p) const {
  if (!journaling_) return;
  p.stamp = epoch_;
  p.decided_all = true;
}

void PhysicalState::touch(Piece& p) const {
  if (!journaling_ || p.stamp == epoch_) return;
  p.stamp = epoch_;
  p.decided_all = false;
  for (Holder& h : p.holders) h.decided = false;
}

void PhysicalState::mark_reduced(std::uint32_t tree) {
  if (pending_trees_.size() <= tree) pending_trees_.resize(tree + 1, 0);
  pending_trees_[tree] = 1;
}

std::uint32_t PhysicalState::append(std::uint32_t list, Instance* add) {
  std::vector<Instance*> l = lists_[list];
  l.push_back(add);
  Hasher h;
  for (Instance* i : l) h.mix(std::uint64_t(reinterpret_cast<std::uintptr_t>(i)));
  auto& ids = list_index_[h.h];
  for (std::uint32_t id : ids)
    if (lists_[id] == l) return id;
  ids.push_back(std::uint32_t(lists_.size()));
  lists_.push_back(std::move(l));
  return ids.back();
}

bool PhysicalState::in_use(std::uint32_t tree, const Domain& rect, const Instance* reduction,
                           bool settle_first) {
  if (!has_pending(tree)) return false;
  if (settle_first && deferred_.any(tree))
    for (std::size_t fi = 0; fi < trees_[tree].fields.size(); ++fi) settle(tree, int(fi), rect);
  // (Only the pieces meeting rect: a scan of every piece made choosing the reduction
  // instances of a launch quadratic in its points.)
  for (const Pieces& f : trees_[tree].fields) {
    if (f.slots.empty()) continue;
    meeting(f, rect);
    for (std::uint32_t slot : hits_) {
      const Piece& p = f.slots[slot];
      if (!p.pending) continue;
      for (const Instance* i : lists_[p.pending])
        if (i == reduction) return true;
    }
  }
  return false;
}

PhysicalState::PendingAges PhysicalState::pending_ages(std::uint32_t tree, int fi,
                                                       const Domain& rect, std::uint64_t old,
                                                       std::uint64_t recent) {
  PendingAges ages;
  if (!has_pending(tree) || rect.empty()) return ages;
  const bool have_hits = settle(tree, fi, rect);
  const Pieces* f = find(tree, fi);
  if (!f) return ages;
  if (!have_hits) meeting(*f, rect);
  for (std::uint32_t slot : hits_) {
    const Piece& p = f->slots[slot];
    if (!p.pending) continue;
    for (const Instance* i : lists_[p.pending]) {
      const std::uint64_t order = reduction_order(i);
      ages.old = ages.old || order <= old;
      ages.recent = ages.recent || order > recent;
    }
  }
  return ages;
}

std::uint64_t PhysicalState::pending_signature(std::uint32_t tree) const {
  if (!has_pending(tree)) return 0;
  std::uint64_t h = 0;
  const auto& fields = trees_[tree].fields;
  for (std::size_t fi = 0; fi < fields.size(); ++fi)
    for (const Piece& p : fields[fi].slots) {
      if (!p.pending) continue;
      Hasher x;
      x.mix(fi);
      x.mix(p.rect);
      for (const Instance* i : lists_[p.pending])
        x.mix(std::uint64_t(reinterpret_cast<std::uintptr_t>(i)));
      // Summed, so that the order of the slots (which depends on history) does not matter.
      h += x.h;
    }
  return h;
}

void PhysicalState::note_tree_journaled(std::uint32_t tree) {
  if (noted_.size() <= tree) noted_.resize(tree + 1, 0);
  if (noted_[tree] == epoch_) return;
  noted_[tree] = epoch_;
  // (Contributions deferred before the trace are pending too: the signature needs them
  // applied. The trace has deferred nothing on tree yet: this is its first look at it.)
  if (has_pending(tree) && deferred_.any(tree)) settle_tree(tree);
  PhysicalFact f{tree, 0, Domain(), 0, true};
  f.kind = PhysicalFact::Kind::Pending;
  f.pending = pending_signature(tree);
  facts_.push_back(f);
}

void PhysicalState::forget_tree(std::uint32_t tree) {
  deferred_.forget_tree(tree);
  for (Settled& s : settled_)
    if (s.tree == tree) s = Settled{};
  if (tree < trees_.size()) trees_[tree] = Tree{};
  if (tree < reduced_in_.size()) {
    for (const Instance* i : reduced_in_[tree]) reduced_at_.erase(i);
    reduced_in_[tree].clear();
  }
  if (tree < pending_trees_.size()) pending_trees_[tree] = 0;
}

void PhysicalState::drop_copies(bool keep_deferred) {
  if (!keep_deferred) settle_all();
  for (Tree& t : trees_)
    for (Pieces& f : t.fields)
      for (Piece& p : f.slots)
        if (!p.rect.empty() && !p.everywhere)
          while (p.holders.size() > 1) p.holders.pop_back();  // (the writer is first)
}

std::uint64_t PhysicalState::defer_list(std::shared_ptr<const WriteList> list) {
  for (int fi = 0; fi < int(sizeof(FieldMask) * 8); ++fi)
    if (list->mask & (FieldMask(1) << fi)) pieces(list->tree, list->root, fi);  // (see open)
  return deferred_.add_list(std::move(list));
}

bool PhysicalState::holds(const PhysicalFact& f, bool copies_dropped) {
  if (f.kind == PhysicalFact::Kind::Pending) {
    // (A tree that never had reductions has none pending, whatever the deferred writes: they
    // need not be applied to know it.)
    if (!has_pending(f.tree)) return f.pending == 0;
    settle_tree(f.tree);
    return pending_signature(f.tree) == f.pending;
  }
  if (deferred_.any(f.tree)) {
    // Inside the newest deferred write that meets it, a fact is read without applying the
    // writes (a check under control replication reads every shard's facts; most lie in
    // other shards' tiles, whose writes a replay deferred).
    const DeferredWrites::Newest w = deferred_.newest_meeting(f.tree, f.field, f.rect);
    if (w.known && w.rect.contains(f.rect)) return f.valid == (w.mem == f.mem);
  }
  settle(f.tree, f.field, f.rect);
  const Pieces* pieces = find(f.tree, f.field);
  if (!pieces) return f.valid;  // untouched: valid everywhere
  meeting(*pieces, f.rect);
  for (std::uint32_t slot : hits_) {
    const Piece& p = pieces->slots[slot];
    if (p.everywhere) {
      if (!f.valid) return false;
      continue;
    }
    // The holders of one memory do not overlap: their parts' volumes add up.
    const Domain part = p.rect & f.rect;
    coord_t held = 0;
    for (const Holder& h : p.holders)
      if (h.mem == f.mem && (h.writer || !copies_dropped)) held += (h.rect & part).volume();
    if (f.valid ? held != part.volume() : held != 0) return false;
  }
  return true;
}

void PhysicalState::apply(const PhysicalEffect& e) {
  switch (e.kind) {
    case PhysicalEffect::Kind::Copied:
      return copied(e.tree, e.root, e.field, e.rect, e.mem, e.ready);
    case PhysicalEffect::Kind::Written:
      return written(e.tree, e.root, e.field, e.rect, e.mem);
    case PhysicalEffect::Kind::Folded:
      return folded(e.tree, e.root, e.field, e.rect, e.mem, e.ready);
    case PhysicalEffect::Kind::Reduced:
      return reduced(e.tree, e.root, e.field, e.rect, e.reduction);
  }
}

void PhysicalState::start_journal(bool keep_deferred) {
  // (What a recording relies on and changes is the state with every write applied: applied
  // first, or, keep_deferred, where the recording meets it.)
  if (!keep_deferred) settle_all();
  journal_from_ = deferred_.next_launch();
  journaling_ = true;
  ++epoch_;
  facts_.clear();
  effects_.clear();
}

void PhysicalState::stop_journal(std::vector<PhysicalFact>& facts,
                                 std::vector<PhysicalEffect>& effects) {
  journaling_ = false;
  facts = std::move(facts_);
  effects = std::move(effects_);
  facts_.clear();
  effects_.clear();
}

std::size_t PhysicalState::piece_count(std::uint32_t tree, int fi) {
  settle_all();
  const Pieces* f = find(tree, fi);
  return f ? f->live() : 0;
}

bool PhysicalState::settled_before(std::uint32_t tree, int fi, const Domain& rect,
                                   WriteOrder before) const {
  for (const Settled& s : settled_)
    if (s.tree == tree && s.fi == fi && s.generation == deferred_.generation() &&
        before <= s.before && (rect.dim == 1 || s.shapes == shapes_) && s.rect.contains(rect))
      return true;
  return false;
}

void PhysicalState::note_settled(std::uint32_t tree, int fi, const Domain& rect,
                                 WriteOrder before) {
  settled_[settled_next_] = Settled{tree, fi, rect, before, deferred_.generation(), shapes_};
  settled_next_ = (settled_next_ + 1) % std::uint32_t(settled_.size());
}

bool PhysicalState::settle_pieces(std::uint32_t tree, int fi, const Domain& rect,
                                  WriteOrder before) {
  if (const Pieces* f = find(tree, fi); !f && !deferred_.may_meet(tree, fi, rect, before))
    return false;
  if (settled_before(tree, fi, rect, before))
    return false;  // (the caller finds the pieces meeting rect, if it needs them)
  if (rect.dim == 1) {
    // On a line, operations on disjoint rectangles commute, cuts included (the pieces left
    // are those of the union of the cut points, in either order; a piece's holders are
    // intervals too, whose decomposition is unique): only the pending writes meeting rect
    // itself — not every pending write inside a wide piece it meets — come first. (Not so in
    // 2-d: docs/ctrlrepl.md, "Deferred writes".)
    while (deferred_.may_meet(tree, fi, rect, before)) {
      auto w = deferred_.take_oldest(tree, fi, std::span<const Domain>(&rect, 1), before);
      if (!w) break;
      apply_deferred(*w);
    }
    note_settled(tree, fi, rect, before);
    return false;
  }
  // (Recursive through apply_deferred: the rectangles are this call's own.)
  InlineVector<Domain, 4> touched;
  for (;;) {
    touched.clear();
    Domain box;
    const Pieces* f = find(tree, fi);
    if (f) {
      meeting(*f, rect);
      for (std::uint32_t slot : hits_) {
        touched.push_back(f->slots[slot].rect);
        box = bounding_union(box, touched.back());
      }
    } else {
      touched.push_back(rect);  // (one piece, the root, once used)
      box = rect;
    }
    // (When nothing is taken, hits_ holds the pieces meeting rect, for the caller: no pending
    // write before `before` meets them, until a piece is cut or more is deferred.)
    std::optional<DeferredWrites::Taken> w;
    if (deferred_.may_meet(tree, fi, box, before))
      w = deferred_.take_oldest(tree, fi, std::span<const Domain>(touched.data(), touched.size()),
                                before);
    if (!w) {
      if (f) note_settled(tree, fi, rect, before);
      return f != nullptr;
    }
    apply_deferred(*w);
  }
}

bool PhysicalState::settle_piece(std::uint32_t tree, int fi, const Domain& piece) {
  // (settle_pieces' first round, without the index query: pieces do not overlap, so the only
  // piece meeting a piece is itself. Once a write is applied the pieces may have changed.)
  if (!deferred_.any(tree) || !deferred_.may_meet(tree, fi, piece, horizon_)) return false;
  auto w = deferred_.take_oldest(tree, fi, std::span<const Domain>(&piece, 1), horizon_);
  if (!w) return false;
  apply_deferred(*w);
  settle(tree, fi, piece);
  return true;
}

FieldIndexList PhysicalState::older_pending_fields(std::uint32_t tree, const FieldIndexList& fields,
                                                   const Domain& rect, std::uint64_t older,
                                                   std::uint64_t recent) {
  FieldIndexList old;
  if (rect.empty() || !has_pending(tree)) return old;
  for (int fi : fields) {
    const PendingAges ages = pending_ages(tree, fi, rect, older, recent);
    if (ages.recent) return {};
    if (ages.old) old.push_back(fi);
  }
  return old;
}

void PhysicalState::fold_older(std::uint32_t tree, const Domain& root, const FieldIndexList& fields,
                               const Domain& rect, std::uint64_t older, std::uint64_t recent,
                               std::uint32_t mem) {
  // (As fold_earlier's read and folds: every part with pending contributions, folded into mem.)
  InlineVector<Domain, 4> parts;
  for (int fi : older_pending_fields(tree, fields, rect, older, recent)) {
    parts.clear();
    const bool have_hits = settle(tree, fi, rect);
    if (const Pieces* f = find(tree, fi)) {
      if (!have_hits) meeting(*f, rect);
      for (std::uint32_t slot : hits_)
        if (f->slots[slot].pending) parts.push_back(f->slots[slot].rect & rect);
    }
    for (const Domain& part : parts) folded(tree, root, fi, part, mem, kNoEvent);
  }
}

void PhysicalState::apply_deferred(const DeferredWrites::Taken& w, bool oldest) {
  if (journaling_ && w.order.launch < journal_from_) {
    // Deferred before the trace (start_journal(true)): part of the state the trace starts
    // from, as if applied before it — no effect, no stamp (what the trace reads of it is a
    // fact). Everything it settles first is older still.
    struct Resume {
      bool& journaling;
      ~Resume() { journaling = true; }
    } resume{journaling_};
    journaling_ = false;
    apply_deferred(w, oldest);
    return;
  }
  // (Else, while journaling: the trace's own deferred write, journaled when it was deferred,
  // applied now as the trace's doing: decided, not journaled again. A recording defers no
  // contribution.)
  REPRISE_ASSERT(!journaling_ || !w.op, "a recording defers no contribution");
  if (w.op) {  // (a contribution)
    // (Settles inside — the instance's choice looks at every field — stop at w's place.)
    const WriteOrder horizon = horizon_;
    horizon_ = w.order;
    for (int fi : w.fields) settle(w.tree, fi, w.rect, w.order);
    Instance* inst = reduce_point_(reduce_ctx_, w);
    for (int fi : w.fields) reduced(w.tree, trees_[w.tree].root, fi, w.rect, inst, w.reduce_order);
    horizon_ = horizon;
    return;
  }
  for (int fi : w.fields) {
    // (The oldest pending write of its tree has nothing older left to apply first.)
    if (!oldest) settle(w.tree, fi, w.rect, w.order);
    write(w.tree, trees_[w.tree].root, fi, w.rect, w.mem, /*journal=*/false);
  }
}

void PhysicalState::settle_tree(std::uint32_t tree) {
  while (auto w = deferred_.take_oldest(tree)) apply_deferred(*w, true);
}

void PhysicalState::settle_all() {
  while (auto w = deferred_.take_oldest()) apply_deferred(*w, true);
}

std::uint64_t PhysicalState::open_deferred(const OpRef& op, std::uint32_t req, const Domain& root,
                                           std::shared_ptr<const PartitionPieces> partition,
                                           std::uint64_t launch,
                                           std::shared_ptr<const DeferredReductions> reductions,
                                           std::size_t k, const Domain& covers) {
  const ReqInfo& q = op->reqs[req];
  for (int fi : q.field_indices) pieces(q.tree, root, fi);  // (the tree's root, for settling)
  if (reductions) mark_reduced(q.tree);  // (has_pending: a contribution is pending somewhere)
  return deferred_.open(op, req, std::move(partition), launch, std::move(reductions), k, covers);
}

void PhysicalState::close_deferred(std::uint32_t tree, std::uint64_t launch, std::uint32_t req) {
  overflow_.clear();
  deferred_.close(tree, launch, req, overflow_);
  for (const DeferredWrites::Taken& w : overflow_) apply_deferred(w);
}

bool PhysicalState::pending_here(const Piece& p) const {
  if (!p.pending) return false;
  for (const Instance* i : lists_[p.pending])
    if (is_local(i->memory())) return true;
  return false;
}

Domain PhysicalState::local_hull(std::uint32_t tree, int fi, bool written_over) const {
  Domain hull = written_over ? Domain() : deferred_.contribution_hull(tree, fi);
  if (const Pieces* f = find(tree, fi))
    f->local.for_each([&](std::uint32_t slot) {
      if (counts_as_local(f->slots[slot], written_over))
        hull = bounding_union(hull, f->slots[slot].rect);
    });
  return hull;
}

bool PhysicalState::meets_local(std::uint32_t tree, int fi, const Domain& rect,
                                bool written_over) const {
  if (rect.empty()) return false;
  if (!written_over && deferred_.contribution_meets(tree, fi, rect)) return true;
  const Pieces* f = find(tree, fi);
  if (!f) return false;
  bool meets = false;
  f->local.candidates(rect, [&](std::uint32_t slot) {
    const Piece& p = f->slots[slot];
    meets = meets || (p.rect.overlaps(rect) && counts_as_local(p, written_over));
  });
  return meets;
}

}  // namespace reprise::detail

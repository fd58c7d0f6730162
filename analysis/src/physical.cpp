#include "reprise_analysis/physical.h"

#include <bit>
#include <span>

namespace reprise::detail {

void subtract(const Domain& rect, const Domain& hole, std::vector<Domain>& out) {
  if (!rect.overlaps(hole)) {
    if (!rect.empty()) out.push_back(rect);
    return;
  }
  // Peel slabs off rect, one dimension at a time, until what remains is inside the hole.
  Domain rest = rect;
  for (int d = 0; d < rect.dim; ++d) {
    if (rest.lo[d] < hole.lo[d]) {
      Domain slab = rest;
      slab.hi[d] = hole.lo[d] - 1;
      out.push_back(slab);
      rest.lo[d] = hole.lo[d];
    }
    if (rest.hi[d] > hole.hi[d]) {
      Domain slab = rest;
      slab.lo[d] = hole.hi[d] + 1;
      out.push_back(slab);
      rest.hi[d] = hole.hi[d];
    }
  }
}

PhysicalState::PhysicalState(std::uint32_t num_memories) : num_memories_(num_memories) {}

PhysicalState::Pieces& PhysicalState::pieces(std::uint32_t tree, const Domain& root, int fi) {
  if (trees_.size() <= tree) trees_.resize(tree + 1);
  Tree& t = trees_[tree];
  if (t.fields.empty()) t.root = root;
  if (t.fields.size() <= std::size_t(fi)) t.fields.resize(std::size_t(fi) + 1);
  Pieces& f = t.fields[std::size_t(fi)];
  if (f.list.empty()) {
    // A new instance is zero-filled, like the region's initial contents: valid everywhere.
    Piece whole;
    whole.rect = t.root;
    whole.valid = all_memories();
    f.list.push_back(whole);
    f.indexed = false;
  }
  return f;
}

namespace {
std::uint64_t rect_hash(const Domain& d) {
  std::uint64_t h = std::uint64_t(d.dim) * 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < d.dim; ++i) {
    h = (h ^ std::uint64_t(d.lo[i])) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ std::uint64_t(d.hi[i])) * 0x94d049bb133111ebull;
  }
  return h;
}
}  // namespace

PhysicalState::Piece* PhysicalState::exact(Pieces& f, const Domain& rect) {
  if (!f.indexed) {
    f.by_rect.clear();
    for (std::uint32_t i = 0; i < f.list.size(); ++i) f.by_rect[rect_hash(f.list[i].rect)] = i;
    f.indexed = true;
  }
  auto it = f.by_rect.find(rect_hash(rect));
  if (it == f.by_rect.end()) return nullptr;
  Piece& p = f.list[it->second];
  return p.rect == rect ? &p : nullptr;
}

const std::vector<PhysicalState::Piece>* PhysicalState::find(std::uint32_t tree, int fi) const {
  if (tree >= trees_.size() || trees_[tree].fields.size() <= std::size_t(fi)) return nullptr;
  const auto& list = trees_[tree].fields[std::size_t(fi)].list;
  return list.empty() ? nullptr : &list;
}

void PhysicalState::keep_outside(const Piece& p, const Domain& rect) {
  if (!p.rect.overlaps(rect)) {
    scratch_.push_back(p);
    return;
  }
  parts_.clear();
  subtract(p.rect, rect, parts_);
  for (const Domain& d : parts_) {
    scratch_.push_back(p);
    scratch_.back().rect = d;
  }
}

template <class Fn>
void PhysicalState::cut(Pieces& f, const Domain& rect, Fn&& fn) {
  if (Piece* p = exact(f, rect)) {
    fn(*p);
    return;
  }
  std::vector<Piece>& list = f.list;
  // Often rect is made of whole pieces already: change them in place.
  bool whole = true;
  for (const Piece& p : list)
    if (p.rect.overlaps(rect) && !rect.contains(p.rect)) {
      whole = false;
      break;
    }
  if (whole) {
    for (Piece& p : list)
      if (p.rect.overlaps(rect)) fn(p);
    return;
  }
  scratch_.clear();
  for (Piece& p : list) {
    keep_outside(p, rect);
    if (!p.rect.overlaps(rect)) continue;
    scratch_.push_back(p);
    scratch_.back().rect = p.rect & rect;
    fn(scratch_.back());
  }
  list.swap(scratch_);
  f.indexed = false;
}

void PhysicalState::read(std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
                         std::uint32_t mem, std::vector<Event>& waits,
                         std::vector<CopyNeed>& needs) {
  if (rect.empty()) return;
  const MemMask bit = MemMask(1) << mem;
  Pieces& f = pieces(tree, root, fi);
  Piece* one = exact(f, rect);
  for (const Piece& p : one ? std::span<Piece>(one, 1) : std::span<Piece>(f.list)) {
    if (!p.rect.overlaps(rect)) continue;
    const Domain part = p.rect & rect;
    const bool from_before = journaling_ && p.stamp != epoch_;
    if (p.valid & bit) {
      if (p.ready[mem].exists()) waits.push_back(p.ready[mem]);
      if (from_before) facts_.push_back(PhysicalFact{tree, fi, part, mem, true});
      continue;
    }
    // Copy from a memory that is not itself still being filled, else from the first.
    std::uint32_t src = std::uint32_t(std::countr_zero(p.valid));
    for (MemMask m = p.valid; m; m &= m - 1) {
      std::uint32_t i = std::uint32_t(std::countr_zero(m));
      if (!p.ready[i].exists()) {
        src = i;
        break;
      }
    }
    needs.push_back(CopyNeed{fi, part, src, p.ready[src]});
    if (from_before) {
      facts_.push_back(PhysicalFact{tree, fi, part, mem, false});
      facts_.push_back(PhysicalFact{tree, fi, part, src, true});
    }
  }
}

void PhysicalState::copied(std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
                           std::uint32_t mem, Event ready) {
  if (rect.empty()) return;
  if (journaling_) effects_.push_back(PhysicalEffect{tree, fi, root, rect, mem, false, ready});
  cut(pieces(tree, root, fi), rect, [&](Piece& p) {
    p.valid |= MemMask(1) << mem;
    p.ready[mem] = ready;
    if (journaling_) p.stamp = epoch_;
  });
}

void PhysicalState::written(std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
                            std::uint32_t mem) {
  if (rect.empty()) return;
  if (journaling_) effects_.push_back(PhysicalEffect{tree, fi, root, rect, mem, true, kNoEvent});
  Pieces& f = pieces(tree, root, fi);
  std::vector<Piece>& list = f.list;
  // Steady state: the written rectangle is a piece already (the same tile written again).
  if (Piece* same = exact(f, rect)) {
    same->valid = MemMask(1) << mem;
    same->ready = {};
    same->stamp = journaling_ ? epoch_ : 0;
    return;
  }
  // The written rectangle becomes one piece again: writes undo the cuts reads made.
  scratch_.clear();
  for (Piece& p : list) keep_outside(p, rect);
  Piece w;
  w.rect = rect & trees_[tree].root;
  w.valid = MemMask(1) << mem;
  w.stamp = journaling_ ? epoch_ : 0;
  scratch_.push_back(w);
  list.swap(scratch_);
  f.indexed = false;
}

void PhysicalState::reduced(std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
                            std::uint32_t mem) {
  if (rect.empty()) return;
  if (journaling_) effects_.push_back(PhysicalEffect{tree, fi, root, rect, mem, true, kNoEvent});
  cut(pieces(tree, root, fi), rect, [&](Piece& p) {
    const Event pending = p.ready[mem];
    p.ready = {};
    p.ready[mem] = pending;
    p.valid = MemMask(1) << mem;
    if (journaling_) p.stamp = epoch_;
  });
}

void PhysicalState::forget_tree(std::uint32_t tree) {
  if (tree < trees_.size()) trees_[tree] = Tree{};
}

bool PhysicalState::holds(const PhysicalFact& f) const {
  const MemMask bit = MemMask(1) << f.mem;
  const auto* list = find(f.tree, f.field);
  if (!list) return f.valid;  // untouched: valid everywhere
  for (const Piece& p : *list)
    if (p.rect.overlaps(f.rect) && bool(p.valid & bit) != f.valid) return false;
  return true;
}

void PhysicalState::apply(const PhysicalEffect& e) {
  if (e.exclusive)
    written(e.tree, e.root, e.field, e.rect, e.mem);
  else
    copied(e.tree, e.root, e.field, e.rect, e.mem, e.ready);
}

void PhysicalState::start_journal() {
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

std::size_t PhysicalState::piece_count(std::uint32_t tree, int fi) const {
  const auto* list = find(tree, fi);
  return list ? list->size() : 0;
}

}  // namespace reprise::detail

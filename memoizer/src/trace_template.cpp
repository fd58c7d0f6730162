#include "reprise_memoizer/trace_template.h"

#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "reprise_analysis/logical.h"
#include "reprise_analysis/rect_index.h"
#include "reprise_rt/assert.h"
#include "reprise_rt/instance.h"

namespace reprise::detail {

namespace {
// Up to this many slots the reduction is exact (n² bits of reachability: 8 MiB). Above it, an
// instruction's waits are tested by one backward search from all of them at once over the
// reduced graph, with a bounded number of visits: a wait the search reaches through another
// is dropped, one it cannot reach is kept (keeping one is always safe). Big templates then
// cost O(instructions × kSearchBudget), not O(instructions²).
constexpr std::size_t kExactSlots = 8192;
constexpr std::uint32_t kSearchBudget = 1024;

// What each slot (transitively) waits for, as the reduction goes: exact bitsets for small
// templates, a bounded backward search over the reduced waits for big ones.
class Reachability {
 public:
  Reachability(const TraceTemplate& t, const std::vector<std::uint32_t>& pool)
      : pool_(pool), exact_(t.num_slots <= kExactSlots), words_((t.num_slots + 63) / 64) {
    if (exact_) {
      anc_.assign(t.num_slots * words_, 0);
    } else {
      mark_.assign(t.num_slots, 0);
      waits_.assign(t.num_slots, {0, 0});
    }
  }
  // Appends to `reduced` the slots of `kept` (sorted, distinct) that no other slot of `kept`
  // (transitively) waits for.
  void reduce(const std::vector<std::uint32_t>& kept, std::vector<std::uint32_t>& reduced) {
    reduced.clear();
    if (kept.size() < 2) {
      reduced = kept;
      return;
    }
    if (exact_) {
      for (std::uint32_t s : kept) {
        bool implied = false;
        for (auto o = kept.rbegin(); o != kept.rend() && *o > s && !implied; ++o)
          implied = anc_[std::size_t(*o) * words_ + s / 64] >> (s % 64) & 1;
        if (!implied) reduced.push_back(s);
      }
      return;
    }
    // Marks: kept slots get `stamp_ + 1`, visited ones `stamp_ + 2` (so a kept slot reached
    // through another is recognised). Waits point to earlier slots: nothing below the
    // smallest kept slot can reach one.
    const std::uint32_t is_kept = ++stamp_, seen = ++stamp_;
    for (std::uint32_t s : kept) mark_[s] = is_kept;
    stack_.clear();
    for (std::uint32_t s : kept) expand(s, kept.front(), seen);
    for (std::uint32_t visits = 0; !stack_.empty() && visits < kSearchBudget; ++visits) {
      const std::uint32_t x = stack_.back();
      stack_.pop_back();
      expand(x, kept.front(), seen);
    }
    for (std::uint32_t s : kept)
      if (mark_[s] == is_kept) reduced.push_back(s);  // not reached through another
  }
  // Slot `out` waits for `kept` (its reduced waits, at pool_[begin...]); empty if it runs on
  // another shard (what it waits for is that shard's business).
  void define(std::uint32_t out, std::span<const std::uint32_t> kept, std::uint32_t begin) {
    if (!exact_) {
      waits_[out] = {begin, std::uint32_t(kept.size())};
      return;
    }
    std::uint64_t* mine = &anc_[std::size_t(out) * words_];
    for (std::uint32_t s : kept) {
      const std::uint64_t* theirs = &anc_[std::size_t(s) * words_];
      for (std::size_t w = 0; w < words_; ++w) mine[w] |= theirs[w];
      mine[s / 64] |= std::uint64_t(1) << (s % 64);
    }
  }

 private:
  // Pushes the waits of x not yet seen (and not below `lowest`).
  void expand(std::uint32_t x, std::uint32_t lowest, std::uint32_t seen) {
    const auto [begin, count] = waits_[x];
    for (std::uint32_t k = 0; k < count; ++k) {
      const std::uint32_t y = pool_[begin + k];
      if (y < lowest || mark_[y] == seen) continue;
      mark_[y] = seen;  // (a kept slot reached here is implied by another)
      stack_.push_back(y);
    }
  }

  const std::vector<std::uint32_t>& pool_;
  bool exact_;
  std::size_t words_;
  std::vector<std::uint64_t> anc_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> waits_;  // (begin, count) in pool_
  std::vector<std::uint32_t> mark_, stack_;
  std::uint32_t stamp_ = 0;
};
}  // namespace

void reduce_transitively(TraceTemplate& t, const std::vector<bool>& here) {
  t.edges_recorded = t.pre_slots.size();
  const std::size_t n = t.num_slots;
  std::vector<std::uint32_t> new_pool;
  new_pool.reserve(t.pre_slots.size());
  Reachability reach(t, new_pool);
  std::vector<bool> reaches_fence(n, false);
  reaches_fence[0] = true;
  std::vector<std::uint32_t> kept, reduced;
  for (std::size_t i = 0; i < t.instrs.size(); ++i) {
    Instruction& in = t.instrs[i];
    kept.assign(t.pre_slots.begin() + in.pre_begin,
                t.pre_slots.begin() + in.pre_begin + in.pre_count);
    std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    // Drop a slot that another kept slot already waits for.
    reach.reduce(kept, reduced);
    // What another shard's instruction waits for is that shard's business: waiting for it
    // here implies nothing else (its slot keeps no ancestors).
    const bool runs_here = here.empty() || here[i];
    bool fence_implied = false;
    if (runs_here)
      for (std::uint32_t s : kept) fence_implied = fence_implied || reaches_fence[s];
    reaches_fence[in.out] = runs_here && (fence_implied || in.uses_fence);
    // A fence wait that a kept predecessor already implies is redundant too.
    if (in.uses_fence && fence_implied) in.uses_fence = false;
    in.pre_begin = std::uint32_t(new_pool.size());
    in.pre_count = std::uint32_t(reduced.size());
    new_pool.insert(new_pool.end(), reduced.begin(), reduced.end());
    // (A slot's reduced waits imply the same as all of its waits.)
    if (runs_here)
      reach.define(in.out, std::span<const std::uint32_t>(new_pool).subspan(in.pre_begin),
                   in.pre_begin);
  }
  t.pre_slots = std::move(new_pool);
  t.edges_after_reduction = t.pre_slots.size();
}

void dissolve_merges(TraceTemplate& t) {
  t.instrs_recorded = t.instrs.size();
  constexpr std::uint32_t kMerge = ~0u;
  // Old slot -> new slot; a merge's slot -> kMerge, its inputs (new slots) in `merged` and
  // whether it implied the entry fence in `merged_fence`.
  std::vector<std::uint32_t> now(t.num_slots, 0);
  std::vector<std::vector<std::uint32_t>> merged(t.num_slots);
  std::vector<bool> merged_fence(t.num_slots, false);
  std::vector<Instruction> kept;
  std::vector<std::uint32_t> pool, pre;
  std::uint32_t next = 1;
  const auto add = [&](std::uint32_t s) {
    if (std::find(pre.begin(), pre.end(), s) == pre.end()) pre.push_back(s);
  };
  for (Instruction in : t.instrs) {
    pre.clear();
    bool fence = in.uses_fence;
    for (std::uint32_t i = 0; i < in.pre_count; ++i) {
      const std::uint32_t old = t.pre_slots[in.pre_begin + i];
      if (old == 0) {
        fence = true;
      } else if (now[old] == kMerge) {
        fence = fence || merged_fence[old];
        for (std::uint32_t s : merged[old]) add(s);
      } else {
        add(now[old]);
      }
    }
    if (in.kind == Instruction::Kind::Merge) {
      now[in.out] = kMerge;
      merged[in.out] = pre;
      merged_fence[in.out] = fence;
      continue;
    }
    in.uses_fence = fence;
    in.pre_begin = std::uint32_t(pool.size());
    in.pre_count = std::uint32_t(pre.size());
    pool.insert(pool.end(), pre.begin(), pre.end());
    now[in.out] = next;
    in.out = next++;
    kept.push_back(in);
  }
  t.instrs = std::move(kept);
  t.pre_slots = std::move(pool);
  t.num_slots = next;
  t.edges_after_reduction = t.pre_slots.size();
}

namespace {
// The instruction of each (op, point) of t, by op (ops: how many ops the trace has); ~0u where
// a point has none.
std::vector<std::vector<std::uint32_t>> op_instructions(const TraceTemplate& t, std::size_t ops) {
  std::vector<std::vector<std::uint32_t>> of(ops);
  for (std::uint32_t i = 0; i < t.instrs.size(); ++i) {
    const Instruction& in = t.instrs[i];
    if (in.kind != Instruction::Kind::Op) continue;
    auto& v = of[in.op];
    if (v.size() <= in.point) v.resize(in.point + 1, ~0u);
    v[in.point] = i;
  }
  return of;
}

// The instruction each link of t names (a point of an op, or a copy), or ~0u.
struct LinkTargets {
  std::vector<std::vector<std::uint32_t>> of_op;  // op_instructions
  std::vector<std::uint32_t> of_copy;             // by copy index
  LinkTargets(const TraceTemplate& t, std::size_t ops)
      : of_op(op_instructions(t, ops)), of_copy(t.copies.size(), ~0u) {
    for (std::uint32_t i = 0; i < t.instrs.size(); ++i)
      if (t.instrs[i].kind == Instruction::Kind::Copy) of_copy[t.instrs[i].op] = i;
  }
  std::uint32_t operator()(const Link& l) const {
    if (l.from_copy) return l.op < of_copy.size() ? of_copy[l.op] : ~0u;
    if (l.op >= of_op.size() || l.point >= of_op[l.op].size()) return ~0u;
    return of_op[l.op][l.point];
  }
};
}  // namespace

namespace {
constexpr std::size_t kLinksAlways = 4096;

// Control replication: links of the instructions that run here to the previous replay's
// accesses to the same instances of this shard that they conflict with (the LocalUses of a
// replay: Analysis orders every access to a shard's instance after the conflicting earlier
// ones, so an access of the previous replay that a later write of the template covers is
// implied by that write and left out).
void add_instance_links(const TraceTemplate& t, const std::vector<OpRef>& recorded,
                        const std::vector<bool>& here,
                        const std::function<bool(const Instance*)>& local,
                        std::vector<std::vector<Link>>& per_instr, std::size_t& total) {
  struct Access {
    const Instance* instance;
    Domain rect;
    FieldMask mask;
    bool write;
  };
  std::vector<Access> accesses;
  auto accesses_of = [&](const Instruction& in) {
    accesses.clear();
    const bool copy = in.kind == Instruction::Kind::Copy;
    const Op& o = copy ? *t.copies[in.op].copy : *recorded[in.op];
    const std::uint32_t p = copy ? 0 : in.point;
    const std::size_t nreq = o.reqs.size();
    if (o.point_instances.size() < (p + 1) * nreq) return;
    for (std::size_t r = 0; r < nreq; ++r) {
      const Instance* inst = o.point_instances[p * nreq + r];
      if (!inst || !local(inst)) continue;
      // (An explicit copy writes only the source's rectangle of its destination.)
      const Domain& rect = o.kind == OpKind::Copy && r == 1 && !copy ? o.rect(p, 0) : o.rect(p, r);
      if (rect.empty()) continue;
      accesses.push_back(Access{inst, rect, o.reqs[r].mask,
                                copy ? r == 1 : o.reqs[r].privilege != Privilege::ReadOnly});
    }
  };
  struct Last {
    RectIndex index;           // of `uses`, by rectangle
    std::vector<Access> uses;  // the accesses a later write does not cover
    std::vector<Link> link;    // to each use's instruction
  };
  std::unordered_map<const Instance*, Last> last;
  for (std::uint32_t i = std::uint32_t(t.instrs.size()); i-- > 0;) {
    const Instruction& in = t.instrs[i];
    if (in.kind == Instruction::Kind::Merge || !here[i]) continue;
    accesses_of(in);
    const Link to =
        in.kind == Instruction::Kind::Copy ? Link{in.op, 0, true} : Link{in.op, in.point, false};
    for (const Access& a : accesses) {
      Last& l = last[a.instance];
      bool covered = false;
      l.index.candidates(a.rect, [&](std::uint32_t u) {
        const Access& later = l.uses[u];
        covered = covered ||
                  (later.write && later.rect.contains(a.rect) && (later.mask & a.mask) == a.mask);
      });
      if (covered) continue;
      l.index.insert(a.rect, std::uint32_t(l.uses.size()));
      l.uses.push_back(a);
      l.link.push_back(to);
    }
  }
  for (std::uint32_t i = 0; i < t.instrs.size(); ++i) {
    const Instruction& in = t.instrs[i];
    if (in.kind == Instruction::Kind::Merge || !here[i]) continue;
    accesses_of(in);
    for (const Access& a : accesses) {
      auto it = last.find(a.instance);
      if (it == last.end()) continue;
      const Last& l = it->second;
      l.index.candidates(a.rect, [&](std::uint32_t u) {
        const Access& prev = l.uses[u];
        if ((a.write || prev.write) && (a.mask & prev.mask) && a.rect.overlaps(prev.rect)) {
          per_instr[i].push_back(l.link[u]);
          ++total;
        }
      });
    }
  }
}

// Control replication: drops the links to instructions that do not run here (another
// shard's points: their data reaches this shard by copies, which add_instance_links orders),
// and the duplicates.
void keep_links_here(const LinkTargets& target, const std::vector<bool>& here,
                     std::vector<std::vector<Link>>& per_instr) {
  for (std::vector<Link>& links : per_instr) {
    std::erase_if(links, [&](const Link& l) {
      const std::uint32_t j = target(l);
      return j == ~0u || !here[j];
    });
    std::sort(links.begin(), links.end());
    links.erase(std::unique(links.begin(), links.end()), links.end());
  }
}
}  // namespace

void compute_elision_links(TraceTemplate& t, const std::vector<OpRef>& recorded,
                           const RegionForest& forest, EventTable& events,
                           const std::vector<bool>& here, std::size_t links_per_instruction,
                           const std::function<bool(const Instance*)>& local,
                           std::shared_ptr<LogicalAnalysis::Caches> caches) {
  const auto wanted = [&](std::uint32_t i) { return here.empty() || here[i]; };
  // Fake completion events name (op, point): id = op + 1 (+ offset for the second copy),
  // gen = point + 1. The analysis only compares them, it never waits on them.
  const std::uint32_t n = std::uint32_t(recorded.size());
  auto copy_of = [&](std::uint32_t k, std::uint32_t id_base) {
    OpRef c = make_op();
    const Op& o = *recorded[k];
    c->kind = o.kind;
    c->domain = o.domain;
    c->reqs.share_inside(o.reqs);
    c->point_rects = o.point_rects;
    c->point_done.resize(o.num_points());
    for (std::uint32_t p = 0; p < c->point_done.size(); ++p)
      c->point_done[p] = Event{id_base + k + 1, p + 1};
    return c;
  };
  LogicalAnalysis la(forest, events, /*prune_completed=*/false, std::move(caches));
  for (std::uint32_t k = 0; k < n; ++k)
    if (recorded[k]->launches_points()) la.record(copy_of(k, 0));
  const LinkTargets target(t, n);
  const std::vector<std::vector<std::uint32_t>>& instr_of = target.of_op;
  std::vector<std::vector<Link>> per_instr(t.instrs.size());
  // Under control replication, the points whose links a replay here reads: its own, and those
  // its copies serve (a copy takes its point's links). Every op is still recorded whole into
  // the analysis below (what a point depends on may be anywhere).
  std::vector<std::vector<std::uint32_t>> needed(here.empty() ? 0 : n);
  if (!here.empty()) {
    for (std::uint32_t k = 0; k < n; ++k)
      for (std::uint32_t p = 0; p < instr_of[k].size(); ++p)
        if (instr_of[k][p] != ~0u && here[instr_of[k][p]]) needed[k].push_back(p);
    for (std::uint32_t i = 0; i < t.instrs.size(); ++i)
      if (here[i] && t.instrs[i].kind == Instruction::Kind::Copy) {
        const TemplateCopy& c = t.copies[t.instrs[i].op];
        needed[c.for_op].push_back(c.for_point);
      }
    for (auto& points : needed) {
      std::sort(points.begin(), points.end());
      points.erase(std::unique(points.begin(), points.end()), points.end());
    }
  }
  // Links are an optimisation (the entry fence is always correct): a template whose links
  // would outnumber its instructions many times over (the dependences of many iterations'
  // aliased readers and reducers) replays behind the fence instead of carrying them; counting
  // as they are made stops before they take memory.
  const std::size_t most = links_per_instruction * t.instrs.size() + kLinksAlways;
  std::size_t total = 0;
  auto give_up = [&] {
    t.elide_fence = false;
    t.links.clear();
    for (Instruction& in : t.instrs) in.link_begin = in.link_count = 0;
  };
  PointPreconditions pre;
  for (std::uint32_t k = 0; k < n; ++k) {
    if (!recorded[k]->launches_points()) continue;
    OpRef next = copy_of(k, n);
    pre.reset(next->num_points());
    const PointSubset subset = here.empty() ? PointSubset{} : PointSubset{0, 0, &needed[k]};
    la.dependences(*next, pre, subset);
    subset.each(next->num_points(), [&](std::size_t p) {
      if (p >= instr_of[k].size() || instr_of[k][p] == ~0u) return;
      for (Event e : pre.of(p))
        if (e.id >= 1 && e.id <= n) per_instr[instr_of[k][p]].push_back(Link{e.id - 1, e.gen - 1});
      total += per_instr[instr_of[k][p]].size();
    });
    if (total > most) return give_up();
    la.record(next);
  }
  // Copies: their point's links, plus the instance-level links below.
  for (std::uint32_t i = 0; i < t.instrs.size(); ++i) {
    const Instruction& in = t.instrs[i];
    if (in.kind != Instruction::Kind::Copy || !wanted(i)) continue;
    const TemplateCopy& c = t.copies[in.op];
    if (c.for_point < instr_of[c.for_op].size() && instr_of[c.for_op][c.for_point] != ~0u) {
      per_instr[i] = per_instr[instr_of[c.for_op][c.for_point]];
      total += per_instr[i].size();
      if (total > most) return give_up();
    }
  }
  // Links an instruction to the previous replay's instructions in `links` (instance-level
  // links that the logical analysis above does not give).
  auto add_links = [&](std::uint32_t i, const std::vector<Link>& links) {
    per_instr[i].insert(per_instr[i].end(), links.begin(), links.end());
    total += links.size();
  };
  // A reducer that takes over an instance waits for the previous replay's folds out of it
  // (those read what the instance held before).
  std::unordered_map<const Instance*, std::vector<Link>> folded_out_of;
  for (std::uint32_t c = 0; c < t.copies.size(); ++c)
    if (t.copies[c].copy->folds())
      folded_out_of[t.copies[c].copy->point_instances[0]].push_back(Link{c, 0, true});
  // And folds wait for the previous replay's reducers into the instance they fold: reducers
  // with one operator commute, so the logical analysis above gives no link between them, yet
  // a launch folds what the launches before it left pending (Analysis::fold_earlier) — in a
  // loop, the previous replay's contributions. (Without folds neither link exists.)
  std::unordered_map<const Instance*, std::vector<Link>> reduced_into;
  if (!folded_out_of.empty())
    for (std::uint32_t k = 0; k < n; ++k) {
      const Op& o = *recorded[k];
      if (!o.launches_points()) continue;
      const std::size_t nreq = o.reqs.size();
      for (std::uint32_t p = 0; p < instr_of[k].size(); ++p) {
        if (instr_of[k][p] == ~0u || o.point_instances.size() < (p + 1) * nreq) continue;
        for (std::size_t r = 0; r < nreq; ++r)
          if (o.reqs[r].privilege == Privilege::Reduce)
            reduced_into[o.point_instances[p * nreq + r]].push_back(Link{k, p});
      }
    }
  if (!folded_out_of.empty())
    for (std::uint32_t i = 0; i < t.instrs.size(); ++i) {
      const Instruction& in = t.instrs[i];
      if (in.kind != Instruction::Kind::Op || !wanted(i)) continue;
      const Op& o = *recorded[in.op];
      const std::size_t nreq = o.reqs.size();
      if (o.point_instances.size() < (in.point + 1) * nreq) continue;
      for (std::size_t r = 0; r < nreq; ++r) {
        if (o.reqs[r].privilege != Privilege::Reduce) continue;
        auto it = folded_out_of.find(o.point_instances[in.point * nreq + r]);
        if (it != folded_out_of.end()) add_links(i, it->second);
      }
      if (total > most) return give_up();
    }
  if (!reduced_into.empty())
    for (std::uint32_t i = 0; i < t.instrs.size(); ++i) {
      const Instruction& in = t.instrs[i];
      if (in.kind != Instruction::Kind::Copy || !wanted(i) || !t.copies[in.op].copy->folds())
        continue;
      auto it = reduced_into.find(t.copies[in.op].copy->point_instances[0]);
      if (it == reduced_into.end()) continue;
      add_links(i, it->second);
      if (total > most) return give_up();
    }
  struct Access {
    const Instance* instance;
    Domain rect;
    FieldMask mask;
  };
  std::vector<Access> accesses;
  auto accesses_of = [&](const Instruction& in) {
    accesses.clear();
    const Op* o =
        in.kind == Instruction::Kind::Copy ? t.copies[in.op].copy.get() : recorded[in.op].get();
    const std::uint32_t point = in.kind == Instruction::Kind::Copy ? 0 : in.point;
    const std::size_t nreq = o->reqs.size();
    if (o->point_instances.size() < (point + 1) * nreq) return;
    for (std::size_t r = 0; r < nreq; ++r)
      accesses.push_back(
          Access{o->point_instances[point * nreq + r], o->rect(point, r), o->reqs[r].mask});
  };
  // The previous replay's copies into an access's part of its instance, found through a
  // rectangle index per destination instance (a scan of every copy per instruction made
  // recording quadratic). Only copies that may still be the last into some element count:
  // copies into the same elements of an instance are ordered within the template (the
  // analysis orders every write of an instance's data after the earlier ones), so a copy
  // whose rectangle and fields a later copy into the same instance covers is implied by it.
  // (Without this, a template of many iterations linked each access to every iteration's
  // copies: quadratic in the template's length.)
  std::unordered_map<const Instance*, RectIndex> copies_into;
  for (std::uint32_t c = std::uint32_t(t.copies.size()); c-- > 0;) {
    const Op& cp = *t.copies[c].copy;
    const Domain& rect = cp.point_rects[1];
    if (rect.empty()) continue;
    const FieldMask mask = cp.reqs[1].mask;
    RectIndex& index = copies_into[cp.point_instances[1]];
    bool covered = false;
    index.candidates(rect, [&](std::uint32_t later) {
      const Op& l = *t.copies[later].copy;
      covered = covered || (l.point_rects[1].contains(rect) && (l.reqs[1].mask & mask) == mask);
    });
    if (!covered) index.insert(rect, c);
  }
  // A copy that another copy an access meets waits for directly is implied by that one too
  // (a chain of folds into one part links to its last fold only).
  std::vector<std::uint32_t> copy_of_slot(t.num_slots, ~0u);
  const std::vector<std::uint32_t>& instr_of_copy = target.of_copy;
  for (const Instruction& in : t.instrs)
    if (in.kind == Instruction::Kind::Copy) copy_of_slot[in.out] = in.op;
  std::vector<std::uint32_t> met, met_mark(t.copies.size(), 0), implied_mark(t.copies.size(), 0);
  std::uint32_t stamp = 0;
  if (!t.copies.empty())
    for (std::uint32_t i = 0; i < t.instrs.size(); ++i) {
      if (t.instrs[i].kind == Instruction::Kind::Merge || !wanted(i)) continue;
      accesses_of(t.instrs[i]);
      met.clear();
      ++stamp;
      for (const Access& a : accesses) {
        auto it = copies_into.find(a.instance);
        if (it == copies_into.end()) continue;
        it->second.candidates(a.rect, [&](std::uint32_t c) {
          const Op& prev = *t.copies[c].copy;
          if ((a.mask & prev.reqs[1].mask) && a.rect.overlaps(prev.point_rects[1]) &&
              met_mark[c] != stamp) {
            met_mark[c] = stamp;
            met.push_back(c);
          }
        });
      }
      for (std::uint32_t c : met) {
        const std::uint32_t j = instr_of_copy[c];
        if (j == ~0u) continue;
        const Instruction& in = t.instrs[j];
        for (std::uint32_t k = 0; k < in.pre_count; ++k) {
          const std::uint32_t pred = copy_of_slot[t.pre_slots[in.pre_begin + k]];
          if (pred != ~0u && met_mark[pred] == stamp) implied_mark[pred] = stamp;
        }
      }
      // In copy order, each copy once.
      std::sort(met.begin(), met.end());
      for (std::uint32_t c : met)
        if (implied_mark[c] != stamp) {
          per_instr[i].push_back(Link{c, 0, true});
          ++total;
        }
      if (total > most) return give_up();
    }
  if (local && !here.empty()) {
    add_instance_links(t, recorded, here, local, per_instr, total);
    if (total > most) return give_up();
    keep_links_here(target, here, per_instr);
  }
  t.elide_fence = true;
  t.links.clear();
  for (std::uint32_t i = 0; i < t.instrs.size(); ++i) {
    t.instrs[i].link_begin = std::uint32_t(t.links.size());
    t.instrs[i].link_count = std::uint32_t(per_instr[i].size());
    t.links.insert(t.links.end(), per_instr[i].begin(), per_instr[i].end());
  }
}

void compute_conditions(TraceTemplate& t, const std::vector<OpRef>& recorded,
                        const std::function<bool(const Instance*)>& read_here) {
  // Conditions are found by (tree, instance) through hash maps: a template with many instances
  // (reduction instances per point, several memories) costs O(accesses), not O(accesses ×
  // instances).
  using Key = std::pair<std::uint32_t, const Instance*>;
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<const void*>()(k.second) * 31 + k.first;
    }
  };
  using Index = std::unordered_map<Key, std::size_t, KeyHash>;
  auto add = [](std::vector<Condition>& v, Index& at, std::uint32_t tree, Instance* inst,
                FieldMask m) {
    auto [it, fresh] = at.try_emplace(Key{tree, inst}, v.size());
    if (fresh)
      v.push_back(Condition{tree, inst, m});
    else
      v[it->second].fields |= m;
  };
  std::unordered_map<std::uint32_t, std::size_t> touched_at;
  auto touch = [&](std::uint32_t tree, FieldMask m) {
    auto [it, fresh] = touched_at.try_emplace(tree, t.touched.size());
    if (fresh)
      t.touched.emplace_back(tree, m);
    else
      t.touched[it->second].second |= m;
  };
  // Fields a trace reads before it writes them must be valid in the recorded instance at
  // entry; everything it touches is valid there at exit.
  std::vector<Condition> written;
  Index pre_at, post_at, written_at;
  std::unordered_set<const Instance*> reductions;
  // The trees the trace touches (beyond reductions), in the order of their first access: the
  // same whichever conditions are kept.
  std::vector<std::pair<std::uint32_t, FieldMask>> plain;
  std::unordered_map<std::uint32_t, std::size_t> plain_at;
  for (const OpRef& op : recorded) {
    const std::size_t nreq = op->reqs.size();
    for (std::size_t r = 0; r < nreq; ++r) {
      const ReqInfo& q = op->reqs[r];
      for (std::size_t p = 0; p < op->num_points(); ++p) {
        Instance* inst = op->point_instances.empty() ? nullptr : op->point_instances[p * nreq + r];
        if (!inst) continue;
        if (inst->is_reduction()) {
          // Which slot a reducer uses follows from the pending reductions (a fact); the
          // instance itself must still exist.
          touch(q.tree, q.mask);
          if (reductions.insert(inst).second) {
            t.reductions.push_back(inst);
            t.reduction_keys.push_back(
                ReductionKey{inst->tree(), inst->memory(), inst->bounds(), inst->slot()});
          }
          continue;
        }
        auto [at, fresh] = plain_at.try_emplace(q.tree, plain.size());
        if (fresh)
          plain.emplace_back(q.tree, q.mask);
        else
          plain[at->second].second |= q.mask;
        // (-lg:shard_checks: a shard reads only the conditions about its own instances, and a
        // condition and its postcondition are about one instance: each shard's verdict on
        // idempotence covers its own, and the shards vote.)
        if (read_here && !read_here(inst)) continue;
        auto w = written_at.find(Key{q.tree, inst});
        const FieldMask before = w == written_at.end() ? 0 : written[w->second].fields;
        if (q.privilege != Privilege::WriteDiscard && (q.mask & ~before))
          add(t.preconditions, pre_at, q.tree, inst, q.mask & ~before);
        if (q.writes()) add(written, written_at, q.tree, inst, q.mask);
        add(t.postconditions, post_at, q.tree, inst, q.mask);
      }
    }
  }
  t.idempotent =
      std::all_of(t.preconditions.begin(), t.preconditions.end(), [&](const Condition& pc) {
        auto post = post_at.find(Key{pc.tree, pc.instance});
        return post != post_at.end() &&
               (t.postconditions[post->second].fields & pc.fields) == pc.fields;
      });
  for (const auto& [tree, mask] : plain) touch(tree, mask);
}

void build_successors(TraceTemplate& t, const std::vector<OpRef>& recorded) {
  const std::size_t n = t.instrs.size();
  for (std::size_t i = 0; i < n; ++i)
    REPRISE_ASSERT(t.instrs[i].kind != Instruction::Kind::Merge && t.instrs[i].out == i + 1,
                   "once merges are dissolved, slot s is defined by instruction s - 1 (slot 0 "
                   "is the fence)");
  t.instr_points.assign(n, DomainPoint());
  for (std::size_t i = 0; i < n; ++i)
    if (t.instrs[i].kind == Instruction::Kind::Op)
      t.instr_points[i] = recorded[t.instrs[i].op]->domain.delinearize(coord_t(t.instrs[i].point));
  auto s = std::make_shared<BatchEdges>();
  s->count.assign(n, 0);
  for (const Instruction& in : t.instrs)
    for (std::uint32_t k = 0; k < in.pre_count; ++k) ++s->count[t.pre_slots[in.pre_begin + k] - 1];
  s->begin.assign(n, 0);
  for (std::size_t i = 1; i < n; ++i) s->begin[i] = s->begin[i - 1] + s->count[i - 1];
  s->targets.assign(t.pre_slots.size(), 0);
  std::vector<std::uint32_t> fill = s->begin;
  for (std::uint32_t i = 0; i < n; ++i) {
    const Instruction& in = t.instrs[i];
    for (std::uint32_t k = 0; k < in.pre_count; ++k)
      s->targets[fill[t.pre_slots[in.pre_begin + k] - 1]++] = i;
  }
  s->sinks = std::uint32_t(std::count(s->count.begin(), s->count.end(), 0u));
  t.successors = std::move(s);
}

void compute_summary_ops(TraceTemplate& t, const std::vector<OpRef>& recorded) {
  t.summary_ops.clear();
  std::vector<bool> waited(recorded.size(), false);
  for (std::size_t k = 0; k < recorded.size(); ++k)
    waited[k] = !recorded[k]->launches_points() || recorded[k]->num_points() == 0;
  for (std::size_t i = 0; i < t.instrs.size(); ++i) {
    if (t.successors->count[i] > 0) continue;
    if (t.instrs[i].kind != Instruction::Kind::Op) return;  // a copy nothing waits for
    waited[t.instrs[i].op] = true;
  }
  for (std::uint32_t k = 0; k < recorded.size(); ++k)
    if (waited[k]) t.summary_ops.push_back(k);
}

void build_cross_links(TraceTemplate& t) {
  t.cross.reset();
  if (t.links.empty()) return;
  const std::uint32_t n = std::uint32_t(t.instrs.size());
  const LinkTargets source(t, t.ops.size());
  auto c = std::make_shared<ElisionLinks>();
  c->count.assign(n, 0);
  for (const Link& l : t.links) {
    const std::uint32_t j = source(l);
    if (j == ~0u) return;  // not a point of this template: replays wait on events instead
    ++c->count[j];
  }
  c->begin.assign(n, 0);
  for (std::uint32_t j = 1; j < n; ++j) c->begin[j] = c->begin[j - 1] + c->count[j - 1];
  c->targets.assign(t.links.size(), 0);
  std::vector<std::uint32_t> fill = c->begin;
  for (std::uint32_t k = 0; k < n; ++k) {
    const Instruction& in = t.instrs[k];
    for (std::uint32_t i = 0; i < in.link_count; ++i)
      c->targets[fill[source(t.links[in.link_begin + i])]++] = k;
  }
  t.cross = std::move(c);
}

std::string to_text(const TraceTemplate& t, const std::vector<std::string>& op_names) {
  std::string s = fmt::format(
      "trace {}: {} ops, {} instructions, {} copies, {} elision links, {} physical facts, {}\n",
      t.id, t.ops.size(), t.instrs.size(), t.copies.size(), t.links.size(), t.facts.size(),
      t.idempotent ? "idempotent" : "not idempotent");
  for (std::size_t i = 0; i < t.instrs.size(); ++i) {
    const Instruction& in = t.instrs[i];
    if (in.kind == Instruction::Kind::Op)
      s += fmt::format("  [{}] s{} := op {} #{} point {} on shard {} {}{}", i, in.out,
                       in.op < op_names.size() ? op_names[in.op] : "?", in.op, in.point,
                       in.proc.shard, in.proc.kind == ProcessorKind::CPU ? "cpu" : "proc",
                       in.proc.index);
    else if (in.kind == Instruction::Kind::Copy)
      s += fmt::format("  [{}] s{} := copy {} mem {} -> {}", i, in.out,
                       t.copies[in.op].copy->point_rects[0].str(),
                       t.copies[in.op].copy->point_instances[0]->memory(),
                       t.copies[in.op].copy->point_instances[1]->memory());
    else
      s += fmt::format("  [{}] s{} := merge", i, in.out);
    s += " after";
    if (in.uses_fence) s += " fence";
    for (std::uint32_t k = 0; k < in.pre_count; ++k)
      s += fmt::format(" s{}", t.pre_slots[in.pre_begin + k]);
    for (std::uint32_t k = 0; k < in.link_count; ++k) {
      const Link& l = t.links[in.link_begin + k];
      s += l.from_copy ? fmt::format(" prev.copy{}", l.op)
                       : fmt::format(" prev.op{}.{}", l.op, l.point);
    }
    s += "\n";
  }
  return s;
}

std::string to_dot(const TraceTemplate& t, const std::vector<std::string>& op_names) {
  std::string s =
      fmt::format("digraph trace_{} {{\n  rankdir=TB;\n  s0 [label=\"fence\", shape=box];\n", t.id);
  for (const Instruction& in : t.instrs) {
    if (in.kind == Instruction::Kind::Op) {
      s += fmt::format("  s{} [label=\"{} #{} pt {}\\n{}{}\"];\n", in.out,
                       in.op < op_names.size() ? op_names[in.op] : "op", in.op, in.point,
                       in.proc.kind == ProcessorKind::CPU ? "cpu" : "proc", in.proc.index);
    } else if (in.kind == Instruction::Kind::Copy) {
      const Op& c = *t.copies[in.op].copy;
      s += fmt::format("  s{} [label=\"copy {}\\nmem {} -> {}\", shape=box];\n", in.out,
                       c.point_rects[0].str(), c.point_instances[0]->memory(),
                       c.point_instances[1]->memory());
    } else {
      s += fmt::format("  s{} [label=\"merge\", shape=point];\n", in.out);
    }
    for (std::uint32_t i = 0; i < in.pre_count; ++i)
      s += fmt::format("  s{} -> s{};\n", t.pre_slots[in.pre_begin + i], in.out);
    if (in.uses_fence) s += fmt::format("  s0 -> s{} [style=dashed];\n", in.out);
    for (std::uint32_t i = 0; i < in.link_count; ++i) {
      const Link& l = t.links[in.link_begin + i];
      if (l.from_copy)
        s += fmt::format("  prev_copy_{} -> s{} [style=dotted];\n", l.op, in.out);
      else
        s += fmt::format("  prev_{}_{} -> s{} [style=dotted];\n", l.op, l.point, in.out);
    }
  }
  return s + "}\n";
}

std::unordered_map<std::uint64_t, std::uint32_t> point_instructions(const TraceTemplate& t) {
  std::unordered_map<std::uint64_t, std::uint32_t> by_point;
  for (std::uint32_t i = 0; i < t.instrs.size(); ++i)
    if (t.instrs[i].kind == Instruction::Kind::Op)
      by_point.emplace(point_key(t.instrs[i].op, t.instrs[i].point), i);
  return by_point;
}

}  // namespace reprise::detail

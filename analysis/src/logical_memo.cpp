// The logical analysis' memo for untraced launches (LogicalAnalysis::dependences_memoized).
//
// A launch's dependences and the changes its record() makes to the users are a function of its
// requirements and launch domain and of the users it meets: their requirements, domains, masks
// and order (the events it waits for are its users' points' events, looked up anew). A kept
// launcher hands each launch the same requirement list, which cannot change while someone else
// holds it (ReqList: a change copies it first): the memo holds the list, and the users' lists,
// so that "the same list" means "the same requirements". A launch of the same list over the
// same domain that meets users of the same lists, domains and masks, in the same order, takes
// the answer the memo kept: which of its points waits for which point of which user, and which
// users each tree keeps afterwards (with what masks) and where the launch joins them. A
// stencil's launch meets the same as the one two timesteps before: its ~1,200 instructions of
// pair look-ups, overlap and cover tests become a comparison of three users and a few edges.
#include <fmt/core.h>

#include <algorithm>

#include "reprise/error.h"
#include "reprise_analysis/logical.h"
#include "reprise_rt/assert.h"

namespace reprise::detail {

namespace {
// Small launches only: larger ones are not asked the same thing often enough to be worth a
// capture, and these bounds keep a capture's scans short (and every tree below the 64 users
// where record() would drop completed ones, which depends on more than the key).
constexpr std::size_t kMemoSlots = 32;   // two-way, by requirement list
constexpr std::size_t kMemoPoints = 64;  // points of the launch and of each user
constexpr std::size_t kMemoUsers = 16;   // users of the trees the launch names
constexpr std::size_t kMemoReqs = 8;
// A slot whose captures are never reused this many times in a row rests for kMemoRest
// launches (a launcher whose users differ each time pays for a capture only now and then).
constexpr std::uint32_t kMemoMisses = 4;
constexpr std::uint32_t kMemoRest = 256;

// The same rectangle, bound for bound (an empty one written otherwise is another key).
bool exact(const Domain& a, const Domain& b) {
  if (a.dim != b.dim) return false;
  for (int i = 0; i < a.dim; ++i)
    if (a.lo[i] != b.lo[i] || a.hi[i] != b.hi[i]) return false;
  return true;
}

// The first of the two neighbouring slots a requirement list may take.
std::size_t first_slot(const void* id) {
  return std::size_t(
             (std::uint64_t(reinterpret_cast<std::uintptr_t>(id)) * 0x9e3779b97f4a7c15ull) >> 59) &
         ~std::size_t(1);
}
}  // namespace

LogicalAnalysis::Memo* LogicalAnalysis::memo_for(const Op& op) {
  if (memo_mode_ == 0 || keep_summaries_) return nullptr;
  if (op.kind != OpKind::IndexTask && op.kind != OpKind::Task) return nullptr;
  const std::size_t nreq = op.reqs.size();
  // (A list nobody else holds is this launch's own: no later launch can share it.)
  if (nreq == 0 || nreq > kMemoReqs || op.num_points() > kMemoPoints || !op.reqs.shared())
    return nullptr;
  if (memos_.empty()) memos_.resize(kMemoSlots);
  // Two-way: a list may take either of two neighbouring slots (the one it holds, else the one
  // used longer ago), so that two lists whose addresses hash alike — a stencil's two timestep
  // shapes, at 1 in 32 — do not evict each other at every launch.
  const void* id = op.reqs.identity();
  const std::size_t first = first_slot(id);
  Memo* a = &memos_[first];
  Memo* b = &memos_[first + 1];
  Memo* m =
      b->reqs.identity() == id || (a->reqs.identity() != id && b->last_use < a->last_use) ? b : a;
  m->last_use = ++memo_clock_;
  return m;
}

LogicalAnalysis::Memo* LogicalAnalysis::memo_holding(const Op& op) {
  if (memos_.empty() || memo_mode_ == 0 || keep_summaries_) return nullptr;
  if (op.kind != OpKind::IndexTask && op.kind != OpKind::Task) return nullptr;
  const void* id = op.reqs.identity();
  if (!id) return nullptr;
  const std::size_t first = first_slot(id);
  for (Memo* m : {&memos_[first], &memos_[first + 1]})
    if (m->rects_kept && m->reqs.identity() == id && exact(m->domain, op.domain) &&
        (m->rects.empty() || m->rects.size() == op.num_points() * op.reqs.size()))
      return m;
  return nullptr;
}

void LogicalAnalysis::rects_memoized(Op& op) {
  Memo* m = memo_holding(op);
  memo_found_op_ = &op;
  memo_found_ = m;
  if (!m) return compute_rects(op);
  if (memo_mode_ == 2) {
    compute_rects(op);
    const bool same =
        std::equal(m->rects.begin(), m->rects.end(), op.point_rects.begin(), op.point_rects.end(),
                   [](const Domain& a, const Domain& b) { return exact(a, b); });
    if (!same)
      throw Error(
          fmt::format("{}: -lg:dependence_memo 2: the memo's point rectangles differ from "
                      "compute_rects'",
                      op.describe()));
    return;
  }
  op.point_rects.assign(m->rects.begin(), m->rects.end());
}

void LogicalAnalysis::keep_rects_anew(const Op& op) {
  Memo* m = memo_for(op);
  if (!m || m->skip > 0) return;
  // (Whatever the slot held for another list or domain goes: the next analysed launch of this
  // one captures its dependences anew.)
  m->free();
  m->reqs.share_inside(op.reqs);
  m->domain = op.domain;
  m->hits = 0;
  m->rects.assign(op.point_rects.begin(), op.point_rects.end());
  m->rects_kept = true;
}

void LogicalAnalysis::dependences_memoized(const OpRef& ref, PointPreconditions& pre) {
  memo_pending_ = {};
  const Op& op = *ref;
  // (A slot holding this launch's list, complete, for its domain, is the one memo_for picks.)
  Memo* m = memo_found_op_ == &op ? memo_found_ : nullptr;
  memo_found_op_ = nullptr;
  memo_found_ = nullptr;
  if (m)
    m->last_use = ++memo_clock_;
  else
    m = memo_for(op);
  if (!m) {
    dependences(op, pre);
    return;
  }
  if (m->skip > 0) {
    --m->skip;
    dependences(op, pre);
    return;
  }
  if (m->complete && m->reqs.identity() == op.reqs.identity() && exact(m->domain, op.domain) &&
      users_match(*m)) {
    if (memo_mode_ == 2) check_edges(*m, op);
    apply_edges(*m, pre);
    ++m->hits;
    ++memo_hits_;
    m->misses = 0;
    memo_pending_ = {ref, m, true};
    return;
  }
  // A miss: the slot's last capture, if never reused, counts against it.
  if (m->complete && m->hits == 0 && ++m->misses >= kMemoMisses) {
    m->misses = 0;
    m->skip = kMemoRest;
    m->free();
    dependences(op, pre);
    return;
  }
  if (!capture(*m, op)) {
    m->free();  // (nothing kept)
    dependences(op, pre);
    return;
  }
  apply_edges(*m, pre);
  memo_pending_ = {ref, m, false};
}

bool LogicalAnalysis::users_match(Memo& m) const {
  for (std::size_t t = 0; t < m.trees.size(); ++t) {
    const std::uint32_t first = m.users_begin[t], count = m.users_begin[t + 1] - first;
    const std::uint32_t tree = m.trees[t];
    if (tree >= trees_.size()) {
      if (count != 0) return false;
      continue;
    }
    const std::uint64_t stamp = stamp_of(tree);
    const bool seen = stamp != 0 && stamp == m.seen[t];
    if (seen && memo_mode_ != 2) continue;  // (the users as they were when seen)
    const std::vector<LogicalUser>& users = trees_[tree];
    bool same = users.size() == count;
    for (std::uint32_t k = 0; same && k < count; ++k) {
      const MemoUser& want = m.users[first + k];
      const LogicalUser& u = users[k];
      same = u.req == want.req && u.mask == want.mask && u.read_over == want.read_over &&
             u.op->reqs.identity() == want.reqs && exact(u.op->domain, want.domain);
    }
    if (seen && !same)
      throw Error(
          fmt::format("-lg:dependence_memo 2: tree {} carries the stamp under which the "
                      "memo saw its users, but they differ",
                      tree));
    if (!same) return false;
    m.seen[t] = stamp;
  }
  return true;
}

bool LogicalAnalysis::capture(Memo& m, const Op& op) {
  m.reqs.share_inside(op.reqs);
  m.domain = op.domain;
  m.complete = false;
  m.rects_kept = false;
  m.hits = 0;
  m.trees.clear();
  m.users_begin.clear();
  m.users.clear();
  m.held.clear();
  m.edges.clear();
  m.edge_points.clear();
  m.steps_begin.clear();
  m.steps.clear();
  m.leaves.clear();
  for (const ReqInfo& q : op.reqs)
    if (std::find(m.trees.begin(), m.trees.end(), q.tree) == m.trees.end())
      m.trees.push_back(q.tree);
  for (const std::uint32_t tree : m.trees) {
    m.users_begin.push_back(std::uint32_t(m.users.size()));
    if (tree >= trees_.size()) continue;
    for (const LogicalUser& u : trees_[tree]) {
      const void* reqs = u.op->reqs.identity();
      if (!reqs || u.op->num_points() > kMemoPoints || m.users.size() == kMemoUsers) return false;
      m.users.push_back(MemoUser{reqs, u.op->domain, u.req, u.mask, u.read_over});
      if (std::none_of(m.held.begin(), m.held.end(),
                       [&](const ReqList& h) { return h.identity() == reqs; }))
        m.held.push_back(u.op->reqs);
    }
  }
  m.users_begin.push_back(std::uint32_t(m.users.size()));
  m.seen.assign(m.trees.size(), 0);
  // The edges, user by user, as dependences() finds them (the same users, in the same order:
  // each point's list then receives its events in the same order).
  const std::size_t points = op.num_points();
  return each_conflict(op, [&](std::uint32_t r, const ReqInfo& a, std::size_t k,
                               const LogicalUser& u, const ReqInfo& b) {
    const auto t =
        std::uint16_t(std::find(m.trees.begin(), m.trees.end(), a.tree) - m.trees.begin());
    memo_scratch_.reset(points);
    add_user(op, r, a, u, b, memo_scratch_, PointSubset{});
    const InlineVector<Event, 8>& done = u.op->point_done;
    const std::size_t first_edges = m.edges.size(), first_point = m.edge_points.size();
    bool diagonal = done.size() >= points;
    for (std::size_t p = 0; p < points; ++p) {
      const auto begin = std::uint32_t(m.edge_points.size());
      for (const Event e : memo_scratch_.of(p)) {
        // The user's point with this event: exactly one, or nothing is kept.
        std::size_t found = done.size();
        for (std::size_t q = 0; q < done.size(); ++q)
          if (done[q] == e) {
            if (found != done.size()) return false;
            found = q;
          }
        if (found == done.size()) return false;
        m.edge_points.push_back(std::uint32_t(found));
      }
      const auto end = std::uint32_t(m.edge_points.size());
      diagonal = diagonal && end == begin + 1 && m.edge_points[begin] == p;
      if (end > begin)
        m.edges.push_back(MemoEdges{t, std::uint16_t(k), false, std::uint32_t(p), begin, end});
    }
    if (diagonal && points > 1) {
      m.edges.resize(first_edges);
      m.edge_points.resize(first_point);
      m.edges.push_back(MemoEdges{t, std::uint16_t(k), true, 0, 0, std::uint32_t(points)});
    }
    return true;
  });
}

void LogicalAnalysis::apply_edges(const Memo& m, PointPreconditions& pre) const {
  const std::uint32_t* points = m.edge_points.data();
  for (const MemoEdges& e : m.edges) {
    const InlineVector<Event, 8>& done = trees_[m.trees[e.tree]][e.user].op->point_done;
    if (e.diagonal) {
      for (std::uint32_t p = e.point; p < e.end; ++p) pre.add(p, done[p]);
      continue;
    }
    pre.add_each(e.point, std::span<const Event>(done.data(), done.size()), points + e.begin,
                 points + e.end);
  }
}

void LogicalAnalysis::record_captured(const OpRef& op, Memo& m) {
  // Which users each tree holds before (as the key saw them), then the full record, then
  // where each user it leaves came from.
  memo_before_.clear();
  for (const std::uint32_t tree : m.trees)
    if (tree < trees_.size())
      for (const LogicalUser& u : trees_[tree]) memo_before_.emplace_back(u.op.get(), u.req);
  REPRISE_ASSERT(memo_before_.size() == m.users.size(),
                 "nothing changes the users between a launch's dependences and its record");
  record_plain(op);
  for (std::size_t t = 0; t < m.trees.size(); ++t) {
    m.steps_begin.push_back(std::uint32_t(m.steps.size()));
    for (const LogicalUser& u : trees_[m.trees[t]]) {
      if (u.op.get() == op.get()) {
        m.steps.push_back(MemoStep{-1, u.req, u.mask, u.read_over});
        continue;
      }
      const auto first = memo_before_.begin() + m.users_begin[t];
      const auto last = memo_before_.begin() + m.users_begin[t + 1];
      const auto it =
          std::find(first, last, std::pair<const Op*, std::uint32_t>(u.op.get(), u.req));
      if (it == last) {  // (not expected: a user from elsewhere; nothing is kept)
        m.reqs = {};
        m.steps.clear();
        return;
      }
      m.steps.push_back(MemoStep{std::int32_t(it - first), u.req, u.mask, u.read_over});
    }
  }
  m.steps_begin.push_back(std::uint32_t(m.steps.size()));
  m.leaves.resize(m.trees.size());
  for (std::uint64_t& stamp : m.leaves) stamp = ++stamp_clock_;
  // (Empty where every requirement names its pieces whole.)
  m.rects.assign(op->point_rects.begin(), op->point_rects.end());
  m.complete = true;
  m.rects_kept = true;
}

void LogicalAnalysis::apply_steps(const Memo& m, const OpRef& op) {
  // In place: record() keeps the users it keeps in their order and appends the launch's, so
  // the steps name earlier users in ascending order, then the launch's requirements.
  for (std::size_t t = 0; t < m.trees.size(); ++t) {
    const std::uint32_t tree = m.trees[t];
    if (tree >= trees_.size()) trees_.resize(tree + 1);
    std::vector<LogicalUser>& users = trees_[tree];
    std::size_t kept = 0;
    std::uint32_t s = m.steps_begin[t];
    for (; s < m.steps_begin[t + 1] && m.steps[s].from >= 0; ++s, ++kept) {
      const MemoStep& step = m.steps[s];
      LogicalUser& u = users[kept];
      if (std::size_t(step.from) != kept) u.op = std::move(users[std::size_t(step.from)].op);
      u.req = step.req;
      u.mask = step.mask;
      u.read_over = step.read_over;
    }
    users.resize(kept);  // (the users the launch made irrelevant)
    for (; s < m.steps_begin[t + 1]; ++s) {
      const MemoStep& step = m.steps[s];
      REPRISE_ASSERT(step.from < 0, "record() appends the launch's users after those it keeps");
      users.push_back(LogicalUser{op, step.req, step.mask, step.read_over});
    }
    set_stamp(tree, m.leaves[t]);
  }
}

void LogicalAnalysis::check_edges(const Memo& m, const Op& op) const {
  const std::size_t points = op.num_points();
  memo_check_.reset(points);
  dependences(op, memo_check_);
  memo_scratch_.reset(points);
  apply_edges(m, memo_scratch_);
  for (std::size_t p = 0; p < points; ++p) {
    const auto full = memo_check_.of(p), kept = memo_scratch_.of(p);
    const bool same =
        full.size() == kept.size() && std::all_of(full.begin(), full.end(), [&](Event e) {
          return std::find(kept.begin(), kept.end(), e) != kept.end();
        });
    if (!same)
      throw Error(fmt::format(
          "{}, point {}: -lg:dependence_memo 2: the memo's dependences ({} events) differ from "
          "the full analysis' ({} events)",
          op.describe(), p, kept.size(), full.size()));
  }
}

void LogicalAnalysis::check_steps(const Memo& m, const OpRef& op) {
  // Both ways from the same users: the memo's steps, then the full record.
  std::vector<std::vector<LogicalUser>> before, kept;
  for (const std::uint32_t tree : m.trees)
    before.push_back(tree < trees_.size() ? trees_[tree] : std::vector<LogicalUser>{});
  apply_steps(m, op);
  for (const std::uint32_t tree : m.trees) kept.push_back(trees_[tree]);
  for (std::size_t t = 0; t < m.trees.size(); ++t) trees_[m.trees[t]] = before[t];
  record_plain(op);
  for (std::size_t t = 0; t < m.trees.size(); ++t) {
    const std::vector<LogicalUser>& full = trees_[m.trees[t]];
    const bool same = full.size() == kept[t].size() &&
                      std::equal(full.begin(), full.end(), kept[t].begin(),
                                 [](const LogicalUser& a, const LogicalUser& b) {
                                   return a.op.get() == b.op.get() && a.req == b.req &&
                                          a.mask == b.mask && a.read_over == b.read_over;
                                 });
    if (!same)
      throw Error(
          fmt::format("{}: -lg:dependence_memo 2: the memo leaves tree {} with {} users, the full "
                      "analysis with {} (or other masks)",
                      op->describe(), m.trees[t], kept[t].size(), full.size()));
  }
  // (The same users as the steps leave: the stamps they leave, so that the next launches'
  // users_match checks them too.)
  for (std::size_t t = 0; t < m.trees.size(); ++t) set_stamp(m.trees[t], m.leaves[t]);
}

}  // namespace reprise::detail

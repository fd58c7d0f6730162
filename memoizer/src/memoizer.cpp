#include "reprise_memoizer/memoizer.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "reprise_rt/assert.h"
#include "reprise_rt/log.h"
#include "reprise_rt/op_token.h"
#include "reprise_rt/shard_vote.h"

namespace reprise::detail {

Memoizer::Memoizer(Runtime& rt, std::unique_ptr<Analysis> analysis)
    : rt_(rt), analysis_(std::move(analysis)), recorder_(rt.graph()) {
  if (shard_checks()) vote_ = std::make_unique<ShardVote>(rt, *rt.network(), Channel::Vote);
}

const std::list<std::unique_ptr<TraceTemplate>>* Memoizer::templates(TraceID id) const {
  auto it = templates_.find(id);
  return it == templates_.end() ? nullptr : &it->second;
}

Memoizer::~Memoizer() {
  drop_prev_block();
}

void Memoizer::submit(const OpRef& op) {
  // (Every untraced launch comes this way: tested first, the rest out of line.)
  if (op->launches_points() && !in_trace_) [[likely]]
    return forward(op);
  submit_other(op);
}

void Memoizer::submit_other(const OpRef& op) {
  switch (op->kind) {
    case OpKind::BeginTrace:
      begin(op);
      return;
    case OpKind::EndTrace:
      end(op);
      return;
    case OpKind::Flush:
      // After a failure the EndTrace of an open trace never reaches this stage (the utility
      // thread completes ops without running them): its held ops complete here instead.
      if (in_trace_ && rt_.failed()) release_buffer();
      analysis_->submit(op);
      return;  // holds nothing outside traces
    default:
      break;
  }
  if (in_trace_) {
    buffer_.push_back(op);
    return;
  }
  forward(op);
}

void Memoizer::hold_in_trace(OpRef op) {
  REPRISE_ASSERT(in_trace_, "ops are handed over only between a trace's marks");
  buffer_.push_back(std::move(op));
}

void Memoizer::withdraw_trace(std::deque<OpRef>& into) {
  REPRISE_ASSERT(in_trace_ && handed_ == 0,
                 "only a trace whose ops wait in the buffer is withdrawn");
  for (OpRef& o : buffer_) into.push_back(std::move(o));
  buffer_.clear();
  in_trace_ = false;
  recurrent_ = recurrent_before_;
  just_recorded_ = just_recorded_before_;
}

void Memoizer::release_buffer() {
  for (std::size_t k = handed_; k < buffer_.size(); ++k) rt_.op_completed(*buffer_[k]);
  buffer_.clear();
  handed_ = 0;
  in_trace_ = false;
}

void Memoizer::forward(const OpRef& op) {
  recurrent_ = false;
  just_recorded_ = nullptr;
  // (Tested here: after the first op past a replay, nothing is pending — two calls saved.)
  if (physical_pending_ || summary_pending_) apply_summary();
  analysis_->submit(op);
}

void Memoizer::begin(const OpRef& op) {
  if (in_trace_)
    throw Error(
        fmt::format("internal: begin_trace({}) while trace {} is open", op->trace_id(), current_));
  recurrent_before_ = recurrent_;
  just_recorded_before_ = just_recorded_;
  // Only end_trace(id) directly followed by begin_trace(id) keeps a replay run going.
  if (!(recurrent_ && ((last_replayed_ && last_replayed_->id == op->trace_id()) ||
                       (just_recorded_ && just_recorded_->id == op->trace_id())))) {
    recurrent_ = false;
    just_recorded_ = nullptr;
  }
  in_trace_ = true;
  current_ = op->trace_id();
  prefix_only_ = op->prefix_trace();
  buffer_.clear();
  handed_ = 0;
  rt_.op_completed(*op);
}

void Memoizer::end(const OpRef& op) {
  in_trace_ = false;
  handed_ = 0;
  copies_dropped_ = false;
  for (const OpRef& o : buffer_) token_of(*o);  // match and record compare tokens
  try {
    if (prefix_only_) {
      if (TraceTemplate* t = match(current_, true))
        replay(*t, false, buffer_.size());
      else
        forward_buffer();
      last_replayed_ = nullptr;  // (what follows is not a replay of the whole template)
      just_recorded_ = nullptr;
    } else if (TraceTemplate* t = match(current_, false)) {
      replay(*t, recurrent_ && last_replayed_ == t && t->idempotent && t->elide_fence);
    } else {
      if (same_ops_) {
        // Expected in a loop whose data moves between memories or trees: no warning.
        REPRISE_LOG_INFO(
            LogCategory::Tracing,
            "trace {}: the data is not where any of its {} templates with these ops expects "
            "it; recording anew",
            current_, templates_[current_].size());
      } else if (templates_.count(current_)) {
        rt_.count_mismatch();
        REPRISE_LOG_WARN(LogCategory::Tracing,
                         "trace {}: its {} ops match none of its {} templates; recording anew",
                         current_, buffer_.size(), templates_[current_].size());
      }
      record(current_);
    }
  } catch (...) {
    // The ops that were not launched still have to complete, or the program would hang.
    release_buffer();
    rt_.op_completed(*op);
    throw;
  }
  buffer_.clear();
  rt_.op_completed(*op);
  recurrent_ = last_replayed_ != nullptr || just_recorded_ != nullptr;
}

TraceTemplate* Memoizer::match(TraceID id, bool prefix) {
  same_ops_ = false;
  if (use_clock_ >= next_sweep_) {
    drop_unreplayed();
    next_sweep_ = use_clock_ + kUnreplayedBound / 4;
  }
  // (Under control replication a shard's plan covers whole templates: a prefix is analysed.)
  if (prefix && (rt_.num_shards() > 1 || rt_.simulated() || buffer_.empty())) return nullptr;
  auto it = templates_.find(id);
  if (it == templates_.end()) return nullptr;
  for (auto& t : it->second) {
    if (prefix ? t->ops.size() <= buffer_.size() : t->ops.size() != buffer_.size()) continue;
    bool same = true;
    for (std::size_t k = 0; k < buffer_.size() && same; ++k)
      same = t->ops[k].token == buffer_[k]->token;
    same_ops_ = same_ops_ || same;
    // Back to back with itself, an idempotent template needs no check: its postconditions
    // (which hold now) imply its preconditions. (A prefix checks the whole template's
    // conditions: more than it needs, never less.)
    if (same && ((recurrent_ && (last_replayed_ == t.get() || just_recorded_ == t.get()) &&
                  t->idempotent) ||
                 conditions_hold(*t))) {
      t->last_used = ++use_clock_;
      return t.get();
    }
  }
  return nullptr;
}

void Memoizer::forward_buffer() {
  for (std::size_t k = 0; k < buffer_.size(); ++k) {
    handed_ = k;
    forward(buffer_[k]);
  }
  handed_ = buffer_.size();
}

void Memoizer::drop_copies_once() {
  if (rt_.num_shards() == 1 || copies_dropped_) return;
  apply_physical();
  analysis_->physical().drop_copies(analysis_->defers_while_recording());
  copies_dropped_ = true;
}

namespace {
// Whether pred holds for every index below n, or (only given) for every index in *only.
template <class Pred>
bool all_indices(std::size_t n, const std::vector<std::uint32_t>* only, Pred pred) {
  if (only) return std::all_of(only->begin(), only->end(), pred);
  for (std::uint32_t i = 0; i < n; ++i)
    if (!pred(i)) return false;
  return true;
}
}  // namespace

bool Memoizer::conditions_hold(const TraceTemplate& t) {
  rt_.count_condition_check();
  apply_physical();
  // -lg:shard_checks: each shard reads its part of the conditions (those about its memories)
  // and the shards vote: every shard reads a condition from the same state, so the AND of the
  // parts is the verdict each would reach alone. (Reading a fact settles deferred writes where
  // it looks: the state stays the one eager application leaves wherever it is looked at, so
  // what each shard settles is its own affair.)
  const OwnConditions* own = vote_ ? &t.own_conditions : nullptr;
  // The instances recorded must still be the ones the analysis would use,
  const bool instances_kept =
      all_indices(t.preconditions.size(), own ? &own->preconditions : nullptr, [&](auto i) {
        const Condition& c = t.preconditions[i];
        return analysis_->instance_for(c.tree, c.instance->memory()) == c.instance;
      });
  const bool reductions_kept =
      instances_kept &&
      all_indices(t.reduction_keys.size(), own ? &own->reductions : nullptr, [&](auto i) {
        const ReductionKey& k = t.reduction_keys[i];
        return rt_.instances().find_reduction(k.tree, k.memory, k.rect, k.slot) == t.reductions[i];
      });
  // and hold valid data exactly where the recording found it (which copies it issued). (Under
  // control replication the facts are read as if every memory had dropped its copies of data
  // other memories wrote — holds(f, true) — which is what the recording saw, the same on
  // every shard. The state itself keeps them: dropping them costs every piece of every shard.)
  PhysicalState& state = analysis_->physical();
  const bool as_dropped = rt_.num_shards() > 1;
  const bool here =
      reductions_kept && all_indices(t.facts.size(), own ? &own->facts : nullptr,
                                     [&](auto i) { return state.holds(t.facts[i], as_dropped); });
  if (!vote_) return here;
  const bool all = vote_->all(here);
  if (here && !all)
    REPRISE_LOG_INFO(LogCategory::Tracing,
                     "trace {}: its conditions hold on this shard, not on another: not replayed",
                     t.id);
  return all;
}

OwnConditions Memoizer::own_conditions(const TraceTemplate& t) const {
  const InstanceManager& im = rt_.instances();
  const std::uint32_t me = rt_.shard(), shards = rt_.num_shards();
  OwnConditions own;
  for (std::uint32_t i = 0; i < t.preconditions.size(); ++i)
    if (im.shard_of(t.preconditions[i].instance->memory()) == me) own.preconditions.push_back(i);
  for (std::uint32_t i = 0; i < t.reduction_keys.size(); ++i)
    if (im.shard_of(t.reduction_keys[i].memory) == me) own.reductions.push_back(i);
  for (std::uint32_t i = 0; i < t.facts.size(); ++i) {
    const PhysicalFact& f = t.facts[i];
    const std::uint32_t reader =
        f.kind == PhysicalFact::Kind::Pending ? f.tree % shards : im.shard_of(f.mem);
    if (reader == me) own.facts.push_back(i);
  }
  return own;
}

std::vector<bool> Memoizer::runs_here(const TraceTemplate& t) const {
  if (rt_.num_shards() == 1) return {};
  return runs_on(t, rt_.shard());
}

std::vector<bool> Memoizer::runs_on(const TraceTemplate& t, std::uint32_t shard) const {
  std::vector<bool> on;
  const InstanceManager& im = rt_.instances();
  on.reserve(t.instrs.size());
  for (const Instruction& in : t.instrs) {
    if (in.kind == Instruction::Kind::Copy) {
      const auto [from, to] = im.copy_shards(*t.copies[in.op].copy);
      on.push_back(from == shard || to == shard);
    } else {
      on.push_back(in.kind == Instruction::Kind::Merge || in.proc.shard == shard);
    }
  }
  return on;
}

void Memoizer::record(TraceID id) {
  Profiler* prof = rt_.profiler();
  const std::uint64_t prof_t0 = prof ? Profiler::stamp() : 0;
  apply_summary();
  drop_prev_block();
  drop_copies_once();
  recurrent_ = false;
  last_replayed_ = nullptr;
  just_recorded_ = nullptr;
  auto t = std::make_unique<TraceTemplate>();
  t->id = id;
  recorder_.start(t.get());
  analysis_->set_graph(&recorder_);
  analysis_->physical().start_journal(analysis_->defers_while_recording());
  // The ops' names, for the template's dot and text files only (a copy of each name was an
  // allocation per recorded op).
  const std::string& dot_dir =
      rt_.config().trace_dot_dir.empty() ? rt_.config().spy_dir : rt_.config().trace_dot_dir;
  std::vector<std::string> names;
  t->effects_by_op.reserve(buffer_.size());
  t->ops.reserve(buffer_.size());
  try {
    for (std::uint32_t k = 0; k < buffer_.size(); ++k) {
      handed_ = k;
      buffer_[k]->in_trace = id;
      recorder_.set_current_op(k);
      analysis_->submit(buffer_[k]);
      t->effects_by_op.push_back(std::uint32_t(analysis_->physical().journaled_effects()));
    }
    handed_ = buffer_.size();
  } catch (...) {
    analysis_->set_graph(nullptr);
    analysis_->physical().stop_journal(t->facts, t->effects);
    recorder_.finish();
    throw;
  }
  analysis_->set_graph(nullptr);
  analysis_->physical().stop_journal(t->facts, t->effects);
  for (const PhysicalEffect& e : t->effects)
    t->effect_copy.push_back(e.ready.exists() ? recorder_.copy_of(e.ready) : -1);
  recorder_.finish();
  if (rt_.num_shards() > 1)
    t->effect_plan = plan_effects(*t, rt_.instances(), rt_.shard(), defer_replays());
  for (std::uint32_t k = 0; k < buffer_.size(); ++k) {
    const Op& o = *buffer_[k];
    TemplateOp top;
    top.token = o.token;
    top.kind = o.kind;
    // (A replay's ops are not analysed: they take the partitions' pieces, or every rectangle,
    // from here.)
    const std::size_t nreq = o.reqs.size(), points = o.launches_points() ? o.num_points() : 0;
    const bool listed = std::any_of(o.reqs.begin(), o.reqs.end(),
                                    [](const ReqInfo& q) { return q.pieces == nullptr; });
    if (points > 0 && !listed) {
      top.pieces.reserve(nreq);
      for (const ReqInfo& q : o.reqs) top.pieces.push_back(q.pieces);
    } else {
      top.rects.reserve(points * nreq);
      for (std::size_t p = 0; p < points; ++p)
        for (std::size_t r = 0; r < nreq; ++r) top.rects.push_back(o.rect(p, r));
    }
    top.instances = std::make_shared<const PointInstances::Table>(o.point_instances.begin(),
                                                                  o.point_instances.end());
    t->ops.push_back(std::move(top));
    if (o.launches_points()) t->points += o.num_points();
    if (!dot_dir.empty()) names.push_back(o.task_info ? o.task_info->name : to_string(o.kind));
  }
  reduce_transitively(*t, runs_here(*t));
  dissolve_merges(*t);
  build_successors(*t, buffer_);
  compute_summary_ops(*t, buffer_);
  // (runs_here again: dissolving the merges renumbered the instructions.)
  std::function<bool(const Instance*)> local;  // (control replication only)
  if (rt_.num_shards() > 1)
    local = [&im = rt_.instances()](const Instance* i) { return im.is_local(i->memory()); };
  compute_elision_links(*t, buffer_, analysis_->forest(), rt_.events(), runs_here(*t),
                        std::size_t(rt_.config().trace_links), local,
                        analysis_->logical().caches());
  // (Replays under control replication link to the previous one through events: no reversed
  // links to build.)
  if (rt_.num_shards() == 1) build_cross_links(*t);
  // (-lg:shard_checks: the conditions about this shard's instances, the ones it reads.)
  compute_conditions(*t, buffer_, vote_ ? local : nullptr);
  if (vote_) t->own_conditions = own_conditions(*t);
  // Idempotent only if the state the trace leaves behind is the one it started from (under
  // control replication: once the copies are dropped, as they were before it was recorded).
  // (-lg:shard_checks: each shard reads its part of the facts, as at a check, and the shards
  // vote.)
  PhysicalState& state = analysis_->physical();
  t->idempotent = t->idempotent &&
                  all_indices(t->facts.size(), vote_ ? &t->own_conditions.facts : nullptr,
                              [&](auto i) { return state.holds(t->facts[i], copies_dropped_); });
  if (vote_) t->idempotent = vote_->all(t->idempotent);
  t->last_used = t->recorded_at = ++use_clock_;
  REPRISE_LOG_INFO(
      LogCategory::Tracing,
      "trace {}: recorded {} ops, {} instructions ({} copies; {} before merges were dissolved), {} "
      "edges ({} after transitive reduction), {} elision links{}, {} physical facts, "
      "{}idempotent",
      id, t->ops.size(), t->instrs.size(), t->copies.size(), t->instrs_recorded, t->edges_recorded,
      t->edges_after_reduction, t->links.size(),
      t->elide_fence ? "" : " (too many: replays wait for the fence)", t->facts.size(),
      t->idempotent ? "" : "not ");
  // -lg:trace:dot DIR, or -lg:spy DIR: the template as DOT and as text (per shard under
  // control replication, where every shard records it).
  if (!dot_dir.empty()) {
    const std::string base =
        rt_.num_shards() > 1
            ? fmt::format("{}/trace_{}_{}.s{}", dot_dir, id, templates_made_, rt_.shard())
            : fmt::format("{}/trace_{}_{}", dot_dir, id, templates_made_);
    std::error_code ec;
    std::filesystem::create_directories(dot_dir, ec);
    for (const auto& [ext, text] :
         {std::pair{".dot", to_dot(*t, names)}, std::pair{".txt", to_text(*t, names)}}) {
      const std::string path = base + ext;
      if (FILE* f = std::fopen(path.c_str(), "w")) {
        std::fputs(text.c_str(), f);
        std::fclose(f);
      } else {
        REPRISE_LOG_WARN(LogCategory::Tracing, "trace {}: cannot write {}", id, path);
      }
    }
  }
  ++templates_made_;
  just_recorded_ = t.get();
  if (prof) prof->record_recording(id, buffer_.size(), prof_t0, Profiler::stamp());
  rt_.count_template();
  drop_unreplayed();
  auto& list = templates_[id];
  list.push_front(std::move(t));
  while (list.size() > std::size_t(rt_.config().max_templates)) {
    auto lru = std::min_element(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return a->last_used < b->last_used;
    });
    list.erase(lru);
  }
}

void Memoizer::drop_unreplayed() {
  for (auto it = templates_.begin(); it != templates_.end();) {
    const std::size_t before = it->second.size();
    it->second.remove_if([&](const std::unique_ptr<TraceTemplate>& t) {
      return t->replays == 0 && use_clock_ - t->recorded_at > kUnreplayedBound &&
             t.get() != last_replayed_ && t.get() != physical_pending_ && t.get() != just_recorded_;
    });
    if (const std::size_t dropped = before - it->second.size()) {
      rt_.count_dropped_templates(dropped);
      REPRISE_LOG_INFO(LogCategory::Tracing,
                       "trace {}: {} template(s) dropped, not replayed within {} uses", it->first,
                       dropped, kUnreplayedBound);
    }
    it = it->second.empty() ? templates_.erase(it) : std::next(it);
  }
}

}  // namespace reprise::detail

// Replaying a template: the memoizer hands a matching trace's ops to the executor as one
// batch of counters (BatchSink), with the per-shard plan under control replication, then
// shows the analysis what the replays did (their physical effects, and a summary op for the
// logical analysis).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "reprise_memoizer/gpu_groups.h"
#include "reprise_memoizer/memoizer.h"
#include "reprise_rt/assert.h"
#include "reprise_rt/log.h"
#include "reprise_rt/op_token.h"
#include "reprise_rt/profiler.h"
#include "reprise_rt/shard_exchange.h"
#include "reprise_rt/simulated_asks.h"

namespace reprise::detail {

void Memoizer::apply_physical() {
  if (!physical_pending_) return;
  const TraceTemplate& t = *physical_pending_;
  physical_pending_ = nullptr;
  PhysicalState& state = analysis_->physical();
  // Control replication (EffectPlan): copies between two other shards are skipped; with
  // -lg:defer_replays the other shards' writes are deferred, one list per tree (applied where
  // something here looks, or superseded by the next replay's), and each effect applied here
  // comes after the entries of its tree's list that came before it.
  const EffectPlan& plan = t.effect_plan;
  // (A prefix applies its effects one by one, the other shards' writes too.)
  const bool lists = physical_pending_effects_ == t.effects.size() && !plan.lists.empty();
  list_launches_.clear();
  if (lists)
    for (const auto& list : plan.lists)
      list_launches_.emplace_back(list->tree, state.defer_list(list));
  for (std::size_t k = 0; k < physical_pending_effects_; ++k) {
    const std::int32_t step = plan.step.empty() ? 0 : plan.step[k];
    if (step == EffectPlan::kSkipped || (step == EffectPlan::kDeferred && lists)) continue;
    PhysicalEffect e = t.effects[k];
    if (t.effect_copy[k] >= 0) e.ready = copy_done_[std::size_t(t.effect_copy[k])];
    const auto launch = std::find_if(list_launches_.begin(), list_launches_.end(),
                                     [&](const auto& l) { return l.first == e.tree; });
    if (launch == list_launches_.end() || step < 0)
      state.apply(e);
    else
      state.apply(e, WriteOrder{launch->second, std::uint32_t(step)});
  }
  // (Only now may the lists supersede what the last replay's left pending: these effects,
  // later than it, have settled it where they looked.)
  for (const auto& [tree, launch] : list_launches_) state.close_deferred(tree, launch, 0);
}

void Memoizer::replay(TraceTemplate& t, bool elide, std::size_t prefix) {
  Event fence;
  if (elide) {
    fence = prev_fence_;
  } else {
    apply_summary();
    fence = analysis_->full_fence();
  }
  Profiler* prof = rt_.profiler();
  const std::uint64_t prof_t0 = prof ? Profiler::stamp() : 0;
  // (On one shard, after a whole replay, the sinks' ops imply the rest: the summary waits for
  // them alone. Under control replication an op completes with its local work and a shard's
  // sinks are not the template's: every op.) Their events are made before any point runs.
  const bool sinks_only = !prefix && rt_.num_shards() == 1 && !t.summary_ops.empty();
  auto each_summarised = [&](auto&& fn) {
    if (sinks_only) {
      for (std::uint32_t k : t.summary_ops) fn(*buffer_[k]);
    } else {
      for (const OpRef& o : buffer_) fn(*o);
    }
  };
  // (Run inline, the replay completes before anything later is analysed: no events needed.)
  const bool inline_replay = replays_inline(t, fence, prefix);
  if (!inline_replay) each_summarised([&](Op& o) { rt_.give_done_event(o); });
  // Replayed ops take the recorded analysis results; non-point ops go through the analysis.
  for (std::uint32_t k = 0; k < buffer_.size(); ++k) {
    Op& o = *buffer_[k];
    o.replayed = true;
    o.in_trace = t.id;
    if (!o.launches_points()) {
      analysis_->submit(buffer_[k]);  // future reductions: nothing to replay
      continue;
    }
    if (const TemplateOp& top = t.ops[k]; !top.pieces.empty()) {
      // (The same partitions as recorded, the token says: their pieces have not changed.)
      for (std::size_t r = 0; r < o.reqs.size(); ++r) o.reqs.set_pieces(r, top.pieces[r]);
      o.point_rects.clear();
    } else {
      o.point_rects.assign(top.rects.begin(), top.rects.end());
    }
    o.point_instances.share(t.ops[k].instances);
    o.point_done.assign(o.num_points(), kNoEvent);
    if (o.num_points() == 0) rt_.op_completed(o);
  }
  copy_done_.assign(t.copies.size(), kNoEvent);
  // Control replication: the executor stands in for other shards' points and splits copies
  // between shards into send/receive halves.
  if (inline_replay)
    replay_inline(t);
  else
    replay_batch(t, fence, elide, prefix);
  if (ShardExchange* x = rt_.exchange())
    for (const OpRef& o : buffer_)
      if (o->local_completion) x->launched(o);
  physical_pending_effects_ = prefix ? t.effects_by_op[prefix - 1] : t.effects.size();
  physical_pending_ = physical_pending_effects_ == 0 ? nullptr : &t;
  handed_ = buffer_.size();
  std::uint64_t points = t.points;
  if (prefix) {
    points = 0;
    for (const OpRef& o : buffer_)
      if (o->launches_points()) points += o->num_points();
  }
  rt_.count_points(points);
  rt_.count_replay(points);
  if (rt_.config().coverage_log)
    for (const OpRef& o : buffer_)
      if (o->launches_points()) rt_.note_points(o->seq, o->num_points(), true);

  // What the logical analysis must learn once the replay run ends.
  summary_pending_ = true;
  for (const auto& [tree, mask] : t.touched) {
    auto it = std::find_if(summary_touched_.begin(), summary_touched_.end(),
                           [&](const auto& e) { return e.first == tree; });
    if (it == summary_touched_.end())
      summary_touched_.emplace_back(tree, mask);
    else
      it->second |= mask;
  }
  if (summary_done_.size() > 256) {
    std::erase_if(summary_done_, [&](Event e) { return rt_.events().has_triggered(e); });
    // Still long (replays run ahead of their points): one merge stands for them all, so the
    // list is not scanned again at every replay.
    if (summary_done_.size() > 128) {
      const Event all = rt_.graph().merge(summary_done_);
      summary_done_.assign(1, all);
    }
  }
  each_summarised([&](const Op& o) { summary_done_.push_back(o.done); });
  if (!buffer_.empty()) summary_seq_ = buffer_.back()->seq;
  // Control replication: an op completes here with its local work only (one with no point
  // here at once), so the summary also covers what the replay was ordered after.
  if (rt_.num_shards() > 1 && fence.exists()) summary_done_.push_back(fence);
  prev_copy_done_ = copy_done_;
  prev_fence_ = fence;
  last_replayed_ = &t;
  just_recorded_ = nullptr;
  ++t.replays;
  if (prof) prof->record_replay(t.id, buffer_.size(), prof_t0, Profiler::stamp());
  // The next replay links to these ops. (Swapped, not copied: a copy took and dropped a
  // reference to every op, counts the workers also write. The caller clears the buffer, which
  // now lets go of the previous replay's ops.)
  prev_ops_.swap(buffer_);
}

void Memoizer::gather_external(const TraceTemplate& t, const Instruction& in, Event fence,
                               bool elide) {
  if (in.uses_fence) scratch_.push_back(fence);
  if (elide) {
    for (std::uint32_t i = 0; i < in.link_count; ++i) {
      const Link& l = t.links[in.link_begin + i];
      scratch_.push_back(l.from_copy ? prev_copy_done_[l.op]
                                     : prev_ops_[l.op]->point_done[l.point]);
    }
  }
  if (in.kind == Instruction::Kind::Op)
    // Futures change from one iteration to the next: wait for this iteration's.
    for (const Future& f : buffer_[in.op]->futures())
      if (Event e = pending_event(f); e.exists()) scratch_.push_back(e);
}

namespace {
// A fresh copy of a recorded generated copy, numbered as made for op `seq`.
OpRef renumbered(const OpRef& proto, Op& for_op) {
  OpRef c = make_op();
  const Op& p = *proto;
  c->kind = p.kind;
  const GeneratedCopy& g = *p.generated_copy();
  c->make_generated_copy(g.index, g.fold, for_op.local_completion ? &for_op : nullptr, g.point,
                         g.name);
  c->counted = false;
  c->seq = for_op.seq;
  c->replayed = for_op.replayed;
  c->in_trace = for_op.in_trace;
  c->domain = p.domain;
  c->reqs.share_inside(p.reqs);
  c->point_rects = p.point_rects;
  c->point_instances = p.point_instances;
  c->point_done.assign(1, kNoEvent);
  return c;
}
}  // namespace

const ShardPlan& Memoizer::shard_plan(TraceTemplate& t) {
  if (t.shard_plan) return *t.shard_plan;
  auto plan = std::make_unique<ShardPlan>();
  const std::size_t n = t.instrs.size();
  const std::vector<bool> here = runs_here(t);
  const BatchEdges& succ = *t.successors;
  const auto is_copy = [&](std::size_t i) { return t.instrs[i].kind == Instruction::Kind::Copy; };
  // A copy that does not run here moves data between two other shards: nothing here waits for
  // it. Another shard's point needs a proxy when something here waits for it.
  std::vector<bool> needed(n, false), counted(n, false);
  plan->unseen_preds.assign(n, 0);
  // Only the edges out of and into the instructions that run here (slot s is defined by
  // instruction s - 1), not every edge of the template.
  std::unordered_set<std::uint64_t> linked;
  for (std::size_t i = 0; i < n; ++i) {
    if (!here[i]) continue;
    for (std::uint32_t k = 0; k < succ.count[i]; ++k)
      counted[succ.targets[succ.begin[i] + k]] = true;
    const Instruction& in = t.instrs[i];
    for (std::uint32_t k = 0; k < in.pre_count; ++k) {
      const std::uint32_t j = t.pre_slots[in.pre_begin + k] - 1;
      if (here[j]) continue;
      if (is_copy(j))
        ++plan->unseen_preds[i];
      else
        needed[j] = true;
    }
    // The next replay's elision links of instructions that run here name points of this one.
    for (std::uint32_t k = 0; k < in.link_count; ++k) {
      const Link& l = t.links[in.link_begin + k];
      if (!l.from_copy) linked.insert(point_key(l.op, l.point));  // (a copy either has a half
    }                                                             // here or no event at all)
  }
  if (!linked.empty())
    for (std::size_t i = 0; i < n; ++i) {
      const Instruction& in = t.instrs[i];
      if (!here[i] && in.kind == Instruction::Kind::Op && linked.count(point_key(in.op, in.point)))
        needed[i] = true;
    }
  // Points without an instruction (other shards' points recorded for their writes only,
  // Analysis::record_far_point) are done with here at once too.
  std::vector<std::uint32_t> skipped_points(t.ops.size(), 0);
  {
    std::vector<std::uint32_t> recorded(t.ops.size(), 0);
    for (const Instruction& in : t.instrs)
      if (in.kind == Instruction::Kind::Op) ++recorded[in.op];
    for (std::uint32_t op = 0; op < t.ops.size(); ++op)
      if (const Op& o = *buffer_[op]; o.launches_points() && o.num_points() > recorded[op])
        skipped_points[op] = std::uint32_t(o.num_points()) - recorded[op];
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    const Instruction& in = t.instrs[i];
    // Values of value-returning ops go to every shard: their proxies receive them.
    if (!here[i] && !is_copy(i) && !buffer_[in.op]->local_completion) needed[i] = true;
    if (here[i] || needed[i]) {
      plan->active.push_back(i);
      (here[i] ? plan->local : plan->proxied).push_back(i);
      continue;
    }
    plan->skipped.push_back(i);
    if (counted[i]) plan->skipped_counted.push_back(i);
    if (!is_copy(i)) ++skipped_points[in.op];
  }
  for (std::uint32_t op = 0; op < skipped_points.size(); ++op)
    if (skipped_points[op]) plan->count_offs.emplace_back(op, skipped_points[op]);
  plan->slot.assign(n, ~0u);
  for (std::uint32_t k = 0; k < plan->active.size(); ++k) plan->slot[plan->active[k]] = k;
  // (As gpu_groups.cpp filters the successor lists: one pass, in the active order.)
  auto edges = std::make_shared<BatchEdges>();
  const std::size_t m = plan->active.size();
  edges->begin.assign(m, 0);
  edges->count.assign(m, 0);
  for (std::uint32_t k = 0; k < m; ++k) {
    const std::uint32_t i = plan->active[k];
    edges->begin[k] = std::uint32_t(edges->targets.size());
    if (here[i])
      for (std::uint32_t e = 0; e < succ.count[i]; ++e)
        if (const std::uint32_t s = succ.targets[succ.begin[i] + e]; here[s])
          edges->targets.push_back(plan->slot[s]);
    edges->count[k] = std::uint32_t(edges->targets.size()) - edges->begin[k];
  }
  plan->edges = std::move(edges);
  t.shard_plan = std::move(plan);
  return *t.shard_plan;
}

const SimulatedReplayAsks& Memoizer::simulated_asks(TraceTemplate& t) {
  if (t.simulated_asks) return *t.simulated_asks;
  // Under mpirun no instruction of a shard waits for another shard's point (every access
  // waits by data, and a shard's elision links name its own instructions): a replay asks
  // nothing, and each shard's part of it is what its shard plan would initialise.
  auto asks = std::make_unique<SimulatedReplayAsks>();
  for (std::uint32_t s = 0; s < rt_.machine_shards(); ++s) {
    const std::vector<bool> on = runs_on(t, s);
    asks->instructions.push_back(std::uint32_t(std::count(on.begin(), on.end(), true)));
  }
  t.simulated_asks = std::move(asks);
  return *t.simulated_asks;
}

void Memoizer::replay_batch(TraceTemplate& t, Event fence, bool elide, std::size_t prefix) {
  const std::size_t n = t.instrs.size();
  BatchSink& exec = rt_.batches();
  if (n == 0) {
    // (Under control replication a shard's template may hold no instruction: every point
    // another shard's, recorded for its writes only. They are done with here at once.)
    if (rt_.num_shards() > 1)
      for (const auto& [op, points] : shard_plan(t).count_offs)
        exec.count_off(*buffer_[op], points);
    return;
  }
  // Control replication: every point has a completion event (other shards' points are
  // proxies), and back-to-back replays link through events, not reversed links. Only what
  // the shard's plan names is initialised.
  const bool sharded = rt_.num_shards() > 1;
  REPRISE_ASSERT(!prefix || (!sharded && !elide && t.effects_by_op.size() == t.ops.size()),
                 "a prefix replays in a single process, after a full fence, with its effects");
  // A prefix replays the instructions of its ops (an op's copies belong to it); the others
  // stay `elsewhere`: nothing runs them, and counting them down is harmless.
  const auto outside = [&](std::size_t i) {
    const Instruction& in = t.instrs[i];
    return prefix &&
           (in.kind == Instruction::Kind::Copy ? t.copies[in.op].for_op : in.op) >= prefix;
  };
  const ShardPlan* plan = sharded ? &shard_plan(t) : nullptr;
  if (SimulatedAsks* sim = rt_.simulated_asks()) [[unlikely]] {
    sim->replayed(simulated_asks(t).instructions);
  }
  const ElisionLinks* links = sharded ? nullptr : t.cross.get();
  // Fence elision after a batch of the same template: its points count down this batch's
  // links themselves (no events, no waiter lists).
  const bool cross = elide && links && prev_block_ && prev_block_->cross == t.cross;
  if (elide && links && !cross) {
    // (Not expected: the previous replay of t was a batch.) Its points have no completion
    // events to link to: wait for everything instead.
    elide = false;
    apply_summary();
    fence = analysis_->full_fence();
  }
  // Every point is created before any is released, so a point's successors already count
  // its edge when it completes. The block is freed by the batch's last point, or by this
  // memoizer, which keeps it for the next batch to link to (whichever lets go last).
  // Replays as graphs: a template's GPU points grouped per GPU processor leave their in-group
  // edges to the stream (their counters do not count them).
  // Under control replication (-lg:gpu_graphs 2: on an H100 two ranks' stencil replays ran
  // 7-15% slower as graphs, docs/gpu.md) from this shard's own GPU points, which its plan
  // initialises all.
  if (!prefix && !t.gpu_groups_planned && rt_.device() &&
      rt_.config().gpu_graphs >= (sharded ? 2 : 1)) {
    t.gpu_groups = plan_gpu_groups(
        t, buffer_, sharded ? std::optional<std::uint32_t>(rt_.shard()) : std::nullopt);
    t.gpu_groups_planned = true;
  }
  // (A prefix replays point by point.)
  const GpuGroups* gpu = prefix ? nullptr : t.gpu_groups.get();
  // Control replication: a batch holds tasks for the shard plan's active instructions only
  // (ShardPlan::slot, ::edges), not one per instruction of every shard. (Graph groups and the
  // profiler's edge records index every instruction: they keep the whole batch.)
  const bool compact = plan && !gpu && !(rt_.profiler() && rt_.profiler()->deps());
  const std::shared_ptr<const BatchEdges>& edge_lists = compact ? plan->edges
                                                        : gpu   ? gpu->successors
                                                                : t.successors;
  ReplayBatch* block = edge_lists->take_spare();
  const bool fresh = block == nullptr;
  const auto task_of = [&](std::size_t i) -> PointTask& {
    return block->tasks[compact ? plan->slot[i] : i];
  };
  if (block) {
    // A finished batch of this template: its points ran and gave up their ops (the executor
    // initialises each point afresh); only the batch's own marks are reset here.
    block->next.store(nullptr, std::memory_order_relaxed);
    if (block->state)
      for (std::size_t i = 0; i < n; ++i) block->state[i].store(0, std::memory_order_relaxed);
  } else {
    block = make_pooled<ReplayBatch>().release();
    block->tasks = std::make_unique<PointTask[]>(compact ? plan->active.size() : n);
  }
  if (plan && !compact)
    for (std::uint32_t i : fresh ? plan->skipped : plan->skipped_counted)
      exec.leave_elsewhere(block->tasks[i]);
  if (prefix)
    for (std::size_t i = 0; i < n; ++i)
      if (outside(i)) exec.leave_elsewhere(block->tasks[i]);
  block->successors = edge_lists;
  if (gpu) {
    block->gpu = t.gpu_groups;
    if (!block->gates)
      block->gates = std::make_unique<std::atomic<std::int32_t>[]>(gpu->groups.size());
    for (std::size_t g = 0; g < gpu->groups.size(); ++g)
      block->gates[g].store(std::int32_t(gpu->groups[g]->members.size()),
                            std::memory_order_relaxed);
  }
  if (links) {
    block->cross = t.cross;
    if (!block->state) block->state = std::make_unique<std::atomic<std::uint8_t>[]>(n);
  }
  // Back to back, the entry fence is usually long past: one check for the whole batch.
  const bool fence_pending = fence.exists() && !rt_.events().has_triggered(fence);
  std::int32_t here = 0;  // points that run on this shard
  std::uint32_t futures_op = ~0u;
  bool futures_pending = false;
  Profiler* const deps_prof = rt_.profiler() && rt_.profiler()->deps() ? rt_.profiler() : nullptr;
  // A single-process replay of every instruction of the template, on its own edge lists (no
  // shard plan, prefix or graph groups): its batch counts its sinks only (below), and, without
  // -lg:simulate_shards or profiled edges, after a replay as plain its task points are
  // re-initialised, not made afresh (ReplayBatch::sinks_only, ::plain_points).
  const bool whole = !plan && !prefix && !gpu && edge_lists == t.successors;
  const bool plain = whole && !rt_.simulated() && !deps_prof;
  const bool reuse_points = plain && !fresh && block->plain_points;
  // An instruction's in-batch edges and, back to back, its elision links (init subtracts
  // those another shard's or a graph group's points count down).
  const auto edges_of = [&](const Instruction& in) {
    return std::int32_t(in.pre_count + (cross ? in.link_count : 0));
  };
  // Waits on events (the entry fence, links to a replay that was not a batch, futures). The
  // point's hold keeps it from running before it is released below.
  const auto wait_external = [&](const Instruction& in, PointTask& task, bool copy) {
    if (!copy && in.op != futures_op) {
      futures_op = in.op;
      // Futures change from one iteration to the next: an op's points wait for this
      // iteration's.
      futures_pending = any_pending(buffer_[in.op]->futures());
    }
    if ((in.uses_fence && fence_pending) || (elide && !cross && in.link_count > 0) ||
        (!copy && futures_pending)) {
      scratch_.clear();
      gather_external(t, in, fence, elide && !cross);
      exec.wait_for(&task, scratch_);
    } else if (deps_prof && in.uses_fence && fence.exists()) {
      // Long past, yet what the fence stands for came first: the profile keeps the edge.
      deps_prof->waits(*task.op, task.point_index, fence);
    }
  };
  const auto init = [&](std::size_t i) {
    const Instruction& in = t.instrs[i];
    const bool copy = in.kind == Instruction::Kind::Copy;
    const std::int32_t edges = edges_of(in) - (plan ? plan->unseen_preds[i] : 0) -
                               (gpu ? std::int32_t(gpu->removed_in[i]) : 0);
    // A replayed task point needs no completion event when every later wait on it is a
    // counter: in-trace edges and (with reversed links) the next replay's elision links.
    // Copies keep theirs (the physical effects name them).
    PointTask& task = task_of(i);
    task.batch = block;
    task.batch_index = compact ? plan->slot[i] : std::uint32_t(i);
    Event done;
    if (sharded) {
      // Shards name a copy by its op's number: this replay's, not the recording's.
      const OpRef op = copy ? renumbered(t.copies[in.op].copy, *buffer_[t.copies[in.op].for_op])
                            : buffer_[in.op];
      done = exec.init_sharded_point(task, *op, copy ? 0 : in.point, in.proc, edges,
                                     copy ? nullptr : &t.instr_points[i]);
    } else if (copy && rt_.simulated()) [[unlikely]] {
      // -lg:simulate_shards: the copy's records belong to this replay's op, as under mpirun.
      const OpRef op = renumbered(t.copies[in.op].copy, *buffer_[t.copies[in.op].for_op]);
      exec.init_point(task, *op, 0, in.proc, edges, nullptr, true);
      done = task.done;
    } else if (copy) {
      exec.init_point(task, *t.copies[in.op].copy, 0, in.proc, edges, nullptr, true);
      done = task.done;
    } else {
      exec.init_point(task, *buffer_[in.op], in.point, in.proc, edges, &t.instr_points[i],
                      links == nullptr);
    }
    if (copy) copy_done_[in.op] = done;
    if (task.elsewhere) return;
    ++here;
    wait_external(in, task, copy);
  };
  if (plan) {
    for (std::uint32_t i : plan->active) init(i);
    // Other shards' points nothing here waits for: done with here at once.
    for (const auto& [op, points] : plan->count_offs) exec.count_off(*buffer_[op], points);
    rt_.count_replay_instructions(n, plan->active.size());
  } else if (reuse_points) {
    // The same points of the same instructions as in the batch's last replay: only what
    // changes from one replay to the next (copies are made afresh).
    for (std::size_t i = 0; i < n; ++i) {
      const Instruction& in = t.instrs[i];
      if (in.kind == Instruction::Kind::Copy) {
        init(i);
        continue;
      }
      PointTask& task = block->tasks[i];
      exec.reinit_point(task, *buffer_[in.op], in.point, edges_of(in), links == nullptr);
      ++here;
      wait_external(in, task, false);
    }
    rt_.count_replay_instructions(n, n);
  } else {
    std::size_t active = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (!outside(i)) {
        init(i);
        ++active;
      }
    rt_.count_replay_instructions(n, active);
  }
  block->plain_points = plain;
  // (Only while every point runs here: `here` counts those that do.)
  block->sinks_only = whole && here == std::int32_t(n) && edge_lists->sinks > 0;
  block->unfinished.store((block->sinks_only ? std::int32_t(edge_lists->sinks) : here) + 1,
                          std::memory_order_relaxed);
  if (plan) {
    const BatchEdges& succ = *t.successors;
    for (std::uint32_t i : plan->proxied) {
      // Its successors here wait for its proxy (which the launch recorded as the point's
      // completion) instead of its count-down.
      const Instruction& in = t.instrs[i];
      const Event proxy = buffer_[in.op]->point_done[in.point];
      for (std::uint32_t k = 0; k < succ.count[i]; ++k) {
        const std::uint32_t target = succ.targets[succ.begin[i] + k];
        if (compact && plan->slot[target] == ~0u) continue;  // (not initialised here)
        PointTask& s = task_of(target);
        if (!s.elsewhere) exec.count_down_when(proxy, &s);
      }
    }
  }
  if (Profiler* prof = rt_.profiler(); prof && prof->deps()) {
    // In-batch edges are counters, not events: tell the profiler about them.
    const BatchEdges& succ = *t.successors;
    for (std::size_t i = 0; i < n; ++i) {
      const PointTask& a = block->tasks[i];
      if (a.elsewhere) continue;
      for (std::uint32_t k = 0; k < succ.count[i]; ++k) {
        const PointTask& b = block->tasks[succ.targets[succ.begin[i] + k]];
        if (!b.elsewhere) prof->follows(*a.op, a.point_index, *b.op, b.point_index);
      }
    }
    // Back to back, this batch's points count down on the previous replay's (elision links,
    // not events): those edges too. (Under control replication they are events, which the
    // profiler sees as waits.)
    if (cross)
      for (std::size_t i = 0; i < n; ++i) {
        const Instruction& in = t.instrs[i];
        const PointTask& b = block->tasks[i];
        for (std::uint32_t k = 0; k < in.link_count; ++k) {
          const Link& l = t.links[in.link_begin + k];
          if (l.from_copy) {
            const TemplateCopy& c = t.copies[l.op];
            prof->follows_copy(prev_ops_[c.for_op]->seq, c.copy->generated_copy()->index, *b.op,
                               b.point_index);
          } else {
            prof->follows(*prev_ops_[l.op], l.point, *b.op, b.point_index);
          }
        }
      }
  }
  if (cross) exec.link_batches(*prev_block_, *block);
  drop_prev_block();
  prev_block_ = block;
  if (plan) {
    for (std::uint32_t i : plan->local)
      if (!task_of(i).elsewhere) exec.release(&task_of(i));
  } else {
    for (std::size_t i = 0; i < n; ++i)
      if (!block->tasks[i].elsewhere) exec.release(&block->tasks[i]);
  }
}

bool Memoizer::replays_inline(const TraceTemplate& t, Event fence, std::size_t prefix) const {
  if (!rt_.eager() || prefix || !t.copies.empty() || t.instrs.empty()) return false;
  const GraphSink& g = rt_.graph();
  const Instruction* checked = nullptr;  // (the instructions' processors and ops repeat)
  for (const Instruction& in : t.instrs) {
    const TaskInfo* kind = buffer_[in.op]->task_info;
    if (checked && in.proc == checked->proc && kind == buffer_[checked->op]->task_info) continue;
    if (!g.runs_inline(in.proc, kind)) return false;
    checked = &in;
  }
  // (Every op of the trace is a launch, issued and counted: with them only in flight, every op
  // before the trace has completed.)
  if (!rt_.only_in_flight(std::int64_t(buffer_.size()))) return false;
  if (fence.exists() && !rt_.events().has_triggered(fence)) return false;
  for (const OpRef& o : buffer_)
    if (!o->launches_points() || !o->counted || any_pending(o->futures())) return false;
  return true;
}

void Memoizer::replay_inline(const TraceTemplate& t) {
  drop_prev_block();  // (the next replay has no batch to link to: it waits for the fence)
  GraphSink& g = rt_.graph();
  for (std::size_t i = 0; i < t.instrs.size(); ++i) {
    const Instruction& in = t.instrs[i];
    g.run_inline(*buffer_[in.op], in.point, in.proc, &t.instr_points[i]);
  }
  rt_.count_replay_instructions(t.instrs.size(), t.instrs.size());
}

void Memoizer::drop_prev_block() {
  if (!prev_block_) return;
  if (prev_block_->unfinished.fetch_sub(1, std::memory_order_acq_rel) == 1)
    retire_batch(prev_block_);
  prev_block_ = nullptr;
}

void Memoizer::apply_summary() {
  apply_physical();
  if (!summary_pending_) return;
  summary_pending_ = false;
  // One op that read-writes every field the replays touched, completing when they all have:
  // later ops order behind the replays exactly where they touch the same data.
  OpRef s = make_op();
  s->kind = OpKind::Summary;
  s->seq = summary_seq_;
  s->domain = Domain(Rect<1>({0}, {0}));
  for (const auto& [tree, mask] : summary_touched_) {
    ReqInfo q;
    q.tree = tree;
    q.region = analysis_->forest().tree(tree).root;
    q.privilege = Privilege::ReadWrite;
    q.mask = mask;
    s->reqs.push_back(std::move(q));
  }
  Event all = rt_.graph().merge(summary_done_);
  s->done = all;
  s->point_done.assign(1, all);
  analysis_->submit(s);
  summary_touched_.clear();
  summary_done_.clear();
}

}  // namespace reprise::detail

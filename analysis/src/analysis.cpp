#include "reprise_analysis/analysis.h"

#include <fmt/core.h>

#include <algorithm>

#include "reprise_analysis/local_uses.h"
#include "reprise_rt/log.h"
#include "reprise_rt/pool.h"

namespace reprise::detail {

namespace {
// The memory an internal task's data must be in (TaskPayload::pinned_memory), or kInvalidId.
std::uint32_t pinned_memory(const Op& op) {
  const auto* t = std::get_if<TaskPayload>(&op.payload);
  return t ? t->pinned_memory : kInvalidId;
}
// Reducers do not read: they fold into a reduction instance of their own.
bool reads_data(Privilege p) {
  return p == Privilege::ReadOnly || p == Privilege::ReadWrite;
}

// What the mapper is told about a task launch (its point fields unset).
// (Field by field: the braced aggregate was zeroed whole first, 128 bytes of `rep stos`, at
// every untraced launch.)
MapperTaskInfo launch_info(const Op& op) {
  const TaskInfo& t = *op.task_info;
  MapperTaskInfo info;
  info.task = op.task;
  info.task_name = t.name;
  info.launch_domain = op.domain;
  info.point_index = 0;
  info.op_seq = op.seq;
  info.has_cpu_variant = t.variant(ProcessorKind::CPU) != nullptr;
  info.has_gpu_variant = t.variant(ProcessorKind::GPU) != nullptr;
  return info;
}
}  // namespace

Analysis::Analysis(Runtime& rt) : rt_(rt), logical_(rt.forest(), rt.events()) {
  logical_.set_order_through_readers(rt.num_shards() == 1);
  // (A single process only: a shard's untraced launches compute other shards' points lazily.)
  logical_.set_memo(rt.num_shards() == 1 ? rt.config().dependence_memo : 0);
  if (rt.num_shards() > 1) {
    local_uses_ = std::make_unique<LocalUses>(rt.events());
    logical_.set_keep_summaries(true);
    const std::uint32_t per_shard = rt.instances().memories_per_shard();
    physical_.set_local_memories(rt.shard() * per_shard, per_shard);
    physical_.set_point_mapper(&Analysis::map_deferred, this);
    physical_.set_reduce_point(&Analysis::reduce_deferred, this);
  }
}

Analysis::~Analysis() {
  if (logical_.memo_hits() > 0)
    REPRISE_LOG_INFO(LogCategory::Analysis,
                     "{} launches took the dependence memo's answer (-lg:dependence_memo)",
                     logical_.memo_hits());
}

void Analysis::set_graph(GraphSink* g) {
  graph_ = g;
  // While a trace is recorded every in-trace dependence must be seen, finished or not.
  logical_.set_prune_completed(g == nullptr);
  if (local_uses_) local_uses_->set_prune_completed(g == nullptr);
}

void Analysis::submit(const OpRef& op) {
  if (op->launches_points()) [[likely]]
    return analyse_points(op);
  submit_other(op);
}

void Analysis::submit_other(const OpRef& op) {
  // The analysis orders later ops after this one: they may wait for its event. (A launch gets
  // it in analyse_points, unless it runs eagerly.)
  rt_.give_done_event(*op);
  switch (op->kind) {
    case OpKind::Task:
    case OpKind::IndexTask:
    case OpKind::Fill:
    case OpKind::Copy:
      break;  // (above)
    case OpKind::FutureReduce:
      reduce_futures(op);
      break;
    case OpKind::Fence:
      fence(op);
      break;
    case OpKind::DestroyRegion:
      destroy_region(op);
      break;
    case OpKind::BeginTrace:
    case OpKind::EndTrace:
      rt_.op_completed(*op);
      break;  // without a memoizer, no-ops
    case OpKind::Summary:
      record_summary(op);
      break;
    case OpKind::Flush:
      rt_.op_completed(*op);
      break;
  }
}

void Analysis::drop_completed() {
  // In place, keeping full_from_ on the first kept event at or after it.
  const EventTable& events = rt_.events();
  std::size_t kept = 0, full_from = 0;
  for (std::size_t i = 0; i < since_fence_.size(); ++i) {
    if (i == full_from_) full_from = kept;
    if (!events.has_triggered(since_fence_[i])) since_fence_[kept++] = since_fence_[i];
  }
  if (full_from_ >= since_fence_.size()) full_from = kept;
  since_fence_.resize(kept);
  full_from_ = full_from;
  compact_at_ = std::max<std::size_t>(64, since_fence_.size() * 4);
}

// (Compacted when the list has grown fourfold since the last look, not whenever the utility
// thread goes idle: a look is O(ops in flight), and the utility thread goes idle after every op
// when the application issues slower than it analyses. Doubling looked at each op's completion
// twice where most of the window was still in flight, ~60 instructions an op.)
void Analysis::remember_done(Event e) {
  since_fence_.push_back(e);
  if (since_fence_.size() >= compact_at_) drop_completed();
}

Instance* Analysis::find_instance(std::uint32_t tree, std::uint32_t mem) {
  const std::size_t mems = rt_.instances().num_memories();
  const std::size_t at = std::size_t(tree) * mems + mem;
  if (instance_cache_.size() <= at) instance_cache_.resize((std::size_t(tree) + 1) * mems, nullptr);
  Instance*& inst = instance_cache_[at];
  if (!inst) inst = rt_.instances().tree_instance(rt_.forest(), tree, mem);
  return inst;
}

Event Analysis::full_fence() {
  // The previous full fence covers everything before it (and the last fence op everything
  // before that): merging it with what came since keeps a replay's entry fence O(ops since
  // the previous replay), not O(ops in flight) — a chain of short replays ran ahead of its
  // tasks and merged the whole window at every replay.
  // (A previous full fence that came out as no event had nothing pending, the last fence op
  // included: covering with that op again is then harmless.)
  full_fence_events_.clear();
  for (std::size_t i = full_from_; i < since_fence_.size(); ++i)
    if (!rt_.events().has_triggered(since_fence_[i])) full_fence_events_.push_back(since_fence_[i]);
  const Event cover = last_full_fence_.exists() ? last_full_fence_ : fence_event_;
  if (cover.exists()) full_fence_events_.push_back(cover);
  last_full_fence_ = graph().fence(full_fence_events_);
  full_from_ = since_fence_.size();
  return last_full_fence_;
}

void Analysis::record_summary(const OpRef& summary) {
  logical_.compute_rects(*summary);
  remember_done(summary->done);
  logical_.record(summary);
}

inline bool Analysis::may_run_eagerly(const Op& op, std::size_t points) {
  const GraphSink& g = graph();
  for (std::size_t p = 0; p < points; ++p)
    if (!g.runs_inline(procs_[p], op.task_info)) return false;
  if (!rt_.only_in_flight(1)) return false;  // (this op's only)
  if (fence_event_.exists() && !rt_.events().has_triggered(fence_event_)) return false;
  return !any_pending(op.futures());
}

inline void Analysis::run_eagerly(const OpRef& ref, std::size_t points) {
  Op& op = *ref;
  logical_.keep_rects(op);
  logical_.forget_completed();
  fence_event_ = kNoEvent;
  op.point_done.assign(points, kNoEvent);
  rt_.count_points(points);
  if (rt_.config().coverage_log && op.counted) rt_.note_points(op.seq, points, false);
  GraphSink& g = graph();
  for (std::size_t p = 0; p < points; ++p) g.run_inline(op, std::uint32_t(p), procs_[p]);
}

void Analysis::analyse_points(const OpRef& ref) {
  Op& op = *ref;
  const std::size_t points = op.num_points(), nreq = op.reqs.size();
  if (points == 0) {
    rt_.op_completed(op);
    return;
  }
  // Everything that can fail happens before the first point is launched.
  logical_.rects_memoized(op);
  op_reduce_mark_ = physical_.reduce_mark();
  const bool several_memories = rt_.instances().num_memories() > 1;
  // With one memory only reductions need the physical state (their reduction instances and
  // the folds before the data is used again): ops on trees that never had one skip it.
  // (One pass over the requirements: this runs for every launch, most of them with none.)
  bool reduces = false, pending = false;
  for (const ReqInfo& q : op.reqs) {
    physical_.note_tree(q.tree);
    reduces = reduces || q.privilege == Privilege::Reduce;
    pending = pending || physical_.has_pending(q.tree);
  }
  if (reduces) [[unlikely]]
    note_reductions_began(op);
  const bool physical = several_memories || reduces || pending;
  op.point_instances.resize(points * nreq);
  if (!several_memories)
    for (std::size_t r = 0; r < nreq; ++r)
      op.point_instances.set_requirement(r, nreq, instance_for(op.reqs[r].tree, 0));
  procs_.resize(points);
  const MachineInfo& machine = rt_.machine();
  // Control replication, untraced: another shard's point here only stands for its completion
  // (its own waits are its shard's business), so its preconditions are computed only for
  // the copies with a half here that it reads through (ensure_point_pre); with deferred
  // writes, its memories are chosen only when something here needs them (map_point).
  // Recorded with far points (records_far_points), likewise: nothing here waits for another
  // shard's point (it has no event while recording), so its own waits matter only for its
  // copies and folds with a half here.
  // (All of it under control replication only: one test for a single process.)
  record_far_ = record_defer_ = lazy_pre_ = whole_ = defer_ = false;
  far_run_ = {0, 0};
  met_ = 0;
  if (local_uses_ && physical) [[unlikely]] {
    record_far_ = graph_ && records_far_points(op);
    record_defer_ = record_far_ && may_defer(op);
    lazy_pre_ = !graph_ || record_far_;
    const bool deferrable = lazy_pre_ && !graph_ && may_defer(op);
    whole_ = deferrable && analysed_whole(op);
    defer_ = deferrable && !whole_;
  }
  // With deferred writes and a mapper that knows its shards' ranges, other shards' points
  // are asked for only if they meet this shard's data (processor_of).
  std::uint64_t own_first = 0, own_last = points;
  bool ranged = false;
  if (op.task_info) {
    const TaskInfo& t = *op.task_info;
    MapperTaskInfo info = launch_info(op);
    ranged = defer_ && pinned_memory(op) == kInvalidId &&
             rt_.mapper().shard_points(info, machine, rt_.shard(), own_first, own_last);
    if (ranged) {
      if (own_first > own_last || own_last > points)
        throw Error(
            fmt::format("{}: the mapper's shard_points gives shard {} points {} .. {}, "
                        "outside the launch's {} points",
                        op.describe(), rt_.shard(), own_first, own_last, points));
      // Other shards' points are mapped only if something here needs them (processor_of).
      const Processor unmapped{ProcessorKind::CPU, 0, kUnmapped};
      std::fill(procs_.begin(), procs_.begin() + std::ptrdiff_t(own_first), unmapped);
      std::fill(procs_.begin() + std::ptrdiff_t(own_last), procs_.begin() + std::ptrdiff_t(points),
                unmapped);
    }
    const std::size_t first = ranged ? own_first : 0, last = ranged ? own_last : points;
    for (std::size_t p = first; p < last; ++p) {
      info.point = op.domain.delinearize(coord_t(p));
      info.point_index = p;
      Processor proc = select_processor(op, info, machine);
      if (ranged && proc.shard != rt_.shard())
        throw Error(
            fmt::format("{}: the mapper's shard_points gives point {} to shard {}, but "
                        "select_processor places it on shard {}",
                        op.describe(), info.point.str(), rt_.shard(), proc.shard));
      bool ok = proc.shard < machine.num_shards &&
                ((proc.kind == ProcessorKind::CPU && proc.index < machine.num_cpus) ||
                 (proc.kind == ProcessorKind::GPU && proc.index < machine.num_gpus));
      if (!ok)
        throw Error(
            fmt::format("{}: the mapper chose processor {}{} of shard {} for point {}, which "
                        "does not exist",
                        op.describe(), proc.kind == ProcessorKind::GPU ? "gpu" : "cpu", proc.index,
                        proc.shard, info.point.str()));
      // A GPU runs GPU variants only (its framebuffer may not be host memory), a CPU CPU ones.
      if (!t.variant(proc.kind))
        throw Error(fmt::format(
            "{}: the mapper chose {}{} of shard {} for point {}, but task "
            "'{}' has no {} variant",
            op.describe(), proc.kind == ProcessorKind::GPU ? "gpu" : "cpu", proc.index, proc.shard,
            info.point.str(), t.name, proc.kind == ProcessorKind::GPU ? "GPU" : "CPU"));
      procs_[p] = proc;
      if (several_memories && !(defer_ && proc.shard != rt_.shard()))
        choose_memories(op, p, &info, machine, proc);
    }
  } else {
    // Fills and copies run on a utility thread when there is a spare one.
    // Under control replication they run on the shards in turn.
    const std::uint32_t shard = std::uint32_t(op.seq % machine.num_shards);
    procs_[0] = rt_.config().utils > 1 ? Processor{ProcessorKind::Utility, 0, shard}
                                       : Processor{ProcessorKind::CPU,
                                                   std::uint32_t(op.seq % machine.num_cpus), shard};
    if (several_memories) choose_memories(op, 0, nullptr, machine, procs_[0]);
  }

  if (rt_.eager() && !physical && !graph_ && !local_uses_ && may_run_eagerly(op, points))
    return run_eagerly(ref, points);
  analyse_mapped(ref, physical, ranged, own_first, own_last);
}

void Analysis::analyse_mapped(const OpRef& ref, bool physical, bool ranged, std::uint64_t own_first,
                              std::uint64_t own_last) {
  Op& op = *ref;
  const std::size_t points = op.num_points(), nreq = op.reqs.size();
  // (The analysis orders later ops after this one: they may wait for its event.)
  rt_.give_done_event(op);
  remember_done(op.done);
  pre_.reset(points);
  if (lazy_pre_) {
    mine_points_.clear();
    if (ranged)
      for (std::uint64_t p = own_first; p < own_last; ++p) mine_points_.push_back(std::uint32_t(p));
    else
      for (std::size_t p = 0; p < points; ++p)
        if (procs_[p].shard == rt_.shard()) mine_points_.push_back(std::uint32_t(p));
    logical_.dependences(op, pre_, PointSubset{0, points, &mine_points_});
  } else {
    // (Recording too: a recording's events are the same, and it meets what it met before.)
    logical_.dependences_memoized(ref, pre_);
  }
  for (const Future& f : op.futures())
    if (Event e = pending_event(f); e.exists()) pre_.add_all(e);
  if (fence_event_.exists()) {
    if (rt_.events().has_triggered(fence_event_))
      fence_event_ = kNoEvent;
    else
      pre_.add_all(fence_event_);
  }

  op.point_done.assign(points, kNoEvent);
  if (defer_ || whole_ || record_far_) {
    local_hulls_.clear();
    reading_.clear();
    for (std::uint32_t r = 0; r < nreq; ++r) {
      const ReqInfo& q = op.reqs[r];
      // (A contribution meets what is pending here, or written here, as a read would.)
      if (!reads_data(q.privilege) && q.privilege != Privilege::Reduce) continue;
      // (may_defer: a ReadWrite requirement is the only one of the launch on its fields. Where
      // reductions are not deferred, a point written over whose pieces are pending elsewhere is
      // analysed all the same: the next reduction would settle its write at once.)
      const bool written_over = q.privilege == Privilege::Reduce ||
                                (q.privilege == Privilege::ReadWrite && defer_reductions());
      Domain box;
      for (int fi : q.field_indices) {
        local_hulls_.push_back(physical_.local_hull(q.tree, fi, written_over));
        box = bounding_union(box, local_hulls_.back());
      }
      reading_.push_back(Reading{r, box, written_over});
    }
  }
  copies_made_ = 0;  // copies are numbered per op (profiles and templates)
  if (ranged && near_points(op, own_first, own_last)) {
    // Only this shard's points and the other shards' points that may meet its data are
    // looked at; the points between them are deferred a range at a time, in point order
    // (a launch's earlier deferred points are pending when its later points are analysed).
    std::uint32_t next = 0;
    auto visit = [&](std::uint32_t p) {
      defer_points(ref, next, p);
      next = p + 1;
      analyse_point(ref, p, physical);
    };
    std::size_t c = 0;
    for (; c < near_.size() && near_[c] < own_first; ++c) visit(near_[c]);
    for (std::uint64_t p = own_first; p < own_last; ++p) visit(std::uint32_t(p));
    for (; c < near_.size(); ++c) visit(near_[c]);
    defer_points(ref, next, std::uint32_t(points));
  } else {
    for (std::size_t p = 0; p < points; ++p) analyse_point(ref, std::uint32_t(p), physical);
  }
  if (defer_ || whole_) {
    const std::size_t others = points - mine_points_.size();
    note_density(op, others,
                 defer_ ? others - std::min<std::size_t>(others, deferred_count_) : met_);
  }
  if (record_defer_) flush_recorded_deferrals(ref);
  if (defer_ || record_defer_) close_deferred(op);
  if (op.local_completion) rt_.exchange()->launched(ref);
  rt_.count_points(points);
  if (rt_.config().coverage_log && op.counted) rt_.note_points(op.seq, points, false);
  logical_.record(ref);
}

void Analysis::note_reductions_began(const Op& op) {
  for (const ReqInfo& q : op.reqs) {
    if (q.privilege != Privilege::Reduce) continue;
    if (reduce_began_.size() <= q.tree) reduce_began_.resize(q.tree + 1, {0, 0});
    auto& began = reduce_began_[q.tree];
    if (began[1] != op_reduce_mark_) began = {began[1], op_reduce_mark_};
  }
}

void Analysis::analyse_point(const OpRef& ref, std::uint32_t p, bool physical) {
  Op& op = *ref;
  if (!physical) {
    graph().op(op, p, procs_[p], pre_.of(p));
  } else if (defer_ && procs_[p].shard != rt_.shard() && meets_nothing_here(op, p)) {
    // Another shard's point that meets nothing here: not analysed (close_deferred counts
    // it off; nothing here waits for it unless a dependence names it: its proxy, then).
    defer_points(ref, p, p + 1);
  } else if (record_far_ && procs_[p].shard != rt_.shard() && meets_nothing_here(op, p)) {
    record_far_point(ref, p);
  } else {
    if (procs_[p].shard == kUnmapped) procs_[p] = processor_of(op, p);
    // (A dense launch is analysed whole, and measured in passing: what deferral would do.)
    if (whole_ && procs_[p].shard != rt_.shard()) met_ += !meets_nothing_here(op, p);
    if (record_defer_) flush_recorded_deferrals(ref);
    launch_with_copies(ref, p);
  }
}

void Analysis::choose_memories(Op& op, std::size_t p, const MapperTaskInfo* info,
                               const MachineInfo& machine, Processor proc) {
  const std::size_t nreq = op.reqs.size();
  for (std::size_t r = 0; r < nreq; ++r) {
    const ReqInfo& q = op.reqs[r];
    MemoryID mem;
    if (const std::uint32_t pinned = pinned_memory(op); pinned != kInvalidId)
      mem = pinned;
    else if (info)
      mem = rt_.mapper().select_memory(*info, proc, op.program_req(r), machine);
    else
      mem = machine.closest_memory(proc);
    if (mem >= rt_.instances().num_memories())
      throw Error(
          fmt::format("{}: the mapper chose memory {} for requirement {} of point {}, "
                      "which does not exist (the machine has {} memories)",
                      op.describe(), mem, r, op.domain.delinearize(coord_t(p)).str(),
                      rt_.instances().num_memories()));
    if (rt_.instances().shard_of(mem) != proc.shard)
      throw Error(fmt::format(
          "{}: the mapper chose memory {} for requirement {} of point {}, which belongs to "
          "shard {}; the point runs on shard {} (a task can use only its own shard's memories)",
          op.describe(), mem, r, op.domain.delinearize(coord_t(p)).str(),
          rt_.instances().shard_of(mem), proc.shard));
    if (info) check_access(op, p, r, mem, proc);
    op.point_instances.set(p * nreq + r, instance_for(q.tree, mem));
  }
}

void Analysis::check_access(const Op& op, std::size_t p, std::size_t r, MemoryID mem,
                            Processor proc) const {
  // A CPU reaches system and zero-copy memory; a GPU its shard's framebuffers and zero-copy
  // memory (on a real GPU anything else is a host or device address it cannot use, so the
  // host device backend refuses it too).
  const Memory& m = rt_.instances().memory(mem);
  const bool gpu = proc.kind == ProcessorKind::GPU;
  if (gpu ? m.kind != MemoryKind::System : m.kind != MemoryKind::Framebuffer) return;
  throw Error(fmt::format(
      "{}: the mapper chose memory {} ({}) for requirement {} of point {}, which runs on {}{}: "
      "a {} cannot use {} memory (choose {})",
      op.describe(), mem, m.name, r, op.domain.delinearize(coord_t(p)).str(), gpu ? "gpu" : "cpu",
      proc.index, gpu ? "GPU" : "CPU", gpu ? "system" : "framebuffer",
      gpu ? "a framebuffer or zero-copy memory (-ll:zsize)" : "a system or zero-copy memory"));
}

namespace {

// Gathers into fields/mask the field of needs[i] and of every later need that `same` accepts
// (one copy or fold carries them all), calls each(need) for them and marks them taken.
template <class Need, class Same, class Each>
void take_group(std::vector<Need>& needs, std::size_t i, Same&& same, FieldIndexList& fields,
                FieldMask& mask, Each&& each) {
  for (std::size_t j = i; j < needs.size(); ++j) {
    Need& n = needs[j];
    if (n.field < 0 || !same(n)) continue;
    fields.push_back(n.field);
    mask |= FieldMask(1) << n.field;
    each(n);
    n.field = -1;
  }
}

// A generated copy of `fields` of tree over rect, from src to dst.
OpRef make_copy(Op& for_op, std::uint32_t index, bool fold, std::uint32_t point, std::uint32_t name,
                std::uint32_t tree, std::uint32_t root_region, const FieldIndexList& fields,
                FieldMask mask, const Domain& rect, Instance* src, Instance* dst) {
  OpRef c = make_op();
  c->kind = OpKind::Copy;
  c->make_generated_copy(index, fold, for_op.local_completion ? &for_op : nullptr, point, name);
  c->counted = false;
  c->seq = for_op.seq;
  c->in_trace = for_op.in_trace;
  c->domain = Domain(Rect<1>({0}, {0}));
  ReqInfo q;
  q.tree = tree;
  q.region = root_region;
  q.privilege = Privilege::ReadOnly;
  q.field_indices = fields;
  q.mask = mask;
  q.bbox = rect;
  c->reqs.push_back(q);
  q.privilege = Privilege::WriteDiscard;
  c->reqs.push_back(std::move(q));
  c->point_rects.assign({rect, rect});
  c->point_instances.assign({src, dst});
  c->point_done.assign(1, kNoEvent);
  return c;
}
}  // namespace

void Analysis::launch_with_copies(const OpRef& ref, std::uint32_t p) {
  Op& op = *ref;
  names_.clear();
  const std::size_t nreq = op.reqs.size();
  pre_ready_ = !lazy_pre_ || procs_[p].shard == rt_.shard();
  // (Another shard's point analysed here: its folds and copies here take its waits of this
  // shard; the waits of the point itself are its own shard's business.)
  own_waits(p, point_pre_);
  // Control replication, untraced: another shard's point is analysed here only where it
  // meets this shard's data (copies out of it, folds; see PhysicalState::read). A recording
  // takes the points it analyses whole (the others, with -lg:shard_recording, for their
  // writes only: record_far_point): its facts are read after PhysicalState::drop_copies, from
  // the state every shard keeps alike.
  const bool elsewhere = local_uses_ && !graph_ && procs_[p].shard != rt_.shard();
  if (elsewhere && defer_) map_point(op, p);  // (its memories were left unchosen)
  const Processor copy_proc = rt_.config().utils > 1 || procs_[p].kind != ProcessorKind::CPU
                                  ? Processor{ProcessorKind::Utility, 0, procs_[p].shard}
                                  : procs_[p];
  for (std::size_t r = 0; r < nreq; ++r) {
    const ReqInfo& q = op.reqs[r];
    if (!reads_data(q.privilege)) continue;
    const Domain& rect = op.rect(p, r);
    Instance* dst = op.point_instances[p * nreq + r];
    const Domain& root = rt_.forest().region(rt_.forest().tree(q.tree).root).bounds;
    needs_.clear();
    folds_.clear();
    for (int fi : q.field_indices)
      physical_.read(q.tree, root, fi, rect, dst->memory(), point_pre_, needs_, folds_, elsewhere);
    copy_in(op, p, q, dst, copy_proc);
    fold_pending(op, p, r, copy_proc);
  }
  // Each reducer gets a reduction instance of its own over its rectangle in the chosen
  // memory: the first slot whose earlier contributions are all folded (or discarded).
  for (std::size_t r = 0; r < nreq; ++r) {
    const ReqInfo& q = op.reqs[r];
    if (q.privilege != Privilege::Reduce) continue;
    // Another shard's point analysed here for some of its requirements: a contribution that
    // meets none of this shard's data is deferred on its own (the launch's record of r holds
    // it as it would the whole point), so that applying it does not settle, one after the
    // other, the far contributions it meets.
    if (elsewhere && defer_ && !op.rect(p, r).empty() &&
        !contribution_meets_here(op, p, std::uint32_t(r))) {
      defer_contribution(ref, p, std::uint32_t(r));
      continue;
    }
    fold_earlier(op, p, r, copy_proc, elsewhere);
    const Domain& rect = op.rect(p, r);
    const std::uint32_t mem = op.point_instances[p * nreq + r]->memory();
    Instance* inst = free_reduction_instance(q.tree, mem, rect);
    if (auto it = eager_folds_.find(inst); it != eager_folds_.end()) {
      // (They read what the instance held before.)
      point_pre_.insert(point_pre_.end(), it->second.begin(), it->second.end());
      eager_folds_.erase(it);
    }
    op.point_instances.set(p * nreq + r, inst);
    const Domain& root = rt_.forest().region(rt_.forest().tree(q.tree).root).bounds;
    for (int fi : q.field_indices) physical_.reduced(q.tree, root, fi, rect, inst);
  }
  // Control replication: a point that runs here waits for the earlier accesses to its
  // instances that ran here, and is one of them for later accesses.
  const bool local = local_uses_ && procs_[p].shard == rt_.shard();
  auto each_access = [&](auto&& fn) {
    for (std::size_t r = 0; r < nreq; ++r)
      fn(op.point_instances[p * nreq + r], access_rect(op, p, r), op.reqs[r].mask,
         op.reqs[r].privilege != Privilege::ReadOnly);
  };
  if (local)
    each_access([&](const Instance* inst, const Domain& rect, FieldMask mask, bool writes) {
      local_uses_->conflicts(inst, rect, mask, writes, point_pre_);
    });
  // (Another shard's point of an op that completes locally gets no event: Executor::op.)
  const Event done = graph().op(op, p, procs_[p], point_pre_);
  for (std::size_t r = 0; r < nreq; ++r)
    if (op.reqs[r].privilege == Privilege::Reduce) {
      const Instance* inst = op.point_instances[p * nreq + r];
      // (Another shard's reducer, recorded: its folds here wait for the data its shard sends
      // once the reducer is done there, as untraced, where it has no event here.)
      if (done.exists() && !(local_uses_ && rt_.events().remote(done)))
        reducer_done_[inst] = done;
      else
        reducer_done_.erase(inst);
    }
  if (local)
    each_access([&](const Instance* inst, const Domain& rect, FieldMask mask, bool writes) {
      local_uses_->add(inst, rect, mask, writes, done);
    });
  apply_writes(op, p);
}

const Domain& Analysis::access_rect(const Op& op, std::uint32_t p, std::size_t r) {
  // An explicit copy writes only the source's rectangle of its destination.
  return op.kind == OpKind::Copy && r == 1 ? op.rect(p, 0) : op.rect(p, r);
}

template <class Fn>
void Analysis::each_write(const Op& op, std::uint32_t p, Fn&& fn) const {
  const std::size_t nreq = op.reqs.size();
  for (std::size_t r = 0; r < nreq; ++r) {
    const ReqInfo& q = op.reqs[r];
    if (q.privilege == Privilege::ReadOnly || q.privilege == Privilege::Reduce) continue;
    const Domain& root = rt_.forest().region(rt_.forest().tree(q.tree).root).bounds;
    const std::uint32_t mem = op.point_instances[p * nreq + r]->memory();
    for (int fi : q.field_indices) fn(q.tree, root, fi, access_rect(op, p, r), mem);
  }
}

void Analysis::apply_writes(const Op& op, std::uint32_t p) {
  each_write(op, p,
             [&](std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
                 std::uint32_t mem) { physical_.written(tree, root, fi, rect, mem); });
}

void Analysis::copy_in(Op& op, std::uint32_t p, const ReqInfo& q, Instance* dst,
                       Processor copy_proc) {
  const std::uint32_t root_region = rt_.forest().tree(q.tree).root;
  const Domain& root = rt_.forest().region(root_region).bounds;
  for (std::size_t i = 0; i < needs_.size(); ++i) {
    if (needs_[i].field < 0) continue;  // taken by an earlier copy
    FieldIndexList fields;
    FieldMask mask = 0;
    src_ready_.clear();
    const CopyNeed first = needs_[i];
    take_group(
        needs_, i,
        [&](const CopyNeed& n) { return n.src_mem == first.src_mem && n.rect == first.rect; },
        fields, mask,
        [&](const CopyNeed& n) {
          if (n.src_ready.exists()) src_ready_.push_back(n.src_ready);
        });
    Instance* src = instance_for(q.tree, first.src_mem);
    if (between_other_shards(*src, *dst)) {
      for (int fi : fields) physical_.copied(q.tree, root, fi, first.rect, dst->memory(), {});
      continue;
    }
    ensure_point_pre(op, p);
    own_waits(p, copy_pre_);
    copy_pre_.insert(copy_pre_.end(), src_ready_.begin(), src_ready_.end());
    OpRef c = make_copy(op, copies_made_++, false, p, next_name(src->memory()), q.tree, root_region,
                        fields, mask, first.rect, src, dst);
    order_copy(*c, mask);
    Event done = graph().copy(c, copy_proc, copy_pre_, p);
    note_copy(*c, mask, done);
    for (int fi : fields) physical_.copied(q.tree, root, fi, first.rect, dst->memory(), done);
    point_pre_.push_back(done);
  }
}

namespace {
// Calls fn(instance, writes) for each end of a generated copy that lies in this shard's
// memories (the source is read, the destination written).
template <class Fn>
void local_ends(const InstanceManager& im, const Op& copy, Fn&& fn) {
  for (std::size_t end = 0; end < 2; ++end)
    if (const Instance* inst = copy.point_instances[end]; im.is_local(inst->memory()))
      fn(inst, end == 1);
}
}  // namespace

void Analysis::ensure_point_pre(const Op& op, std::uint32_t p) {
  if (pre_ready_) return;
  pre_ready_ = true;
  const std::size_t had = pre_.of(p).size();
  logical_.dependences(op, pre_, PointSubset{p, std::size_t(p) + 1, nullptr});
  const auto all = pre_.of(p);
  point_pre_.insert(point_pre_.end(), all.begin() + std::ptrdiff_t(had), all.end());
}

bool Analysis::defer_reductions() const {
  return Config::on_for_shards(rt_.config().defer_reductions, rt_.num_shards(),
                               Config::kDeferReductionsShards);
}

bool Analysis::may_defer(const Op& op) const {
  if (!Config::on_for_shards(rt_.config().defer_writes, rt_.num_shards(),
                             Config::kDeferWritesShards) ||
      op.kind != OpKind::IndexTask || !op.local_completion || op.reqs.empty())
    return false;
  const std::size_t nreq = op.reqs.size();
  for (std::size_t r = 0; r < nreq; ++r) {
    const ReqInfo& q = op.reqs[r];
    if (q.privilege == Privilege::ReadOnly) continue;
    const bool reduce = q.privilege == Privilege::Reduce;
    if (reduce && !defer_reductions()) return false;
    // A deferred write names its points' pieces by color, and the pieces must not overlap
    // (a deferred point's write then touches no other point's piece of the launch).
    // Contributions may overlap: they are applied in the order eager application takes
    // (point, then requirement), with the numbers it gives them (DeferredReductions).
    if (!q.whole_partition || q.projection.kind() != Projection::Kind::Identity ||
        (!reduce && !rt_.forest().partition(q.partition).disjoint))
      return false;
    // A point of the launch that reads what another one writes would see the write or not
    // depending on which was deferred. (Reductions of one operator through several
    // requirements commute but for their order, which is kept.)
    for (std::size_t o = 0; o < nreq; ++o) {
      const ReqInfo& other = op.reqs[o];
      if (o == r || other.tree != q.tree || !(other.mask & q.mask)) continue;
      if (!reduce || other.privilege != Privilege::Reduce || other.redop != q.redop) return false;
    }
  }
  return true;
}

bool Analysis::records_per_shard() const {
  const Config& c = rt_.config();
  return c.shard_recording != 0 && rt_.network() && local_uses_ &&
         Config::on_for_shards(c.shard_checks, rt_.num_shards(), Config::kShardChecksShards);
}

bool Analysis::records_far_points(const Op& op) const {
  if (!records_per_shard() || op.kind != OpKind::IndexTask || !op.local_completion ||
      op.reqs.empty())
    return false;
  // (A contribution is analysed where it lands: its reduction instance and fold order. And a
  // read over pending contributions folds them — freeing reduction instances that every
  // shard must see freed alike, to choose the same ones later — so with any pending in the
  // tree every point is recorded whole.)
  for (const ReqInfo& q : op.reqs)
    if (q.privilege == Privilege::Reduce || physical_.has_pending(q.tree)) return false;
  return true;
}

void Analysis::record_far_point(const OpRef& ref, std::uint32_t p) {
  // Another shard's point whose reads meet none of this shard's data (no piece written here,
  // no pending reduction): its reads need copies between other shards only (a replay here
  // skips those, and their facts are about other shards' memories, which their shards read
  // and vote on). What every shard must still apply is its writes, in point order: the write
  // layer is the same on every shard. It gets no instruction in the template: it runs
  // elsewhere, and nothing here waits for it (an op that completes locally: every access
  // waits by data, Analysis::own_waits); it is done with here at once, now and at each replay
  // (ShardPlan::count_offs counts an op's points without an instruction).
  Op& op = *ref;
  rt_.executor().count_off(op, 1);
  if (record_defer_)
    defer_recorded_writes(ref, p);
  else
    apply_writes(op, p);
  rt_.count_far_recorded(record_defer_);
}

void Analysis::flush_recorded_deferrals(const OpRef& ref) {
  if (far_run_[0] >= far_run_[1]) return;
  open_deferred_launch(ref);
  for (std::uint32_t r = 0; r < deferred_launch_.size(); ++r)
    if (deferred_launch_[r] != kNoLaunch)
      physical_.defer_written(ref->reqs[r].tree, deferred_launch_[r], r, far_run_[0], far_run_[1]);
  far_run_ = {0, 0};
}

bool Analysis::defers_while_recording() const {
  return records_per_shard() && Config::on_for_shards(rt_.config().defer_writes, rt_.num_shards(),
                                                      Config::kDeferWritesShards);
}

void Analysis::defer_recorded_writes(const OpRef& ref, std::uint32_t p) {
  // (As untraced: the write is applied where this shard's analysis meets it, or at the next
  // settle of everything. The trace's effects hold it now, in point order, as apply_writes
  // would have journaled it: replays apply or defer it from there.)
  each_write(*ref, p,
             [&](std::uint32_t tree, const Domain& root, int fi, const Domain& rect,
                 std::uint32_t mem) { physical_.journal_written(tree, root, fi, rect, mem); });
  // (Consecutive far points are deferred as one range: flush_recorded_deferrals, before the
  // next point analysed whole, which may meet them, and at the launch's end.)
  if (far_run_[1] != p) flush_recorded_deferrals(ref);
  if (far_run_[0] >= far_run_[1]) far_run_[0] = p;
  far_run_[1] = p + 1;
}

bool Analysis::analysed_whole(const Op& op) const {
  // (Forced on, -lg:defer_writes 1 or -lg:defer_reductions 1 for a launch that reduces,
  // every launch defers: the tests' way to exercise deferral.)
  const Config& c = rt_.config();
  if (c.defer_writes >= 0) return false;
  for (const ReqInfo& q : op.reqs)
    if (q.privilege == Privilege::Reduce && c.defer_reductions >= 0) return false;
  const auto it = dense_tasks_.find(op.task);
  return it != dense_tasks_.end() && it->second;
}

void Analysis::note_density(const Op& op, std::size_t others, std::size_t analysed) {
  if (others > 0) dense_tasks_[op.task] = analysed * 2 > others;
}

bool Analysis::meets_nothing_here(const Op& op, std::uint32_t p) const {
  // Its reads would look only at the pieces this shard wrote and at pending reductions
  // (PhysicalState::read): if they meet none, only its writes remain, and they are deferred.
  // (Most of another shard's points are far from this shard's pieces: one test per
  // requirement. This runs once per point another shard owns.)
  bool near = false;
  for (const Reading& g : reading_) near = near || op.rect(p, g.req).overlaps(g.box);
  if (!near) return true;
  std::size_t k = 0;
  for (const Reading& g : reading_) {
    const ReqInfo& q = op.reqs[g.req];
    const Domain& rect = op.rect(p, g.req);
    for (int fi : q.field_indices)
      if (rect.overlaps(local_hulls_[k++]) &&
          physical_.meets_local(q.tree, fi, rect, g.written_over))
        return false;
  }
  return true;
}

bool Analysis::near_points(const Op& op, std::uint64_t own_first, std::uint64_t own_last) {
  near_.clear();
  for (const Reading& g : reading_) {
    if (g.box.empty()) continue;
    // (A read through anything but the launch's own colors of a partition: every point is
    // tested, one by one.)
    if (!op.reqs[g.req].whole_partition) return false;
    logical_.piece_index(op, g.req).candidates(g.box, [&](std::uint32_t c) {
      if ((c < own_first || c >= own_last) && op.rect(c, g.req).overlaps(g.box)) near_.push_back(c);
    });
  }
  std::sort(near_.begin(), near_.end());
  near_.erase(std::unique(near_.begin(), near_.end()), near_.end());
  return true;
}

void Analysis::open_deferred_launch(const OpRef& ref) {
  const Op& op = *ref;
  // (Opened at the first point deferred: most launches defer none on most shards.)
  if (!deferred_launch_.empty()) return;
  deferred_launch_.assign(op.reqs.size(), kNoLaunch);
  auto reductions = std::make_shared<DeferredReductions>();
  reductions->mark = op_reduce_mark_;
  for (std::uint32_t r = 0; r < op.reqs.size(); ++r) {
    const ReqInfo& q = op.reqs[r];
    if (q.privilege == Privilege::Reduce)
      reductions->reqs.push_back(DeferredReductions::Req{r, std::uint32_t(q.field_indices.size()),
                                                         reduce_began_[q.tree][0],
                                                         logical_.partition_pieces(op, r)});
  }
  if (!reductions->reqs.empty()) deferred_reductions_ = std::move(reductions);
  // (One place for all the launch's requirements: a point's contributions through several
  // requirements are applied in requirement order.)
  std::uint64_t launch = kNoLaunch;
  std::size_t k = 0;
  for (std::uint32_t r = 0; r < op.reqs.size(); ++r) {
    const ReqInfo& q = op.reqs[r];
    if (q.privilege == Privilege::ReadOnly) continue;
    const Domain& root = rt_.forest().region(rt_.forest().tree(q.tree).root).bounds;
    const PartitionNode& part = rt_.forest().partition(q.partition);
    const bool reduce = q.privilege == Privilege::Reduce;
    const Domain covers =
        !reduce && part.complete ? rt_.forest().region(part.parent_region).bounds : Domain();
    launch = deferred_launch_[r] =
        physical_.open_deferred(ref, r, root, logical_.partition_pieces(op, r), launch,
                                reduce ? deferred_reductions_ : nullptr, reduce ? k++ : 0, covers);
  }
}

void Analysis::defer_points(const OpRef& ref, std::uint32_t first, std::uint32_t last) {
  if (first >= last) return;
  const Op& op = *ref;
  open_deferred_launch(ref);
  deferred_count_ += last - first;
  // (The contributions of these points take their numbers now, as if applied.)
  if (deferred_reductions_) physical_.reserve_reductions(deferred_reductions_->calls(first, last));
  for (std::uint32_t r = 0; r < deferred_launch_.size(); ++r)
    if (deferred_launch_[r] != kNoLaunch)
      physical_.defer_written(op.reqs[r].tree, deferred_launch_[r], r, first, last);
}

bool Analysis::contribution_meets_here(const Op& op, std::uint32_t p, std::uint32_t r) const {
  const ReqInfo& q = op.reqs[r];
  const Domain& rect = op.rect(p, r);
  for (int fi : q.field_indices)
    if (physical_.meets_local(q.tree, fi, rect, true)) return true;
  return false;
}

void Analysis::defer_contribution(const OpRef& ref, std::uint32_t p, std::uint32_t r) {
  const Op& op = *ref;
  open_deferred_launch(ref);
  // (Its number is taken now, between the point's earlier and later contributions, as
  // DeferredReductions::order gives it.)
  physical_.reserve_reductions(op.reqs[r].field_indices.size());
  physical_.defer_written(op.reqs[r].tree, deferred_launch_[r], r, p, p + 1);
}

void Analysis::close_deferred(Op& op) {
  if (deferred_count_ > 0) {
    rt_.executor().count_off(op, std::uint32_t(deferred_count_));
    rt_.count_deferred(deferred_count_);
  }
  deferred_count_ = 0;
  for (std::uint32_t r = 0; r < deferred_launch_.size(); ++r)
    if (deferred_launch_[r] != kNoLaunch)
      physical_.close_deferred(op.reqs[r].tree, deferred_launch_[r], r);
  deferred_launch_.clear();
  deferred_reductions_.reset();
}

namespace {
MapperTaskInfo point_info(const Op& op, std::uint32_t p) {
  MapperTaskInfo info = launch_info(op);
  info.point = op.domain.delinearize(coord_t(p));
  info.point_index = p;
  return info;
}
}  // namespace

Processor Analysis::processor_of(const Op& op, std::uint32_t p) {
  return select_processor(op, point_info(op, p), rt_.machine());
}

Processor Analysis::select_processor(const Op& op, const MapperTaskInfo& info,
                                     const MachineInfo& machine) const {
  if (const std::uint32_t pinned = pinned_memory(op); pinned != kInvalidId)
    return Processor{ProcessorKind::CPU, 0, rt_.instances().shard_of(pinned)};
  return rt_.mapper().select_processor(info, machine);
}

void Analysis::map_point(Op& op, std::uint32_t p) {
  const MapperTaskInfo info = point_info(op, p);
  const MachineInfo& machine = rt_.machine();
  // (The mapper is a function of the point: the processor the launch's analysis got.)
  choose_memories(op, p, &info, machine, select_processor(op, info, machine));
}

void Analysis::map_deferred(void* self, Op& op, std::uint32_t p) {
  static_cast<Analysis*>(self)->map_point(op, p);
}

Instance* Analysis::free_reduction_instance(std::uint32_t tree, std::uint32_t mem,
                                            const Domain& rect) {
  Instance* inst = nullptr;
  for (std::uint32_t slot = 0;; ++slot) {
    inst = rt_.instances().reduction_instance(rt_.forest(), tree, mem, rect, slot);
    // (An empty rectangle's instance holds nothing: any slot will do.)
    if (rect.empty() || !physical_.in_use(tree, rect, inst, slot == 0)) return inst;
  }
}

Instance* Analysis::reduce_deferred(void* self, const DeferredWrites::Taken& w) {
  Analysis& a = *static_cast<Analysis*>(self);
  Op& op = *w.op;
  const std::size_t nreq = op.reqs.size(), at = std::size_t(w.order.point) * nreq + w.order.req;
  const ReqInfo& q = op.reqs[w.order.req];
  const Domain& root = a.rt_.forest().region(a.rt_.forest().tree(q.tree).root).bounds;
  // (Its memories were chosen when it was taken: DeferredWrites::take.)
  const std::uint32_t mem = op.point_instances[at]->memory();
  a.physical_.fold_older(q.tree, root, q.field_indices, w.rect, w.older, w.mark, mem);
  Instance* inst = a.free_reduction_instance(q.tree, mem, w.rect);
  op.point_instances.set(at, inst);
  // (As launch_with_copies leaves them for another shard's point.)
  a.eager_folds_.erase(inst);
  a.reducer_done_.erase(inst);
  return inst;
}

void Analysis::own_waits(std::uint32_t p, std::vector<Event>& out) {
  out.clear();
  // Control replication (untraced or recorded): a point, or a half of a copy, touches only its
  // own shard's instances, and waits for the point's waits of this shard alone (the data's
  // writer, a fence, a replay's summary; LocalUses adds the accesses to the instance).
  // Another shard's point orders nothing here that the data does not: a receive half waits
  // for the data, which the send half sent once its own shard's waits held. (An ask and an
  // answer saved per wait, and a send half no longer waits a round trip for the reader's.)
  for (Event e : pre_.of(p))
    if (!local_uses_ || !rt_.events().remote(e)) out.push_back(e);
}

bool Analysis::between_other_shards(const Instance& src, const Instance& dst) {
  // Untraced only: a template records every copy (each shard replays its own part of it).
  if (!local_uses_ || graph_) return false;
  const InstanceManager& im = rt_.instances();
  const std::uint32_t from = im.shard_of(src.memory()), to = im.shard_of(dst.memory());
  // (Its name is not taken: names count per source shard, see GeneratedCopy.)
  return from != rt_.shard() && to != rt_.shard();
}

std::uint32_t Analysis::next_name(std::uint32_t src_mem) {
  const std::uint32_t shard = rt_.instances().shard_of(src_mem);
  for (auto& [s, named] : names_)
    if (s == shard) return named++;
  names_.emplace_back(shard, 1);
  return 0;
}

void Analysis::order_copy(const Op& copy, FieldMask mask) {
  if (!local_uses_) return;
  local_ends(rt_.instances(), copy, [&](const Instance* inst, bool writes) {
    local_uses_->conflicts(inst, copy.rect(0, 0), mask, writes, copy_pre_);
  });
}

void Analysis::note_copy(const Op& copy, FieldMask mask, Event done) {
  if (!local_uses_) return;
  local_ends(rt_.instances(), copy, [&](const Instance* inst, bool writes) {
    local_uses_->add(inst, copy.rect(0, 0), mask, writes, done);
  });
}

void Analysis::fold_earlier(Op& op, std::uint32_t p, std::size_t r, Processor copy_proc,
                            bool elsewhere) {
  const ReqInfo& q = op.reqs[r];
  const Domain& rect = op.rect(p, r);
  // (Contributions that began at or before `older` are from before the previous launch; none
  // where this launch reduces there already: folded later.)
  const FieldIndexList fields = physical_.older_pending_fields(
      q.tree, q.field_indices, rect, reduce_began_[q.tree][0], op_reduce_mark_);
  if (fields.empty()) return;
  // As a read of those fields into the requirement's instance in its memory would: the data
  // copied in, then the folds, in launch order (the fold order of every element is the one a
  // later read would have taken). The point waits for them: it may take over an instance they
  // read, and what waits for it (a read, a write) waits for the folded data.
  Instance* dst = op.point_instances[p * op.reqs.size() + r];
  const Domain& root = rt_.forest().region(rt_.forest().tree(q.tree).root).bounds;
  needs_.clear();
  folds_.clear();
  for (int fi : fields)
    physical_.read(q.tree, root, fi, rect, dst->memory(), point_pre_, needs_, folds_, elsewhere);
  copy_in(op, p, q, dst, copy_proc);
  // The folds wait for the reducers they fold (nothing else orders a reducer after them).
  for (const FoldNeed& n : folds_)
    for (const Instance* red : physical_.pending_list(n.list))
      if (auto it = reducer_done_.find(red); it != reducer_done_.end())
        point_pre_.push_back(it->second);
  fold_pending(op, p, r, copy_proc, true);
}

void Analysis::fold_pending(Op& op, std::uint32_t p, std::size_t r, Processor copy_proc,
                            bool eager) {
  // Reduction instances are folded into the reader's instance one after the other, in the
  // order their reducers were launched: the result does not depend on timing. Each instance is
  // folded once over what it has pending in the read (not once per fragment of it: a read
  // whose rectangle many reducers' rectangles cut would otherwise take fragments × reducers
  // folds); every pending list keeps its instances in that order, so each element still sees
  // its contributions in launch order.
  if (folds_.empty()) return;
  const ReqInfo& q = op.reqs[r];
  Instance* dst = op.point_instances[p * op.reqs.size() + r];
  const std::uint32_t root_region = rt_.forest().tree(q.tree).root;
  const Domain& root = rt_.forest().region(root_region).bounds;
  fold_parts_.clear();
  for (const FoldNeed& n : folds_)
    for (Instance* red : physical_.pending_list(n.list))
      fold_parts_.push_back(FoldPart{physical_.reduction_order(red), red, n.field, n.rect});
  // By instance (launch order), then field; a field's fragments in the read's piece order.
  std::stable_sort(fold_parts_.begin(), fold_parts_.end(),
                   [](const FoldPart& a, const FoldPart& b) {
                     return a.order != b.order ? a.order < b.order : a.field < b.field;
                   });
  Event last;
  auto fold = [&](Instance* red, const FieldIndexList& fields, FieldMask mask, const Domain& rect) {
    if (between_other_shards(*red, *dst)) {
      last = kNoEvent;  // (what the executor gave such a fold: the next waits for nothing)
      return;
    }
    ensure_point_pre(op, p);
    // The first fold waits for the data it folds into (copies and earlier folds, in
    // point_pre_); each later one for the fold before it, which waited for all that (a wait
    // for every input per fold made templates of many folds carry reducers × folds edges).
    if (last.exists())
      copy_pre_.assign(1, last);
    else
      copy_pre_.assign(point_pre_.begin(), point_pre_.end());
    OpRef c = make_copy(op, copies_made_++, true, p, next_name(red->memory()), q.tree, root_region,
                        fields, mask, rect, red, dst);
    order_copy(*c, mask);
    last = graph().copy(c, copy_proc, copy_pre_, p);
    note_copy(*c, mask, last);
    if (eager && last.exists()) eager_folds_[red].push_back(last);
  };
  // The end of the run of parts from `at` that share its instance (or field, with `field`).
  auto run_end = [&](std::size_t at, std::size_t end, bool field) {
    std::size_t e = at;
    while (e < end && fold_parts_[e].red == fold_parts_[at].red &&
           (!field || fold_parts_[e].field == fold_parts_[at].field))
      ++e;
    return e;
  };
  auto same_rects = [&](std::size_t a, std::size_t a_end, std::size_t b, std::size_t b_end) {
    return a_end - a == b_end - b &&
           std::equal(fold_parts_.begin() + std::ptrdiff_t(a),
                      fold_parts_.begin() + std::ptrdiff_t(a_end),
                      fold_parts_.begin() + std::ptrdiff_t(b),
                      [](const FoldPart& x, const FoldPart& y) { return x.rect == y.rect; });
  };
  // Folds the fragments [f, f_end) of one instance for `fields`: the fragments are disjoint,
  // so when their volumes fill their bounding box that box is their union and one copy folds
  // it; otherwise one copy per fragment.
  auto fold_fragments = [&](std::size_t f, std::size_t f_end, const FieldIndexList& fields,
                            FieldMask mask) {
    Domain box;
    coord_t volume = 0;
    for (std::size_t k = f; k < f_end; ++k) {
      box = bounding_union(box, fold_parts_[k].rect);
      volume += fold_parts_[k].rect.volume();
    }
    if (volume == box.volume()) return fold(fold_parts_[f].red, fields, mask, box);
    for (std::size_t k = f; k < f_end; ++k)
      fold(fold_parts_[f].red, fields, mask, fold_parts_[k].rect);
  };
  for (std::size_t i = 0; i < fold_parts_.size();) {
    const std::size_t end = run_end(i, fold_parts_.size(), false);
    for (std::size_t f = i; f < end;) {
      // This field's fragments, and the following fields with the same ones: one copy each.
      const std::size_t f_end = run_end(f, end, true);
      FieldIndexList fields{fold_parts_[f].field};
      FieldMask mask = FieldMask(1) << fold_parts_[f].field;
      std::size_t next = f_end;
      for (std::size_t n_end;
           next < end && same_rects(f, f_end, next, n_end = run_end(next, end, true));
           next = n_end) {
        fields.push_back(fold_parts_[next].field);
        mask |= FieldMask(1) << fold_parts_[next].field;
      }
      fold_fragments(f, f_end, fields, mask);
      f = next;
    }
    i = end;
  }
  // (The last fold of the chain follows every earlier one.)
  for (const FoldNeed& n : folds_)
    physical_.folded(q.tree, root, n.field, n.rect, dst->memory(), last);
  point_pre_.push_back(last);
}

namespace {
struct PendingReduce {
  Runtime* rt;
  OpRef op;
};
void finish_reduce(void* ctx, std::uint64_t) {
  PoolPtr<PendingReduce> pr(static_cast<PendingReduce*>(ctx));
  Op& op = *pr->op;
  const auto& map = *op.future_reduce().source.state();
  if (!map.error) {
    try {
      // (One process: gathers are made under control replication only.)
      op.future->value = fold_in_point_order(
          map.values.size(), [&](std::size_t i) -> const TaskResult& { return map.values[i]; },
          map.kind, op.future_reduce().op);
    } catch (...) {
      op.error = std::current_exception();
      pr->rt->record_error(op.error);
    }
  } else {
    op.error = map.error;
  }
  pr->rt->op_completed(op);
}
}  // namespace

void Analysis::reduce_futures(const OpRef& op) {
  remember_done(op->done);
  const auto& map = *op->future_reduce().source.state();
  // Control replication: each shard holds only its own points' values.
  if (map.sharded) {
    rt_.exchange()->reduce(op);
    return;
  }
  auto pr = make_pooled<PendingReduce>(PendingReduce{&rt_, op});
  PendingReduce* raw = pr.release();
  if (map.ready.load(std::memory_order_acquire) ||
      !rt_.events().add_waiter(map.ready_event, &finish_reduce, raw, 0))
    finish_reduce(raw, 0);
}

namespace {
struct PendingCompletion {
  Runtime* rt;
  OpRef op;
  std::uint32_t tree;
};
void complete_fence(void* ctx, std::uint64_t) {
  PoolPtr<PendingCompletion> pc(static_cast<PendingCompletion*>(ctx));
  pc->rt->op_completed(*pc->op);
}
void complete_destroy(void* ctx, std::uint64_t) {
  PoolPtr<PendingCompletion> pc(static_cast<PendingCompletion*>(ctx));
  pc->rt->instances().release_tree(pc->tree);
  pc->rt->op_completed(*pc->op);
}
void when_triggered(Runtime& rt, Event e, WaiterFn fn, PendingCompletion* pc) {
  if (!rt.events().add_waiter(e, fn, pc, 0)) fn(pc, 0);
}
}  // namespace

void Analysis::fence(const OpRef& op) {
  drop_completed();
  if (fence_event_.exists()) since_fence_.push_back(fence_event_);
  Event all = graph().fence(since_fence_);
  since_fence_.clear();
  last_full_fence_ = kNoEvent;
  compact_at_ = 64;
  // Everything before the fence completes before anything after it starts, so no earlier
  // user matters to later ops: they wait on the fence instead.
  logical_.clear();
  if (local_uses_) local_uses_->clear();
  fence_event_ = op->done;
  since_fence_.push_back(op->done);
  full_from_ = since_fence_.size();  // the fence op covers everything now (fence_event_)
  auto pc = make_pooled<PendingCompletion>(PendingCompletion{&rt_, op, 0});
  when_triggered(rt_, all, &complete_fence, pc.release());
}

void Analysis::destroy_region(const OpRef& op) {
  if (const std::uint64_t partition = op->destroyed_partition()) {
    // Only the partition's nodes go: every op that reads them was issued, and is analysed,
    // before this one (earlier users keep their own rectangles).
    logical_.forget_partition(partition);
    rt_.op_completed(*op);
    return;
  }
  std::uint32_t tree = op->destroyed_tree();
  std::vector<Event> users;
  logical_.users_of(tree, users);
  if (fence_event_.exists()) users.push_back(fence_event_);
  Event all = graph().merge(users);
  logical_.forget_tree(tree);
  physical_.forget_tree(tree);
  if (local_uses_) local_uses_->forget_tree(tree);
  // (Its reduction instances go with it.)
  std::erase_if(reducer_done_, [&](const auto& e) { return e.first->tree() == tree; });
  std::erase_if(eager_folds_, [&](const auto& e) { return e.first->tree() == tree; });
  if (tree < reduce_began_.size()) reduce_began_[tree] = {0, 0};
  const std::size_t mems = rt_.instances().num_memories();
  for (std::size_t m = 0; m < mems; ++m)
    if (tree * mems + m < instance_cache_.size()) instance_cache_[tree * mems + m] = nullptr;
  remember_done(op->done);
  auto pc = make_pooled<PendingCompletion>(PendingCompletion{&rt_, op, tree});
  when_triggered(rt_, all, &complete_destroy, pc.release());
}

}  // namespace reprise::detail

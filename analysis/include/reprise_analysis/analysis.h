#pragma once
// The analysis stage of the pipeline: logical dependence analysis, mapping, the physical
// analysis (instances per memory, the copies that make them valid) and emission of the graph
// calculus.
#include <array>
#include <memory>
#include <unordered_map>
#include <vector>

#include "reprise_analysis/logical.h"
#include "reprise_analysis/physical.h"
#include "reprise_rt/graph.h"
#include "reprise_rt/runtime.h"

namespace reprise::detail {

class LocalUses;

class Analysis final : public OpSink {
 public:
  explicit Analysis(Runtime& rt);
  ~Analysis() override;
  void submit(const OpRef& op) override;

  // Routes emission through g (the memoizer's recorder) until reset with nullptr.
  void set_graph(GraphSink* g);
  const LogicalAnalysis& logical() const { return logical_; }
  const RegionForest& forest() const { return rt_.forest(); }

  // For the memoizer, which replays ops without analysing them:
  // an event that triggers once every op analysed or replayed so far has completed;
  Event full_fence();
  // that a replayed op's completion is part of what the next fence waits for;
  void remember_done(Event e);
  // the summary of replayed ops: a user of each tree and field they touched;
  void record_summary(const OpRef& summary);
  // the instance of `tree` in memory `mem` (what a template recorded must still be it);
  // (inline where it is known: every launch asks, once per requirement)
  Instance* instance_for(std::uint32_t tree, std::uint32_t mem) {
    const std::size_t at = std::size_t(tree) * rt_.instances().num_memories() + mem;
    if (at < instance_cache_.size() && instance_cache_[at]) [[likely]]
      return instance_cache_[at];
    return find_instance(tree, mem);
  }
  // the physical state (valid instances), which replays check and update.
  PhysicalState& physical() { return physical_; }
  // Control replication, -lg:shard_recording with deferred writes: a recording defers other
  // shards' writes (as untraced), so the writes deferred before it stay so
  // (PhysicalState::start_journal(true), drop_copies(true)).
  bool defers_while_recording() const;

 private:
  // submit() for everything but launches (fences, marks, destructions, summaries, flushes).
  [[gnu::noinline]] void submit_other(const OpRef& op);
  void analyse_points(const OpRef& op);
  // analyse_points once its points are mapped, unless they ran eagerly: their dependences,
  // copies and launch. (Apart, and out of line, so that an eager launch's path stays short.)
  [[gnu::noinline]] void analyse_mapped(const OpRef& op, bool physical, bool ranged,
                                        std::uint64_t own_first, std::uint64_t own_last);
  // Where each reduced tree's current contributions began (reduce_began_), for op's
  // reductions.
  void note_reductions_began(const Op& op);
  // Eager launches (-lg:eager): the op (a task, fill or copy), its points mapped, is the only
  // one in flight, on one memory, not recorded, its futures ready and its points on the CPU
  // the application thread serves — then nothing it could wait for is pending, and nothing
  // later can wait for it once it has run: run_eagerly runs its points now, with no
  // dependence analysis, events or queue, and forgets the users (all completed) that later
  // launches would otherwise meet.
  // (Both inlined into analyse_points, their one caller: two calls less on every eager launch.)
  [[gnu::always_inline]] inline bool may_run_eagerly(const Op& op, std::size_t points);
  [[gnu::always_inline]] inline void run_eagerly(const OpRef& op, std::size_t points);
  // Maps point p's requirements to memories (several memories only).
  void choose_memories(Op& op, std::size_t p, const MapperTaskInfo* info,
                       const MachineInfo& machine, Processor proc);
  // Chooses the memories of point p of op (a task launch) now: another shard's point whose
  // mapping was left until something here needs it (deferred writes, proxies).
  void map_point(Op& op, std::uint32_t p);
  // The processor the mapper gives point p of op (a task launch), asked now: another shard's
  // point that was not asked while the launch was mapped (Mapper::shard_points).
  Processor processor_of(const Op& op, std::uint32_t p);
  // The mapper's processor for a point, or, for a task pinned to a memory (TaskPayload::
  // pinned_memory), the first CPU of that memory's shard.
  Processor select_processor(const Op& op, const MapperTaskInfo& info,
                             const MachineInfo& machine) const;
  static constexpr std::uint32_t kUnmapped = UINT32_MAX;  // procs_[p].shard: not asked yet
  static void map_deferred(void* self, Op& op, std::uint32_t p);
  // A deferred contribution, applied: what launch_with_copies does for a point whose folds are
  // all between other shards — fold_earlier's effect on the state, the reduction instance
  // (PhysicalState::set_reduce_point).
  static Instance* reduce_deferred(void* self, const DeferredWrites::Taken& w);
  // The reduction instance of (tree, mem, rect) a reducer takes: the first slot with no
  // contributions pending inside rect.
  Instance* free_reduction_instance(std::uint32_t tree, std::uint32_t mem, const Domain& rect);
  // A clear error when point p's processor cannot use memory mem for requirement r.
  void check_access(const Op& op, std::size_t p, std::size_t r, MemoryID mem, Processor proc) const;
  // Launches point p after the copies that make its instances valid; updates the state.
  void launch_with_copies(const OpRef& op, std::uint32_t p);
  // Copies what a read of requirement q found missing (needs_) into dst: one copy per
  // rectangle and source memory, carrying every field that needs it; point p waits for each.
  void copy_in(Op& op, std::uint32_t p, const ReqInfo& q, Instance* dst, Processor copy_proc);
  // Folds the pending reductions a read of requirement r found (folds_) into its instance;
  // `eager`: for a reducer (fold_earlier), which notes what each fold read (eager_folds_).
  void fold_pending(Op& op, std::uint32_t p, std::size_t r, Processor copy_proc,
                    bool eager = false);
  // Before point p reduces through requirement r: where contributions of a launch before the
  // previous one reducing into the tree are pending over its rectangle, everything earlier
  // launches have pending there is folded into the region first (into the requirement's
  // instance in its memory), in launch order. So a loop that reduces every iteration and
  // reads after it keeps at most two launches' contributions pending, not one per iteration
  // (and its traces find the states they started from), while two launches in a row that
  // reduce with one operator still run side by side (they commute). Parts where this
  // launch's earlier points have contributions pending are left for a later fold: the points
  // of one launch do not wait for one another.
  void fold_earlier(Op& op, std::uint32_t p, std::size_t r, Processor copy_proc, bool elsewhere);
  void reduce_futures(const OpRef& op);
  // Drops the completed events of since_fence_.
  void drop_completed();
  Instance* find_instance(std::uint32_t tree, std::uint32_t mem);  // (instance_for's miss)
  // Control replication, untraced: a copy between two other shards' memories is not made at
  // all (nothing here would run or wait for it).
  bool between_other_shards(const Instance& src, const Instance& dst);
  // The name of the current point's next copy out of memory src_mem (GeneratedCopy::name).
  std::uint32_t next_name(std::uint32_t src_mem);
  // Control replication: orders a generated copy after the earlier accesses to its instances
  // that run here (adds to copy_pre_), and records it once launched (done).
  void order_copy(const Op& copy, FieldMask mask);
  // Control replication, untraced: computes the logical preconditions of another shard's
  // point p (into pre_ and point_pre_) the first time a copy with a half here needs them.
  void ensure_point_pre(const Op& op, std::uint32_t p);
  // out := point p's preconditions that a point or copy half of this shard waits for.
  void own_waits(std::uint32_t p, std::vector<Event>& out);
  // Control replication, untraced: whether op's other-shard points may be left unanalysed when
  // they meet none of this shard's data (see PhysicalState::defer_written), and whether point
  // p is such a point.
  bool may_defer(const Op& op) const;
  // Whether launches that reduce may be deferred too (-lg:defer_reductions).
  bool defer_reductions() const;
  bool meets_nothing_here(const Op& op, std::uint32_t p) const;
  // Control replication, a recording with -lg:shard_recording: whether op's other-shard
  // points whose reads meet none of this shard's data are recorded with their writes only
  // (record_far_point) — the shards vote on every check of the template, so each may record
  // only the facts about its own data.
  bool records_far_points(const Op& op) const;
  // -lg:shard_recording is on for this run (with the checks voted: -lg:shard_checks).
  bool records_per_shard() const;
  void record_far_point(const OpRef& op, std::uint32_t p);
  // Point p's writes journaled as the trace's effects and deferred (a far point recorded,
  // where the launch may defer: record_defer_), applied when something here meets them.
  void defer_recorded_writes(const OpRef& op, std::uint32_t p);
  // Defers the run of far points defer_recorded_writes has gathered (far_run_), if any.
  void flush_recorded_deferrals(const OpRef& op);
  // The rectangle point p of op accesses through requirement r.
  static const Domain& access_rect(const Op& op, std::uint32_t p, std::size_t r);
  // fn(tree, root, field index, rectangle, memory) for each field point p writes (not its
  // reductions), requirement by requirement.
  template <class Fn>
  void each_write(const Op& op, std::uint32_t p, Fn&& fn) const;
  // Point p's writes to the physical state (each_write).
  void apply_writes(const Op& op, std::uint32_t p);
  // Deferral on auto: whether op's task is dense here — at its last launch most of the other
  // shards' points met this shard's data (a circuit whose wires reach any piece). Deferring
  // such a launch saves little and costs much (what is deferred is applied soon after, a
  // contribution at a time, each settle looking through the launch's records), so it is
  // analysed whole; each launch, deferred or whole, measures again (note_density: how many of
  // the other shards' points were analysed, or would have been: meets_nothing_here).
  bool analysed_whole(const Op& op) const;
  void note_density(const Op& op, std::size_t others, std::size_t analysed);
  // Control replication, untraced, deferred writes with a mapper that gives its shards'
  // ranges: fills near_ with the other shards' points (outside own_first .. own_last-1) whose
  // reads may meet this shard's data, found from the pieces' index rather than point by point;
  // false when a read is not through the launch's own colors of a partition.
  bool near_points(const Op& op, std::uint64_t own_first, std::uint64_t own_last);
  // Point p of op: launched here, or deferred (another shard's point that meets nothing here).
  void analyse_point(const OpRef& op, std::uint32_t p, bool physical);
  // Control replication, untraced: points first .. last-1 of op are not analysed here; their
  // writes are deferred (PhysicalState::defer_written). close_deferred: op's analysis is over.
  void defer_points(const OpRef& op, std::uint32_t first, std::uint32_t last);
  // Opens op's deferred launch (one place for its records) at its first deferral.
  void open_deferred_launch(const OpRef& op);
  // Another shard's point p, analysed here: whether its contribution through requirement r
  // meets this shard's data (PhysicalState::meets_local), and deferring it when not.
  bool contribution_meets_here(const Op& op, std::uint32_t p, std::uint32_t r) const;
  void defer_contribution(const OpRef& op, std::uint32_t p, std::uint32_t r);
  void close_deferred(Op& op);
  void note_copy(const Op& copy, FieldMask mask, Event done);
  void fence(const OpRef& op);
  void destroy_region(const OpRef& op);
  // The memoizer's recorder when set, else the runtime's executor.
  GraphSink& graph() { return graph_ ? *graph_ : rt_.graph(); }

  Runtime& rt_;
  GraphSink* graph_ = nullptr;
  LogicalAnalysis logical_;
  PointPreconditions pre_;
  std::vector<Processor> procs_;
  std::vector<Instance*> instance_cache_;  // [tree * memories + memory]
  PhysicalState physical_;
  std::unique_ptr<LocalUses> local_uses_;  // control replication only
  std::vector<Event> point_pre_, copy_pre_, src_ready_;
  bool lazy_pre_ = false;                   // the op's other-shard points wait for ensure_point_pre
  bool pre_ready_ = false;                  // the current point's logical preconditions are in pre_
  std::vector<std::uint32_t> mine_points_;  // the points of the op that run on this shard
  bool defer_ = false;                      // may_defer(the op being analysed)
  bool whole_ = false;                      // ... but analysed whole here (analysed_whole)
  bool record_far_ = false;                 // records_far_points(the op being analysed)
  bool record_defer_ = false;               // ... and its far points' writes are deferred
  std::array<std::uint32_t, 2> far_run_{};  // ... those not yet deferred: points [first, last)
  std::size_t met_ = 0;  // ... then its other shards' points that meet this shard's data
  std::unordered_map<TaskID, bool> dense_tasks_;  // per task: analysed_whole
  // Per requirement of that op: its deferred launch (PhysicalState::open_deferred), once a
  // point was deferred; empty until then.
  static constexpr std::uint64_t kNoLaunch = UINT64_MAX;
  std::vector<std::uint64_t> deferred_launch_;
  std::uint64_t deferred_count_ = 0;                               // points of that op deferred
  std::shared_ptr<const DeferredReductions> deferred_reductions_;  // of that op, if it reduces
  // Per field of each reading requirement of that op, in order: PhysicalState::local_hull;
  // per reading requirement, the bounding box of its fields' hulls.
  std::vector<Domain> local_hulls_;
  struct Reading {
    std::uint32_t req;
    Domain box;
    bool written_over;  // PhysicalState::meets_local
  };
  std::vector<Reading> reading_;
  std::vector<std::uint32_t> near_;  // near_points
  std::vector<CopyNeed> needs_;
  std::vector<FoldNeed> folds_;
  // fold_pending: a fragment of a read over which a reduction instance has contributions.
  struct FoldPart {
    std::uint64_t order;  // PhysicalState::reduction_order
    Instance* red;
    int field;
    Domain rect;
  };
  std::vector<FoldPart> fold_parts_;
  // PhysicalState::reduce_mark when the op being analysed began: contributions up to it are
  // earlier launches' (fold_earlier).
  std::uint64_t op_reduce_mark_ = 0;
  // Per tree: reduce_mark when the last two ops reducing into it began ([0] the earlier).
  std::vector<std::array<std::uint64_t, 2>> reduce_began_;
  // The point that last reduced into each reduction instance (its completion), which a fold
  // of it made by a later reducer waits for: reducers with one operator do not wait for one
  // another. (An instance a replay reduced into has none: the replays' summary orders the
  // next reducer after them.)
  std::unordered_map<const Instance*, Event> reducer_done_;
  // The folds out of each reduction instance made by reducers (fold_earlier) since it was
  // last taken over — several points may each fold a part of it —: the reducer that takes
  // the instance over waits for them (nothing else orders it after their reducers).
  std::unordered_map<const Instance*, std::vector<Event>> eager_folds_;
  std::uint32_t copies_made_ = 0;  // for the op being analysed
  // For the point being analysed: per source shard, the copies named so far.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> names_;
  std::vector<Event> since_fence_;  // completion of every op since the last fence
  // The last full_fence() (it covers everything before it), and where the completions since
  // it begin in since_fence_ (one list, not two: every op's completion was pushed twice).
  Event last_full_fence_;
  std::size_t full_from_ = 0;
  std::vector<Event> full_fence_events_;  // (full_fence()'s scratch)
  std::size_t compact_at_ = 64;
  Event fence_event_;  // the last fence's completion
};

}  // namespace reprise::detail

#pragma once
// The memoizer stage: sits in front of the analysis on the utility thread. Ops between
// begin_trace and end_trace are held; at end_trace they are compared by token with the trace's
// templates and either replayed from a matching template (no analysis, no mapper call, no
// instance search) or analysed normally while a new template is recorded.
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "reprise_analysis/analysis.h"
#include "reprise_memoizer/recorder.h"
#include "reprise_memoizer/trace_template.h"

namespace reprise::detail {

class ShardVote;

class Memoizer final : public OpSink {
 public:
  Memoizer(Runtime& rt, std::unique_ptr<Analysis> analysis);
  ~Memoizer() override;
  Memoizer(const Memoizer&) = delete;
  Memoizer& operator=(const Memoizer&) = delete;
  void submit(const OpRef& op) override;
  // An op between a trace's marks (Runtime::issue, AutoTraceStage): buffered.
  void hold_in_trace(OpRef op) override;
  // Leaves a trace begun ahead of its ops (the automatic tracing stage follows a loop's run
  // that way: AutoTraceStage::follow) as if it had never begun: its buffered ops are
  // appended to `into`, untouched, and the state before its BeginTrace is back.
  void withdraw_trace(std::deque<OpRef>& into);

  // For tests and tools.
  const std::list<std::unique_ptr<TraceTemplate>>* templates(TraceID id) const;
  // A template not replayed within this many uses (replays and recordings) after it was
  // recorded is dropped (drop_unreplayed). Generous: a trace of an outer loop replays only
  // after its inner loop's many replays.
  static constexpr std::uint64_t kUnreplayedBound = 1024;

 private:
  void begin(const OpRef& op);
  void end(const OpRef& op);
  void forward(const OpRef& op);
  // submit() for marks, flushes and launches inside a trace.
  [[gnu::noinline]] void submit_other(const OpRef& op);
  // Completes the held ops not yet launched (after an error) and leaves the trace.
  void release_buffer();
  // The buffered ops' template whose conditions hold, or null; with prefix, a longer
  // template whose first ops they are (a single process only).
  TraceTemplate* match(TraceID id, bool prefix);
  // The buffered ops of a prefix trace that no template begins with: analysed untraced.
  void forward_buffer();
  bool same_ops_ = false;  // match() found templates with the buffered ops (conditions failed)
  // Whether t may replay now (-lg:shard_checks: this shard's part read here, the verdict
  // voted on).
  bool conditions_hold(const TraceTemplate& t);
  // Control replication: before a template is recorded, every memory forgets its copies of
  // data other memories wrote (PhysicalState::drop_copies), once per trace, so that every
  // shard's recording sees the same state. (A check reads the facts as if they were dropped.)
  void drop_copies_once();
  bool copies_dropped_ = false;
  // -lg:defer_replays under control replication (a replay defers other shards' writes).
  bool defer_replays() const {
    return Config::on_for_shards(rt_.config().defer_replays, rt_.num_shards(),
                                 Config::kDeferReplaysShards);
  }
  // -lg:shard_checks under control replication: each shard reads the conditions about its own
  // memories (OwnConditions) and the shards vote.
  bool shard_checks() const {
    return rt_.network() && Config::on_for_shards(rt_.config().shard_checks, rt_.num_shards(),
                                                  Config::kShardChecksShards);
  }
  OwnConditions own_conditions(const TraceTemplate& t) const;
  std::unique_ptr<ShardVote> vote_;  // (-lg:shard_checks; null otherwise)
  void record(TraceID id);
  // Drops the templates that have not replayed within kUnreplayedBound uses of the memoizer
  // (replays and recordings) since they were recorded: they are unlikely ever to, and would
  // be kept (and checked at every match of their id) for nothing. The same on every shard.
  void drop_unreplayed();
  std::uint64_t next_sweep_ = 0;  // (match() sweeps every kUnreplayedBound / 4 uses too)
  // Per instruction of t: whether it runs on this shard (empty in a single process).
  std::vector<bool> runs_here(const TraceTemplate& t) const;
  // Per instruction of t: whether it runs on `shard` (a copy: either half; a merge: always).
  std::vector<bool> runs_on(const TraceTemplate& t, std::uint32_t shard) const;
  // Replays t, or (prefix > 0) its first `prefix` ops only: their instructions and copies,
  // after a full fence, and their physical effects.
  void replay(TraceTemplate& t, bool elide, std::size_t prefix = 0);
  void replay_batch(TraceTemplate& t, Event fence, bool elide, std::size_t prefix);
  // Sequential replays (-lg:eager): where the runtime runs alone, nothing before the trace is
  // in flight and the template has no copies, its points run inline in instruction order (a
  // topological order: an instruction's predecessors come before it), with no batch — no
  // counters, edges, events or links; everything it would have ordered has completed.
  bool replays_inline(const TraceTemplate& t, Event fence, std::size_t prefix) const;
  void replay_inline(const TraceTemplate& t);
  // Control replication: t's plan for this shard (made at its first replay).
  const ShardPlan& shard_plan(TraceTemplate& t);
  // -lg:simulate_shards: what the simulated shards would ask each other for at a replay of t.
  const SimulatedReplayAsks& simulated_asks(TraceTemplate& t);
  // Appends to scratch_ what instruction `in` waits for from outside the replay.
  void gather_external(const TraceTemplate& t, const Instruction& in, Event fence, bool elide);
  void apply_summary();
  // Applies the physical effects of the last replay run (once per run of back-to-back replays).
  void apply_physical();

  Runtime& rt_;
  std::unique_ptr<Analysis> analysis_;
  Recorder recorder_;
  std::unordered_map<TraceID, std::list<std::unique_ptr<TraceTemplate>>> templates_;
  std::uint64_t use_clock_ = 0;
  std::size_t templates_made_ = 0;

  bool in_trace_ = false;
  TraceID current_ = 0;
  bool prefix_only_ = false;  // the open trace is a prefix (TracePayload::prefix)
  std::vector<OpRef> buffer_;
  std::size_t handed_ = 0;  // buffered ops already launched (the rest complete on error)

  // Back-to-back replays of one template: the previous replay's ops and entry fence.
  TraceTemplate* last_replayed_ = nullptr;
  bool recurrent_ = false;  // nothing but end_trace came since that replay (or recording)
  // The template recorded last, while nothing else came since: its state is the one a replay
  // of it leaves, so an idempotent one replays next without a check (as back to back), but
  // after a fence (no previous replay's events to link to). Always a live template: the
  // newest of its list (never the least recently used) and kept by drop_unreplayed.
  const TraceTemplate* just_recorded_ = nullptr;
  // Both as they were before the open trace's BeginTrace (withdraw_trace puts them back).
  bool recurrent_before_ = false;
  const TraceTemplate* just_recorded_before_ = nullptr;
  std::vector<OpRef> prev_ops_;
  std::vector<Event> prev_copy_done_;  // that replay's generated copies
  Event prev_fence_;

  // The replay whose physical effects are not applied yet, and its copies' completions.
  const TraceTemplate* physical_pending_ = nullptr;
  std::size_t physical_pending_effects_ = 0;  // its first effects (all, or a prefix's)
  std::vector<Event> copy_done_;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> list_launches_;  // (tree, deferred launch)

  // The summary of replays not yet shown to the logical analysis.
  bool summary_pending_ = false;
  std::vector<std::pair<std::uint32_t, FieldMask>> summary_touched_;
  std::vector<Event> summary_done_;
  std::uint64_t summary_seq_ = 0;

  std::vector<Event> scratch_;
  // The last batch replay's block, kept (one reference) for the next batch to link to.
  ReplayBatch* prev_block_ = nullptr;
  void drop_prev_block();
};

}  // namespace reprise::detail

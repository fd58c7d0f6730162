#pragma once
// A recorded trace: the graph-calculus instructions the analysis emitted for it, in SSA form
// over event slots (slot 0 is the trace's entry fence), each op's recorded mapping, the
// physical conditions it relied on, and the links that replace the fence when the same
// trace replays back to back (fence elision).
#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "reprise/types.h"
#include "reprise_analysis/logical.h"
#include "reprise_analysis/physical.h"
#include "reprise_rt/forest.h"
#include "reprise_rt/op.h"
#include "reprise_rt/pool.h"
#include "reprise_rt/replay_batch.h"

namespace reprise::detail {

class Instance;
class InstanceManager;
struct GpuGroups;

struct TemplateOp {
  std::uint64_t token = 0;
  OpKind kind = OpKind::Task;
  // op.rect(p, r) as analysed: when every requirement named its partition whole, the
  // partitions' own lists of pieces (a replay shares them: nothing to copy per point); else
  // every rectangle, [p * reqs + r].
  std::vector<std::shared_ptr<const std::vector<Domain>>> pieces;
  PoolVector<Domain> rects;
  // op.point_instances as mapped (replayed ops share it: PointInstances::share)
  std::shared_ptr<const PointInstances::Table> instances;
};

struct Instruction {
  enum class Kind : std::uint8_t { Op, Copy, Merge };
  Kind kind = Kind::Op;
  bool uses_fence = false;  // waits on the entry fence (not implied by a predecessor)
  std::uint32_t op = 0;     // index of the op in the trace (Op), or of the copy (Copy)
  std::uint32_t point = 0;
  Processor proc;
  std::uint32_t out = 0;                         // the slot this instruction defines
  std::uint32_t pre_begin = 0, pre_count = 0;    // into TraceTemplate::pre_slots
  std::uint32_t link_begin = 0, link_count = 0;  // into TraceTemplate::links
};

// A point (or, with from_copy, the copy `op`) of the previous replay of the same trace that an
// instruction must wait for.
struct Link {
  std::uint32_t op;
  std::uint32_t point;
  bool from_copy = false;
  friend auto operator<=>(const Link&, const Link&) = default;
};

// A copy the analysis generated while the trace was recorded, and the point that needed it.
struct TemplateCopy {
  OpRef copy;  // launched again by every replay (its instances and rectangle are fixed)
  std::uint32_t for_op = 0, for_point = 0;
};

// "Instance `instance` of `tree` holds valid data for `fields`."
struct Condition {
  std::uint32_t tree;
  Instance* instance;
  FieldMask fields;
  friend bool operator==(const Condition&, const Condition&) = default;
};

// Names a reduction instance (which a replay must find still there).
struct ReductionKey {
  std::uint32_t tree, memory;
  Domain rect;
  std::uint32_t slot;
};

// Control replication: what a batch replay of a template does on one shard, so that a replay
// costs O(the shard's own instructions plus the remote ones it waits for), not O(all).
struct ShardPlan {
  // Instructions initialised at each replay, in template order: those that run here and the
  // other shards' points something here waits for (an in-trace successor, or an elision link
  // of the next replay), or whose values every shard hears of (value-returning ops).
  std::vector<std::uint32_t> active;
  std::vector<std::uint32_t> local;    // of active: those that run here
  std::vector<std::uint32_t> proxied;  // of active: those that run elsewhere
  // Instructions never initialised (their batch slots stay `elsewhere`), and of those the ones
  // a local instruction counts down (their slot's counter is reset when a batch is reused).
  std::vector<std::uint32_t> skipped, skipped_counted;
  // Per instruction: predecessors that are copies between two other shards (no event here:
  // nothing to wait for).
  std::vector<std::int32_t> unseen_preds;
  // Per op of the trace that completes locally: its points skipped here (done with at once).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> count_offs;
  // A replay's batch holds tasks for the active instructions only: instruction i is task
  // slot[i] (~0u: none), and `edges` are the in-trace edges between the tasks that run here,
  // renumbered so (edges into other shards' points count nothing down: they are left out).
  std::vector<std::uint32_t> slot;
  std::shared_ptr<const BatchEdges> edges;
};

// -lg:simulate_shards: what each simulated shard does of a replay under mpirun (it asks no
// other shard for a completion: every access waits by data).
struct SimulatedReplayAsks {
  // Per shard: the instructions its shard plan would initialise, link and release (a replay
  // here does every shard's; each shard's part of its time is its part of these).
  std::vector<std::uint32_t> instructions;
};

struct TraceTemplate;

// Control replication with -lg:shard_checks: the conditions of a template that this shard
// reads at a check, as indices into its preconditions, reduction_keys and facts: those about
// this shard's memories, and the pending-reduction facts of the trees t with
// t % shards == shard. The shards' parts cover every condition; they vote on the verdict.
struct OwnConditions {
  std::vector<std::uint32_t> preconditions, reductions, facts;
};

// Control replication: what a replay on this shard does with each of a template's physical
// effects (docs/ctrlrepl.md).
struct EffectPlan {
  // Per effect: kSkipped, a copy between two other shards (nothing here reads it: the
  // untraced analysis reads another shard's point only over the pieces written here, and
  // recordings and checks see the writers alone); kDeferred, another shard's write, in its
  // tree's list (-lg:defer_replays); else how many entries of its tree's list come before it
  // (it is applied after those only).
  static constexpr std::int32_t kSkipped = -2, kDeferred = -1;
  std::vector<std::int32_t> step;
  std::vector<std::shared_ptr<const WriteList>> lists;  // one per tree, in journal order
};
// t's plan on `shard`; with defer_writes, the other shards' writes go into lists.
EffectPlan plan_effects(const TraceTemplate& t, const InstanceManager& im, std::uint32_t shard,
                        bool defer_writes);

// The op instructions of a template by (op, point): point_key(op, point) -> instruction.
inline std::uint64_t point_key(std::uint32_t op, std::uint32_t point) {
  return std::uint64_t(op) << 32 | point;
}
std::unordered_map<std::uint64_t, std::uint32_t> point_instructions(const TraceTemplate& t);

struct TraceTemplate {
  TraceID id = 0;
  std::vector<TemplateOp> ops;
  std::vector<Instruction> instrs;
  std::vector<std::uint32_t> pre_slots;
  std::vector<Link> links;
  std::uint32_t num_slots = 1;            // slot 0: the entry fence
  std::vector<Condition> preconditions;   // read before being written inside the trace
  std::vector<Condition> postconditions;  // valid once the trace has run
  std::vector<Instance*> reductions;      // reduction instances the trace's reducers use
  std::vector<ReductionKey> reduction_keys;
  // Several memories: what the recording relied on about valid instances before it, and what
  // it changed (effect_copy: the copy whose completion an effect waits for, or -1).
  std::vector<PhysicalFact> facts;
  std::vector<PhysicalEffect> effects;
  std::vector<std::int32_t> effect_copy;
  EffectPlan effect_plan;        // (control replication; empty in a single process)
  OwnConditions own_conditions;  // (-lg:shard_checks; empty otherwise)
  // Per op of the trace: the effects journaled by the end of its analysis (a prefix replay
  // applies the first effects_by_op[k - 1] for k ops).
  std::vector<std::uint32_t> effects_by_op;
  std::vector<TemplateCopy> copies;
  bool idempotent = false;  // postconditions imply the preconditions
  // Whether back-to-back replays may replace the entry fence by the elision links: false when
  // the links would be too many to be worth it (then a replay waits for the previous one).
  bool elide_fence = true;
  std::vector<std::pair<std::uint32_t, FieldMask>> touched;  // per tree, for the summary op
  // The ops whose completion the summary op waits for after a whole replay on one shard:
  // those with an instruction no other instruction of the trace waits for (its sinks), and
  // those without points. Every other instruction precedes a sink, so their completion
  // implies it (a chain of tiny tasks merged one event per op into the summary before).
  // Empty when a copy is a sink: then every op is waited for.
  std::vector<std::uint32_t> summary_ops;
  std::uint64_t points = 0;  // task/fill/copy points per replay
  // Replays launch the instructions as one batch (merges were dissolved: every instruction
  // runs): instruction i (slot i + 1) waits for its pre_count predecessors, counted down by
  // their completion, and counts down its successors (BatchEdges).
  std::shared_ptr<const BatchEdges> successors;
  std::shared_ptr<const ElisionLinks> cross;  // the links, reversed
  std::vector<DomainPoint> instr_points;      // each op instruction's point
  std::unique_ptr<ShardPlan> shard_plan;      // control replication: made at the first replay
  // -lg:simulate_shards: Memoizer::simulated_asks (made at the first replay).
  std::unique_ptr<SimulatedReplayAsks> simulated_asks;
  // Replays as graphs (-ll:gpu, one shard): planned at the first replay (null: none).
  std::shared_ptr<GpuGroups> gpu_groups;
  bool gpu_groups_planned = false;
  std::size_t edges_recorded = 0, edges_after_reduction = 0;
  std::size_t instrs_recorded = 0;  // before merges were dissolved
  std::uint64_t last_used = 0;      // for least-recently-used eviction
  std::uint64_t recorded_at = 0;    // the memoizer's use clock when it was recorded
  std::uint64_t replays = 0;        // (prefixes too)
};

// Transitive reduction of every instruction's precondition slots. here[i]: whether
// instruction i runs on this shard (empty: all do). Under control replication each shard's
// entry fence covers only its own work, so only a predecessor that runs here implies it.
void reduce_transitively(TraceTemplate& t, const std::vector<bool>& here = {});
// Dissolves every merge: its uses wait for its inputs (and the entry fence, if it implied
// it) instead, so that replays launch the instructions as one batch of counters with no
// event in between. Slots are renumbered densely: instruction i defines slot i + 1. (The
// analysis emits merges only where ops cannot be traced, so a recorded trace rarely has any;
// a merge of m inputs with u uses becomes m * u edges.)
void dissolve_merges(TraceTemplate& t);
// Computes the fence-elision links by analysing the trace's ops as if they followed one more
// copy of themselves. A generated copy takes the links of the point it serves; and since the
// logical analysis does not see copies, every access to an instance also waits for the
// previous replay's copies into the same part of it. `here` (control replication: the
// instructions this shard runs; empty: all) limits the work to the links a replay here reads,
// which are those of its own instructions: the others' points are not analysed. A template
// whose links would pass links_per_instruction per instruction (plus 4,096) keeps none, and
// its replays wait for the entry fence.
// With `local` (control replication: whether an instance is in this shard's memories), an
// instruction links only to the previous replay's instructions that run here: the points its
// logical analysis names there, and every earlier access to the same instances of this shard
// that it conflicts with — another shard's point orders nothing here that its data does not.
// `caches`: the runtime analysis' partition caches, shared (null: built anew).
void compute_elision_links(TraceTemplate& t, const std::vector<OpRef>& recorded_ops,
                           const RegionForest& forest, class EventTable& events,
                           const std::vector<bool>& here = {},
                           std::size_t links_per_instruction = 16,
                           const std::function<bool(const Instance*)>& local = {},
                           std::shared_ptr<LogicalAnalysis::Caches> caches = nullptr);
// The physical conditions (one system memory: which instance of each tree is read / written).
// read_here (control replication with -lg:shard_checks): only the conditions about the
// instances it accepts are kept (each shard reads and votes on those about its own).
void compute_conditions(TraceTemplate& t, const std::vector<OpRef>& recorded_ops,
                        const std::function<bool(const Instance*)>& read_here = nullptr);
// The successor lists that let a replay count in-trace edges down instead of using events.
void build_successors(TraceTemplate& t, const std::vector<OpRef>& recorded_ops);
// TraceTemplate::summary_ops, from the successor lists.
void compute_summary_ops(TraceTemplate& t, const std::vector<OpRef>& recorded_ops);
// The fence-elision links reversed, for batch replays (none if a link leaves the template).
void build_cross_links(TraceTemplate& t);
// A text listing of the template (one line per instruction with what it waits for).
std::string to_text(const TraceTemplate& t, const std::vector<std::string>& op_names);
// Graphviz DOT text of the template.
std::string to_dot(const TraceTemplate& t, const std::vector<std::string>& op_names);

}  // namespace reprise::detail

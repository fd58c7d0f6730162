#pragma once
// The runtime's record of one op issued by the application: what the launcher said, checked
// and resolved against the forest, plus what the analysis and the executor attach to it.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "reprise/future.h"
#include "reprise/launcher.h"
#include "reprise/types.h"
#include "reprise_rt/alone.h"
#include "reprise_rt/assert.h"
#include "reprise_rt/event.h"
#include "reprise_rt/forest.h"
#include "reprise_rt/future_state.h"
#include "reprise_rt/inline_vector.h"
#include "reprise_rt/point_instances.h"
#include "reprise_rt/pool.h"
#include "reprise_rt/recycler.h"
#include "reprise_rt/req_list.h"

namespace reprise::detail {

class Instance;
struct TaskInfo;

enum class OpKind : std::uint8_t {
  Task,
  IndexTask,
  Fill,
  Copy,
  FutureReduce,
  Fence,
  DestroyRegion,
  BeginTrace,
  EndTrace,
  Flush,    // the application is about to block: release held ops (carries the awaited event)
  Summary,  // made by the memoizer: a replayed trace's accesses, for the logical analysis
};
const char* to_string(OpKind k);

// What only some kinds of op carry, kept inside the op (no allocation of its own).
struct TaskPayload {  // Task, IndexTask
  // (User-provided, as Op's: emplaced with no arguments, a defaulted one value-initialises —
  // a `rep stos` over all 160 bytes, a quarter of Context::execute's samples — before the
  // members' own initialisers run; every member has one or a constructor.)
  TaskPayload() {}  // NOLINT(modernize-use-equals-default)
  InlineVector<std::byte, 64> args;
  ArgumentMap point_args;  // IndexTask: per-point arguments (shared with the launcher's map)
  PoolVector<Future> futures;
  // Internal tasks whose data must be in one memory (Context::attach, detach): they run on a
  // CPU of that memory's shard with every requirement there, whatever the mapper would say.
  std::uint32_t pinned_memory = kInvalidId;
  // A requirement on a sparse partition, or on one of its pieces, expands into one per run
  // partition (RegionForest::create_sparse_partition): the program's requirement i is
  // reqs[req_begin[i] .. req_begin[i + 1]). Empty when no requirement expanded.
  InlineVector<std::uint16_t, 8> req_begin;
};
struct FillPayload {  // Fill
  PoolVector<std::byte> value;
};
struct FutureReducePayload {  // FutureReduce
  FutureMap source;
  ReductionOp op = ReductionOp::None;
  // Instead of a fold, every point's value to every shard (FutureMap::get under control
  // replication gathers a map once; later gets read it there).
  bool gather = false;
};
struct DestroyPayload {  // DestroyRegion
  std::uint32_t tree = kInvalidId;
  std::uint64_t partition_uid = 0;  // not 0: only this partition (and what is below it) goes
};
struct TracePayload {  // BeginTrace, EndTrace: pipeline messages
  TraceID id = 0;
  // BeginTrace: the ops are to replay the first ops of a template of the trace if one matches,
  // and to be analysed untraced otherwise (never recorded): a tail (AutoTraceSink::begin_prefix).
  bool prefix = false;
};
struct FlushPayload {  // Flush: a pipeline message
  Event awaited;
};
class Op;
// A copy the physical analysis generated: no program op stands behind it, so its points
// complete without completing the op; it may be launched again by every replay.
struct GeneratedCopy {
  std::uint32_t index = 0;  // the k-th copy this process made for op `seq`
  bool fold = false;        // folds a reduction instance (the source) into its destination
  // Control replication: what both halves' shards call the copy (with the op's number and
  // the source's shard) — the k-th copy for point `point` out of the source's shard. Each
  // shard derives it from replicated state and its own memories, whatever it knows of the
  // copies between other shards (index does not travel: it counts only the copies made here).
  std::uint32_t point = 0;
  std::uint32_t name = 0;
  // The program op it was made for (one reference held). Control replication counts a
  // copy's send half towards that op's completion on the sending shard.
  Op* parent = nullptr;
};
using OpPayload = std::variant<std::monostate, TaskPayload, FillPayload, FutureReducePayload,
                               DestroyPayload, TracePayload, FlushPayload, GeneratedCopy>;

// An op's launch domain with its volume kept: the analysis asks an op for its number of points
// a dozen times (each a loop over the dimensions). Set only by assigning a whole Domain.
class LaunchDomain : public Domain {
 public:
  LaunchDomain() = default;
  LaunchDomain(const Domain& d) : Domain(d), points_(std::size_t(d.volume())) {}  // NOLINT
  LaunchDomain& operator=(const Domain& d) {
    Domain::operator=(d);
    points_ = std::size_t(d.volume());
    return *this;
  }
  std::size_t points() const { return points_; }

 private:
  std::size_t points_ = 0;
};

// An op: what every kind has (kind, number, launch domain, requirements, completion), one
// payload for what only its kind has, and what the analysis and the executor attach to it.
// Program ops and the pipeline's own messages (BeginTrace, EndTrace, Flush, Summary) travel
// as ops through one queue, so that they stay in program order.
class Op {
 public:
  OpKind kind = OpKind::Task;
  std::uint64_t seq = 0;  // position in the program's op stream
  TaskID task = 0;        // tasks (0 for other kinds)
  const TaskInfo* task_info = nullptr;
  LaunchDomain domain;  // launch domain; a one-point domain for everything but index tasks
  ReqList reqs;         // shared with the launcher's kept resolution until changed
  OpPayload payload;
  std::uint64_t token = 0;  // op_token(*this) once computed (token_of), else 0
  // Set by the memoizer for the ops of a trace it records or replays (for the profiler).
  TraceID in_trace = 0;
  bool replayed = false;
  bool counted = true;  // false for ops the runtime makes itself (not in -lg:window)
  // Control replication: the op completes on a shard once the points (and send halves) that
  // run there have; other shards hear of a point only when they ask (its value is not needed
  // everywhere: a void index task, a fill, a copy). Otherwise every point is announced to
  // every shard, with its value.
  bool local_completion = false;

  // The payload of the op's kind (the kind must have it).
  TaskPayload& task_payload() { return std::get<TaskPayload>(payload); }
  const TaskPayload& task_payload() const { return std::get<TaskPayload>(payload); }
  FillPayload& fill() { return std::get<FillPayload>(payload); }
  const FillPayload& fill() const { return std::get<FillPayload>(payload); }
  FutureReducePayload& future_reduce() { return std::get<FutureReducePayload>(payload); }
  const FutureReducePayload& future_reduce() const {
    return std::get<FutureReducePayload>(payload);
  }
  std::uint32_t destroyed_tree() const { return std::get<DestroyPayload>(payload).tree; }
  std::uint64_t destroyed_partition() const {
    return std::get<DestroyPayload>(payload).partition_uid;
  }
  TraceID trace_id() const { return std::get<TracePayload>(payload).id; }
  bool prefix_trace() const { return std::get<TracePayload>(payload).prefix; }
  Event awaited() const { return std::get<FlushPayload>(payload).awaited; }
  // Futures the op waits for (tasks only; none for other kinds).
  std::span<const Future> futures() const {
    const auto* t = std::get_if<TaskPayload>(&payload);
    return t ? std::span<const Future>(t->futures.data(), t->futures.size())
             : std::span<const Future>();
  }
  // A generated copy's details (null for program ops).
  const GeneratedCopy* generated_copy() const { return std::get_if<GeneratedCopy>(&payload); }
  GeneratedCopy* generated_copy() { return std::get_if<GeneratedCopy>(&payload); }
  bool generated() const { return std::holds_alternative<GeneratedCopy>(payload); }
  // A generated copy that folds a reduction instance into its destination.
  bool folds() const {
    const auto* g = generated_copy();
    return g && g->fold;
  }
  Op* parent() const {
    const auto* g = generated_copy();
    return g ? g->parent : nullptr;
  }

  std::shared_ptr<FutureState> future;         // single tasks, reductions, fences
  std::shared_ptr<FutureMapState> future_map;  // index tasks

  // Filled by the analysis: per point, per requirement rect and instance.
  // [point * reqs.size() + r]; empty when every requirement has its pieces (use rect()).
  InlineVector<Domain, 8> point_rects;
  PointInstances point_instances;     // same indexing (a replay may share its template's)
  InlineVector<Event, 8> point_done;  // per point completion
  Event done;                         // the whole op (created at issue, or on demand:)
  // An index launch without a future map gets its event only if something asks for it — the
  // analysis, a replay's summary (Runtime::give_done_event, on the analysis thread, before any
  // point of the op runs); a replayed one is followed by its points' successors instead.
  bool done_on_demand = false;
  std::exception_ptr error;  // the first point failure (see error_set)
  std::atomic<bool> error_set{false};
  std::atomic<std::int64_t> remaining{0};  // points not yet complete

  std::size_t num_points() const { return domain.points(); }
  // The program's requirements (they differ from reqs only for tasks whose requirements on
  // sparse regions expanded, TaskPayload::req_begin): how many, the op requirements
  // [first, last) of program requirement i, and the program requirement of op requirement r.
  std::size_t num_program_reqs() const {
    const auto* t = std::get_if<TaskPayload>(&payload);
    return t && !t->req_begin.empty() ? t->req_begin.size() - 1 : reqs.size();
  }
  std::pair<std::size_t, std::size_t> op_reqs_of(std::size_t i) const {
    const auto* t = std::get_if<TaskPayload>(&payload);
    if (!t || t->req_begin.empty()) return {i, i + 1};
    return {t->req_begin[i], t->req_begin[i + 1]};
  }
  std::size_t program_req(std::size_t r) const {
    const auto* t = std::get_if<TaskPayload>(&payload);
    if (!t || t->req_begin.empty()) return r;
    // (req_begin ascends: the last program requirement that begins at or before r.)
    return std::size_t(std::upper_bound(t->req_begin.begin(), t->req_begin.end(), r) -
                       t->req_begin.begin()) -
           1;
  }
  // Whether the op launches points (tasks, fills, copies), as opposed to fences, trace
  // brackets and the pipeline's own messages.
  bool launches_points() const {
    return kind == OpKind::Task || kind == OpKind::IndexTask || kind == OpKind::Fill ||
           kind == OpKind::Copy;
  }
  const Domain& rect(std::size_t point, std::size_t req) const {
    const ReqInfo& q = reqs[req];
    return q.pieces ? (*q.pieces)[point] : point_rects[point * reqs.size() + req];
  }
  std::string describe() const;  // "op #12 (index task 'stencil')"

  // (User-provided, not defaulted: value-initialising an Op would zero all
  // ~1 KB first — inline tables included — before the members' own initialisers run; every
  // member has one.)
  Op() {}  // NOLINT(modernize-use-equals-default)
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;
  ~Op() {
    if (Op* p = parent()) p->release();
  }
  // Makes the op the `index`-th copy generated for an op; parent: that op, when the copy's
  // send half counts towards its completion (one reference held), else null.
  void make_generated_copy(std::uint32_t index, bool fold, Op* parent, std::uint32_t point = 0,
                           std::uint32_t name = 0) {
    if (parent) parent->add_ref();
    payload = GeneratedCopy{index, fold, point, name, parent};
  }

  // Makes a finished op that only the caller holds what make_op() would give, with a task's
  // payload, but for its kind, task, domain and requirements, which the launch sets; its
  // tables keep their storage (Runtime::launch_op: a destruction and a construction cost ~150
  // instructions of a one-point launch).
  void renew_for_task();

  void add_ref() { shared_add(refs_, 1, std::memory_order_relaxed); }
  void release() {
    if (shared_sub(refs_, 1, std::memory_order_acq_rel) == 1) destroy();
  }
  // Whether the caller's reference is the only one (nobody else can reach the op any more).
  bool only_reference() const { return refs_.load(std::memory_order_acquire) == 1; }

 private:
  // The last reference's release: out of line, so that release() stays small enough to be
  // inlined into the launch path's callers (the destructor is not).
  [[gnu::noinline]] void destroy();

  std::atomic<std::int32_t> refs_{1};
};

// A counted reference to an Op.
class OpRef {
 public:
  OpRef() = default;
  explicit OpRef(Op* op) : op_(op) {}  // adopts one reference
  OpRef(const OpRef& o) : op_(o.op_) {
    if (op_) op_->add_ref();
  }
  OpRef(OpRef&& o) noexcept : op_(o.op_) { o.op_ = nullptr; }
  OpRef& operator=(OpRef o) noexcept {
    std::swap(op_, o.op_);
    return *this;
  }
  ~OpRef() {
    if (op_) op_->release();
  }
  Op* get() const { return op_; }
  // Gives up the reference without releasing it (the caller now owns it).
  Op* detach() {
    Op* p = op_;
    op_ = nullptr;
    return p;
  }
  Op* operator->() const { return op_; }
  Op& operator*() const { return *op_; }
  explicit operator bool() const { return op_ != nullptr; }

 private:
  Op* op_ = nullptr;
};

inline void Op::renew_for_task() {
  REPRISE_ASSERT(only_reference() && !generated(),
                 "only a finished op nobody else holds is renewed");
  // Every member as Op() and TaskPayload() make it (a member added there is reset here too),
  // but those every launch sets: its kind, task, domain (Context::execute) and requirements
  // (resolve_requirements; a list kept is most often the next launch's too).
  static_assert(sizeof(Op) == 1016, "Op changed: reset the new member in renew_for_task");
  static_assert(sizeof(TaskPayload) == 160,
                "TaskPayload changed: reset the new member in renew_for_task");
  seq = 0;
  if (auto* t = std::get_if<TaskPayload>(&payload)) {
    t->args.clear();
    t->point_args.clear();
    t->futures.clear();
    t->pinned_memory = kInvalidId;
    t->req_begin.clear();
  } else {
    payload.emplace<TaskPayload>();
  }
  token = 0;
  in_trace = 0;
  replayed = false;
  counted = true;
  local_completion = false;
  if (future) future.reset();
  if (future_map) future_map.reset();
  point_rects.clear();
  point_instances.clear();
  point_done.clear();
  done = Event();
  done_on_demand = false;
  if (error) error = nullptr;
  error_set.store(false, std::memory_order_relaxed);
  remaining.store(0, std::memory_order_relaxed);
}

inline OpRef make_op() {
  // (Made on the application thread, most often destroyed on a worker: recycled.)
  return OpRef(Recycler<Op>::make());
}

// A new BeginTrace or EndTrace op of trace `id` (one point, no requirements).
OpRef make_mark(OpKind kind, TraceID id, bool prefix = false);

// A trace mark (BeginTrace or EndTrace of trace `id`) that nobody waits for or counts: `kept`,
// the last mark of its kind, is used again while nothing else holds it (the memoizer drops a
// mark once it has taken it in), else a new one is made and kept.
OpRef trace_mark(OpRef& kept, OpKind kind, TraceID id, bool prefix = false);

}  // namespace reprise::detail

#pragma once
// The runtime's record of one op issued by the application: what the launcher said, checked
// and resolved against the forest, plus what the analysis and the executor attach to it.
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "reprise/future.h"
#include "reprise/types.h"
#include "reprise_rt/event.h"
#include "reprise_rt/forest.h"
#include "reprise_rt/future_state.h"
#include "reprise_rt/pool.h"

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

struct ReqInfo {
  std::uint32_t tree = kInvalidId;
  std::uint32_t region = kInvalidId;     // region node (the partition's parent for partitions)
  std::uint32_t partition = kInvalidId;  // partition node, or kInvalidId
  Projection projection = Projection::identity();
  Privilege privilege = Privilege::ReadOnly;
  ReductionOp redop = ReductionOp::None;
  FieldMask mask = 0;
  PoolVector<FieldID> fields;     // as named by the launcher (accessor lookups)
  PoolVector<int> field_indices;  // positions in the field space
  Domain bbox;                    // bounding box of every point's rect
  bool writes() const {
    return privilege == Privilege::ReadWrite || privilege == Privilege::WriteDiscard;
  }
};

class Op {
 public:
  OpKind kind = OpKind::Task;
  std::uint64_t seq = 0;  // position in the program's op stream
  TaskID task = 0;
  const TaskInfo* task_info = nullptr;
  Domain domain;  // launch domain; a one-point domain for everything but index tasks
  PoolVector<std::byte> args;
  PoolVector<ReqInfo> reqs;
  PoolVector<Future> futures;
  PoolVector<std::byte> fill_value;
  FutureMap reduce_source;
  ReductionOp reduce_op = ReductionOp::None;
  std::uint32_t destroy_tree = kInvalidId;
  std::uint64_t token = 0;  // op_token(*this) once computed (token_of), else 0
  TraceID trace = 0;        // BeginTrace / EndTrace
  // Set by the memoizer for the ops of a trace it records or replays (for the profiler).
  TraceID in_trace = 0;
  bool replayed = false;
  Event awaited;        // Flush
  bool counted = true;  // false for ops the runtime makes itself (not in -lg:window)
  // A copy the physical analysis generated: no program op stands behind it, so its points
  // complete without completing the op; it may be launched again by every replay.
  bool generated = false;
  std::uint32_t copy_index = 0;  // generated copies: k-th copy made for op `seq`
  // A generated copy that folds a reduction instance (the source) into its destination.
  bool fold = false;
  // A generated copy: the program op it was made for (one reference held). Control
  // replication counts a copy's send half towards that op's completion on the sending shard.
  Op* parent = nullptr;
  // Control replication: the op completes on a shard once the points (and send halves) that
  // run there have; other shards hear of a point only when they ask (its value is not needed
  // everywhere: a void index task, a fill, a copy). Otherwise every point is announced to
  // every shard, with its value.
  bool local_completion = false;

  std::shared_ptr<FutureState> future;         // single tasks, reductions, fences
  std::shared_ptr<FutureMapState> future_map;  // index tasks

  // Filled by the analysis: per point, per requirement rect and instance.
  PoolVector<Domain> point_rects;         // [point * reqs.size() + r]
  PoolVector<Instance*> point_instances;  // same indexing
  PoolVector<Event> point_done;           // per point completion
  Event done;                             // the whole op (created at issue)
  std::exception_ptr error;               // the first point failure (see error_set)
  std::atomic<bool> error_set{false};
  std::atomic<std::int64_t> remaining{0};  // points not yet complete

  std::size_t num_points() const { return std::size_t(domain.volume()); }
  const Domain& rect(std::size_t point, std::size_t req) const {
    return point_rects[point * reqs.size() + req];
  }
  std::string describe() const;  // "op #12 (index task 'stencil')"

  Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;
  ~Op() {
    if (parent) parent->release();
  }
  void set_parent(Op& p) {
    p.add_ref();
    parent = &p;
  }

  void add_ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) PoolDelete<Op>{}(this);
  }
  // Whether the caller's reference is the only one (nobody else can reach the op any more).
  bool only_reference() const { return refs_.load(std::memory_order_acquire) == 1; }

 private:
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

inline OpRef make_op() {
  return OpRef(make_pooled<Op>().release());
}

}  // namespace reprise::detail

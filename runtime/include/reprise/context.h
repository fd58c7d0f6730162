#pragma once
// Context: what the top-level task uses to create data and issue ops. Every call returns at
// once (ops are analysed and executed behind the application) except Future/FutureMap waits.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "reprise/attach.h"
#include "reprise/future.h"
#include "reprise/inline_mapping.h"
#include "reprise/launcher.h"
#include "reprise/types.h"

namespace reprise {

namespace detail {
class Runtime;
}

// There is one Context per process, in static storage: it outlives start(), so that a use after
// start() returned, or from a task body (another thread), is a reprise::Error, not undefined
// behaviour.
class Context {
 public:
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  IndexSpace create_index_space(const Domain& bounds);
  FieldSpace create_field_space(std::initializer_list<FieldDef> fields);
  FieldSpace create_field_space(const std::vector<FieldDef>& fields);
  Region create_region(const IndexSpace& is, FieldSpace fs);

  // Partitions of a region (root or subregion) over a color space.
  // equal: as even blocks as possible; one color dimension per region dimension.
  Partition partition_equal(Region parent, const IndexSpace& colors);
  // blocks of `block` points per dimension; the color space follows from the bounds.
  Partition partition_by_blocks(Region parent, const DomainPoint& block);
  // explicit rects per color (clipped to the parent); disjointness and completeness computed.
  Partition partition_by_rects(Region parent, const IndexSpace& colors,
                               const std::function<Domain(const DomainPoint&)>& rect_of);
  Partition partition_by_rects(Region parent, const IndexSpace& colors,
                               const std::vector<Domain>& rects);
  // Sparse partitions: color c's piece is the union of rects[c] (clipped to the parent; the
  // rectangles of one color must not overlap), or, for a 1-d region, of the points in
  // points[c] (any order, repeats allowed). Tasks take such pieces like any region, and the
  // runtime moves and validates only their points: TaskContext::rects(req) lists a point's
  // rectangles, domain(req) is their bounding box. Disjointness and completeness are those of
  // the points. A reducer folds into one reduction instance per rectangle; a fill of a piece,
  // or a copy out of one, is one per rectangle. Not yet: copies into sparse regions, and
  // partitions of them.
  Partition partition_by_rect_lists(Region parent, const IndexSpace& colors,
                                    std::vector<std::vector<Domain>> rects);
  Partition partition_by_point_sets(Region parent, const IndexSpace& colors,
                                    const std::vector<std::vector<coord_t>>& points);
  // Dependent partitioning (regions of 1-3 dimensions; docs/api.md): partitions computed from
  // field values.
  // A call that reads a field is an op in the stream: it returns the partition at once and a
  // task reading the field (after the ops issued before it that write it, before later
  // writers) computes the pieces; the program waits for them only where it first uses the
  // partition (a launch naming it, p[c], rect, disjoint, complete). Under control replication
  // every shard computes the same pieces. The result is dense when every piece is one
  // rectangle, else sparse. Inside a manual trace the calls are traced like any op (the
  // partition may be used after end_trace, not inside the trace that made it).
  //   by field: element i of parent goes to the piece of the color its `color_field` holds
  //     (a Point<K> of the K-d color space, a coord_t for 1-d; colors outside go nowhere).
  //   by image: piece c (of target) holds what `pointer` (a Point<N> of the N-d target, a
  //     coord_t in 1-d, or a Rect<N> for a range, per element) of source's piece c points to,
  //     within the target's bounds.
  //   by preimage: piece c (of source) holds the elements whose `pointer` points into target's
  //     piece c (a range pointer: any point of it).
  //   union / intersection / difference: color by color, of two partitions of one region with
  //     one color space.
  Partition partition_by_field(Region parent, FieldID color_field, const IndexSpace& colors);
  Partition partition_by_image(Region target, const Partition& source, FieldID pointer);
  Partition partition_by_preimage(const Partition& target, Region source, FieldID pointer);
  Partition partition_union(const Partition& a, const Partition& b);
  Partition partition_intersection(const Partition& a, const Partition& b);
  Partition partition_difference(const Partition& a, const Partition& b);
  // A pending partition (Legion's create_pending_partition and create_index_space_union /
  // _intersection / _difference): color c's piece is made of the regions regions_of(c)
  // returns (regions of parent's tree, dense or sparse pieces, clipped to parent): their
  // union, their intersection, or the first minus the others.
  enum class PieceOp { Union, Intersection, Difference };
  Partition partition_pending(
      Region parent, const IndexSpace& colors,
      const std::function<std::vector<Region>(const DomainPoint&)>& regions_of,
      PieceOp op = PieceOp::Union);
  // each piece of `base` shifted by `offset` and clipped to the parent's bounds.
  Partition partition_by_translation(const Partition& base, const DomainPoint& offset);
  Region subregion(const Partition& p, const DomainPoint& color);

  Future execute(const TaskLauncher& launcher);
  FutureMap execute(const IndexLauncher& launcher);
  void fill(const FillLauncher& launcher);
  template <typename T>
  void fill(Region r, FieldID f, const T& value) {
    fill(FillLauncher::of(r, {f}, value));
  }
  void copy(const CopyLauncher& launcher);
  // Reduces every point's value of the future map into one future.
  Future reduce(const FutureMap& fm, ReductionOp op);
  // Ops after the fence start only once every op before it has completed. The returned
  // future is ready when that has happened.
  Future fence();

  // Inline mapping (reprise/inline_mapping.h): waits until the ops issued before it that
  // conflict are done and the data is in a host memory, and gives the application thread
  // direct access to `fields` of r; the ops issued after it that conflict with `privilege`
  // wait for unmap_region (or for the last copy of the PhysicalRegion to go). Under control
  // replication each shard maps the region into its own first system memory and sees the
  // same values; after a writing mapping the region holds shard 0's writes (the same as every
  // shard's, the program being replicated).
  PhysicalRegion map_region(Region r, Privilege privilege, std::vector<FieldID> fields);
  void unmap_region(PhysicalRegion& region);

  // Attaching the program's arrays as the storage of a region's fields (reprise/attach.h):
  // the attach is an op that writes the region with the arrays' values; detach's future is
  // ready once the arrays hold the region's latest values and are the program's again.
  Attachment attach(const AttachLauncher& launcher);
  Future detach(Attachment& attachment);

  // A named range of the program in the profile (-lg:prof; observers see it as a Range):
  // from start_profiling_range() to stop_profiling_range(name), on the application thread;
  // ranges nest. `reprise-prof --range NAME` sums up only what started inside it (bracket it
  // with fences to count exactly the ops issued in between). Without a profiler nothing is
  // recorded; a stop without a start is an Error either way.
  void start_profiling_range();
  void stop_profiling_range(const std::string& name);

  // Manual traces: the ops between begin_trace(id) and end_trace(id) are analysed once,
  // recorded, and replayed without analysis when the same sequence comes again. Traces do not
  // nest; creating regions or partitions, fences, destruction and blocking waits are not
  // allowed inside one.
  void begin_trace(TraceID id);
  void end_trace(TraceID id);

  // Destruction is deferred until the ops already issued on the region are done; using a
  // destroyed region or partition afterwards is an error.
  void destroy(Region r);
  void destroy(const Partition& p);

  // Counters of the tracing machinery (read after a fence for exact figures).
  struct TraceStats {
    std::uint64_t points_launched = 0;  // task, fill and copy points, traced or not
    std::uint64_t points_replayed = 0;  // of those, launched by a trace replay
    std::uint64_t templates_recorded = 0;
    std::uint64_t replays = 0;
    std::uint64_t mismatches = 0;   // traces whose ops differed from every template
    std::uint64_t copies = 0;       // copies between memories the runtime generated and ran
    std::uint64_t shard_bytes = 0;  // bytes those copies brought into this shard from others
    // This shard's cost: messages it sent to other shards (MPI sends, after batching), and
    // the time its utility thread spent analysing and replaying.
    std::uint64_t messages_sent = 0;
    std::uint64_t utility_busy_ns = 0;
    // Control replication: the other shards this one heard from (a point's completion or a
    // request for one; a shard hears only from shards its work depends on, or that depend on
    // it), and the completions of remote points it asked for.
    std::uint32_t peers_heard = 0;
    std::uint64_t requests_sent = 0;
    // The events it made to stand for other shards' points (untraced, only for the points
    // some dependence here names: its neighbours' in a halo loop, not every point).
    std::uint64_t remote_proxies = 0;
    // The other shards' points it did not analyse at all (untraced: they met none of its data;
    // their writes were deferred, -lg:defer_writes).
    std::uint64_t points_deferred = 0;
    // Batch replays: instructions of the templates replayed, and of those the ones this
    // shard's replays set up (its own, and the other shards' points it waits for).
    std::uint64_t replay_instructions = 0;
    std::uint64_t replay_instructions_here = 0;
    // GPUs (-ll:gpu): kernels launched on GPU processors' streams, and captured graphs launched.
    std::uint64_t gpu_kernels = 0;
    std::uint64_t gpu_graph_launches = 0;
    // Copies with a framebuffer at one end or both (a fill of one counts as into it).
    std::uint64_t copies_to_gpu = 0;
    std::uint64_t copies_from_gpu = 0;
    std::uint64_t copies_gpu_to_gpu = 0;
    // Templates recorded and dropped without replaying (Memoizer::kUnreplayedBound).
    std::uint64_t templates_dropped = 0;
    // Control replication: rounds of future maps' values up and down the tree of shards — one
    // per ctx.reduce of a map, and one per map read with FutureMap::get (its first get
    // gathers every point's value; later gets of any point cost nothing).
    std::uint64_t value_rounds = 0;
    // Control replication with GPUs: copies between shards' framebuffers that went over the
    // device links (-ll:nccl), counted by each end (so both halves of one copy count).
    std::uint64_t gpu_link_copies = 0;
    // Replays that first checked the template's preconditions against the state (a replay
    // back to back with its template's previous replay or recording, of an idempotent
    // template, needs no check).
    std::uint64_t condition_checks = 0;
    // Control replication, -lg:shard_recording: other shards' points that recordings took for
    // their writes only (their reads met none of this shard's data).
    std::uint64_t points_recorded_far = 0;
    // ... of which the recording deferred the writes (as untraced: applied where this shard
    // meets them; where the launch may defer, -lg:defer_writes).
    std::uint64_t points_recorded_deferred = 0;
    // Points run at once on the application thread, without events or queues: eager launches
    // and sequential replays (-lg:eager), issued when every earlier op had completed.
    std::uint64_t points_inline = 0;
    // ... of which run while no other thread of the runtime could touch what they change
    // (-lg:alone): one core, or CPU workers all waiting with nothing to run.
    std::uint64_t points_inline_alone = 0;
  };
  TraceStats trace_stats() const;
  // Ops issued so far (the next op's number), and with -lg:coverage_log the record of which
  // ops ran replayed (after a fence, complete up to it): per-iteration coverage timelines.
  std::uint64_t ops_issued() const;
  bool coverage_log_enabled() const;
  std::vector<CoverageSample> coverage_log() const;

  std::uint32_t num_cpus() const;
  std::uint32_t shard() const;
  std::uint32_t num_shards() const;

 private:
  friend class detail::Runtime;
  Context() = default;
  // The process's Context, bound to rt for the calling (application) thread until close().
  static Context& instance();
  static Context& open(detail::Runtime& rt);
  static void close();
  // The runtime, after checking that this call may use it (`what` names the call).
  detail::Runtime& rt(const char* what) const;
  // A single task; pinned_memory (not kInvalidId): it runs on that memory's shard with its
  // data there, whatever the mapper says (attach and detach).
  Future execute_task(const TaskLauncher& launcher, std::uint32_t pinned_memory);
  // execute_task as a function (dependent partitioning issues its tasks through it).
  std::function<Future(const TaskLauncher&, std::uint32_t)> pinned_launcher() {
    return [this](const TaskLauncher& l, std::uint32_t memory) { return execute_task(l, memory); };
  }
  // Dependent partitioning (dependent_partitioning.cpp): a partition of parent from disjoint
  // rectangles per color (dense when every piece is one rectangle), and the set operations (kind 0
  // union, 1 intersection, 2 difference).
  Partition partition_from_runs(Region parent, const Domain& colors,
                                std::vector<std::vector<Domain>> pieces);
  Partition partition_set_operation(const Partition& a, const Partition& b, int kind,
                                    const char* op);

  detail::Runtime* rt_ = nullptr;
};

}  // namespace reprise

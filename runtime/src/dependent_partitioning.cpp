// Dependent partitioning (Context::partition_by_field, _by_image, _by_preimage, the set
// operations and pending partitions) on regions of 1 to 3 dimensions. The kinds that read a field
// (and the set operations of partitions still being computed) are ops in the stream: the call
// checks its arguments, makes the partition's node (pending: a handle, a parent, colors) and
// issues an internal task that reads the field — ordered by the analysis after the ops issued
// before it that write the field, and before later writers — and computes the pieces; the
// application thread goes on at once and waits only where it first needs the pieces
// (RegionForest::check_partition: a launch naming the partition, a subregion, disjoint()...).
// A computation that reads a pending partition's pieces waits for that partition's task, not
// the application. Under control replication each shard runs its own task (pinned to its first
// memory) on its own copy of the same values, so every shard computes the same pieces. Pieces
// are kept as sets of disjoint rectangles (reprise_rt/rect_sets.h); a result whose pieces are all
// one rectangle is a dense partition, any other a sparse one.
#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "reprise/context.h"
#include "reprise/error.h"
#include "reprise/registry.h"
#include "reprise/task_context.h"
#include "reprise_rt/future_state.h"
#include "reprise_rt/hasher.h"
#include "reprise_rt/internal_tasks.h"
#include "reprise_rt/rect_sets.h"
#include "reprise_rt/runtime.h"
#include "reprise_rt/task_views.h"

namespace reprise {

namespace {

using detail::RectSet;

// Calls fn with std::integral_constant<int, dim> (a region's dimension, 1 to 3).
template <class Fn>
void with_dim(int dim, Fn&& fn) {
  if (dim == 1)
    fn(std::integral_constant<int, 1>{});
  else if (dim == 2)
    fn(std::integral_constant<int, 2>{});
  else
    fn(std::integral_constant<int, 3>{});
}

// Sorted, distinct 1-d points as runs.
RectSet runs_of_points(std::vector<coord_t> points) {
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  RectSet out;
  for (std::size_t i = 0; i < points.size();) {
    std::size_t j = i + 1;
    while (j < points.size() && points[j] == points[j - 1] + 1) ++j;
    out.push_back(Domain(Rect<1>({points[i]}, {points[j - 1]})));
    i = j;
  }
  return out;
}

// Each color's positions (row-major in bounds, ascending) as rectangles.
std::vector<RectSet> rects_of_position_sets(const Domain& bounds,
                                            const std::vector<std::vector<coord_t>>& positions) {
  std::vector<RectSet> pieces;
  pieces.reserve(positions.size());
  for (const auto& p : positions) pieces.push_back(detail::rects_of_positions(bounds, p));
  return pieces;
}

// A dependent partition's computation: what its task reads and how it makes the pieces.
struct PartitionJob final : detail::PendingPieces {
  detail::Runtime* rt = nullptr;
  bool reads = false;  // the task reads field `field` of `region` (set operations read none)
  Region region;
  FieldID field = 0;
  std::function<std::vector<RectSet>(const PhysicalRegion&)> compute;
  std::vector<Future> tasks;  // per shard (one without control replication)
  Future mine;                // the task this shard runs
  const char* call = "";
  std::uint64_t trace = 0;  // Runtime::open_trace_number() at the call (0: outside traces)

  void wait() const override {
    if (!rt->on_app_thread())
      throw Error(
          "dependent partitioning: a partition still being computed was used off the "
          "application thread (use it in the program before a task reads its pieces)");
    if (const detail::Event e = detail::pending_event(mine); e.exists()) {
      // A trace holds its ops until end_trace: a partition made inside the open trace has no
      // pieces before then (whether or not the trace is replayed). A task issued before the
      // open trace is not held: waiting for it inside the trace is fine.
      if (trace != 0 && trace == rt->open_trace_number())
        throw Error(fmt::format(
            "{}: the partition was made inside the trace still open and is used inside it; its "
            "pieces are computed by the trace's ops, which run at end_trace (use it after)",
            call));
      rt->wait_issued_before_trace(e);
    }
    mine.wait();
  }
  bool finished() const override { return !mine.valid() || mine.ready(); }
};

void run_partition_job(TaskContext& tc) {
  auto* job = reinterpret_cast<PartitionJob*>(tc.args<std::uintptr_t>());
  PhysicalRegion pr;
  if (job->reads) pr = detail::read_view(tc, job->region, {job->field});
  job->pieces = job->compute(pr);
}

// A partition's pieces as an input of a computation: read now (a dense piece is one rectangle,
// or none when empty), or — a partition still being computed — read by the computation's task,
// which waits for that partition's task.
struct PieceInput {
  Region parent;
  Domain colors;
  std::vector<RectSet> now;
  std::shared_ptr<PartitionJob> job;
  const std::vector<RectSet>& pieces() const { return job ? job->pieces : now; }
};

PieceInput input_of(detail::Runtime& rt, const Partition& p, const char* op) {
  rt.forest().check_partition(p, op, /*settle=*/false);
  const auto& pn = rt.forest().partition(p.node());
  PieceInput v;
  v.parent = rt.forest().region_handle(pn.parent_region);
  v.colors = pn.colors;
  if (pn.pending) {
    v.job = std::static_pointer_cast<PartitionJob>(pn.pending);  // (the only kind pending)
    return v;
  }
  v.now.resize(pn.pieces->size());
  for (std::size_t c = 0; c < v.now.size(); ++c) {
    if (pn.sparse())
      v.now[c] = (*pn.runs)[c];
    else if (!pn.piece(c).empty())
      v.now[c] = {pn.piece(c)};
  }
  return v;
}

// Issues the job's task — under control replication one per shard, each pinned to its shard's
// first memory and waiting for its shard's tasks of the inputs still being computed (`after`;
// null: an input computed already) — and returns the pending partition. `launch` is
// Context::execute_task.
Partition issue_job(detail::Runtime& rt, const std::shared_ptr<PartitionJob>& job, Region parent,
                    const Domain& colors,
                    const std::vector<std::shared_ptr<const PartitionJob>>& after,
                    const std::function<Future(const TaskLauncher&, std::uint32_t)>& launch,
                    const char* op) {
  static const bool registered = [] {
    TaskRegistry::add(detail::kDependentPartitionTask, "dependent_partition",
                      {cpu(&run_partition_job)});
    return true;
  }();
  (void)registered;
  job->rt = &rt;
  job->call = op;
  job->trace = rt.open_trace_number();
  const std::uint32_t shards = rt.num_shards();
  for (std::uint32_t s = 0; s < shards; ++s) {
    TaskLauncher l(detail::kDependentPartitionTask,
                   TaskArgs{std::uintptr_t(reinterpret_cast<std::uintptr_t>(job.get()))});
    if (job->reads) l.add(job->region, Privilege::ReadOnly, {job->field});
    for (const auto& input : after)
      if (input) l.add_future(input->tasks[s]);
    job->tasks.push_back(launch(l, shards == 1 ? kInvalidId : rt.machine().first_memory(s)));
  }
  job->mine = job->tasks[shards == 1 ? 0 : rt.shard()];
  // Every shard must issue the same partitions (their pieces come from replicated data).
  detail::Hasher h;
  for (const char* c = op; *c; ++c) h.mix(std::uint64_t(*c));
  h.mix(parent.bounds());
  h.mix(colors);
  rt.note_creation(detail::Creation::DependentPartition, h.h);
  return rt.forest().create_pending_partition(parent, colors, job);
}

// The size of field `fid` of r's field space, or an Error naming the op.
std::size_t field_size(detail::Runtime& rt, const Region& r, FieldID fid, const char* op) {
  const auto& fs = rt.forest().field_space(rt.forest().tree(r.tree()).field_space);
  for (const FieldDef& f : fs.fields)
    if (f.id == fid) return f.size;
  throw Error(fmt::format("{}: the region {} has no field {} (fields {})", op, r.bounds().str(),
                          fid, rt.forest().field_list(rt.forest().tree(r.tree()).field_space)));
}

// Whether a pointer field into `dim`-d points holds a point (false) or a rectangle (true) per
// element, from its size; an Error for any other size.
bool holds_rects(detail::Runtime& rt, const Region& r, FieldID fid, int dim, const char* op) {
  const std::size_t size = field_size(rt, r, fid, op), point = sizeof(coord_t) * std::size_t(dim);
  if (size == point) return false;
  if (size == 2 * point) return true;
  throw Error(fmt::format(
      "{}: field {} has {} bytes; a pointer field into {}-d points holds a Point<{}> ({} bytes{}) "
      "or a Rect<{}> ({} bytes) per element",
      op, fid, size, dim, dim, point, dim == 1 ? ", or a coord_t" : "", dim, 2 * point));
}

// A region's points: its bounds, or a sparse piece's rectangles.
RectSet points_of(const detail::RegionForest& forest, const Region& r) {
  if (forest.sparse_partition_of(r.node()) != kInvalidId) return forest.rects_of_sparse(r.node());
  return r.bounds().empty() ? RectSet{} : RectSet{r.bounds()};
}

// Positions gathered rectangle by rectangle of a sparse region, in order.
void sort_positions(std::vector<std::vector<coord_t>>& positions) {
  for (auto& p : positions) std::sort(p.begin(), p.end());
}

// What pointer field `fid` of the mapped region holds at each point of `where` (Ns-d), as a
// rectangle of the target's Nt-d points (one point, or a range that may be empty):
// fn(position of the element in `frame` (row-major), its rectangle).
template <int Ns, int Nt, class Fn>
void each_pointer(const PhysicalRegion& pr, FieldID fid, bool rects, const Domain& where,
                  const Domain& frame, Fn&& fn) {
  if (rects) {
    auto range = pr.accessor<const Rect<Nt>, Ns>(fid);
    for (auto i : Rect<Ns>(where)) fn(frame.linearize(DomainPoint(i)), Domain(range[i]));
  } else {
    auto point = pr.accessor<const Point<Nt>, Ns>(fid);
    for (auto i : Rect<Ns>(where)) {
      const Point<Nt> t = point[i];
      fn(frame.linearize(DomainPoint(i)), Domain(Rect<Nt>(t, t)));
    }
  }
}

}  // namespace

// Every piece a single rectangle (or empty): a dense partition; else a sparse one.
Partition Context::partition_from_runs(Region parent, const Domain& colors,
                                       std::vector<std::vector<Domain>> pieces) {
  if (auto rects = detail::single_rects(pieces, parent.bounds().dim))
    return partition_by_rects(parent, create_index_space(colors), *rects);
  return partition_by_rect_lists(parent, create_index_space(colors), std::move(pieces));
}

Partition Context::partition_by_point_sets(Region parent, const IndexSpace& colors,
                                           const std::vector<std::vector<coord_t>>& points) {
  rt("partition_by_point_sets").forest().check_region(parent, "partition_by_point_sets");
  if (parent.bounds().dim != 1)
    throw Error(
        fmt::format("partition_by_point_sets: the region {} is {}-d; point sets "
                    "partition 1-d regions (use partition_by_rect_lists)",
                    parent.bounds().str(), parent.bounds().dim));
  std::vector<RectSet> pieces;
  pieces.reserve(points.size());
  for (const auto& p : points) pieces.push_back(runs_of_points(p));
  return partition_by_rect_lists(parent, colors, std::move(pieces));
}

Partition Context::partition_by_field(Region parent, FieldID color_field,
                                      const IndexSpace& colors) {
  const char* op = "partition_by_field";
  detail::Runtime& rtm = rt(op);
  rtm.forest().check_region(parent, op);
  const Domain cs = colors.bounds();
  const Domain bounds = parent.bounds();
  if (const std::size_t size = field_size(rtm, parent, color_field, op);
      size != sizeof(coord_t) * std::size_t(cs.dim))
    throw Error(
        fmt::format("{}: field {} has {} bytes; a color field holds a color of the {}-d color "
                    "space {} per element: a Point<{}> ({} bytes{})",
                    op, color_field, size, cs.dim, cs.str(), cs.dim,
                    sizeof(coord_t) * std::size_t(cs.dim), cs.dim == 1 ? ", or a coord_t" : ""));
  auto job = std::make_shared<PartitionJob>();
  job->reads = true;
  job->region = parent;
  job->field = color_field;
  job->compute = [cs, bounds, color_field,
                  points = points_of(rtm.forest(), parent)](const PhysicalRegion& pr) {
    std::vector<std::vector<coord_t>> positions(std::size_t(cs.volume()));
    with_dim(bounds.dim, [&](auto n) {
      with_dim(cs.dim, [&](auto k) {
        constexpr int N = decltype(n)::value, K = decltype(k)::value;
        auto color = pr.accessor<const Point<K>, N>(color_field);
        for (const Domain& r : points)
          for (auto i : Rect<N>(r)) {
            const DomainPoint c(color[i]);
            if (cs.contains(c))
              positions[std::size_t(cs.linearize(c))].push_back(bounds.linearize(DomainPoint(i)));
          }
      });
    });
    if (points.size() > 1) sort_positions(positions);
    return rects_of_position_sets(bounds, positions);
  };
  return issue_job(rtm, job, parent, cs, {}, pinned_launcher(), op);
}

Partition Context::partition_by_image(Region target, const Partition& source, FieldID pointer) {
  const char* op = "partition_by_image";
  detail::Runtime& rtm = rt(op);
  rtm.forest().check_region(target, op);
  PieceInput src = input_of(rtm, source, op);
  const Domain tb = target.bounds();
  const bool rects = holds_rects(rtm, src.parent, pointer, tb.dim, op);
  auto job = std::make_shared<PartitionJob>();
  job->reads = true;
  job->region = src.parent;
  job->field = pointer;
  const Domain colors = src.colors;
  const std::shared_ptr<const PartitionJob> after = src.job;
  job->compute = [src = std::move(src), tb, rects, pointer](const PhysicalRegion& pr) {
    const std::vector<RectSet>& from = src.pieces();
    std::vector<RectSet> pieces(from.size());
    std::vector<coord_t> positions;
    RectSet ranges;
    for (std::size_t c = 0; c < from.size(); ++c) {
      positions.clear();
      ranges.clear();
      // (Pointers outside the target point at nothing.)
      const auto add = [&](coord_t, const Domain& to) {
        if (rects)
          ranges.push_back(to & tb);
        else if (const DomainPoint t = to.lo_point(); tb.contains(t))
          positions.push_back(tb.linearize(t));
      };
      with_dim(src.parent.bounds().dim, [&](auto ns) {
        with_dim(tb.dim, [&](auto nt) {
          for (const Domain& r : from[c])
            each_pointer<decltype(ns)::value, decltype(nt)::value>(pr, pointer, rects, r, r, add);
        });
      });
      if (rects) {
        pieces[c] = detail::normalized(std::move(ranges), tb.dim);
      } else {
        std::sort(positions.begin(), positions.end());
        positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
        pieces[c] = detail::rects_of_positions(tb, positions);
      }
    }
    return pieces;
  };
  return issue_job(rtm, job, target, colors, {after}, pinned_launcher(), op);
}

Partition Context::partition_by_preimage(const Partition& target, Region source, FieldID pointer) {
  const char* op = "partition_by_preimage";
  detail::Runtime& rtm = rt(op);
  rtm.forest().check_region(source, op);
  PieceInput dst = input_of(rtm, target, op);
  const Domain sb = source.bounds();
  const int nt = dst.parent.bounds().dim;
  const bool rects = holds_rects(rtm, source, pointer, nt, op);
  auto job = std::make_shared<PartitionJob>();
  job->reads = true;
  job->region = source;
  job->field = pointer;
  const Domain colors = dst.colors;
  const std::shared_ptr<const PartitionJob> after = dst.job;
  job->compute = [dst = std::move(dst), sb, nt, rects, pointer,
                  points = points_of(rtm.forest(), source)](const PhysicalRegion& pr) {
    // Which colors hold a target point: the target's rectangles (those of an aliased target
    // may overlap: every color whose rectangles meet the pointer).
    const std::vector<RectSet>& to_pieces = dst.pieces();
    detail::RectLookup index;
    for (std::size_t c = 0; c < to_pieces.size(); ++c)
      for (const Domain& r : to_pieces[c]) index.add(r, c);
    index.finish();
    std::vector<std::vector<coord_t>> positions(to_pieces.size());
    std::vector<std::size_t> hit;
    const auto add = [&](coord_t at, const Domain& to) {
      if (to.empty()) return;
      hit.clear();
      index.overlapping(to, [&](std::size_t c) { hit.push_back(c); });
      std::sort(hit.begin(), hit.end());
      hit.erase(std::unique(hit.begin(), hit.end()), hit.end());
      for (std::size_t c : hit) positions[c].push_back(at);
    };
    with_dim(sb.dim, [&](auto ns) {
      with_dim(nt, [&](auto t) {
        for (const Domain& r : points)
          each_pointer<decltype(ns)::value, decltype(t)::value>(pr, pointer, rects, r, sb, add);
      });
    });
    if (points.size() > 1) sort_positions(positions);
    return rects_of_position_sets(sb, positions);
  };
  return issue_job(rtm, job, source, colors, {after}, pinned_launcher(), op);
}

Partition Context::partition_set_operation(const Partition& a, const Partition& b, int kind,
                                           const char* op) {
  detail::Runtime& rtm = rt(op);
  PieceInput va = input_of(rtm, a, op), vb = input_of(rtm, b, op);
  if (!(va.parent == vb.parent))
    throw Error(fmt::format("{}: the partitions are of different regions ({} and {})", op,
                            va.parent.bounds().str(), vb.parent.bounds().str()));
  if (!(va.colors == vb.colors))
    throw Error(fmt::format("{}: the color spaces differ ({} and {})", op, va.colors.str(),
                            vb.colors.str()));
  const Region parent = va.parent;
  const Domain colors = va.colors;
  const int dim = parent.bounds().dim;
  const std::vector<std::shared_ptr<const PartitionJob>> after = {va.job, vb.job};
  auto compute = [va = std::move(va), vb = std::move(vb), kind, dim](const PhysicalRegion&) {
    const std::vector<RectSet>&pa = va.pieces(), &pb = vb.pieces();
    std::vector<RectSet> pieces(pa.size());
    for (std::size_t c = 0; c < pieces.size(); ++c) {
      if (kind == 0) {
        RectSet both = pa[c];
        both.insert(both.end(), pb[c].begin(), pb[c].end());
        pieces[c] = detail::normalized(std::move(both), dim);
      } else if (kind == 1) {
        pieces[c] = detail::intersect(pa[c], pb[c]);
      } else {
        pieces[c] = detail::subtract(pa[c], pb[c]);
      }
    }
    return pieces;
  };
  // (Nothing to wait for: made now; inside a trace it is an op, replayed with the trace.)
  if (!after[0] && !after[1] && rtm.open_trace_number() == 0)
    return partition_from_runs(parent, colors, compute(PhysicalRegion{}));
  auto job = std::make_shared<PartitionJob>();
  job->compute = std::move(compute);
  return issue_job(rtm, job, parent, colors, after, pinned_launcher(), op);
}

Partition Context::partition_pending(
    Region parent, const IndexSpace& colors,
    const std::function<std::vector<Region>(const DomainPoint&)>& regions_of, PieceOp kind) {
  const char* op = "partition_pending";
  detail::Runtime& rtm = rt(op);
  rtm.check_not_in_trace(op);
  const auto& forest = rtm.forest();
  forest.check_region(parent, op);
  const int dim = parent.bounds().dim;
  auto runs_of = [&](const Region& r) -> RectSet {
    forest.check_region(r, op);
    if (r.tree() != parent.tree())
      throw Error(fmt::format("{}: region {} is not in the tree of {}", op, r.bounds().str(),
                              parent.bounds().str()));
    return points_of(forest, r);
  };
  const Domain& cs = colors.bounds();
  const RectSet bounds = points_of(forest, parent);
  std::vector<std::vector<Domain>> pieces(std::size_t(cs.volume()));
  for (std::size_t c = 0; c < pieces.size(); ++c) {
    const std::vector<Region> regions = regions_of(cs.delinearize(coord_t(c)));
    RectSet piece;
    for (std::size_t k = 0; k < regions.size(); ++k) {
      RectSet next = runs_of(regions[k]);
      if (k == 0)
        piece = std::move(next);
      else if (kind == PieceOp::Union)
        piece.insert(piece.end(), next.begin(), next.end());
      else if (kind == PieceOp::Intersection)
        piece = detail::intersect(detail::normalized(std::move(piece), dim),
                                  detail::normalized(std::move(next), dim));
      else
        piece = detail::subtract(detail::normalized(std::move(piece), dim),
                                 detail::normalized(std::move(next), dim));
    }
    pieces[c] = detail::intersect(detail::normalized(std::move(piece), dim), bounds);
  }
  return partition_from_runs(parent, cs, std::move(pieces));
}

Partition Context::partition_union(const Partition& a, const Partition& b) {
  return partition_set_operation(a, b, 0, "partition_union");
}
Partition Context::partition_intersection(const Partition& a, const Partition& b) {
  return partition_set_operation(a, b, 1, "partition_intersection");
}
Partition Context::partition_difference(const Partition& a, const Partition& b) {
  return partition_set_operation(a, b, 2, "partition_difference");
}

}  // namespace reprise

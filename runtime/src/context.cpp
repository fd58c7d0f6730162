// The application-facing API: creates data immediately, checks every launch on the
// application thread (so bad input fails at the call that made it) and issues ops.
#include "reprise/context.h"

#include <fmt/core.h>

#include <algorithm>
#include <utility>

#include "reprise_rt/bounding_box.h"
#include "reprise_rt/hasher.h"
#include "reprise_rt/op_token.h"
#include "reprise_rt/resolved_launch.h"
#include "reprise_rt/runtime.h"

namespace reprise {

using detail::OpKind;
using detail::OpRef;
using detail::ReqInfo;
using detail::Runtime;

// Names an op in launch-time errors as Op::describe does once it is issued: "op #12 (index
// task 'step')" (seq: the number it would get, the runtime's next), or just its kind;
// formatted only when an error is reported (a launch that succeeds builds no string).
struct OpLabel {
  static constexpr std::uint64_t kNoSeq = ~std::uint64_t(0);
  OpLabel(const char* k, const detail::TaskInfo* t = nullptr, std::uint64_t s = kNoSeq)  // NOLINT
      : kind(k), task(t), seq(s) {}
  const char* kind;
  const detail::TaskInfo* task;
  std::uint64_t seq;
  std::string str() const;
};

}  // namespace reprise

template <>
struct fmt::formatter<reprise::OpLabel> {
  constexpr auto parse(fmt::format_parse_context& ctx) { return ctx.begin(); }
  template <typename Context>
  auto format(const reprise::OpLabel& l, Context& ctx) const {
    if (l.seq == reprise::OpLabel::kNoSeq)
      return l.task ? fmt::format_to(ctx.out(), "{} '{}'", l.kind, l.task->name)
                    : fmt::format_to(ctx.out(), "{}", l.kind);
    return l.task ? fmt::format_to(ctx.out(), "op #{} ({} '{}')", l.seq, l.kind, l.task->name)
                  : fmt::format_to(ctx.out(), "op #{} ({})", l.seq, l.kind);
  }
};

namespace reprise {
std::string OpLabel::str() const {
  return fmt::format("{}", *this);
}
}  // namespace reprise

namespace reprise {

Context& Context::instance() {
  static Context the_context;  // trivially destructible: a late use finds it closed, not freed
  return the_context;
}

Context& Context::open(Runtime& rt) {
  instance().rt_ = &rt;
  return instance();
}

void Context::close() {
  instance().rt_ = nullptr;
}

namespace {
[[noreturn, gnu::cold, gnu::noinline]] void refuse_context(const Runtime* rt, const char* what) {
  if (!rt)
    throw Error(
        fmt::format("Context::{}: the Context was used after start() returned (it lives "
                    "as long as the top-level task)",
                    what));
  throw Error(fmt::format(
      "Context::{} inside a task body (or on a thread other than the top-level task's): a "
      "task cannot launch ops, create data or wait through the Context; pass it values with "
      "add_future and let the top-level task launch",
      what));
}
}  // namespace

Runtime& Context::rt(const char* what) const {
  if (!rt_ || !rt_->on_app_thread()) [[unlikely]]
    refuse_context(rt_, what);
  return *rt_;
}

namespace {

Runtime& current_runtime(const char* what) {
  Runtime* rt = Runtime::current();
  if (!rt) throw Error(fmt::format("{}: no runtime is running", what));
  return *rt;
}

// Resolves the fields of a requirement against the tree's field space.
void resolve_fields(const detail::RegionForest& forest, const OpLabel& op, int index,
                    const std::vector<FieldID>& fields, ReqInfo& out) {
  const auto& fs = forest.field_space(forest.tree(out.tree).field_space);
  if (fields.empty()) throw Error(fmt::format("{}: requirement {} names no field", op, index));
  out.field_indices.reserve(fields.size());
  for (FieldID f : fields) {
    int fi = fs.index_of(f);
    if (fi < 0)
      throw Error(
          fmt::format("{}: requirement {} names field {}, which its region {} (fields {}) "
                      "does not have",
                      op, index, f, forest.region(out.region).bounds.str(),
                      forest.field_list(forest.tree(out.tree).field_space)));
    if (out.mask & (detail::FieldMask(1) << fi))
      throw Error(fmt::format("{}: requirement {} names field {} twice", op, index, f));
    out.mask |= detail::FieldMask(1) << fi;
    out.field_indices.push_back(fi);
  }
  out.fields.assign(fields.begin(), fields.end());
}

void check_privilege(const OpLabel& op, int index, const RegionRequirement& r) {
  if (r.privilege == Privilege::Reduce && r.redop == ReductionOp::None)
    throw Error(
        fmt::format("{}: requirement {} is REDUCE without a reduction operator", op, index));
  if (r.privilege != Privilege::Reduce && r.redop != ReductionOp::None)
    throw Error(fmt::format("{}: requirement {} has a reduction operator but privilege {}", op,
                            index, to_string(r.privilege)));
  if (detail::is_custom(r.redop) && !detail::custom_reduction(r.redop))
    throw Error(
        fmt::format("{}: requirement {} uses reduction operator {}, which is not "
                    "registered (register_reduction, before start())",
                    op, index, unsigned(std::uint8_t(r.redop))));
  if (!detail::is_custom(r.redop) && std::uint8_t(r.redop) > std::uint8_t(ReductionOp::Max))
    throw Error(fmt::format("{}: requirement {}: {} is not a reduction operator", op, index,
                            unsigned(std::uint8_t(r.redop))));
}

// The rect requirement `r` gives point p of the launch (for interference checks).
Domain point_rect(const detail::RegionForest& forest, const ReqInfo& r, const Domain& launch,
                  coord_t p) {
  if (r.partition == kInvalidId) return forest.region(r.region).bounds;
  const auto& part = forest.partition(r.partition);
  DomainPoint c = r.projection.apply(launch.delinearize(p));
  return part.piece(std::size_t(part.colors.linearize(c)));
}

bool conflicting(const ReqInfo& a, const ReqInfo& b) {
  if (a.tree != b.tree || !(a.mask & b.mask)) return false;
  if (a.privilege == Privilege::ReadOnly && b.privilege == Privilege::ReadOnly) return false;
  if (a.privilege == Privilege::Reduce && b.privilege == Privilege::Reduce && a.redop == b.redop)
    return false;
  return true;
}

// Two requirements of one launch that touch the same data with a write would race.
void check_interference(const detail::RegionForest& forest, const OpLabel& op, const Domain& launch,
                        const detail::ReqList& reqs) {
  coord_t points = launch.volume();
  for (std::size_t a = 0; a < reqs.size(); ++a)
    for (std::size_t b = a + 1; b < reqs.size(); ++b) {
      if (!conflicting(reqs[a], reqs[b])) continue;
      for (coord_t p = 0; p < points; ++p)
        for (coord_t q = 0; q < points; ++q)
          if (point_rect(forest, reqs[a], launch, p)
                  .overlaps(point_rect(forest, reqs[b], launch, q)))
            throw Error(fmt::format(
                "{}: requirements {} and {} interfere: they share fields and overlap (points {} "
                "and {}) while one of them writes",
                op, a, b, launch.delinearize(p).str(), launch.delinearize(q).str()));
    }
}

// check_interference, once per launch shape in a run (see LaunchShapes).
void check_interference_once(Runtime& rt, const OpLabel& op, const Domain& launch,
                             const detail::ReqList& reqs) {
  detail::LaunchShapes& passed = rt.interference_free_shapes();
  if (passed.contains(launch, reqs)) return;
  check_interference(rt.forest(), op, launch, reqs);  // throws if the requirements interfere
  passed.add(launch, reqs);
}

// The resolvers fill a requirement in place (an op's requirement is ~300 bytes: building it
// aside and moving it in cost a quarter of a launch's requirement handling).
void resolve_region_req(const detail::RegionForest& forest, const OpLabel& op, int index,
                        const RegionRequirement& r, const Domain& launch, ReqInfo& q) {
  try {
    forest.check_region(r.region, op.kind);
  } catch (const Error&) {  // again, with the op's full name in the message
    forest.check_region(r.region, op.str().c_str());
  }
  check_privilege(op, index, r);
  q.tree = r.region.tree();
  q.region = r.region.node();
  q.uid = r.region.uid();
  q.bbox = forest.region(q.region).bounds;  // (as for pieces below: what the analysis sets)
  q.privilege = r.privilege;
  q.redop = r.redop;
  resolve_fields(forest, op, index, r.fields, q);
  if (q.writes() && launch.volume() > 1)
    throw Error(
        fmt::format("{}: requirement {} gives every point of the launch write access to "
                    "the same region; the points would interfere",
                    op, index));
}

void resolve_partition_req(detail::RegionForest& forest, const OpLabel& op, int index,
                           const RegionRequirement& r, const Domain& launch, ReqInfo& q) {
  try {
    forest.check_partition(r.partition, op.kind);
  } catch (const Error&) {  // again, with the op's full name in the message
    forest.check_partition(r.partition, op.str().c_str());
  }
  check_privilege(op, index, r);
  const auto& part = forest.partition(r.partition.node());
  q.tree = r.partition.tree();
  q.partition = r.partition.node();
  q.uid = r.partition.uid();
  q.region = part.parent_region;
  q.projection = r.projection;
  q.whole_partition = r.projection.kind() == Projection::Kind::Identity && launch == part.colors;
  if (q.whole_partition) {
    // What the analysis sets for it (LogicalAnalysis::compute_rects), set here already: a
    // kept resolution carries it, and the ops that share it then stay sharing.
    q.pieces = part.pieces;
    q.bbox = part.hull;
  }
  q.privilege = r.privilege;
  q.redop = r.redop;
  resolve_fields(forest, op, index, r.fields, q);
  if (r.projection.kind() == Projection::Kind::Identity) {
    if (launch.dim != part.colors.dim || !part.colors.contains(launch))
      throw Error(
          fmt::format("{}: requirement {}: the launch domain {} does not match the color "
                      "space {} of its partition",
                      op, index, launch.str(), part.colors.str()));
  } else {
    Domain image = r.projection.image(launch);
    if (image.dim != part.colors.dim || !part.colors.contains(image)) {
      for (coord_t p = 0; p < launch.volume(); ++p) {
        DomainPoint c = r.projection.apply(launch.delinearize(p));
        if (!part.colors.contains(c))
          throw Error(
              fmt::format("{}: requirement {}: the projection maps launch point {} to "
                          "color {}, which leaves the partition's color space {}",
                          op, index, launch.delinearize(p).str(), c.str(), part.colors.str()));
      }
    }
  }
  if (!q.whole_partition) {
    // (Projected, or by identity over part of the color space: the hull of its points' pieces,
    // as compute_rects finds it. Set here, a kept resolution carries it: else the analysis
    // would write it into every launch's list — a copy of the shared list each time, whose new
    // identity the dependence memo never recognises.)
    Domain bbox;
    for (coord_t p = 0; p < launch.volume(); ++p)
      detail::grow(bbox, part.piece(std::size_t(
                             part.colors.linearize(r.projection.apply(launch.delinearize(p))))));
    q.bbox = bbox;
  }
  if (q.writes() && launch.volume() > 1) {
    if (!part.disjoint)
      throw Error(
          fmt::format("{}: requirement {} writes through an aliased partition; its points "
                      "would interfere (use READ_ONLY or REDUCE)",
                      op, index));
    if (!r.projection.injective_on(launch))
      throw Error(
          fmt::format("{}: requirement {} writes, but its projection sends several points "
                      "to one subregion; they would interfere",
                      op, index));
  }
}

// A requirement on a sparse partition (or on one of its pieces) becomes one per run
// partition, checked first as the program wrote it; the analysis, traces and control
// replication then see only dense requirements. Others are added as they are.
void add_requirement(detail::RegionForest& forest, const OpLabel& op, int index,
                     const RegionRequirement& r, const Domain& launch, detail::Op& out) {
  ReqInfo& in_place = out.reqs.emplace_back();
  if (r.partition.valid())
    resolve_partition_req(forest, op, index, r, launch, in_place);
  else
    resolve_region_req(forest, op, index, r, launch, in_place);
  std::uint32_t sparse = r.partition.valid() ? r.partition.node() : kInvalidId;
  std::size_t color = 0;
  if (!r.partition.valid()) {
    sparse = forest.sparse_partition_of(r.region.node());
    if (sparse != kInvalidId) {
      const auto& pn = forest.partition(sparse);
      color = std::size_t(pn.colors.linearize(forest.region(r.region.node()).color));
    }
  } else if (!forest.partition(sparse).sparse()) {
    sparse = kInvalidId;
  }
  auto& begin = out.task_payload().req_begin;
  if (sparse == kInvalidId) {
    if (!begin.empty()) begin.push_back(std::uint16_t(out.reqs.size()));
    return;
  }
  const ReqInfo q = std::move(out.reqs.back());  // (replaced by one per run partition)
  out.reqs.pop_back();
  if (begin.empty()) {  // the requirements before were not expanded: one each
    for (std::size_t i = 0; i <= out.reqs.size(); ++i) begin.push_back(std::uint16_t(i));
  }
  const auto& runs = forest.partition(sparse).run_partitions;
  if (out.reqs.size() + runs.size() > 0xffff)
    throw Error(fmt::format("{}: requirement {} expands into too many rectangles ({})", op, index,
                            runs.size()));
  for (std::uint32_t run : runs) {
    ReqInfo e = q;
    const auto& rp = forest.partition(run);
    if (r.partition.valid()) {
      e.partition = run;
      e.uid = forest.partition_handle(run).uid();
    } else {
      e.region = rp.children[color];
      e.uid = forest.region(e.region).uid;
    }
    out.reqs.push_back(std::move(e));
  }
  begin.push_back(std::uint16_t(out.reqs.size()));
}

// For a piece of a sparse partition, calls fn with the region of each of its (non-empty)
// rectangles — the run partitions' pieces — and returns true; false for a dense region.
template <class Fn>
bool each_rectangle(const detail::RegionForest& forest, const Region& r, Fn&& fn) {
  const std::uint32_t sparse = forest.sparse_partition_of(r.node());
  if (sparse == kInvalidId) return false;
  const auto& pn = forest.partition(sparse);
  const std::size_t color = std::size_t(pn.colors.linearize(forest.region(r.node()).color));
  for (std::uint32_t run : pn.run_partitions) {
    const std::uint32_t piece = forest.partition(run).children[color];
    if (!forest.region(piece).bounds.empty()) fn(forest.region_handle(piece));
  }
  return true;
}

// A copy into a piece of a sparse partition: each part of the source inside one of the
// piece's rectangles is copied into that rectangle (every source point must lie in the piece).
// Returns false for a dense destination.
template <class Copy>
bool copy_into_sparse(detail::RegionForest& forest, const OpLabel& op, const CopyLauncher& l,
                      Copy&& copy) {
  const std::uint32_t sparse = forest.sparse_partition_of(l.dst.node());
  if (sparse == kInvalidId) return false;
  if (l.src.bounds().dim != l.dst.bounds().dim)
    throw Error(fmt::format("{}: destination bounds {} do not contain the source bounds {}", op,
                            l.dst.bounds().str(), l.src.bounds().str()));
  const Partition cut = forest.cut_by_piece(l.src, l.dst.node());
  const auto& parts = forest.partition(cut.node()).children;
  coord_t inside = 0;
  for (std::uint32_t part : parts) inside += forest.region(part).bounds.volume();
  if (inside != l.src.bounds().volume())
    throw Error(fmt::format(
        "{}: {} of the {} points of the source {} lie outside the sparse destination {} (a copy "
        "writes every source point into the destination)",
        op, l.src.bounds().volume() - inside, l.src.bounds().volume(), l.src.bounds().str(),
        l.dst.bounds().str()));
  const auto& pn = forest.partition(sparse);
  const std::size_t color = std::size_t(pn.colors.linearize(forest.region(l.dst.node()).color));
  for (std::size_t j = 0; j < parts.size(); ++j) {
    if (forest.region(parts[j]).bounds.empty()) continue;
    CopyLauncher part = l;
    part.src = forest.region_handle(parts[j]);
    part.dst = forest.region_handle(forest.partition(pn.run_partitions[j]).children[color]);
    copy(part);
  }
  return true;
}

bool needs_interference_check(const detail::ReqList& reqs) {
  for (std::size_t a = 0; a < reqs.size(); ++a)
    for (std::size_t b = a + 1; b < reqs.size(); ++b)
      if (conflicting(reqs[a], reqs[b])) return true;
  return false;
}

// A launch domain's fingerprint, for KeptLaunches::missed.
std::uint64_t fingerprint(const Domain& d) {
  detail::Hasher h;
  h.mix(d);
  return h.h | 1;  // (0 is "none")
}

// Fills a task launch's requirements: what one of the launcher's recent launches over the same
// domain made of them while that still holds (ResolvedLaunch; shared copy-on-write), or what a
// launch of the same content made of them (ResolutionCache: for launchers made afresh), else
// by `resolve`, whose result the launcher keeps. The op's token (trace matching's key,
// otherwise computed on the utility thread) comes with them: it depends only on them, the
// domain, the task, the number of futures and the pinned memory. (A resolution is kept for a
// domain one of the last two launches without a kept one had too: a launcher launched once, or
// over ever new domains, keeps nothing; one that alternates between two domains keeps both.
// The cache keeps one for content that missed twice within its last misses.)
template <class Resolve>
void resolve_requirements(Runtime& rt, detail::KeptLaunches& kept, detail::Op& op,
                          std::span<const RegionRequirement> reqs, Resolve&& resolve) {
  const auto& payload = op.task_payload();
  auto use = [&](const detail::ResolvedLaunch& r) {
    op.reqs.share_inside(r.reqs);  // (an op: reprise_rt/req_list.h)
    op.task_payload().req_begin = r.req_begin;
    if (r.futures == payload.futures.size() && r.pinned_memory == payload.pinned_memory)
      op.token = r.token;
  };
  for (int k = 0; k < 2; ++k) {
    const auto& r = kept.resolved[k];
    if (!r || !r->valid_for(rt.forest(), op.domain)) continue;
    use(*r);
    if (k == 1) std::swap(kept.resolved[0], kept.resolved[1]);
    return;
  }
  auto keep_in_launcher = [&](std::shared_ptr<const detail::ResolvedLaunch> r) {
    // (One for another domain stays; one for this domain, no longer valid, is replaced.)
    if (kept.resolved[0] && kept.resolved[0]->domain != op.domain)
      kept.resolved[1] = std::move(kept.resolved[0]);
    kept.resolved[0] = std::move(r);
  };
  detail::ResolutionCache& cache = rt.resolutions();
  const auto key =
      detail::ResolutionCache::key_of(op.task, op.kind == OpKind::IndexTask, op.domain, reqs);
  if (auto r = cache.find(key, rt.forest(), op.domain)) {
    use(*r);
    keep_in_launcher(std::move(r));
    return;
  }
  op.reqs = detail::ReqList();  // (a renewed op's are the last launch's: Op::renew_for_task)
  resolve();                    // (throws on bad requirements: nothing is kept)
  const std::uint64_t domain = fingerprint(op.domain);
  const bool kept_by_launcher = domain == kept.missed[0] || domain == kept.missed[1];
  const bool kept_by_content = cache.missed_before(key);
  if (!kept_by_launcher) kept.missed[1] = std::exchange(kept.missed[0], domain);
  if (!kept_by_launcher && !kept_by_content) return;
  auto resolved = std::make_shared<detail::ResolvedLaunch>();
  resolved->forest = rt.forest().serial();
  resolved->retirements = rt.forest().retirements();
  resolved->domain = op.domain;
  resolved->reqs = op.reqs;
  resolved->req_begin = payload.req_begin;
  resolved->futures = std::uint32_t(payload.futures.size());
  resolved->pinned_memory = payload.pinned_memory;
  resolved->token = detail::token_of(op);
  cache.keep(key, resolved);
  keep_in_launcher(std::move(resolved));
}

void check_futures(const OpLabel& op, const std::vector<Future>& fs) {
  for (std::size_t i = 0; i < fs.size(); ++i)
    if (!fs[i].valid()) throw Error(fmt::format("{}: future argument {} is empty", op, i));
}

[[noreturn, gnu::cold, gnu::noinline]] void refuse_task(Runtime& rt, TaskID id,
                                                        const detail::TaskInfo* t) {
  if (!t)
    throw Error(
        fmt::format("op #{} (execute): unknown task id {} (not registered)", rt.ops_issued(), id));
  throw Error(fmt::format("op #{} (execute): task '{}' has no CPU variant and there is no GPU",
                          rt.ops_issued(), t->name));
}

// The task an execute names (the op it would be, `op #N (execute)`, is in the errors).
// (Inline, its errors out of line: on every launch's way.)
inline const detail::TaskInfo& find_task(Runtime& rt, TaskID id) {
  const detail::TaskInfo* t = rt.find_task(id);
  if (!t || (!t->variant(ProcessorKind::CPU) && rt.machine().num_gpus == 0)) [[unlikely]]
    refuse_task(rt, id, t);
  return *t;
}

// Under control replication every shard must create the same partitions: note their shapes.
Partition noted(Runtime& rt, detail::Creation kind, Partition p) {
  detail::Hasher h;
  h.mix(p.parent().bounds());
  h.mix(p.color_space());
  for (coord_t i = 0; i < p.color_space().volume(); ++i)
    h.mix(p.rect(p.color_space().delinearize(i)));
  rt.note_creation(kind, h.h);
  return p;
}

std::uint64_t shape_of(const Domain& d) {
  detail::Hasher h;
  h.mix(d);
  return h.h;
}

}  // namespace

IndexSpace Context::create_index_space(const Domain& bounds) {
  Runtime& rtm = rt("create_index_space");
  IndexSpace is = rtm.forest().create_index_space(bounds);
  rtm.note_creation(detail::Creation::IndexSpace, shape_of(bounds));
  return is;
}

FieldSpace Context::create_field_space(std::initializer_list<FieldDef> fields) {
  return create_field_space(std::vector<FieldDef>(fields));
}

FieldSpace Context::create_field_space(const std::vector<FieldDef>& fields) {
  Runtime& rtm = rt("create_field_space");
  FieldSpace fs = rtm.forest().create_field_space(fields);
  detail::Hasher h;
  for (const FieldDef& f : fields) h.mix(std::uint64_t(f.id) << 32 | f.size);
  rtm.note_creation(detail::Creation::FieldSpace, h.h);
  return fs;
}

Region Context::create_region(const IndexSpace& is, FieldSpace fs) {
  Runtime& rtm = rt("create_region");
  rtm.check_not_in_trace("create_region");
  Region region = rtm.forest().create_region(is, fs);
  detail::Hasher h;
  h.mix(region.bounds());
  h.mix(fs.id);
  rtm.note_creation(detail::Creation::Region, h.h);
  return region;
}

Partition Context::partition_equal(Region parent, const IndexSpace& colors) {
  Runtime& rtm = rt("partition_equal");
  rtm.check_not_in_trace("partition_equal");
  rtm.forest().check_region(parent, "partition_equal");
  const Domain& b = parent.bounds();
  const Domain& c = colors.bounds();
  if (c.dim != b.dim)
    throw Error(fmt::format("partition_equal: color space {} must have the region's dimension {}",
                            c.str(), b.dim));
  if (c.empty()) throw Error("partition_equal: empty color space");
  std::vector<Domain> pieces(std::size_t(c.volume()));
  for (coord_t i = 0; i < c.volume(); ++i) {
    DomainPoint col = c.delinearize(i);
    Domain r;
    r.dim = b.dim;
    for (int d = 0; d < b.dim; ++d) {
      coord_t n = b.extent(d), k = c.extent(d), j = col.x[d] - c.lo[d];
      r.lo[d] = b.lo[d] + n * j / k;
      r.hi[d] = b.lo[d] + n * (j + 1) / k - 1;
    }
    pieces[std::size_t(i)] = r;
  }
  return noted(rtm, detail::Creation::PartitionEqual,
               rtm.forest().create_partition(parent, c, std::move(pieces)));
}

Partition Context::partition_by_blocks(Region parent, const DomainPoint& block) {
  Runtime& rtm = rt("partition_by_blocks");
  rtm.check_not_in_trace("partition_by_blocks");
  rtm.forest().check_region(parent, "partition_by_blocks");
  const Domain& b = parent.bounds();
  if (block.dim != b.dim)
    throw Error(
        fmt::format("partition_by_blocks: the block size {} has dimension {}, the region {} has {}",
                    block.str(), block.dim, b.str(), b.dim));
  Domain colors;
  colors.dim = b.dim;
  for (int d = 0; d < b.dim; ++d) {
    if (block.x[d] <= 0)
      throw Error(
          fmt::format("partition_by_blocks: block sizes must be positive, got {}", block.str()));
    colors.lo[d] = 0;
    colors.hi[d] = (b.extent(d) + block.x[d] - 1) / block.x[d] - 1;
  }
  std::vector<Domain> pieces(std::size_t(colors.volume()));
  for (coord_t i = 0; i < colors.volume(); ++i) {
    DomainPoint col = colors.delinearize(i);
    Domain r;
    r.dim = b.dim;
    for (int d = 0; d < b.dim; ++d) {
      r.lo[d] = b.lo[d] + col.x[d] * block.x[d];
      r.hi[d] = std::min(b.hi[d], r.lo[d] + block.x[d] - 1);
    }
    pieces[std::size_t(i)] = r;
  }
  return noted(rtm, detail::Creation::PartitionByBlocks,
               rtm.forest().create_partition(parent, colors, std::move(pieces)));
}

Partition Context::partition_by_rects(Region parent, const IndexSpace& colors,
                                      const std::function<Domain(const DomainPoint&)>& rect_of) {
  Runtime& rtm = rt("partition_by_rects");
  rtm.check_not_in_trace("partition_by_rects");
  rtm.forest().check_region(parent, "partition_by_rects");
  const Domain& c = colors.bounds();
  std::vector<Domain> pieces(std::size_t(c.volume()));
  for (coord_t i = 0; i < c.volume(); ++i) pieces[std::size_t(i)] = rect_of(c.delinearize(i));
  return noted(rtm, detail::Creation::PartitionByRects,
               rtm.forest().create_partition(parent, c, std::move(pieces)));
}

Partition Context::partition_by_rects(Region parent, const IndexSpace& colors,
                                      const std::vector<Domain>& rects) {
  Runtime& rtm = rt("partition_by_rects");
  rtm.check_not_in_trace("partition_by_rects");
  rtm.forest().check_region(parent, "partition_by_rects");
  if (coord_t(rects.size()) != colors.bounds().volume())
    throw Error(fmt::format("partition_by_rects: {} rects given for {} colors", rects.size(),
                            colors.bounds().volume()));
  return noted(rtm, detail::Creation::PartitionByRects,
               rtm.forest().create_partition(parent, colors.bounds(), rects));
}

Partition Context::partition_by_rect_lists(Region parent, const IndexSpace& colors,
                                           std::vector<std::vector<Domain>> rects) {
  Runtime& rtm = rt("partition_by_rect_lists");
  rtm.check_not_in_trace("partition_by_rect_lists");
  rtm.forest().check_region(parent, "partition_by_rect_lists");
  Partition p = rtm.forest().create_sparse_partition(parent, colors.bounds(), std::move(rects),
                                                     "partition_by_rect_lists");
  // Every shard must make the same pieces: note the rectangles, not only their boxes.
  detail::Hasher h;
  h.mix(parent.bounds());
  h.mix(colors.bounds());
  for (const auto& list : *rtm.forest().partition(p.node()).runs) {
    h.mix(std::uint64_t(list.size()));
    for (const Domain& r : list) h.mix(r);
  }
  rtm.note_creation(detail::Creation::PartitionByRectLists, h.h);
  return p;
}

Partition Context::partition_by_translation(const Partition& base, const DomainPoint& offset) {
  Runtime& rtm = rt("partition_by_translation");
  rtm.check_not_in_trace("partition_by_translation");
  rtm.forest().check_partition(base, "partition_by_translation");
  const auto& pn = rtm.forest().partition(base.node());
  if (offset.dim != rtm.forest().region(pn.parent_region).bounds.dim)
    throw Error(fmt::format(
        "partition_by_translation: the offset {} has dimension {}, the region {} has {}",
        offset.str(), offset.dim, rtm.forest().region(pn.parent_region).bounds.str(),
        rtm.forest().region(pn.parent_region).bounds.dim));
  if (pn.sparse()) {  // every rectangle moves
    std::vector<std::vector<Domain>> rects(pn.runs->size());
    for (std::size_t c = 0; c < rects.size(); ++c)
      for (const Domain& r : (*pn.runs)[c]) rects[c].push_back(translate(r, offset));
    return partition_by_rect_lists(rtm.forest().region_handle(pn.parent_region),
                                   rtm.forest().create_index_space(pn.colors), std::move(rects));
  }
  std::vector<Domain> pieces;
  pieces.reserve(pn.pieces->size());
  for (const auto& p : *pn.pieces) pieces.push_back(translate(p, offset));
  return noted(rtm, detail::Creation::PartitionByTranslation,
               rtm.forest().create_partition(rtm.forest().region_handle(pn.parent_region),
                                             pn.colors, std::move(pieces)));
}

Region Context::subregion(const Partition& p, const DomainPoint& color) {
  rt("subregion").forest().check_partition(p, "subregion");
  return p[color];
}

Future Context::execute(const TaskLauncher& l) {
  return execute_task(l, kInvalidId);
}

Future Context::execute_task(const TaskLauncher& l, std::uint32_t pinned_memory) {
  Runtime& rtm = rt("execute");
  const detail::TaskInfo& t = find_task(rtm, l.task());
  const OpLabel name("task", &t, rtm.ops_issued());
  OpRef op = rtm.launch_op();
  op->kind = OpKind::Task;
  op->task = l.task();
  op->task_info = &t;
  op->domain = Domain(Rect<1>({0}, {0}));
  detail::TaskPayload& payload = op->task_payload();
  payload.args.assign(l.args().data(), l.args().data() + l.args().size());
  payload.pinned_memory = pinned_memory;
  check_futures(name, l.futures());
  payload.futures.assign(l.futures().begin(), l.futures().end());
  resolve_requirements(rtm, l.kept_, *op, l.requirements(), [&] {
    op->reqs.reserve(l.requirements().size());
    for (std::size_t i = 0; i < l.requirements().size(); ++i) {
      const auto& r = l.requirements()[i];
      if (r.partition.valid())
        throw Error(
            fmt::format("{}: requirement {} names a partition; single tasks use regions", name, i));
      add_requirement(rtm.forest(), name, int(i), r, op->domain, *op);
    }
    if (needs_interference_check(op->reqs))
      check_interference_once(rtm, name, op->domain, op->reqs);
  });
  op->future = detail::make_future_state();
  const TaskVariant* v = t.variant(ProcessorKind::CPU);
  op->future->kind = v ? v->result_kind : t.variants.front().result_kind;
  Future f(op->future);
  rtm.issue(std::move(op));
  return f;
}

FutureMap Context::execute(const IndexLauncher& l) {
  Runtime& rtm = rt("execute");
  const detail::TaskInfo& t = find_task(rtm, l.task());
  const OpLabel name("index task", &t, rtm.ops_issued());
  const Domain& dom = l.domain();
  if (dom.dim < 1 || dom.dim > kMaxDim)
    throw Error(fmt::format("{}: launch domain must have 1..3 dimensions", name));
  OpRef op = rtm.launch_op();
  op->kind = OpKind::IndexTask;
  op->task = l.task();
  op->task_info = &t;
  op->domain = dom;
  detail::TaskPayload& payload = op->task_payload();
  payload.args.assign(l.args().data(), l.args().data() + l.args().size());
  payload.point_args = l.argument_map();
  check_futures(name, l.futures());
  payload.futures.assign(l.futures().begin(), l.futures().end());
  resolve_requirements(rtm, l.kept_, *op, l.requirements(), [&] {
    op->reqs.reserve(l.requirements().size());
    for (std::size_t i = 0; i < l.requirements().size(); ++i)
      add_requirement(rtm.forest(), name, int(i), l.requirements()[i], dom, *op);
    if (needs_interference_check(op->reqs)) check_interference_once(rtm, name, dom, op->reqs);
  });
  if (!l.makes_future_map()) {  // (fire and forget: set_future_map)
    rtm.issue(std::move(op));
    return FutureMap();
  }
  // (Recycled: the map dies on whichever thread drops it last, often a worker.)
  op->future_map = std::allocate_shared<detail::FutureMapState>(
      detail::RecyclingAllocator<detail::FutureMapState>());
  op->future_map->domain = dom;
  const TaskVariant* v = t.variant(ProcessorKind::CPU);
  op->future_map->kind = v ? v->result_kind : t.variants.front().result_kind;
  // A void task's map holds no values (64 bytes a point, written by nobody).
  if (op->future_map->kind != ValueKind::None)
    op->future_map->values.resize(std::size_t(std::max<coord_t>(dom.volume(), 0)));
  FutureMap fm(op->future_map);
  rtm.issue(std::move(op));
  return fm;
}

void Context::fill(const FillLauncher& l) {
  Runtime& rtm = rt("fill");
  const OpLabel name("fill", nullptr, rtm.ops_issued());
  rtm.forest().check_region(l.region, name.str().c_str());
  // A piece of a sparse partition: a fill per rectangle.
  if (each_rectangle(rtm.forest(), l.region, [&](const Region& piece) {
        FillLauncher part = l;
        part.region = piece;
        fill(part);
      }))
    return;
  RegionRequirement r;
  r.region = l.region;
  r.privilege = Privilege::WriteDiscard;
  r.fields = l.fields;
  OpRef op = detail::make_op();
  op->kind = OpKind::Fill;
  op->domain = Domain(Rect<1>({0}, {0}));
  resolve_region_req(rtm.forest(), name, 0, r, op->domain, op->reqs.emplace_back());
  const auto& fs = rtm.forest().field_space(rtm.forest().tree(op->reqs[0].tree).field_space);
  for (int fi : op->reqs[0].field_indices)
    if (fs.fields[std::size_t(fi)].size != l.value.size())
      throw Error(fmt::format("{}: the value has {} bytes but field {} has {}", name,
                              l.value.size(), fs.fields[std::size_t(fi)].id,
                              fs.fields[std::size_t(fi)].size));
  op->payload = detail::FillPayload{};
  op->fill().value.assign(l.value.begin(), l.value.end());
  rtm.issue(std::move(op));
}

void Context::copy(const CopyLauncher& l) {
  Runtime& rtm = rt("copy");
  const OpLabel name("copy", nullptr, rtm.ops_issued());
  rtm.forest().check_region(l.src, name.str().c_str());
  rtm.forest().check_region(l.dst, name.str().c_str());
  // Out of a piece of a sparse partition: a copy per rectangle.
  if (each_rectangle(rtm.forest(), l.src, [&](const Region& piece) {
        CopyLauncher part = l;
        part.src = piece;
        copy(part);
      }))
    return;
  // Into one: a copy per rectangle, of the part of the source inside it.
  if (copy_into_sparse(rtm.forest(), name, l, [&](const CopyLauncher& part) { copy(part); }))
    return;
  if (l.src_fields.size() != l.dst_fields.size())
    throw Error(fmt::format("{}: {} source fields but {} destination fields", name,
                            l.src_fields.size(), l.dst_fields.size()));
  if (l.src.bounds().dim != l.dst.bounds().dim || !l.dst.bounds().contains(l.src.bounds()))
    throw Error(fmt::format("{}: destination bounds {} do not contain the source bounds {}", name,
                            l.dst.bounds().str(), l.src.bounds().str()));
  OpRef op = detail::make_op();
  op->kind = OpKind::Copy;
  op->domain = Domain(Rect<1>({0}, {0}));
  RegionRequirement s;
  s.region = l.src;
  s.privilege = Privilege::ReadOnly;
  s.fields = l.src_fields;
  RegionRequirement d;
  d.region = l.dst;
  d.privilege = Privilege::WriteDiscard;
  d.fields = l.dst_fields;
  resolve_region_req(rtm.forest(), name, 0, s, op->domain, op->reqs.emplace_back());
  resolve_region_req(rtm.forest(), name, 1, d, op->domain, op->reqs.emplace_back());
  const auto& sfs = rtm.forest().field_space(rtm.forest().tree(op->reqs[0].tree).field_space);
  const auto& dfs = rtm.forest().field_space(rtm.forest().tree(op->reqs[1].tree).field_space);
  for (std::size_t i = 0; i < l.src_fields.size(); ++i) {
    std::size_t a = sfs.fields[std::size_t(op->reqs[0].field_indices[i])].size;
    std::size_t b = dfs.fields[std::size_t(op->reqs[1].field_indices[i])].size;
    if (a != b)
      throw Error(fmt::format("{}: source field {} has {} bytes, destination field {} has {}", name,
                              l.src_fields[i], a, l.dst_fields[i], b));
  }
  if (op->reqs[0].tree == op->reqs[1].tree && (op->reqs[0].mask & op->reqs[1].mask) &&
      l.src.bounds().overlaps(l.dst.bounds()))
    throw Error(fmt::format("{}: source {} and destination {} overlap on the same fields", name,
                            l.src.bounds().str(), l.dst.bounds().str()));
  rtm.issue(std::move(op));
}

Future Context::reduce(const FutureMap& fm, ReductionOp redop) {
  if (!fm.valid()) throw Error("reduce: empty future map");
  if (redop == ReductionOp::None) throw Error("reduce: no reduction operator given");
  const bool custom = detail::is_custom(redop);
  if (custom && !detail::custom_reduction(redop))
    throw Error(fmt::format("reduce: reduction operator {} is not registered",
                            unsigned(std::uint8_t(redop))));
  ValueKind k = fm.state()->kind;
  // A user-defined operator folds any value of its type's size (checked as it folds).
  if (k == ValueKind::None || (k == ValueKind::Bytes && !custom))
    throw Error("reduce: the future map's task does not return a number");
  if (fm.domain().volume() < 1) throw Error("reduce: the future map is empty");
  OpRef op = detail::make_op();
  op->kind = OpKind::FutureReduce;
  op->domain = Domain(Rect<1>({0}, {0}));
  op->payload = detail::FutureReducePayload{fm, redop};
  op->future = detail::make_future_state();
  op->future->kind = k;
  Future f(op->future);
  rt("reduce").issue(std::move(op));
  return f;
}

Future Context::fence() {
  Runtime& rtm = rt("fence");
  rtm.check_not_in_trace("fence");
  OpRef op = detail::make_op();
  op->kind = OpKind::Fence;
  op->domain = Domain(Rect<1>({0}, {0}));
  op->future = detail::make_future_state();
  Future f(op->future);
  rtm.issue(std::move(op));
  return f;
}

namespace {
// Issues the destruction op of a region tree or a partition; its completion event.
detail::Event issue_destruction(Runtime& rtm, detail::DestroyPayload what) {
  OpRef op = detail::make_op();
  op->kind = OpKind::DestroyRegion;
  op->domain = Domain(Rect<1>({0}, {0}));
  op->payload = what;
  OpRef keep = op;
  rtm.issue(std::move(op));
  return keep->done;
}
}  // namespace

void Context::destroy(Region r) {
  Runtime& rtm = rt("destroy");
  rtm.check_not_in_trace("destroy");
  rtm.forest().check_region(r, "destroy");
  if (rtm.forest().tree(r.tree()).root != r.node())
    throw Error(
        fmt::format("destroy: region {} is a subregion; only a root region can be "
                    "destroyed (destroy its partition instead)",
                    r.bounds().str()));
  // The tree's slots are reused once the destruction has completed: every op issued on it
  // has completed, and the analysis has forgotten it.
  rtm.forest().retire_tree(r.tree(), issue_destruction(rtm, detail::DestroyPayload{r.tree(), 0}));
}

void Context::destroy(const Partition& p) {
  Runtime& rtm = rt("destroy");
  rtm.check_not_in_trace("destroy");
  rtm.forest().check_partition(p, "destroy", /*settle=*/false);  // (nothing waits for pieces)
  // Nothing to free but the nodes: the op completes once the analysis has passed it (ops
  // issued earlier may still read the partition until they are analysed).
  rtm.forest().retire_partition(p.node(),
                                issue_destruction(rtm, detail::DestroyPayload{p.tree(), p.uid()}));
}

void Context::start_profiling_range() {
  Runtime& rtm = rt("start_profiling_range");
  rtm.profiling_ranges().push_back(rtm.profiler() ? detail::Profiler::stamp() : 0);
}
void Context::stop_profiling_range(const std::string& name) {
  Runtime& rtm = rt("stop_profiling_range");
  auto& open = rtm.profiling_ranges();
  if (open.empty())
    throw Error(fmt::format("stop_profiling_range(\"{}\"): no range was started", name));
  if (detail::Profiler* prof = rtm.profiler())
    prof->record_range(name, open.back(), detail::Profiler::stamp());
  open.pop_back();
}
void Context::begin_trace(TraceID id) {
  rt("begin_trace").begin_trace(id);
}
void Context::end_trace(TraceID id) {
  rt("end_trace").end_trace(id);
}

Context::TraceStats Context::trace_stats() const {
  detail::RuntimeStats s = rt("trace_stats").stats();
  return TraceStats{s.points_launched,
                    s.points_replayed,
                    s.templates_recorded,
                    s.replays,
                    s.mismatches,
                    s.copies,
                    s.shard_bytes,
                    s.messages_sent,
                    s.analysis_busy_ns,
                    s.peers_heard,
                    s.requests_sent,
                    s.remote_proxies,
                    s.points_deferred,
                    s.replay_instructions,
                    s.replay_instructions_here,
                    s.gpu_kernels,
                    s.gpu_graph_launches,
                    s.copies_host_to_device,
                    s.copies_device_to_host,
                    s.copies_device_to_device,
                    s.templates_dropped,
                    s.value_rounds,
                    s.gpu_link_copies,
                    s.condition_checks,
                    s.points_recorded_far,
                    s.points_recorded_deferred,
                    s.points_inline,
                    s.points_inline_alone};
}

std::uint32_t Context::num_cpus() const {
  return rt("num_cpus").machine().num_cpus;
}
std::uint32_t Context::shard() const {
  return rt("shard").machine().shard;
}
std::uint64_t Context::ops_issued() const {
  return rt("ops_issued").ops_issued();
}
bool Context::coverage_log_enabled() const {
  return rt("coverage_log_enabled").config().coverage_log;
}
std::vector<CoverageSample> Context::coverage_log() const {
  return rt("coverage_log").coverage_log();
}

std::uint32_t Context::num_shards() const {
  return rt("num_shards").machine().num_shards;
}

Domain Partition::rect(const DomainPoint& c) const {
  Runtime& rt = current_runtime("Partition::rect");
  rt.forest().check_partition(*this, "Partition::rect");
  const auto& pn = rt.forest().partition(node_);
  if (!pn.colors.contains(c))
    throw Error(fmt::format("Partition::rect: color {} is outside the color space {}", c.str(),
                            pn.colors.str()));
  return pn.piece(std::size_t(pn.colors.linearize(c)));
}

Region Partition::operator[](const DomainPoint& c) const {
  Runtime& rt = current_runtime("Partition::operator[]");
  rt.forest().check_partition(*this, "subregion");
  const auto& pn = rt.forest().partition(node_);
  if (!pn.colors.contains(c))
    throw Error(
        fmt::format("subregion: color {} is outside the color space {}", c.str(), pn.colors.str()));
  return rt.forest().region_handle(pn.children[std::size_t(pn.colors.linearize(c))]);
}

bool Partition::settled_flag(bool disjoint) const {
  Runtime& rt = current_runtime(disjoint ? "Partition::disjoint" : "Partition::complete");
  rt.forest().check_partition(*this, disjoint ? "Partition::disjoint" : "Partition::complete");
  const auto& pn = rt.forest().partition(node_);
  return disjoint ? pn.disjoint : pn.complete;
}

Region Partition::parent() const {
  Runtime& rt = current_runtime("Partition::parent");
  return rt.forest().region_handle(rt.forest().partition(node_).parent_region);
}

}  // namespace reprise

#include "random_program.h"

#include <mpi.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>

namespace reprise_random {

using reprise::Context;
using reprise::FieldDef;
using reprise::Future;
using reprise::FutureMap;
using reprise::Partition;
using reprise::Point;
using reprise::Rect;
using reprise::Region;
using reprise::TaskContext;
using reprise::TaskID;

namespace {

constexpr TaskID kTaskVoid = 9100, kTaskU64 = 9101, kTaskI64 = 9102, kTaskReadback = 9103;
constexpr int kMaxReqs = 4, kMaxFields = 4, kMaxFutures = 4;
constexpr int kMaxColors = 16;

// ------------------------------------------------------------------------------------------
// Hashing and random numbers (self-contained, so that a seed means the same program anywhere).

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <int N>
std::uint64_t hash_point(const Point<N>& p) {
  std::uint64_t h = 0x51ed270b27a5f1a3ull + std::uint64_t(N);
  for (int i = 0; i < N; ++i) h = mix(h, std::uint64_t(p[i]));
  return h;
}

std::uint64_t hash_point(const DomainPoint& p) {
  switch (p.dim) {
    case 1:
      return hash_point(p.as<1>());
    case 2:
      return hash_point(p.as<2>());
    case 3:
      return hash_point(p.as<3>());
    default:
      throw std::logic_error("hash_point: bad dimension");
  }
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(mix(seed, 0x0ddba11cafef00dull)) {}
  std::uint64_t next() {
    s_ += 0x9e3779b97f4a7c15ull;
    std::uint64_t z = s_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi] (lo when hi < lo).
  coord_t range(coord_t lo, coord_t hi) {
    if (hi <= lo) return lo;
    return lo + coord_t(next() % std::uint64_t(hi - lo + 1));
  }
  int irange(int lo, int hi) { return int(range(lo, hi)); }
  bool chance(double p) { return double(next() >> 11) * 0x1p-53 < p; }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[std::size_t(range(0, coord_t(v.size()) - 1))];
  }
  // An index chosen with the given weights (zero weights are never chosen).
  int weighted(std::initializer_list<int> w) {
    int total = 0;
    for (int x : w) total += x;
    int r = irange(0, total - 1), i = 0;
    for (int x : w) {
      if (r < x) return i;
      r -= x;
      ++i;
    }
    return i - 1;
  }
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i)
      std::swap(v[i - 1], v[std::size_t(range(0, coord_t(i) - 1))]);
  }

 private:
  std::uint64_t s_;
};

template <class F>
void with_dim(int dim, F&& f) {
  switch (dim) {
    case 1:
      f(std::integral_constant<int, 1>{});
      break;
    case 2:
      f(std::integral_constant<int, 2>{});
      break;
    case 3:
      f(std::integral_constant<int, 3>{});
      break;
    default:
      throw std::logic_error("with_dim: bad dimension " + std::to_string(dim));
  }
}

Domain make_domain(int dim, const std::array<coord_t, 3>& lo, const std::array<coord_t, 3>& hi) {
  Domain d;
  d.dim = dim;
  d.lo = lo;
  d.hi = hi;
  return d;
}

Domain single_point_domain() {
  return Domain(Rect<1>({0}, {0}));
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// ------------------------------------------------------------------------------------------
// Task bodies. The same code runs inside the runtime (through accessors) and in the reference
// model (on host arrays), through a Store with reader<N>/writer<N>/reducer<N>/domain.

struct BodyReq {
  std::uint8_t priv = 0, redop = 0, dim = 0, nfields = 0;
  std::uint8_t is_float[kMaxFields] = {};
  FieldID fid[kMaxFields] = {};
};

struct BodyArgs {
  std::uint64_t salt = 0;
  std::uint32_t op_index = 0;
  std::uint8_t fail = 0;             // the body throws DeliberateFailure
  std::uint64_t* observe = nullptr;  // per launch point: the hash of what the point read
  std::uint32_t nreqs = 0, nfutures = 0;
  std::uint8_t future_type[kMaxFutures] = {};
  BodyReq req[kMaxReqs];
};
static_assert(std::is_trivially_copyable_v<BodyArgs>);

struct ReadbackArgs {
  std::uint64_t* dst[kMaxFields] = {};
  FieldID fid[kMaxFields] = {};
  int nfields = 0;
  int dim = 0;
};
static_assert(std::is_trivially_copyable_v<ReadbackArgs>);

std::uint64_t rw_update(std::uint64_t old, std::uint64_t h, bool is_float) {
  if (!is_float) return mix(old, h);
  double d = std::bit_cast<double>(old);
  if (!(std::fabs(d) < 1e9)) d = 0.0;  // also NaN (float fields may hold copied integers)
  return std::bit_cast<std::uint64_t>(d * 0.5 + double(h >> 11) * 0x1p-53);
}

std::uint64_t wd_value(std::uint64_t h, bool is_float) {
  if (!is_float) return h;
  return std::bit_cast<std::uint64_t>(double(h >> 11) * 0x1p-40 - 1000.0);
}

std::uint64_t reduce_value(std::uint64_t h, ReductionOp op) {
  return op == ReductionOp::Prod ? (h | 1) : h;
}

void fold(std::uint64_t& target, std::uint64_t v, ReductionOp op) {
  switch (op) {
    case ReductionOp::Sum:
      target += v;
      break;
    case ReductionOp::Prod:
      target *= v;
      break;
    case ReductionOp::Min:
      target = std::min(target, v);
      break;
    case ReductionOp::Max:
      target = std::max(target, v);
      break;
    case ReductionOp::None:
      target = v;
      break;
  }
}

// Folds of future values, with the future's type (int64 compares signed).
std::uint64_t fold_future(std::uint64_t a, std::uint64_t b, ValueType t, ReductionOp op) {
  if (t == ValueType::I64) {
    auto x = std::int64_t(a), y = std::int64_t(b);
    switch (op) {
      case ReductionOp::Min:
        return std::uint64_t(std::min(x, y));
      case ReductionOp::Max:
        return std::uint64_t(std::max(x, y));
      default:
        throw std::logic_error("fold_future: int64 futures are only reduced by Min/Max");
    }
  }
  fold(a, b, op);
  return a;
}

template <int N, class Store>
void read_req(Store& s, int r, const BodyReq& q, std::uint64_t& acc) {
  const Rect<N> rect = s.domain(r).template as<N>();
  for (int k = 0; k < q.nfields; ++k) {
    auto rd = s.template reader<N>(r, q.fid[k]);
    std::uint64_t h = mix(acc, q.fid[k]);
    for (const auto& p : rect) h = mix(h, rd(p));
    acc = h;
  }
}

template <int N, class Store>
void write_req(Store& s, int r, const BodyReq& q, std::uint64_t acc) {
  const Rect<N> rect = s.domain(r).template as<N>();
  const auto priv = Privilege(q.priv);
  for (int k = 0; k < q.nfields; ++k) {
    const std::uint64_t base = mix(acc, mix(std::uint64_t(r), q.fid[k]));
    const bool fl = q.is_float[k] != 0;
    if (priv == Privilege::ReadWrite) {
      auto w = s.template writer<N>(r, q.fid[k]);
      for (const auto& p : rect) {
        std::uint64_t h = mix(base, hash_point(p));
        if (h & 3) {
          std::uint64_t& v = w(p);
          v = rw_update(v, h, fl);
        }
      }
    } else if (priv == Privilege::WriteDiscard) {
      auto w = s.template writer<N>(r, q.fid[k]);
      for (const auto& p : rect) w(p) = wd_value(mix(base, hash_point(p)), fl);
    } else if (priv == Privilege::Reduce) {
      auto red = s.template reducer<N>(r, q.fid[k]);
      const auto op = ReductionOp(q.redop);
      for (const auto& p : rect) {
        std::uint64_t h = mix(base, hash_point(p));
        if (h & 3) red(p, reduce_value(h, op));
      }
    }
  }
}

template <class Store>
std::uint64_t run_body(const BodyArgs& a, const DomainPoint& point, const std::uint64_t* futs,
                       Store& s) {
  std::uint64_t acc = mix(a.salt, hash_point(point));
  for (std::uint32_t i = 0; i < a.nfutures; ++i)
    if (ValueType(a.future_type[i]) != ValueType::None) acc = mix(acc, futs[i]);
  for (int r = 0; r < int(a.nreqs); ++r) {
    const BodyReq& q = a.req[r];
    const auto priv = Privilege(q.priv);
    if (priv == Privilege::ReadOnly || priv == Privilege::ReadWrite)
      with_dim(q.dim, [&](auto n) { read_req<decltype(n)::value>(s, r, q, acc); });
  }
  for (int r = 0; r < int(a.nreqs); ++r) {
    const BodyReq& q = a.req[r];
    if (Privilege(q.priv) != Privilege::ReadOnly)
      with_dim(q.dim, [&](auto n) { write_req<decltype(n)::value>(s, r, q, acc); });
  }
  return mix(acc, 0xfeedbeefull);
}

// Records what point `point` of the launch saw (so that a wrong order is noticed even where
// later ops overwrite its effects).
void observe(const BodyArgs& a, const Domain& launch, const DomainPoint& point, std::uint64_t v) {
  if (a.observe) a.observe[launch.linearize(point)] = v;
}

// What a deliberately failing op throws, in the runtime and in the reference model.
std::string failure_text(std::uint32_t op_index) {
  return "deliberate failure of op #" + std::to_string(op_index);
}
bool is_deliberate_failure(const std::string& error) {
  return error.rfind("deliberate failure of op #", 0) == 0;
}

// The store of a task running in the runtime.
struct RuntimeStore {
  TaskContext& tc;
  Domain domain(int r) const { return tc.domain(r); }
  template <int N>
  auto reader(int r, FieldID f) const {
    auto acc = tc.accessor<const std::uint64_t, N>(r, f);
    return [acc](const Point<N>& p) { return acc[p]; };
  }
  template <int N>
  auto writer(int r, FieldID f) const {
    auto acc = tc.accessor<std::uint64_t, N>(r, f);
    return [acc](const Point<N>& p) -> std::uint64_t& { return acc[p]; };
  }
  template <int N>
  auto reducer(int r, FieldID f) const {
    auto red = tc.reducer<std::uint64_t, N>(r, f);
    return [red](const Point<N>& p, std::uint64_t v) { red.reduce(p, v); };
  }
};

std::uint64_t runtime_body(TaskContext& tc) {
  const auto a = tc.args<BodyArgs>();
  if (a.fail) throw reprise::Error(failure_text(a.op_index));
  std::uint64_t futs[kMaxFutures] = {};
  for (std::uint32_t i = 0; i < a.nfutures; ++i) {
    switch (ValueType(a.future_type[i])) {
      case ValueType::U64:
        futs[i] = tc.future<std::uint64_t>(int(i));
        break;
      case ValueType::I64:
        futs[i] = std::uint64_t(tc.future<std::int64_t>(int(i)));
        break;
      case ValueType::None:
        break;
    }
  }
  RuntimeStore s{tc};
  const std::uint64_t v = run_body(a, tc.point(), futs, s);
  observe(a, tc.launch_domain(), tc.point(), v);
  return v;
}

void task_void(TaskContext& tc) {
  runtime_body(tc);
}
std::uint64_t task_u64(TaskContext& tc) {
  return runtime_body(tc);
}
std::int64_t task_i64(TaskContext& tc) {
  return std::int64_t(runtime_body(tc));
}

void task_readback(TaskContext& tc) {
  const auto a = tc.args<ReadbackArgs>();
  with_dim(a.dim, [&](auto n) {
    constexpr int N = decltype(n)::value;
    const Rect<N> rect = tc.domain(0).as<N>();
    for (int k = 0; k < a.nfields; ++k) {
      auto acc = tc.accessor<const std::uint64_t, N>(0, a.fid[k]);
      std::uint64_t* out = a.dst[k];
      for (const auto& p : rect) *out++ = acc[p];
    }
  });
}

// ------------------------------------------------------------------------------------------
// Geometry shared by the generator and the reference model.

std::vector<DomainPoint> points_of(const Domain& d) {
  std::vector<DomainPoint> v;
  if (d.empty()) return v;
  v.reserve(std::size_t(d.volume()));
  for (coord_t i = 0; i < d.volume(); ++i) v.push_back(d.delinearize(i));
  return v;
}

bool same_ref(const RegionRef& a, const RegionRef& b) {
  return a.tree == b.tree && a.part == b.part && (a.part < 0 || a.color == b.color);
}

Domain bounds_of(const Program& p, const RegionRef& r) {
  return r.part < 0 ? p.regions[std::size_t(r.tree)].bounds
                    : p.parts[std::size_t(r.part)].piece(r.color);
}

int tree_of(const Program& p, const ReqSpec& q) {
  return q.part >= 0 ? p.parts[std::size_t(q.part)].parent.tree : q.region.tree;
}

// The rect requirement q gives each point of the launch (one rect for a region requirement).
std::vector<Domain> req_rects(const Program& p, const ReqSpec& q, const Domain& launch) {
  if (q.part < 0) return {bounds_of(p, q.region)};
  std::vector<Domain> v;
  const PartSpec& ps = p.parts[std::size_t(q.part)];
  for (const auto& pt : points_of(launch)) v.push_back(ps.piece(q.proj.apply(pt)));
  return v;
}

// What an op touches, for the interference rules of one launch and for finding dependent ops.
struct Footprint {
  int tree = -1;
  std::uint64_t mask = 0;
  Privilege priv = Privilege::ReadOnly;
  ReductionOp redop = ReductionOp::None;
  std::vector<Domain> rects;
};

std::uint64_t field_mask(const std::vector<int>& fields) {
  std::uint64_t m = 0;
  for (int f : fields) m |= std::uint64_t(1) << f;
  return m;
}

Footprint footprint(const Program& p, const ReqSpec& q, const Domain& launch) {
  return Footprint{tree_of(p, q), field_mask(q.fields), q.priv, q.redop, req_rects(p, q, launch)};
}

bool conflicting(const Footprint& a, const Footprint& b) {
  if (a.tree != b.tree || !(a.mask & b.mask)) return false;
  if (a.priv == Privilege::ReadOnly && b.priv == Privilege::ReadOnly) return false;
  if (a.priv == Privilege::Reduce && b.priv == Privilege::Reduce && a.redop == b.redop)
    return false;
  return true;
}

bool interferes(const Footprint& a, const Footprint& b) {
  if (!conflicting(a, b)) return false;
  for (const auto& x : a.rects)
    for (const auto& y : b.rects)
      if (x.overlaps(y)) return true;
  return false;
}

std::vector<Footprint> op_footprints(const Program& p, const OpSpec& op) {
  std::vector<Footprint> v;
  switch (op.kind) {
    case OpKind::Task:
    case OpKind::IndexTask: {
      Domain launch = op.kind == OpKind::Task ? single_point_domain() : op.launch;
      for (const auto& q : op.reqs) v.push_back(footprint(p, q, launch));
      break;
    }
    case OpKind::Fill:
      v.push_back(Footprint{op.dst.tree,
                            field_mask(op.dst_fields),
                            Privilege::WriteDiscard,
                            ReductionOp::None,
                            {bounds_of(p, op.dst)}});
      break;
    case OpKind::Copy:
      v.push_back(Footprint{op.src.tree,
                            field_mask(op.src_fields),
                            Privilege::ReadOnly,
                            ReductionOp::None,
                            {bounds_of(p, op.src)}});
      v.push_back(Footprint{op.dst.tree,
                            field_mask(op.dst_fields),
                            Privilege::WriteDiscard,
                            ReductionOp::None,
                            {bounds_of(p, op.dst)}});
      break;
    default:
      break;
  }
  return v;
}

bool injective(const ProjSpec& proj, const Domain& launch) {
  std::vector<std::array<coord_t, 3>> seen;
  for (const auto& pt : points_of(launch)) seen.push_back(proj.apply(pt).x);
  std::sort(seen.begin(), seen.end());
  return std::adjacent_find(seen.begin(), seen.end()) == seen.end();
}

void compute_pieces_flags(PartSpec& ps) {
  const auto& pieces = ps.pieces;
  ps.disjoint = true;
  for (std::size_t i = 0; i < pieces.size() && ps.disjoint; ++i)
    for (std::size_t j = i + 1; j < pieces.size(); ++j)
      if (pieces[i].overlaps(pieces[j])) {
        ps.disjoint = false;
        break;
      }
  const Domain& b = ps.parent_bounds;
  std::vector<char> covered(std::size_t(std::max<coord_t>(b.volume(), 0)), 0);
  for (const auto& pc : pieces)
    for (const auto& pt : points_of(pc & b)) covered[std::size_t(b.linearize(pt))] = 1;
  ps.complete = std::all_of(covered.begin(), covered.end(), [](char c) { return c != 0; });
}

}  // namespace

const Domain& PartSpec::piece(const DomainPoint& c) const {
  if (!colors.contains(c))
    throw std::logic_error("PartSpec::piece: color " + c.str() + " outside " + colors.str());
  return pieces[std::size_t(colors.linearize(c))];
}

DomainPoint ProjSpec::apply(const DomainPoint& p) const {
  switch (kind) {
    case ProjKind::Identity:
      return p;
    case ProjKind::Constant:
      return offset;
    case ProjKind::Translate:
    case ProjKind::Affine: {
      DomainPoint out;
      out.dim = dim_out;
      for (int o = 0; o < dim_out; ++o) {
        coord_t v = offset.x[o];
        for (int j = 0; j < dim_in; ++j) v += m[o][j] * p.x[j];
        out.x[o] = v;
      }
      return out;
    }
  }
  return p;
}

reprise::Projection ProjSpec::make() const {
  switch (kind) {
    case ProjKind::Identity:
      return reprise::Projection::identity();
    case ProjKind::Constant:
      return reprise::Projection::constant(offset);
    case ProjKind::Translate:
      return reprise::Projection::translate(offset);
    case ProjKind::Affine: {
      std::array<std::array<coord_t, reprise::kMaxDim>, reprise::kMaxDim> mm{};
      for (int o = 0; o < 3; ++o)
        for (int j = 0; j < 3; ++j) mm[o][j] = m[o][j];
      return reprise::Projection::affine(dim_out, dim_in, mm, offset);
    }
  }
  return reprise::Projection::identity();
}

// ------------------------------------------------------------------------------------------
// The generator.

namespace {

class Generator {
 public:
  Generator(std::uint64_t seed, const GenOptions& o) : rng_(seed), opt_(o) { p_.seed = seed; }

  Program run() {
    const int nregions = rng_.irange(opt_.min_regions, opt_.max_regions);
    for (int i = 0; i < nregions; ++i) p_.regions.push_back(gen_region());
    for (int t = 0; t < nregions; ++t) {
      int n = rng_.irange(1, 3);
      for (int j = 0; j < n; ++j) p_.parts.push_back(gen_partition(t));
    }
    // A few more, possibly nested in earlier ones.
    for (int extra = rng_.irange(0, 2); extra > 0; --extra)
      p_.parts.push_back(gen_partition(rng_.irange(0, nregions - 1)));

    for (int t = 0; t < nregions; ++t) init_region(t);
    for (int k = rng_.irange(1, int(p_.parts.size())); k > 0; --k) create_next_partition();

    const int target = rng_.irange(opt_.min_ops, opt_.max_ops);
    for (int n = 0; n < target;) {
      if (next_part_ < p_.parts.size() && rng_.chance(0.08)) {
        create_next_partition();
        ++n;
        continue;
      }
      if (opt_.loops && rng_.chance(0.3)) {
        n += gen_loop();
        continue;
      }
      const bool have_futures = !p_.future_types.empty();
      const bool have_maps = !typed_maps().empty();
      switch (rng_.weighted(
          {40, 18, 8, 9, have_maps ? 4 : 0, have_maps ? 3 : 0, have_futures ? 5 : 0, 3})) {
        case 0:
          n += gen_index_task();
          break;
        case 1:
          n += gen_task();
          break;
        case 2:
          n += gen_fill();
          break;
        case 3:
          n += gen_copy();
          break;
        case 4:
          n += gen_reduce_futures(rng_.pick(typed_maps()));
          break;
        case 5:
          n += gen_point_future(rng_.pick(typed_maps()));
          break;
        case 6:
          n += gen_get_future();
          break;
        default:
          n += gen_fence();
          break;
      }
    }
    if (opt_.fail_in_trace) fail_one_traced_op();
    return std::move(p_);
  }

 private:
  // ---- regions and partitions

  RegionSpec gen_region() {
    RegionSpec r;
    // Sometimes the same shape as an earlier region, so that copies between trees exist.
    if (!p_.regions.empty() && rng_.chance(0.45)) {
      r.bounds = rng_.pick(p_.regions).bounds;
    } else {
      const int dim = rng_.irange(1, 3);
      std::array<coord_t, 3> ext{1, 1, 1}, lo{0, 0, 0}, hi{0, 0, 0};
      const coord_t vmax = opt_.max_volume;
      if (dim == 1) {
        // log-uniform between 4 and vmax
        double e = std::exp(std::log(4.0) + (std::log(double(vmax)) - std::log(4.0)) *
                                                double(rng_.next() >> 11) * 0x1p-53);
        ext[0] = std::max<coord_t>(4, coord_t(e));
      } else if (dim == 2) {
        ext[0] = rng_.range(2, 40);
        ext[1] = rng_.range(2, std::max<coord_t>(2, std::min<coord_t>(60, vmax / ext[0])));
      } else {
        ext[0] = rng_.range(2, 12);
        ext[1] = rng_.range(2, 12);
        ext[2] =
            rng_.range(2, std::max<coord_t>(2, std::min<coord_t>(14, vmax / (ext[0] * ext[1]))));
      }
      const bool offset = rng_.chance(0.4);
      for (int d = 0; d < dim; ++d) {
        lo[d] = offset ? rng_.range(-4, 4) : 0;
        hi[d] = lo[d] + ext[d] - 1;
      }
      r.bounds = make_domain(dim, lo, hi);
    }
    const int nf = rng_.irange(2, 4);
    std::vector<FieldID> ids;
    while (int(ids.size()) < nf) {
      FieldID id = FieldID(rng_.range(0, 40));
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    for (int i = 0; i < nf; ++i)
      r.fields.push_back(FieldSpec{ids[std::size_t(i)], rng_.chance(0.3)});
    if (std::all_of(r.fields.begin(), r.fields.end(),
                    [](const FieldSpec& f) { return f.is_float; }))
      r.fields[0].is_float = false;  // at least one integer field, for reductions
    return r;
  }

  // A color space of `dim` dimensions with the given extents, at the origin or shifted.
  Domain color_space(int dim, const std::array<coord_t, 3>& ext) {
    std::array<coord_t, 3> lo{0, 0, 0}, hi{0, 0, 0};
    const bool shift = rng_.chance(0.3);
    for (int d = 0; d < dim; ++d) {
      lo[d] = shift ? rng_.range(-2, 3) : 0;
      hi[d] = lo[d] + ext[d] - 1;
    }
    return make_domain(dim, lo, hi);
  }

  // Colors per dimension for a grid over bounds b, at most kMaxColors in all.
  std::array<coord_t, 3> grid_counts(const Domain& b, coord_t max_per_dim, bool allow_empty) {
    std::array<coord_t, 3> k{1, 1, 1};
    for (int d = 0; d < b.dim; ++d) {
      coord_t e = b.extent(d);
      k[d] = rng_.range(1, std::min(max_per_dim, e));
      if (allow_empty && e + 1 <= 5 && rng_.chance(0.1)) k[d] = e + 1;  // empty pieces
    }
    for (;;) {
      coord_t v = 1;
      for (int d = 0; d < b.dim; ++d) v *= k[d];
      if (v <= kMaxColors) break;
      int big = 0;
      for (int d = 1; d < b.dim; ++d)
        if (k[d] > k[big]) big = d;
      --k[big];
    }
    return k;
  }

  // Row-major cells of a grid of k[d] intervals per dimension with random cut points.
  std::vector<Domain> grid_cells(const Domain& b, const std::array<coord_t, 3>& k) {
    std::array<std::vector<coord_t>, 3> cuts;  // interval starts, then hi + 1
    for (int d = 0; d < b.dim; ++d) {
      std::vector<coord_t> c{b.lo[d]};
      std::vector<coord_t> inner;
      for (coord_t x = b.lo[d] + 1; x <= b.hi[d]; ++x) inner.push_back(x);
      rng_.shuffle(inner);
      inner.resize(std::size_t(std::min<coord_t>(k[d] - 1, coord_t(inner.size()))));
      std::sort(inner.begin(), inner.end());
      c.insert(c.end(), inner.begin(), inner.end());
      c.push_back(b.hi[d] + 1);
      cuts[d] = c;
    }
    std::vector<Domain> cells;
    std::array<coord_t, 3> n{1, 1, 1};
    for (int d = 0; d < b.dim; ++d) n[d] = coord_t(cuts[d].size()) - 1;
    for (coord_t i = 0; i < n[0]; ++i)
      for (coord_t j = 0; j < n[1]; ++j)
        for (coord_t l = 0; l < n[2]; ++l) {
          std::array<coord_t, 3> idx{i, j, l}, lo{0, 0, 0}, hi{0, 0, 0};
          for (int d = 0; d < b.dim; ++d) {
            lo[d] = cuts[d][std::size_t(idx[d])];
            hi[d] = cuts[d][std::size_t(idx[d]) + 1] - 1;
          }
          cells.push_back(make_domain(b.dim, lo, hi));
        }
    return cells;
  }

  std::array<coord_t, 3> cell_counts(const std::vector<Domain>& cells, const Domain& b) {
    // Recovers the grid shape from the cells (row-major): count distinct lo per dimension.
    std::array<coord_t, 3> k{1, 1, 1};
    for (int d = 0; d < b.dim; ++d) {
      std::vector<coord_t> los;
      for (const auto& c : cells) los.push_back(c.lo[d]);
      std::sort(los.begin(), los.end());
      k[d] = coord_t(std::unique(los.begin(), los.end()) - los.begin());
    }
    return k;
  }

  // Colors for `n` rects: a 1-d color space, or the grid's own shape when it has one.
  Domain rect_colors(coord_t n, const std::array<coord_t, 3>* grid, int dim) {
    if (grid && rng_.chance(0.6)) return color_space(dim, *grid);
    return color_space(1, {n, 1, 1});
  }

  PartSpec gen_partition(int tree) {
    PartSpec ps;
    ps.parent = RegionRef{tree, -1, {}};
    // Nested: a partition of a piece of an earlier partition of this tree.
    std::vector<RegionRef> nested;
    for (std::size_t i = 0; i < p_.parts.size(); ++i) {
      const PartSpec& q = p_.parts[i];
      if (q.parent.tree != tree) continue;
      for (coord_t c = 0; c < q.colors.volume(); ++c)
        if (q.pieces[std::size_t(c)].volume() >= 4)
          nested.push_back(RegionRef{tree, int(i), q.colors.delinearize(c)});
    }
    if (!nested.empty() && rng_.chance(0.3)) ps.parent = rng_.pick(nested);
    const Domain b = bounds_of(p_, ps.parent);
    ps.parent_bounds = b;
    const int dim = b.dim;

    std::vector<int> same_parent;
    for (std::size_t i = 0; i < p_.parts.size(); ++i)
      if (same_ref(p_.parts[i].parent, ps.parent)) same_parent.push_back(int(i));

    switch (rng_.weighted({30, 15, 20, 15, 12, same_parent.empty() ? 0 : 10})) {
      case 0: {  // equal
        ps.kind = PartKind::Equal;
        ps.colors = color_space(dim, grid_counts(b, 4, true));
        for (coord_t i = 0; i < ps.colors.volume(); ++i) {
          DomainPoint col = ps.colors.delinearize(i);
          Domain r;
          r.dim = dim;
          for (int d = 0; d < dim; ++d) {
            coord_t n = b.extent(d), k = ps.colors.extent(d), j = col.x[d] - ps.colors.lo[d];
            r.lo[d] = b.lo[d] + n * j / k;
            r.hi[d] = b.lo[d] + n * (j + 1) / k - 1;
          }
          ps.pieces.push_back(r);
        }
        ps.note = "equal";
        break;
      }
      case 1: {  // blocks
        ps.kind = PartKind::Blocks;
        ps.block.dim = dim;
        std::array<coord_t, 3> k{1, 1, 1};
        for (;;) {
          coord_t v = 1;
          for (int d = 0; d < dim; ++d) {
            coord_t e = b.extent(d);
            ps.block.x[d] = std::max<coord_t>(1, (e + rng_.range(1, 4) - 1) / rng_.range(1, 4));
            k[d] = (e + ps.block.x[d] - 1) / ps.block.x[d];
            v *= k[d];
          }
          if (v <= kMaxColors) break;
        }
        ps.colors = make_domain(dim, {0, 0, 0}, {k[0] - 1, k[1] - 1, k[2] - 1});
        for (coord_t i = 0; i < ps.colors.volume(); ++i) {
          DomainPoint col = ps.colors.delinearize(i);
          Domain r;
          r.dim = dim;
          for (int d = 0; d < dim; ++d) {
            r.lo[d] = b.lo[d] + col.x[d] * ps.block.x[d];
            r.hi[d] = std::min(b.hi[d], r.lo[d] + ps.block.x[d] - 1);
          }
          ps.pieces.push_back(r);
        }
        ps.note = "blocks";
        break;
      }
      case 2: {  // disjoint grid with random cuts; maybe shrunk (incomplete) or grown past b
        ps.kind = PartKind::Rects;
        auto cells = grid_cells(b, grid_counts(b, 3, false));
        auto k = cell_counts(cells, b);
        bool shrunk = false, outside = false;
        for (auto& c : cells) {
          if (rng_.chance(0.2)) {
            shrunk = true;
            if (rng_.chance(0.25)) {
              c.hi[0] = c.lo[0] - 1;  // empty
            } else {
              for (int d = 0; d < dim; ++d) {
                coord_t e = c.hi[d] - c.lo[d];
                c.lo[d] += rng_.range(0, e / 2);
                c.hi[d] -= rng_.range(0, (c.hi[d] - c.lo[d]) / 2);
              }
            }
          } else if (rng_.chance(0.2)) {
            // Grow outward where the cell touches the parent's border (clipped back).
            for (int d = 0; d < dim; ++d) {
              if (c.lo[d] == b.lo[d]) c.lo[d] -= rng_.range(1, 3), outside = true;
              if (c.hi[d] == b.hi[d]) c.hi[d] += rng_.range(1, 3), outside = true;
            }
          }
        }
        ps.rects = cells;
        ps.colors = rect_colors(coord_t(cells.size()), &k, dim);
        ps.note = std::string("disjoint grid") + (shrunk ? ", shrunk" : "") +
                  (outside ? ", past the border" : "");
        break;
      }
      case 3: {  // random rects, usually aliased
        ps.kind = PartKind::Rects;
        const coord_t n = rng_.range(2, 6);
        for (coord_t i = 0; i < n; ++i) {
          std::array<coord_t, 3> lo{0, 0, 0}, hi{0, 0, 0};
          for (int d = 0; d < dim; ++d) {
            lo[d] = rng_.range(b.lo[d] - 2, b.hi[d]);
            hi[d] = rng_.range(lo[d] - (rng_.chance(0.05) ? 1 : 0), b.hi[d] + 2);
            if (hi[d] - lo[d] > b.extent(d) / 2 + 1 && rng_.chance(0.5))
              hi[d] = lo[d] + b.extent(d) / 2;
          }
          ps.rects.push_back(make_domain(dim, lo, hi));
        }
        ps.colors = rect_colors(n, nullptr, dim);
        ps.note = "random rects";
        break;
      }
      case 4: {  // halo: an equal grid grown by 1 or 2 (aliased), clipped by the runtime
        ps.kind = PartKind::Rects;
        auto k = grid_counts(b, 3, false);
        auto cells = grid_cells(b, k);
        k = cell_counts(cells, b);
        const coord_t g = rng_.range(1, 2);
        for (auto& c : cells) c = reprise::grow(c, g);
        ps.rects = cells;
        ps.colors = rect_colors(coord_t(cells.size()), &k, dim);
        ps.note = "halo (grid grown by " + std::to_string(g) + ")";
        break;
      }
      default: {  // translation of an earlier partition of the same parent
        ps.kind = PartKind::Translate;
        ps.base = rng_.pick(same_parent);
        const PartSpec& base = p_.parts[std::size_t(ps.base)];
        ps.offset.dim = dim;
        for (int d = 0; d < dim; ++d) ps.offset.x[d] = rng_.range(-3, 3);
        ps.colors = base.colors;
        for (const auto& pc : base.pieces) ps.pieces.push_back(reprise::translate(pc, ps.offset));
        ps.note = "translation of p" + std::to_string(ps.base);
        break;
      }
    }
    if (ps.kind == PartKind::Rects) {
      ps.pieces = ps.rects;
      ps.use_callback = rng_.chance(0.3);
    }
    for (auto& pc : ps.pieces) pc = pc & b;
    compute_pieces_flags(ps);
    return ps;
  }

  void create_next_partition() {
    OpSpec op;
    op.kind = OpKind::CreatePartition;
    op.part = int(next_part_++);
    live_.push_back(op.part);
    p_.ops.push_back(std::move(op));
  }

  // ---- picking regions, fields and privileges

  std::vector<int> live_parts_of(int tree) const {
    std::vector<int> v;
    for (int i : live_)
      if (p_.parts[std::size_t(i)].parent.tree == tree) v.push_back(i);
    return v;
  }

  RegionRef random_ref(int tree) {
    auto parts = live_parts_of(tree);
    if (parts.empty() || rng_.chance(0.3)) return RegionRef{tree, -1, {}};
    int part = rng_.pick(parts);
    const Domain& colors = p_.parts[std::size_t(part)].colors;
    return RegionRef{tree, part, colors.delinearize(rng_.range(0, colors.volume() - 1))};
  }

  int random_tree() { return rng_.irange(0, int(p_.regions.size()) - 1); }

  // A random non-empty subset of the tree's fields (integer fields only when int_only).
  std::vector<int> random_fields(int tree, bool int_only, int max = kMaxFields) {
    std::vector<int> cand;
    const auto& fs = p_.regions[std::size_t(tree)].fields;
    for (int i = 0; i < int(fs.size()); ++i)
      if (!int_only || !fs[std::size_t(i)].is_float) cand.push_back(i);
    rng_.shuffle(cand);
    cand.resize(std::size_t(rng_.irange(1, std::min(int(cand.size()), max))));
    return cand;
  }

  // priv and redop for a requirement; writes only where allowed.
  void choose_priv(ReqSpec& q, bool can_write) {
    switch (rng_.weighted({35, can_write ? 30 : 0, can_write ? 12 : 0, 23})) {
      case 0:
        q.priv = Privilege::ReadOnly;
        break;
      case 1:
        q.priv = Privilege::ReadWrite;
        break;
      case 2:
        q.priv = Privilege::WriteDiscard;
        break;
      default: {
        q.priv = Privilege::Reduce;
        static constexpr ReductionOp ops[] = {ReductionOp::Sum, ReductionOp::Max, ReductionOp::Min,
                                              ReductionOp::Prod};
        q.redop = ops[rng_.weighted({45, 25, 15, 15})];
        break;
      }
    }
  }

  // Adds q to reqs when it does not interfere with them (the runtime's rule for one launch).
  bool try_add(std::vector<ReqSpec>& reqs, std::vector<Footprint>& fps, ReqSpec q,
               const Domain& launch) {
    Footprint f = footprint(p_, q, launch);
    for (const auto& g : fps)
      if (interferes(f, g)) return false;
    reqs.push_back(std::move(q));
    fps.push_back(std::move(f));
    return true;
  }

  std::optional<ProjSpec> gen_projection(const Domain& D, const Domain& C) {
    std::vector<ProjSpec> cands;
    std::vector<int> weights;
    if (C.dim == D.dim && C.contains(D)) {
      cands.push_back(ProjSpec{});
      weights.push_back(40);
    }
    if (C.dim == D.dim) {
      bool fits = true;
      for (int d = 0; d < D.dim; ++d) fits = fits && C.extent(d) >= D.extent(d);
      if (fits) {
        ProjSpec t;
        t.kind = ProjKind::Translate;
        t.dim_in = t.dim_out = D.dim;
        t.offset.dim = D.dim;
        for (int d = 0; d < D.dim; ++d) {
          t.m[d][d] = 1;
          t.offset.x[d] = rng_.range(C.lo[d] - D.lo[d], C.hi[d] - D.hi[d]);
        }
        cands.push_back(t);
        weights.push_back(20);
      }
    }
    for (int attempt = 0; attempt < 4; ++attempt) {
      ProjSpec a;
      a.kind = ProjKind::Affine;
      a.dim_in = D.dim;
      a.dim_out = C.dim;
      a.offset.dim = C.dim;
      bool ok = true;
      for (int o = 0; o < C.dim && ok; ++o) {
        coord_t mn = 0, mx = 0;
        switch (rng_.weighted({20, 60, D.dim >= 2 ? 20 : 0})) {
          case 0:
            break;   // constant coordinate
          case 1: {  // +-1 times one launch coordinate
            int j = rng_.irange(0, D.dim - 1);
            coord_t s = rng_.chance(0.7) ? 1 : -1;
            a.m[o][j] = s;
            mn = std::min(s * D.lo[j], s * D.hi[j]);
            mx = std::max(s * D.lo[j], s * D.hi[j]);
            break;
          }
          default: {  // row-major linearization of the launch point
            coord_t stride = 1;
            for (int j = D.dim - 1; j >= 0; --j) {
              a.m[o][j] = stride;
              mn += stride * D.lo[j];
              mx += stride * D.hi[j];
              stride *= D.extent(j);
            }
            break;
          }
        }
        if (C.hi[o] - mx < C.lo[o] - mn) {
          ok = false;
        } else {
          a.offset.x[o] = rng_.range(C.lo[o] - mn, C.hi[o] - mx);
        }
      }
      if (ok) {
        cands.push_back(a);
        weights.push_back(20);
        break;
      }
    }
    {
      ProjSpec c;
      c.kind = ProjKind::Constant;
      c.dim_in = D.dim;
      c.dim_out = C.dim;
      c.offset = C.delinearize(rng_.range(0, C.volume() - 1));
      cands.push_back(c);
      weights.push_back(cands.size() == 1 ? 100 : 15);
    }
    int total = 0;
    for (int w : weights) total += w;
    int r = rng_.irange(0, total - 1);
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (r < weights[i]) return cands[i];
      r -= weights[i];
    }
    return cands.back();
  }

  Domain random_launch_domain() {
    const int dim = rng_.irange(1, 3);
    std::array<coord_t, 3> lo{0, 0, 0}, hi{0, 0, 0};
    coord_t v = 1;
    for (int d = 0; d < dim; ++d) {
      lo[d] = rng_.range(-2, 2);
      hi[d] = lo[d] + rng_.range(0, std::max<coord_t>(0, 4 / v - 1));
      v *= hi[d] - lo[d] + 1;
    }
    return make_domain(dim, lo, hi);
  }

  Domain random_subrect(const Domain& d) {
    Domain s = d;
    for (int i = 0; i < d.dim; ++i) {
      s.lo[i] = rng_.range(d.lo[i], d.hi[i]);
      s.hi[i] = rng_.range(s.lo[i], d.hi[i]);
    }
    return s;
  }

  // ---- ops

  std::vector<int> typed_maps() const {
    std::vector<int> v;
    for (std::size_t i = 0; i < p_.map_types.size(); ++i)
      if (p_.map_types[i] != ValueType::None) v.push_back(int(i));
    return v;
  }

  std::uint64_t salt() { return rng_.next(); }

  void add_futures(OpSpec& op, double p) {
    if (p_.future_types.empty() || !rng_.chance(p)) return;
    for (int n = rng_.irange(1, 2); n > 0; --n) {
      int f = rng_.irange(0, int(p_.future_types.size()) - 1);
      // Recent futures are more interesting (their producers may still be running).
      if (rng_.chance(0.6)) f = std::max(0, int(p_.future_types.size()) - rng_.irange(1, 3));
      if (std::find(op.futures.begin(), op.futures.end(), f) == op.futures.end())
        op.futures.push_back(f);
    }
  }

  ValueType random_ret(int none_weight) {
    switch (rng_.weighted({none_weight, 30, 15})) {
      case 0:
        return ValueType::None;
      case 1:
        return ValueType::U64;
      default:
        return ValueType::I64;
    }
  }

  int new_future(ValueType t) {
    p_.future_types.push_back(t);
    return int(p_.future_types.size()) - 1;
  }

  void init_region(int t) {
    const RegionSpec& r = p_.regions[std::size_t(t)];
    std::vector<int> all;
    for (int i = 0; i < int(r.fields.size()); ++i) all.push_back(i);
    OpSpec op;
    op.init = true;
    if (rng_.chance(0.6)) {
      op.kind = OpKind::Fill;
      op.dst = RegionRef{t, -1, {}};
      op.dst_fields = all;
      op.value = rng_.next();
    } else {
      op.kind = OpKind::Task;
      op.salt = salt();
      ReqSpec q;
      q.region = RegionRef{t, -1, {}};
      q.priv = Privilege::WriteDiscard;
      q.fields = all;
      op.reqs.push_back(q);
      op.ret = ValueType::None;
      op.result = new_future(op.ret);
    }
    p_.ops.push_back(std::move(op));
  }

  int gen_index_task() {
    OpSpec op;
    op.kind = OpKind::IndexTask;
    op.salt = salt();
    std::vector<Footprint> fps;
    int extra;
    if (!live_.empty() && rng_.chance(0.85)) {
      const int part = rng_.pick(live_);
      const PartSpec& ps = p_.parts[std::size_t(part)];
      op.launch = rng_.chance(0.25) ? random_subrect(ps.colors) : ps.colors;
      ReqSpec q;
      q.part = part;
      const int tree = ps.parent.tree;
      choose_priv(q, ps.disjoint || op.launch.volume() == 1);
      q.fields = random_fields(tree, q.priv == Privilege::Reduce);
      try_add(op.reqs, fps, q, op.launch);
      extra = rng_.irange(0, 2);
    } else {
      op.launch = random_launch_domain();
      extra = rng_.irange(1, 3);
    }
    for (int i = 0; i < extra; ++i) {
      for (int attempt = 0; attempt < 6; ++attempt) {
        ReqSpec q;
        int tree;
        bool can_write;
        if (!live_.empty() && rng_.chance(0.7)) {
          q.part = rng_.pick(live_);
          const PartSpec& ps = p_.parts[std::size_t(q.part)];
          auto proj = gen_projection(op.launch, ps.colors);
          if (!proj) continue;
          q.proj = *proj;
          tree = ps.parent.tree;
          can_write = op.launch.volume() == 1 || (ps.disjoint && injective(q.proj, op.launch));
        } else {
          tree = random_tree();
          q.region = random_ref(tree);
          can_write = op.launch.volume() == 1;
        }
        choose_priv(q, can_write);
        q.fields = random_fields(tree, q.priv == Privilege::Reduce);
        if (try_add(op.reqs, fps, q, op.launch)) break;
      }
    }
    op.ret = random_ret(55);
    add_futures(op, 0.3);
    p_.map_types.push_back(op.ret);
    p_.map_domains.push_back(op.launch);
    op.result = int(p_.map_types.size()) - 1;
    const int map = op.result;
    const ValueType ret = op.ret;
    p_.ops.push_back(std::move(op));
    int n = 1;
    if (ret != ValueType::None) {
      if (rng_.chance(0.55)) n += gen_reduce_futures(map);
      if (rng_.chance(0.15)) n += gen_point_future(map);
    }
    return n;
  }

  int gen_task() {
    OpSpec op;
    op.kind = OpKind::Task;
    op.salt = salt();
    std::vector<Footprint> fps;
    const Domain one = single_point_domain();
    for (int i = rng_.irange(1, 3); i > 0; --i) {
      for (int attempt = 0; attempt < 6; ++attempt) {
        ReqSpec q;
        const int tree = random_tree();
        q.region = random_ref(tree);
        choose_priv(q, true);
        q.fields = random_fields(tree, q.priv == Privilege::Reduce);
        if (try_add(op.reqs, fps, q, one)) break;
      }
    }
    op.ret = random_ret(50);
    add_futures(op, 0.35);
    op.result = new_future(op.ret);
    p_.ops.push_back(std::move(op));
    return 1;
  }

  int gen_fill() {
    OpSpec op;
    op.kind = OpKind::Fill;
    const int tree = random_tree();
    op.dst = random_ref(tree);
    op.dst_fields = random_fields(tree, false);
    op.value = rng_.chance(0.5) ? rng_.next()
                                : std::bit_cast<std::uint64_t>(double(rng_.range(-1000, 1000)) / 8);
    p_.ops.push_back(std::move(op));
    return 1;
  }

  int gen_copy() {
    OpSpec op;
    op.kind = OpKind::Copy;
    const int ta = random_tree();
    op.src = random_ref(ta);
    const Domain sb = bounds_of(p_, op.src);
    // Destinations that contain the source's bounds: in another tree (any fields) or in the
    // same tree (other fields).
    std::vector<RegionRef> cross, same;
    for (int t = 0; t < int(p_.regions.size()); ++t) {
      std::vector<RegionRef> cands{RegionRef{t, -1, {}}};
      for (int part : live_parts_of(t)) {
        const PartSpec& ps = p_.parts[std::size_t(part)];
        for (coord_t c = 0; c < ps.colors.volume(); ++c)
          cands.push_back(RegionRef{t, part, ps.colors.delinearize(c)});
      }
      for (const auto& r : cands) {
        Domain db = bounds_of(p_, r);
        if (db.dim != sb.dim || !db.contains(sb)) continue;
        (t == ta ? same : cross).push_back(r);
      }
    }
    const auto& fa = p_.regions[std::size_t(ta)].fields;
    const bool can_same = !same.empty() && fa.size() >= 2;
    if (!cross.empty() && (!can_same || rng_.chance(0.5))) {
      op.dst = rng_.pick(cross);
      const auto& fb = p_.regions[std::size_t(op.dst.tree)].fields;
      const int k = rng_.irange(1, int(std::min(fa.size(), fb.size())));
      op.src_fields = random_fields(ta, false);
      op.src_fields.resize(std::min(op.src_fields.size(), std::size_t(k)));
      std::vector<int> d;
      for (int i = 0; i < int(fb.size()); ++i) d.push_back(i);
      rng_.shuffle(d);
      d.resize(op.src_fields.size());
      op.dst_fields = d;
    } else if (can_same) {
      op.dst = rng_.pick(same);
      std::vector<int> f;
      for (int i = 0; i < int(fa.size()); ++i) f.push_back(i);
      rng_.shuffle(f);
      const int k = rng_.irange(1, int(f.size()) / 2);
      op.src_fields.assign(f.begin(), f.begin() + k);
      op.dst_fields.assign(f.begin() + k, f.begin() + 2 * k);
    } else {
      return gen_fill();
    }
    p_.ops.push_back(std::move(op));
    return 1;
  }

  int gen_reduce_futures(int map) {
    OpSpec op;
    op.kind = OpKind::ReduceFutures;
    op.source = map;
    const ValueType t = p_.map_types[std::size_t(map)];
    if (t == ValueType::I64) {
      op.redop = rng_.chance(0.5) ? ReductionOp::Max : ReductionOp::Min;
    } else {
      static constexpr ReductionOp ops[] = {ReductionOp::Sum, ReductionOp::Max, ReductionOp::Min,
                                            ReductionOp::Prod};
      op.redop = ops[rng_.weighted({50, 20, 15, 15})];
    }
    op.result = new_future(t);
    p_.ops.push_back(std::move(op));
    return 1;
  }

  int gen_point_future(int map) {
    OpSpec op;
    op.kind = OpKind::PointFuture;
    op.source = map;
    const Domain& d = p_.map_domains[std::size_t(map)];
    op.point = d.delinearize(rng_.range(0, d.volume() - 1));
    op.result = new_future(p_.map_types[std::size_t(map)]);
    p_.ops.push_back(std::move(op));
    return 1;
  }

  // A wait on one of the first `limit` future slots (all when negative).
  int gen_get_future(int limit = -1) {
    OpSpec op;
    op.kind = OpKind::GetFuture;
    const int n = limit < 0 ? int(p_.future_types.size()) : limit;
    op.source = rng_.chance(0.6) ? n - 1 : rng_.irange(0, n - 1);
    p_.ops.push_back(std::move(op));
    return 1;
  }

  int gen_fence() {
    OpSpec op;
    op.kind = OpKind::Fence;
    op.wait = rng_.chance(0.3);
    p_.ops.push_back(std::move(op));
    return 1;
  }

  // ---- loops and traces

  // The shape that keeps one piece valid in several memories at once: an index launch whose
  // points (spread over memories by the mapper) all read one piece through a constant
  // projection, and update or reduce into their own piece of a disjoint partition.
  int gen_broadcast_read() {
    std::vector<int> disjoint;
    for (int part : live_)
      if (p_.parts[std::size_t(part)].disjoint) disjoint.push_back(part);
    if (disjoint.empty()) return gen_index_task();
    OpSpec op;
    op.kind = OpKind::IndexTask;
    op.salt = salt();
    const int own = rng_.pick(disjoint);
    const PartSpec& ps = p_.parts[std::size_t(own)];
    op.launch = ps.colors;
    std::vector<Footprint> fps;
    const int src = rng_.pick(live_);
    const PartSpec& ss = p_.parts[std::size_t(src)];
    ReqSpec read;
    read.part = src;
    read.proj.kind = ProjKind::Constant;
    read.proj.dim_in = op.launch.dim;
    read.proj.dim_out = ss.colors.dim;
    read.proj.offset = ss.colors.delinearize(rng_.range(0, ss.colors.volume() - 1));
    read.priv = Privilege::ReadOnly;
    read.fields = random_fields(ss.parent.tree, false);
    try_add(op.reqs, fps, read, op.launch);
    ReqSpec mine;
    mine.part = own;
    choose_priv(mine, true);
    if (mine.priv == Privilege::ReadOnly) choose_priv(mine, true);
    mine.fields = random_fields(ps.parent.tree, mine.priv == Privilege::Reduce);
    try_add(op.reqs, fps, mine, op.launch);
    op.ret = random_ret(60);
    p_.map_types.push_back(op.ret);
    p_.map_domains.push_back(op.launch);
    op.result = int(p_.map_types.size()) - 1;
    p_.ops.push_back(std::move(op));
    return 1;
  }

  // An op that may stand inside a trace (no partition, blocking wait or fence).
  int gen_traceable_op() {
    const bool have_maps = !typed_maps().empty();
    switch (rng_.weighted({35, 20, 8, 9, have_maps ? 4 : 0, have_maps ? 3 : 0, 15})) {
      case 0:
        return gen_index_task();
      case 1:
        return gen_task();
      case 2:
        return gen_fill();
      case 3:
        return gen_copy();
      case 4:
        return gen_reduce_futures(rng_.pick(typed_maps()));
      case 5:
        return gen_point_future(rng_.pick(typed_maps()));
      default:
        return gen_broadcast_read();
    }
  }

  void mark(OpKind kind, int trace) {
    OpSpec op;
    op.kind = kind;
    op.trace = trace;
    p_.ops.push_back(std::move(op));
  }

  // A loop: a body issued `iters` times, each iteration one manual trace. Now and then an
  // iteration's body changes (one op more or less: the trace mismatches and is recorded anew),
  // a loop reuses an earlier loop's trace id, or a blocking wait follows an iteration.
  // A third of the loops alternate two bodies (double buffering: the data's place alternates
  // too), under one trace id or two.
  int gen_loop() {
    const std::size_t start = p_.ops.size();
    std::vector<OpSpec> bodies[2];
    const int nbodies = rng_.chance(0.33) ? 2 : 1;
    int first_futures = -1;  // the future slots assigned once the first body has run
    for (auto& body : std::span(bodies, std::size_t(nbodies))) {
      const std::size_t from = p_.ops.size();
      for (int k = rng_.irange(1, opt_.max_body); k > 0; --k) gen_traceable_op();
      body.assign(p_.ops.begin() + std::ptrdiff_t(from), p_.ops.end());
      if (first_futures < 0) first_futures = int(p_.future_types.size());
    }
    p_.ops.resize(start);
    const int trace =
        next_trace_ > 1 && rng_.chance(0.2) ? rng_.irange(1, next_trace_ - 1) : next_trace_++;
    const int trace2 = nbodies == 2 && rng_.chance(0.5) ? next_trace_++ : trace;
    int n = 0;
    const int iters = rng_.irange(std::min(3, opt_.max_iters), opt_.max_iters) * nbodies;
    for (int it = 0; it < iters; ++it) {
      const std::vector<OpSpec>& body = bodies[it % nbodies];
      mark(OpKind::BeginTrace, it % nbodies ? trace2 : trace);
      p_.ops.insert(p_.ops.end(), body.begin(), body.end());
      if (it >= nbodies && rng_.chance(0.15)) {  // each body ran whole once
        // The last op's result is used by no op of the body after it: it can go.
        if (body.size() > 1 && rng_.chance(0.5))
          p_.ops.pop_back();
        else
          p_.ops.push_back(body[std::size_t(rng_.irange(0, int(body.size()) - 1))]);
      }
      mark(OpKind::EndTrace, it % nbodies ? trace2 : trace);
      n += int(p_.ops.size() - start) - n;
      const int assigned = it == 0 ? first_futures : int(p_.future_types.size());
      if (assigned > 0 && rng_.chance(0.12)) n += gen_get_future(assigned);
    }
    return n;
  }

  // Marks one task op inside a trace (in a later iteration when there is one) to fail.
  void fail_one_traced_op() {
    std::vector<std::size_t> traced;
    bool inside = false;
    for (std::size_t i = 0; i < p_.ops.size(); ++i) {
      const OpKind k = p_.ops[i].kind;
      if (k == OpKind::BeginTrace || k == OpKind::EndTrace) inside = k == OpKind::BeginTrace;
      if (inside && (k == OpKind::Task || k == OpKind::IndexTask)) traced.push_back(i);
    }
    if (traced.empty()) return;
    const std::size_t from = rng_.chance(0.7) ? traced.size() / 2 : 0;
    p_.ops[traced[std::size_t(rng_.irange(int(from), int(traced.size()) - 1))]].fail = true;
  }

  Rng rng_;
  GenOptions opt_;
  Program p_;
  std::size_t next_part_ = 0;
  std::vector<int> live_;
  int next_trace_ = 1;
};

}  // namespace

Program generate(std::uint64_t seed, const GenOptions& options) {
  return Generator(seed, options).run();
}

// ------------------------------------------------------------------------------------------
// Printing.

namespace {

const char* priv_name(Privilege p) {
  switch (p) {
    case Privilege::ReadOnly:
      return "RO";
    case Privilege::ReadWrite:
      return "RW";
    case Privilege::WriteDiscard:
      return "WD";
    case Privilege::Reduce:
      return "REDUCE";
  }
  return "?";
}

const char* type_name(ValueType t) {
  switch (t) {
    case ValueType::None:
      return "void";
    case ValueType::U64:
      return "uint64";
    case ValueType::I64:
      return "int64";
  }
  return "?";
}

std::string ref_str(const Program& p, const RegionRef& r) {
  if (r.part < 0) return "r" + std::to_string(r.tree);
  return "p" + std::to_string(r.part) + "[" + r.color.str() + "] " + bounds_of(p, r).str();
}

std::string fields_str(const Program& p, int tree, const std::vector<int>& fields) {
  std::string s = "{";
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const FieldSpec& f = p.regions[std::size_t(tree)].fields[std::size_t(fields[i])];
    if (i) s += ",";
    s += std::to_string(f.id);
    if (f.is_float) s += "f";
  }
  return s + "}";
}

std::string proj_str(const ProjSpec& q) {
  switch (q.kind) {
    case ProjKind::Identity:
      return "identity";
    case ProjKind::Constant:
      return "constant" + q.offset.str();
    case ProjKind::Translate:
      return "translate" + q.offset.str();
    case ProjKind::Affine: {
      std::string s = "affine[";
      for (int o = 0; o < q.dim_out; ++o) {
        s += o ? "; " : "";
        for (int j = 0; j < q.dim_in; ++j) {
          if (j) s += " ";
          s += std::to_string(q.m[o][j]);
        }
      }
      return s + "]+" + q.offset.str();
    }
  }
  return "?";
}

std::string req_str(const Program& p, const ReqSpec& q) {
  std::string s;
  if (q.part >= 0)
    s = "p" + std::to_string(q.part) + " " + proj_str(q.proj);
  else
    s = ref_str(p, q.region);
  s += std::string(" ") + priv_name(q.priv);
  if (q.priv == Privilege::Reduce) s += "(" + std::string(to_string(q.redop)) + ")";
  return s + " " + fields_str(p, tree_of(p, q), q.fields);
}

std::string part_str(const Program& p, int i) {
  const PartSpec& ps = p.parts[std::size_t(i)];
  std::ostringstream o;
  o << "p" << i << " = ";
  switch (ps.kind) {
    case PartKind::Equal:
      o << "partition_equal(" << ref_str(p, ps.parent) << ", colors " << ps.colors.str() << ")";
      break;
    case PartKind::Blocks:
      o << "partition_by_blocks(" << ref_str(p, ps.parent) << ", block " << ps.block.str() << ")";
      break;
    case PartKind::Rects:
      o << "partition_by_rects(" << ref_str(p, ps.parent) << ", colors " << ps.colors.str()
        << (ps.use_callback ? ", function" : ", vector") << ") [" << ps.note << "]";
      break;
    case PartKind::Translate:
      o << "partition_by_translation(p" << ps.base << ", " << ps.offset.str() << ")";
      break;
  }
  o << (ps.disjoint ? " disjoint" : " aliased") << (ps.complete ? " complete" : " incomplete")
    << "\n        pieces:";
  for (coord_t c = 0; c < ps.colors.volume(); ++c)
    o << " " << ps.colors.delinearize(c).str() << "=" << ps.pieces[std::size_t(c)].str();
  return o.str();
}

}  // namespace

std::string dump(const Program& p) {
  std::ostringstream o;
  o << "program of seed " << p.seed << ": " << summary(p) << "\n";
  for (std::size_t t = 0; t < p.regions.size(); ++t) {
    const RegionSpec& r = p.regions[t];
    o << "  r" << t << ": " << r.bounds.dim << "-d " << r.bounds.str() << " (" << r.bounds.volume()
      << " points), fields";
    for (const auto& f : r.fields) o << " " << f.id << (f.is_float ? "(double)" : "(uint64)");
    o << "\n";
  }
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const OpSpec& op = p.ops[i];
    o << "  #" << i << " ";
    switch (op.kind) {
      case OpKind::CreatePartition:
        o << "create " << part_str(p, op.part);
        break;
      case OpKind::Task:
      case OpKind::IndexTask:
        if (op.kind == OpKind::Task)
          o << "task " << type_name(op.ret) << " -> f" << op.result;
        else
          o << "index task over " << op.launch.str() << " " << type_name(op.ret) << " -> m"
            << op.result;
        o << " salt " << hex(op.salt);
        for (int f : op.futures) o << " +future f" << f;
        for (std::size_t r = 0; r < op.reqs.size(); ++r)
          o << "\n        req" << r << ": " << req_str(p, op.reqs[r]);
        break;
      case OpKind::Fill:
        o << "fill " << ref_str(p, op.dst) << " " << fields_str(p, op.dst.tree, op.dst_fields)
          << " = " << hex(op.value);
        break;
      case OpKind::Copy:
        o << "copy " << ref_str(p, op.src) << " " << fields_str(p, op.src.tree, op.src_fields)
          << " -> " << ref_str(p, op.dst) << " " << fields_str(p, op.dst.tree, op.dst_fields);
        break;
      case OpKind::ReduceFutures:
        o << "reduce m" << op.source << " " << to_string(op.redop) << " -> f" << op.result;
        break;
      case OpKind::PointFuture:
        o << "f" << op.result << " = m" << op.source << ".get(" << op.point.str() << ")";
        break;
      case OpKind::GetFuture:
        o << "get f" << op.source << " (blocks; mixed into later salts)";
        break;
      case OpKind::Fence:
        o << "fence" << (op.wait ? " (waited for)" : "");
        break;
      case OpKind::BeginTrace:
        o << "begin_trace " << op.trace;
        break;
      case OpKind::EndTrace:
        o << "end_trace " << op.trace;
        break;
    }
    if (op.init) o << "  [init]";
    if (op.fail) o << "  [fails]";
    o << "\n";
  }
  return o.str();
}

std::size_t count_ops(const Program& p, OpKind kind) {
  return std::size_t(
      std::count_if(p.ops.begin(), p.ops.end(), [&](const OpSpec& op) { return op.kind == kind; }));
}

std::string summary(const Program& p) {
  std::ostringstream o;
  o << p.regions.size() << " regions (";
  for (std::size_t t = 0; t < p.regions.size(); ++t)
    o << (t ? ", " : "") << p.regions[t].bounds.dim << "-d " << p.regions[t].bounds.volume();
  o << " points), " << count_ops(p, OpKind::CreatePartition) << " partitions, " << p.ops.size()
    << " ops: " << count_ops(p, OpKind::IndexTask) << " index, " << count_ops(p, OpKind::Task)
    << " single, " << count_ops(p, OpKind::Fill) << " fill, " << count_ops(p, OpKind::Copy)
    << " copy, " << count_ops(p, OpKind::ReduceFutures) << " reduce, "
    << count_ops(p, OpKind::GetFuture) << " get, " << count_ops(p, OpKind::Fence) << " fence";
  if (const std::size_t traces = count_ops(p, OpKind::BeginTrace)) o << ", " << traces << " traced";
  return o.str();
}

std::string join_flags(const std::vector<std::string>& flags) {
  std::string s;
  for (const auto& f : flags) {
    if (!s.empty()) s += " ";
    s += f;
  }
  return s.empty() ? "(no flags)" : s;
}

// ------------------------------------------------------------------------------------------
// Running: what the reference model and the runtime executor share.

namespace {

void init_outcome(const Program& p, Outcome& out) {
  out.data.resize(p.regions.size());
  for (std::size_t t = 0; t < p.regions.size(); ++t)
    out.data[t].assign(p.regions[t].fields.size(),
                       std::vector<std::uint64_t>(std::size_t(p.regions[t].bounds.volume()), 0));
  out.futures.assign(p.future_types.size(), 0);
  out.maps.assign(p.map_types.size(), {});
  out.observed.assign(p.ops.size(), {});
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].kind == OpKind::Task) out.observed[i].assign(1, 0);
    if (p.ops[i].kind == OpKind::IndexTask)
      out.observed[i].assign(std::size_t(p.ops[i].launch.volume()), 0);
  }
}

BodyArgs body_args(const Program& p, const OpSpec& op, std::uint64_t host, Outcome& out,
                   std::size_t index) {
  BodyArgs a;
  a.salt = mix(op.salt, host);
  a.op_index = std::uint32_t(index);
  a.fail = op.fail ? 1 : 0;
  a.observe = out.observed[index].data();
  a.nreqs = std::uint32_t(op.reqs.size());
  a.nfutures = std::uint32_t(op.futures.size());
  if (op.reqs.size() > kMaxReqs || op.futures.size() > kMaxFutures)
    throw std::logic_error("body_args: too many requirements or futures");
  for (std::size_t i = 0; i < op.futures.size(); ++i)
    a.future_type[i] = std::uint8_t(p.future_types[std::size_t(op.futures[i])]);
  for (std::size_t r = 0; r < op.reqs.size(); ++r) {
    const ReqSpec& q = op.reqs[r];
    const RegionSpec& rs = p.regions[std::size_t(tree_of(p, q))];
    BodyReq& b = a.req[r];
    b.priv = std::uint8_t(q.priv);
    b.redop = std::uint8_t(q.redop);
    b.dim = std::uint8_t(rs.bounds.dim);
    b.nfields = std::uint8_t(q.fields.size());
    for (std::size_t k = 0; k < q.fields.size(); ++k) {
      b.fid[k] = rs.fields[std::size_t(q.fields[k])].id;
      b.is_float[k] = rs.fields[std::size_t(q.fields[k])].is_float ? 1 : 0;
    }
  }
  return a;
}

std::uint64_t initial_host_mix(const Program& p) {
  return mix(p.seed, 0x4057);
}

// ---- the reference model

struct RefStore {
  const Program& p;
  Outcome& out;
  const OpSpec& op;
  std::vector<Domain> rects;  // per requirement, for this point

  Domain domain(int r) const { return rects[std::size_t(r)]; }
  std::uint64_t& at(int r, FieldID fid, const DomainPoint& pt) const {
    const ReqSpec& q = op.reqs[std::size_t(r)];
    const int tree = tree_of(p, q);
    const RegionSpec& rs = p.regions[std::size_t(tree)];
    int fi = -1;
    for (int k : q.fields)
      if (rs.fields[std::size_t(k)].id == fid) fi = k;
    if (fi < 0 || !rects[std::size_t(r)].contains(pt))
      throw std::logic_error("reference: access outside requirement " + std::to_string(r));
    return out.data[std::size_t(tree)][std::size_t(fi)][std::size_t(rs.bounds.linearize(pt))];
  }
  template <int N>
  auto reader(int r, FieldID f) const {
    return [this, r, f](const Point<N>& pt) -> std::uint64_t { return at(r, f, pt); };
  }
  template <int N>
  auto writer(int r, FieldID f) const {
    return [this, r, f](const Point<N>& pt) -> std::uint64_t& { return at(r, f, pt); };
  }
  template <int N>
  auto reducer(int r, FieldID f) const {
    const ReductionOp op_ = op.reqs[std::size_t(r)].redop;
    return [this, r, f, op_](const Point<N>& pt, std::uint64_t v) { fold(at(r, f, pt), v, op_); };
  }
};

}  // namespace

Outcome run_reference(const Program& p) {
  Outcome out;
  init_outcome(p, out);
  std::vector<char> fut_set(p.future_types.size(), 0), map_set(p.map_types.size(), 0);
  std::uint64_t host = initial_host_mix(p);
  try {
    for (std::size_t index = 0; index < p.ops.size(); ++index) {
      const OpSpec& op = p.ops[index];
      switch (op.kind) {
        case OpKind::CreatePartition:
        case OpKind::Fence:
        case OpKind::BeginTrace:
        case OpKind::EndTrace:
          break;
        case OpKind::Task:
        case OpKind::IndexTask: {
          if (op.fail) {
            out.error = failure_text(std::uint32_t(index));
            return out;
          }
          const BodyArgs a = body_args(p, op, host, out, index);
          std::uint64_t futs[kMaxFutures] = {};
          for (std::size_t i = 0; i < op.futures.size(); ++i)
            futs[i] = out.futures[std::size_t(op.futures[i])];
          const Domain launch = op.kind == OpKind::Task ? single_point_domain() : op.launch;
          std::vector<std::uint64_t> results;
          for (const auto& pt : points_of(launch)) {
            RefStore s{p, out, op, {}};
            for (const auto& q : op.reqs)
              s.rects.push_back(q.part < 0 ? bounds_of(p, q.region)
                                           : p.parts[std::size_t(q.part)].piece(q.proj.apply(pt)));
            const std::uint64_t v = run_body(a, pt, futs, s);
            observe(a, launch, pt, v);
            results.push_back(op.ret == ValueType::None ? 0 : v);
          }
          if (op.kind == OpKind::Task) {
            out.futures[std::size_t(op.result)] = results[0];
            fut_set[std::size_t(op.result)] = 1;
          } else {
            out.maps[std::size_t(op.result)] = results;
            map_set[std::size_t(op.result)] = 1;
          }
          break;
        }
        case OpKind::Fill: {
          const int t = op.dst.tree;
          const Domain& rb = p.regions[std::size_t(t)].bounds;
          for (const auto& pt : points_of(bounds_of(p, op.dst)))
            for (int f : op.dst_fields)
              out.data[std::size_t(t)][std::size_t(f)][std::size_t(rb.linearize(pt))] = op.value;
          break;
        }
        case OpKind::Copy: {
          const Domain& sb = p.regions[std::size_t(op.src.tree)].bounds;
          const Domain& db = p.regions[std::size_t(op.dst.tree)].bounds;
          for (const auto& pt : points_of(bounds_of(p, op.src)))
            for (std::size_t k = 0; k < op.src_fields.size(); ++k)
              out.data[std::size_t(op.dst.tree)][std::size_t(op.dst_fields[k])]
                      [std::size_t(db.linearize(pt))] =
                  out.data[std::size_t(op.src.tree)][std::size_t(op.src_fields[k])]
                          [std::size_t(sb.linearize(pt))];
          break;
        }
        case OpKind::ReduceFutures: {
          const auto& vals = out.maps[std::size_t(op.source)];
          const ValueType t = p.map_types[std::size_t(op.source)];
          std::uint64_t acc = vals.at(0);
          for (std::size_t i = 1; i < vals.size(); ++i)
            acc = fold_future(acc, vals[i], t, op.redop);
          out.futures[std::size_t(op.result)] = acc;
          fut_set[std::size_t(op.result)] = 1;
          break;
        }
        case OpKind::PointFuture: {
          const Domain& d = p.map_domains[std::size_t(op.source)];
          out.futures[std::size_t(op.result)] =
              out.maps[std::size_t(op.source)].at(std::size_t(d.linearize(op.point)));
          fut_set[std::size_t(op.result)] = 1;
          break;
        }
        case OpKind::GetFuture: {
          const std::uint64_t v = out.futures[std::size_t(op.source)];
          out.gets.push_back(v);
          host = mix(host, v);
          break;
        }
      }
    }
  } catch (const std::exception& e) {
    out.error = std::string("reference model: ") + e.what();
  }
  for (std::size_t i = 0; i < map_set.size(); ++i)
    if (map_set[i] && p.map_types[i] == ValueType::None)
      std::fill(out.maps[i].begin(), out.maps[i].end(), 0);
  return out;
}

// ---- the runtime executor

namespace {

class HarnessFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Aborts the process when a run does not finish in time (a hang).
class Watchdog {
 public:
  Watchdog(double seconds, std::string what)
      : what_(std::move(what)), thread_([this, seconds] {
          std::unique_lock<std::mutex> lock(m_);
          if (!cv_.wait_for(lock, std::chrono::duration<double>(seconds),
                            [this] { return done_; })) {
            std::fprintf(stderr, "\nrandom_programs: TIMEOUT (%.0f s, presumably a hang): %s\n",
                         seconds, what_.c_str());
            std::fflush(stderr);
            std::abort();
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(m_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

template <class F>
void with_list(const std::vector<FieldID>& v, F&& f) {
  switch (v.size()) {
    case 1:
      f({v[0]});
      break;
    case 2:
      f({v[0], v[1]});
      break;
    case 3:
      f({v[0], v[1], v[2]});
      break;
    case 4:
      f({v[0], v[1], v[2], v[3]});
      break;
    default:
      throw std::logic_error("with_list: 1..4 fields");
  }
}

std::uint64_t future_value(const Future& f, ValueType t) {
  switch (t) {
    case ValueType::U64:
      return f.get<std::uint64_t>();
    case ValueType::I64:
      return std::uint64_t(f.get<std::int64_t>());
    case ValueType::None:
      f.wait();
      return 0;
  }
  return 0;
}

TaskID task_id(ValueType t) {
  switch (t) {
    case ValueType::None:
      return kTaskVoid;
    case ValueType::U64:
      return kTaskU64;
    case ValueType::I64:
      return kTaskI64;
  }
  return kTaskVoid;
}

class RuntimeExec {
 public:
  RuntimeExec(const Program& p, Context& ctx, Outcome& out, bool manual_traces)
      : manual_traces_(manual_traces),
        p_(p),
        ctx_(ctx),
        out_(out),
        parts_(p.parts.size()),
        futures_(p.future_types.size()),
        maps_(p.map_types.size()) {}

  void run() {
    for (const auto& r : p_.regions) {
      std::vector<FieldDef> defs;
      for (const auto& f : r.fields) defs.push_back(FieldDef{f.id, sizeof(std::uint64_t)});
      roots_.push_back(
          ctx_.create_region(ctx_.create_index_space(r.bounds), ctx_.create_field_space(defs)));
    }
    std::uint64_t host = initial_host_mix(p_);
    for (std::size_t i = 0; i < p_.ops.size(); ++i) {
      const OpSpec& op = p_.ops[i];
      switch (op.kind) {
        case OpKind::CreatePartition:
          create_partition(op.part);
          break;
        case OpKind::Task: {
          reprise::TaskLauncher l(task_id(op.ret),
                                  reprise::TaskArgs(body_args(p_, op, host, out_, i)));
          for (const auto& q : op.reqs) {
            Region r = region(q.region);
            auto fids = field_ids(q.region.tree, q.fields);
            if (q.priv == Privilege::Reduce)
              with_list(fids, [&](std::initializer_list<FieldID> il) {
                l.add_reduction(r, q.redop, il);
              });
            else
              l.add(r, q.priv, fids);
          }
          for (int f : op.futures) l.add_future(futures_[std::size_t(f)]);
          futures_[std::size_t(op.result)] = ctx_.execute(l);
          break;
        }
        case OpKind::IndexTask: {
          reprise::IndexLauncher l(task_id(op.ret), op.launch,
                                   reprise::TaskArgs(body_args(p_, op, host, out_, i)));
          for (const auto& q : op.reqs) {
            auto fids = field_ids(tree_of(p_, q), q.fields);
            if (q.part >= 0) {
              const Partition& part = parts_[std::size_t(q.part)];
              if (q.priv == Privilege::Reduce)
                with_list(fids, [&](std::initializer_list<FieldID> il) {
                  l.add_reduction(part, q.proj.make(), q.redop, il);
                });
              else
                l.add(part, q.proj.make(), q.priv, fids);
            } else {
              Region r = region(q.region);
              if (q.priv == Privilege::Reduce)
                with_list(fids, [&](std::initializer_list<FieldID> il) {
                  l.add_reduction(r, q.redop, il);
                });
              else
                with_list(fids, [&](std::initializer_list<FieldID> il) { l.add(r, q.priv, il); });
            }
          }
          for (int f : op.futures) l.add_future(futures_[std::size_t(f)]);
          maps_[std::size_t(op.result)] = ctx_.execute(l);
          break;
        }
        case OpKind::Fill: {
          reprise::FillLauncher fl = reprise::FillLauncher::of(region(op.dst), {}, op.value);
          fl.fields = field_ids(op.dst.tree, op.dst_fields);
          ctx_.fill(fl);
          break;
        }
        case OpKind::Copy:
          ctx_.copy(reprise::CopyLauncher{region(op.src), field_ids(op.src.tree, op.src_fields),
                                          region(op.dst), field_ids(op.dst.tree, op.dst_fields)});
          break;
        case OpKind::ReduceFutures:
          futures_[std::size_t(op.result)] = ctx_.reduce(maps_[std::size_t(op.source)], op.redop);
          break;
        case OpKind::PointFuture:
          futures_[std::size_t(op.result)] = maps_[std::size_t(op.source)].get(op.point);
          break;
        case OpKind::GetFuture: {
          const std::uint64_t v = future_value(futures_[std::size_t(op.source)],
                                               p_.future_types[std::size_t(op.source)]);
          out_.gets.push_back(v);
          host = mix(host, v);
          break;
        }
        case OpKind::Fence: {
          Future f = ctx_.fence();
          if (op.wait) f.wait();
          break;
        }
        case OpKind::BeginTrace:
          if (manual_traces_) ctx_.begin_trace(reprise::TraceID(op.trace));
          break;
        case OpKind::EndTrace:
          if (manual_traces_) ctx_.end_trace(reprise::TraceID(op.trace));
          break;
      }
    }
    // Read every region back, then every future.
    std::vector<Future> done;
    for (std::size_t t = 0; t < p_.regions.size(); ++t) {
      const RegionSpec& rs = p_.regions[t];
      ReadbackArgs a;
      a.nfields = int(rs.fields.size());
      a.dim = rs.bounds.dim;
      std::vector<FieldID> fids;
      for (int k = 0; k < a.nfields; ++k) {
        a.dst[k] = out_.data[t][std::size_t(k)].data();
        a.fid[k] = rs.fields[std::size_t(k)].id;
        fids.push_back(a.fid[k]);
      }
      reprise::TaskLauncher l(kTaskReadback, reprise::TaskArgs(a));
      l.add(roots_[t], Privilege::ReadOnly, fids);
      done.push_back(ctx_.execute(l));
    }
    for (auto& f : done) f.wait();
    for (std::size_t i = 0; i < futures_.size(); ++i)
      if (futures_[i].valid()) out_.futures[i] = future_value(futures_[i], p_.future_types[i]);
    const auto st = ctx_.trace_stats();
    out_.templates = st.templates_recorded;
    out_.replays = st.replays;
    out_.copies = st.copies;
    for (std::size_t i = 0; i < maps_.size(); ++i) {
      if (!maps_[i].valid()) continue;
      const Domain& d = p_.map_domains[i];
      auto& v = out_.maps[i];
      v.assign(std::size_t(d.volume()), 0);
      if (p_.map_types[i] == ValueType::None) {
        maps_[i].wait();
        continue;
      }
      for (coord_t k = 0; k < d.volume(); ++k)
        v[std::size_t(k)] = future_value(maps_[i].get(d.delinearize(k)), p_.map_types[i]);
    }
  }

 private:
  std::vector<FieldID> field_ids(int tree, const std::vector<int>& fields) const {
    std::vector<FieldID> v;
    for (int f : fields) v.push_back(p_.regions[std::size_t(tree)].fields[std::size_t(f)].id);
    return v;
  }

  Region region(const RegionRef& r) {
    if (r.part < 0) return roots_[std::size_t(r.tree)];
    const Partition& part = parts_[std::size_t(r.part)];
    // Both ways of naming a subregion.
    return (r.color.x[0] & 1) ? ctx_.subregion(part, r.color) : part[r.color];
  }

  void create_partition(int i) {
    const PartSpec& ps = p_.parts[std::size_t(i)];
    Region parent = region(ps.parent);
    Partition part;
    switch (ps.kind) {
      case PartKind::Equal:
        part = ctx_.partition_equal(parent, ctx_.create_index_space(ps.colors));
        break;
      case PartKind::Blocks:
        part = ctx_.partition_by_blocks(parent, ps.block);
        break;
      case PartKind::Rects:
        if (ps.use_callback) {
          part = ctx_.partition_by_rects(
              parent, ctx_.create_index_space(ps.colors),
              [&](const DomainPoint& c) { return ps.rects[std::size_t(ps.colors.linearize(c))]; });
        } else {
          part = ctx_.partition_by_rects(parent, ctx_.create_index_space(ps.colors), ps.rects);
        }
        break;
      case PartKind::Translate:
        part = ctx_.partition_by_translation(parts_[std::size_t(ps.base)], ps.offset);
        break;
    }
    parts_[std::size_t(i)] = part;
    // The runtime's view of the partition must be the generator's.
    auto fail = [&](const std::string& what) {
      throw HarnessFailure("partition p" + std::to_string(i) + ": " + what);
    };
    if (!(part.color_space() == ps.colors))
      fail("color space " + part.color_space().str() + ", expected " + ps.colors.str());
    if (!(part.parent() == parent)) fail("parent() is not the region it was made from");
    for (coord_t c = 0; c < ps.colors.volume(); ++c) {
      const DomainPoint col = ps.colors.delinearize(c);
      const Domain got = part.rect(col), want = ps.pieces[std::size_t(c)];
      if (!(got == want))
        fail("piece " + col.str() + " is " + got.str() + ", expected " + want.str());
      if (!(part[col].bounds() == want))
        fail("subregion " + col.str() + " has bounds " + part[col].bounds().str());
    }
    if (part.disjoint() != ps.disjoint)
      fail(std::string("disjoint() is ") + (part.disjoint() ? "true" : "false") + ", expected " +
           (ps.disjoint ? "true" : "false"));
    if (part.complete() && !ps.complete) fail("complete() is true but the pieces leave points out");
  }

  bool manual_traces_;
  const Program& p_;
  Context& ctx_;
  Outcome& out_;
  std::vector<Region> roots_;
  std::vector<Partition> parts_;
  std::vector<Future> futures_;
  std::vector<FutureMap> maps_;
};

}  // namespace

void register_tasks() {
  static std::once_flag once;
  std::call_once(once, [] {
    reprise::TaskRegistry::add(kTaskVoid, "random_void", {reprise::cpu(task_void)});
    reprise::TaskRegistry::add(kTaskU64, "random_u64", {reprise::cpu(task_u64)});
    reprise::TaskRegistry::add(kTaskI64, "random_i64", {reprise::cpu(task_i64)});
    reprise::TaskRegistry::add(kTaskReadback, "random_readback", {reprise::cpu(task_readback)});
  });
}

void combine_across_ranks(Outcome& out);

namespace {
// See MapperKind::Scatter. Deterministic in the op stream, so every shard maps alike. For
// odd seeds the placement also changes with the op's number (every iteration of a loop runs
// elsewhere); for even seeds an op maps alike in every iteration (its trace can replay).
class ScatterMapper final : public reprise::Mapper {
 public:
  explicit ScatterMapper(std::uint64_t seed) : seed_(seed), moving_((seed & 1) != 0) {}
  reprise::Processor select_processor(const reprise::MapperTaskInfo& t,
                                      const reprise::MachineInfo& m) override {
    const std::uint64_t h = mix(op_key(t), t.point_index);
    return reprise::Processor{reprise::ProcessorKind::CPU, std::uint32_t((h >> 24) % m.num_cpus),
                              std::uint32_t(h % m.num_shards)};
  }
  reprise::MemoryID select_memory(const reprise::MapperTaskInfo& t, reprise::Processor proc,
                                  std::size_t req, const reprise::MachineInfo& m) override {
    const std::uint64_t h = mix(mix(op_key(t) ^ 0x5ca7, t.point_index), req);
    return reprise::MemoryID(proc.shard * m.num_sysmems + (h >> 16) % m.num_sysmems);
  }

 private:
  std::uint64_t op_key(const reprise::MapperTaskInfo& t) const {
    std::uint64_t h = mix(seed_, t.task);
    const Domain& d = t.launch_domain;
    for (int i = 0; i < d.dim; ++i) h = mix(mix(h, std::uint64_t(d.lo[i])), std::uint64_t(d.hi[i]));
    return moving_ ? mix(h, t.op_seq) : h;
  }
  std::uint64_t seed_;
  bool moving_;
};
}  // namespace

Outcome run_runtime(const Program& p, const std::vector<std::string>& flags, double timeout_s) {
  RunOptions o;
  o.timeout_s = timeout_s;
  return run_runtime(p, flags, o);
}

Outcome run_runtime(const Program& p, const std::vector<std::string>& flags,
                    const RunOptions& options) {
  register_tasks();
  Outcome out;
  init_outcome(p, out);
  Watchdog dog(options.timeout_s, "seed " + std::to_string(p.seed) + " with flags '" +
                                      join_flags(flags) + "'\n" + dump(p));
  std::unique_ptr<reprise::Mapper> mapper;
  if (options.mapper == MapperKind::Scatter) mapper = std::make_unique<ScatterMapper>(p.seed);
  try {
    reprise::run(
        flags, [&](Context& ctx) { RuntimeExec(p, ctx, out, options.manual_traces).run(); },
        std::move(mapper));
  } catch (const reprise::Error& e) {
    // A deliberate failure is reported as it was thrown (under control replication with the
    // shard that ran it in front): compare() looks for the reference model's text.
    const std::string what = e.what();
    const auto at = what.find("deliberate failure of op #");
    out.error = at != std::string::npos ? what.substr(at) : "reprise::Error: " + what;
  } catch (const std::exception& e) {
    out.error = std::string("exception: ") + e.what();
  }
  combine_across_ranks(out);
  return out;
}

// Under control replication (mpirun) each rank ran only its own points, so what the task
// bodies wrote into host memory (what each point read, the final contents read back) is
// spread over the ranks, each element on exactly one and zero elsewhere: OR them together.
// Future values are replicated by the runtime already.
void combine_across_ranks(Outcome& out) {
  int initialized = 0, finalized = 0, size = 1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) return;
  auto combine = [](std::vector<std::uint64_t>& v) {
    if (!v.empty())
      MPI_Allreduce(MPI_IN_PLACE, v.data(), int(v.size()), MPI_UINT64_T, MPI_BOR, MPI_COMM_WORLD);
  };
  for (auto& region : out.data)
    for (auto& field : region) combine(field);
  for (auto& op : out.observed) combine(op);
}

// ------------------------------------------------------------------------------------------
// Comparing outcomes.

std::string compare_final(const Program& p, const Outcome& expected, const Outcome& got);

std::string compare(const Program& p, const Outcome& expected, const Outcome& got) {
  std::ostringstream o;
  if (!expected.error.empty() || !got.error.empty()) {
    if (expected.error == got.error) return "";  // (the same failure on both sides)
    if (is_deliberate_failure(expected.error) && got.error.empty())
      return "the program should have ended with '" + expected.error + "' but succeeded";
    o << "errors differ:\n    expected: " << (expected.error.empty() ? "(none)" : expected.error)
      << "\n    got:      " << (got.error.empty() ? "(none)" : got.error);
    return o.str();
  }
  // The first op (in program order) whose points saw different inputs: where it went wrong.
  for (std::size_t i = 0; i < expected.observed.size() && i < got.observed.size(); ++i) {
    const auto& e = expected.observed[i];
    const auto& g = got.observed[i];
    if (e == g) continue;
    const Domain launch =
        p.ops[i].kind == OpKind::IndexTask ? p.ops[i].launch : single_point_domain();
    std::size_t k = 0, n = 0;
    for (std::size_t j = 0; j < e.size() && j < g.size(); ++j)
      if (e[j] != g[j] && n++ == 0) k = j;
    o << "op #" << i << " is the first op that saw different data (" << n << " of " << e.size()
      << " points, first " << launch.delinearize(coord_t(k)).str()
      << "): one of its requirements or futures held other values than in program order";
    std::string rest = compare_final(p, expected, got);
    if (!rest.empty()) o << ";\n    and " << rest;
    return o.str();
  }
  return compare_final(p, expected, got);
}

std::string compare_final(const Program& p, const Outcome& expected, const Outcome& got) {
  std::ostringstream o;
  std::string first;
  std::vector<std::string> differing;
  for (std::size_t t = 0; t < p.regions.size(); ++t) {
    const RegionSpec& rs = p.regions[t];
    for (std::size_t k = 0; k < rs.fields.size(); ++k) {
      const auto& e = expected.data[t][k];
      const auto& g = got.data[t][k];
      std::size_t n = 0, at = 0;
      for (std::size_t i = 0; i < e.size(); ++i)
        if (e[i] != g[i] && n++ == 0) at = i;
      if (n == 0) continue;
      std::ostringstream name;
      name << "r" << t << " field " << rs.fields[k].id;
      std::ostringstream d;
      d << name.str() << " (" << n << " of " << e.size() << " points)";
      differing.push_back(d.str());
      if (first.empty()) {
        std::ostringstream f;
        f << name.str() << (rs.fields[k].is_float ? " (double)" : " (uint64)") << " point "
          << rs.bounds.delinearize(coord_t(at)).str() << ": expected " << hex(e[at]) << ", got "
          << hex(g[at]);
        first = f.str();
      }
    }
  }
  if (!first.empty()) {
    o << "region contents differ; first at " << first << "\n    differing:";
    for (const auto& d : differing) o << " " << d << ";";
    return o.str();
  }
  for (std::size_t i = 0; i < expected.gets.size() || i < got.gets.size(); ++i) {
    if (i >= expected.gets.size() || i >= got.gets.size() || expected.gets[i] != got.gets[i]) {
      o << "mid-program get #" << i << " differs: expected "
        << (i < expected.gets.size() ? hex(expected.gets[i]) : "(none)") << ", got "
        << (i < got.gets.size() ? hex(got.gets[i]) : "(none)");
      return o.str();
    }
  }
  for (std::size_t i = 0; i < expected.futures.size(); ++i)
    if (expected.futures[i] != got.futures[i]) {
      o << "future f" << i << " (" << type_name(p.future_types[i]) << ") differs: expected "
        << hex(expected.futures[i]) << ", got " << hex(got.futures[i]);
      return o.str();
    }
  for (std::size_t i = 0; i < expected.maps.size(); ++i)
    if (expected.maps[i] != got.maps[i]) {
      std::size_t k = 0;
      while (k < expected.maps[i].size() && k < got.maps[i].size() &&
             expected.maps[i][k] == got.maps[i][k])
        ++k;
      o << "future map m" << i << " differs at point "
        << (k < expected.maps[i].size() ? p.map_domains[i].delinearize(coord_t(k)).str() : "?")
        << ": expected " << (k < expected.maps[i].size() ? hex(expected.maps[i][k]) : "(none)")
        << ", got " << (k < got.maps[i].size() ? hex(got.maps[i][k]) : "(none)");
      return o.str();
    }
  return "";
}

// ------------------------------------------------------------------------------------------
// Program surgery: minimization and deliberate breakage.

Program without_op(const Program& p, std::size_t i) {
  if (i >= p.ops.size() || p.ops[i].init || p.ops[i].kind == OpKind::BeginTrace ||
      p.ops[i].kind == OpKind::EndTrace)
    return p;  // (an empty trace is still a trace)
  std::vector<char> dead_part(p.parts.size(), 0), dead_fut(p.future_types.size(), 0),
      dead_map(p.map_types.size(), 0);
  auto ref_dead = [&](const RegionRef& r) { return r.part >= 0 && dead_part[std::size_t(r.part)]; };
  Program q = p;
  q.ops.clear();
  for (std::size_t j = 0; j < p.ops.size(); ++j) {
    const OpSpec& op = p.ops[j];
    bool dead = j == i;
    if (!dead) {
      switch (op.kind) {
        case OpKind::CreatePartition: {
          const PartSpec& ps = p.parts[std::size_t(op.part)];
          dead = ref_dead(ps.parent) || (ps.base >= 0 && dead_part[std::size_t(ps.base)]);
          break;
        }
        case OpKind::Task:
        case OpKind::IndexTask:
          for (const auto& r : op.reqs)
            dead = dead || ref_dead(r.region) || (r.part >= 0 && dead_part[std::size_t(r.part)]);
          for (int f : op.futures) dead = dead || dead_fut[std::size_t(f)];
          break;
        case OpKind::Fill:
          dead = ref_dead(op.dst);
          break;
        case OpKind::Copy:
          dead = ref_dead(op.src) || ref_dead(op.dst);
          break;
        case OpKind::ReduceFutures:
        case OpKind::PointFuture:
          dead = dead_map[std::size_t(op.source)];
          break;
        case OpKind::GetFuture:
          dead = dead_fut[std::size_t(op.source)];
          break;
        case OpKind::Fence:
        case OpKind::BeginTrace:
        case OpKind::EndTrace:
          break;
      }
    }
    if (dead && op.init) dead = false;  // cannot happen: init ops depend on nothing
    if (!dead) {
      q.ops.push_back(op);
      continue;
    }
    switch (op.kind) {
      case OpKind::CreatePartition:
        dead_part[std::size_t(op.part)] = 1;
        break;
      case OpKind::Task:
      case OpKind::ReduceFutures:
      case OpKind::PointFuture:
        dead_fut[std::size_t(op.result)] = 1;
        break;
      case OpKind::IndexTask:
        dead_map[std::size_t(op.result)] = 1;
        break;
      default:
        break;
    }
  }
  return q;
}

Program reordered(const Program& p, bool* found) {
  auto touches_data = [](const OpSpec& op) {
    return !op.init && (op.kind == OpKind::Task || op.kind == OpKind::IndexTask ||
                        op.kind == OpKind::Fill || op.kind == OpKind::Copy);
  };
  for (std::size_t i = p.ops.size(); i-- > 1;) {
    const OpSpec& a = p.ops[i - 1];
    const OpSpec& b = p.ops[i];
    if (!touches_data(a) || !touches_data(b)) continue;
    if (a.kind == OpKind::Task &&
        std::find(b.futures.begin(), b.futures.end(), a.result) != b.futures.end())
      continue;
    bool dependent = false;
    for (const auto& x : op_footprints(p, a))
      for (const auto& y : op_footprints(p, b)) dependent = dependent || interferes(x, y);
    if (!dependent) continue;
    Program q = p;
    std::swap(q.ops[i - 1], q.ops[i]);
    if (found) *found = true;
    return q;
  }
  if (found) *found = false;
  return p;
}

Program perturbed(const Program& p) {
  Program q = p;
  for (auto& op : q.ops)
    if (op.kind == OpKind::Task || op.kind == OpKind::IndexTask) op.salt ^= 1;
  return q;
}

}  // namespace reprise_random

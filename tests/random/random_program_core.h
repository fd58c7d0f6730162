#pragma once
// The parts of the random-program harness that its generator, printer, reference model and
// runtime runner share: hashing and random numbers, the task bodies (one code for the runtime
// and the model), geometry and footprints, and what both runners need to start a run.
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

#include "random_program.h"

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

// Internal to the harness (tests/random/*.cpp).
namespace core {

constexpr TaskID kTaskVoid = 9100, kTaskU64 = 9101, kTaskI64 = 9102, kTaskReadback = 9103;
constexpr int kMaxReqs = 4, kMaxFields = 4, kMaxFutures = 4;
constexpr int kMaxColors = 16;

// ------------------------------------------------------------------------------------------
// Hashing and random numbers (self-contained, so that a seed means the same program anywhere).

inline std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
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

inline std::uint64_t hash_point(const DomainPoint& p) {
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

inline Domain make_domain(int dim, const std::array<coord_t, 3>& lo,
                          const std::array<coord_t, 3>& hi) {
  Domain d;
  d.dim = dim;
  d.lo = lo;
  d.hi = hi;
  return d;
}

inline Domain single_point_domain() {
  return Domain(Rect<1>({0}, {0}));
}

inline std::string hex(std::uint64_t v) {
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

inline std::uint64_t rw_update(std::uint64_t old, std::uint64_t h, bool is_float) {
  if (!is_float) return mix(old, h);
  double d = std::bit_cast<double>(old);
  if (!(std::fabs(d) < 1e9)) d = 0.0;  // also NaN (float fields may hold copied integers)
  return std::bit_cast<std::uint64_t>(d * 0.5 + double(h >> 11) * 0x1p-53);
}

inline std::uint64_t wd_value(std::uint64_t h, bool is_float) {
  if (!is_float) return h;
  return std::bit_cast<std::uint64_t>(double(h >> 11) * 0x1p-40 - 1000.0);
}

inline std::uint64_t reduce_value(std::uint64_t h, ReductionOp op) {
  return op == ReductionOp::Prod ? (h | 1) : h;
}

inline void fold(std::uint64_t& target, std::uint64_t v, ReductionOp op) {
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
inline std::uint64_t fold_future(std::uint64_t a, std::uint64_t b, ValueType t, ReductionOp op) {
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
inline void observe(const BodyArgs& a, const Domain& launch, const DomainPoint& point,
                    std::uint64_t v) {
  if (a.observe) a.observe[launch.linearize(point)] = v;
}

// What a deliberately failing op throws, in the runtime and in the reference model.
inline std::string failure_text(std::uint32_t op_index) {
  return "deliberate failure of op #" + std::to_string(op_index);
}
inline bool is_deliberate_failure(const std::string& error) {
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

inline std::uint64_t runtime_body(TaskContext& tc) {
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

inline void task_void(TaskContext& tc) {
  runtime_body(tc);
}
inline std::uint64_t task_u64(TaskContext& tc) {
  return runtime_body(tc);
}
inline std::int64_t task_i64(TaskContext& tc) {
  return std::int64_t(runtime_body(tc));
}

inline void task_readback(TaskContext& tc) {
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

inline std::vector<DomainPoint> points_of(const Domain& d) {
  std::vector<DomainPoint> v;
  if (d.empty()) return v;
  v.reserve(std::size_t(d.volume()));
  for (coord_t i = 0; i < d.volume(); ++i) v.push_back(d.delinearize(i));
  return v;
}

inline bool same_ref(const RegionRef& a, const RegionRef& b) {
  return a.tree == b.tree && a.part == b.part && (a.part < 0 || a.color == b.color);
}

inline Domain bounds_of(const Program& p, const RegionRef& r) {
  return r.part < 0 ? p.regions[std::size_t(r.tree)].bounds
                    : p.parts[std::size_t(r.part)].piece(r.color);
}

inline int tree_of(const Program& p, const ReqSpec& q) {
  return q.part >= 0 ? p.parts[std::size_t(q.part)].parent.tree : q.region.tree;
}

// The rect requirement q gives each point of the launch (one rect for a region requirement).
inline std::vector<Domain> req_rects(const Program& p, const ReqSpec& q, const Domain& launch) {
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

inline std::uint64_t field_mask(const std::vector<int>& fields) {
  std::uint64_t m = 0;
  for (int f : fields) m |= std::uint64_t(1) << f;
  return m;
}

inline Footprint footprint(const Program& p, const ReqSpec& q, const Domain& launch) {
  return Footprint{tree_of(p, q), field_mask(q.fields), q.priv, q.redop, req_rects(p, q, launch)};
}

inline bool conflicting(const Footprint& a, const Footprint& b) {
  if (a.tree != b.tree || !(a.mask & b.mask)) return false;
  if (a.priv == Privilege::ReadOnly && b.priv == Privilege::ReadOnly) return false;
  if (a.priv == Privilege::Reduce && b.priv == Privilege::Reduce && a.redop == b.redop)
    return false;
  return true;
}

inline bool interferes(const Footprint& a, const Footprint& b) {
  if (!conflicting(a, b)) return false;
  for (const auto& x : a.rects)
    for (const auto& y : b.rects)
      if (x.overlaps(y)) return true;
  return false;
}

inline std::vector<Footprint> op_footprints(const Program& p, const OpSpec& op) {
  std::vector<Footprint> v;
  // A fill or a copy end: the fields of the whole referenced region.
  auto whole = [&](const auto& ref, const std::vector<int>& fields, Privilege priv) {
    return Footprint{ref.tree, field_mask(fields), priv, ReductionOp::None, {bounds_of(p, ref)}};
  };
  switch (op.kind) {
    case OpKind::Task:
    case OpKind::IndexTask: {
      Domain launch = op.kind == OpKind::Task ? single_point_domain() : op.launch;
      for (const auto& q : op.reqs) v.push_back(footprint(p, q, launch));
      break;
    }
    case OpKind::Fill:
      v.push_back(whole(op.dst, op.dst_fields, Privilege::WriteDiscard));
      break;
    case OpKind::Copy:
      v.push_back(whole(op.src, op.src_fields, Privilege::ReadOnly));
      v.push_back(whole(op.dst, op.dst_fields, Privilege::WriteDiscard));
      break;
    default:
      break;
  }
  return v;
}

inline bool injective(const ProjSpec& proj, const Domain& launch) {
  std::vector<std::array<coord_t, 3>> seen;
  for (const auto& pt : points_of(launch)) seen.push_back(proj.apply(pt).x);
  std::sort(seen.begin(), seen.end());
  return std::adjacent_find(seen.begin(), seen.end()) == seen.end();
}

inline void compute_pieces_flags(PartSpec& ps) {
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

// ------------------------------------------------------------------------------------------
// Running: what the reference model and the runtime executor share.

inline void init_outcome(const Program& p, Outcome& out) {
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

inline BodyArgs body_args(const Program& p, const OpSpec& op, std::uint64_t host, Outcome& out,
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

inline std::uint64_t initial_host_mix(const Program& p) {
  return mix(p.seed, 0x4057);
}

// A value type's name in dumps and messages.
inline const char* type_name(ValueType t) {
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

}  // namespace core
using namespace core;

}  // namespace reprise_random

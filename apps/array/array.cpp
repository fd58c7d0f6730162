#include "array.h"

#include <fmt/core.h>

#include "array_tasks.h"

namespace reprise::array {

using tasks::Op;

namespace {

RectKey key_of(const Domain& d) {
  RectKey k{coord_t(d.dim), 0, 0, 0, 0};
  for (int i = 0; i < d.dim && i < 2; ++i) {
    k[std::size_t(1 + 2 * i)] = d.lo[i];
    k[std::size_t(2 + 2 * i)] = d.hi[i];
  }
  return k;
}

Domain at_origin(const Domain& d) {
  Domain s = d;
  for (int i = 0; i < d.dim; ++i) {
    s.lo[i] = 0;
    s.hi[i] = d.extent(i) - 1;
  }
  return s;
}

std::string shape_str(const Domain& d) {
  return d.dim == 1 ? fmt::format("({})", d.extent(0))
                    : fmt::format("({}, {})", d.extent(0), d.extent(1));
}

void check_same_shape(const char* op, const Array& a, const Array& b) {
  if (!a.valid() || !b.valid()) throw Error(fmt::format("array {}: an operand is empty", op));
  if (!(a.shape() == b.shape()))
    throw Error(fmt::format("array {}: shapes {} and {} differ", op, shape_str(a.shape()),
                            shape_str(b.shape())));
}

Array binary(const char* name, Op op, const Array& a, const Array& b) {
  check_same_shape(name, a, b);
  Engine& e = a.engine();
  Array out = e.allocate(a.shape());
  IndexLauncher l(tasks::kBinary, e.colors(), TaskArgs{tasks::BinaryArgs{op}});
  l.add(out.tiles(), Projection::identity(), Privilege::WriteDiscard, {kValue});
  l.add(a.tiles(), Projection::identity(), Privilege::ReadOnly, {kValue});
  l.add(b.tiles(), Projection::identity(), Privilege::ReadOnly, {kValue});
  e.ctx().execute(l);
  return out;
}

Array scalar(Op op, const Array& a, double s, bool scalar_left) {
  if (!a.valid()) throw Error("array: arithmetic on an empty array");
  Engine& e = a.engine();
  Array out = e.allocate(a.shape());
  IndexLauncher l(tasks::kScalar, e.colors(), TaskArgs{tasks::ScalarArgs{op, scalar_left, s}});
  l.add(out.tiles(), Projection::identity(), Privilege::WriteDiscard, {kValue});
  l.add(a.tiles(), Projection::identity(), Privilege::ReadOnly, {kValue});
  e.ctx().execute(l);
  return out;
}

FutureMap per_tile(TaskID task, const Array& a) {
  Engine& e = a.engine();
  IndexLauncher l(task, e.colors());
  l.add(a.tiles(), Projection::identity(), Privilege::ReadOnly, {kValue});
  return e.ctx().execute(l);
}

coord_t resolve(coord_t v, coord_t n, bool is_stop) {
  if (is_stop && v == kEnd) return n;
  return v < 0 ? v + n : v;
}

}  // namespace

// --- Engine ---

Engine::Engine(Context& ctx, std::uint32_t tiles)
    : ctx_(ctx),
      tiles_(tiles ? tiles : ctx.num_cpus() * ctx.num_shards()),
      alive_(std::make_shared<bool>(true)) {
  tasks::register_all();
  colors_ = ctx.create_index_space(Rect<1>({0}, {coord_t(tiles_) - 1}));
  fs_ = ctx.create_field_space({{kValue, sizeof(double)}});
}

Engine::~Engine() {
  alive_.reset();  // arrays that outlive the engine free their storage without it
}

Domain Engine::tile(const Domain& shape, coord_t c) const {
  Domain t = shape;
  const coord_t n = shape.extent(0), tiles = coord_t(tiles_);
  t.lo[0] = shape.lo[0] + c * n / tiles;
  t.hi[0] = shape.lo[0] + (c + 1) * n / tiles - 1;
  return t;
}

Engine::Stats Engine::stats() const {
  Stats s = stats_;
  s.pooled = 0;
  for (const auto& [k, v] : pool_) s.pooled += v.size();
  return s;
}

Array Engine::allocate(const Domain& shape_in) {
  const Domain shape = at_origin(shape_in);
  if (shape.dim < 1 || shape.dim > 2)
    throw Error(fmt::format("array: {}-d arrays are not supported (1-d and 2-d are)", shape.dim));
  if (shape.empty()) throw Error("array: an array needs at least one element");
  auto& free = pool_[key_of(shape)];
  std::unique_ptr<Storage> s;
  if (!free.empty()) {
    s = std::move(free.back());
    free.pop_back();
    ++stats_.reused;
  } else {
    s = std::make_unique<Storage>();
    s->engine = this;
    s->engine_alive = alive_;
    s->bounds = shape;
    s->region = ctx_.create_region(ctx_.create_index_space(shape), fs_);
    ++stats_.regions_created;
  }
  // Back into the pool when the last array using it goes away.
  std::shared_ptr<Storage> shared(s.release(), [](Storage* p) {
    std::unique_ptr<Storage> own(p);
    if (!own->engine_alive.expired()) own->engine->release(std::move(own));
  });
  return Array(std::move(shared), shape);
}

void Engine::release(std::unique_ptr<Storage> s) {
  auto& free = pool_[key_of(s->bounds)];
  free.push_back(std::move(s));
}

Partition Engine::partition_for(Storage& s, const Domain& view) {
  const RectKey key = key_of(view);
  auto it = s.partitions.find(key);
  if (it != s.partitions.end()) return it->second;
  const Domain shape = at_origin(view);
  Partition p = ctx_.partition_by_rects(s.region, colors_, [&](const DomainPoint& c) {
    Domain t = tile(shape, c[0]);
    for (int i = 0; i < t.dim; ++i) {
      t.lo[i] += view.lo[i];
      t.hi[i] += view.lo[i];
    }
    return t;
  });
  ++stats_.partitions;
  s.partitions.emplace(key, p);
  return p;
}

Array Engine::full(const Domain& shape, double v) {
  Array a = allocate(shape);
  a.assign(v);
  return a;
}
Array Engine::zeros(coord_t n) {
  return full(Rect<1>({0}, {n - 1}), 0.0);
}
Array Engine::zeros(coord_t rows, coord_t cols) {
  return full(Rect<2>({0, 0}, {rows - 1, cols - 1}), 0.0);
}
Array Engine::ones(coord_t n) {
  return full(Rect<1>({0}, {n - 1}), 1.0);
}
Array Engine::eye(coord_t n) {
  return diag_matrix(ones(n));
}

Array Engine::random(coord_t n, std::uint64_t seed) {
  Array a = allocate(Rect<1>({0}, {n - 1}));
  IndexLauncher l(tasks::kRandom, colors_, TaskArgs{tasks::RandomArgs{seed, 1}});
  l.add(a.tiles(), Projection::identity(), Privilege::WriteDiscard, {kValue});
  ctx_.execute(l);
  return a;
}

Array Engine::random(coord_t rows, coord_t cols, std::uint64_t seed) {
  Array a = allocate(Rect<2>({0, 0}, {rows - 1, cols - 1}));
  IndexLauncher l(tasks::kRandom, colors_, TaskArgs{tasks::RandomArgs{seed, cols}});
  l.add(a.tiles(), Projection::identity(), Privilege::WriteDiscard, {kValue});
  ctx_.execute(l);
  return a;
}

// --- Array ---

Domain Array::shape() const {
  return at_origin(view_);
}

Engine& Array::engine() const {
  if (!store_) throw Error("array: use of an empty array");
  return *store_->engine;
}

Partition Array::tiles() const {
  return engine().partition_for(*store_, view_);
}

Array Array::operator()(Slice s) const {
  if (dim() != 1)
    throw Error(fmt::format("array slice: a {}-d array needs {} slices", dim(), dim()));
  Domain v = view_;
  const coord_t n = size(0);
  const coord_t a = resolve(s.start, n, false), b = resolve(s.stop, n, true);
  if (a < 0 || b > n || a >= b)
    throw Error(fmt::format("array slice [{}:{}] of a length-{} array is empty or out of range",
                            s.start, s.stop == kEnd ? std::string("end") : std::to_string(s.stop),
                            n));
  v.lo[0] = view_.lo[0] + a;
  v.hi[0] = view_.lo[0] + b - 1;
  return Array(store_, v);
}

Array Array::operator()(Slice rows, Slice cols) const {
  if (dim() != 2)
    throw Error(fmt::format("array slice: a {}-d array needs {} slices", dim(), dim()));
  Domain v = view_;
  const Slice s[2] = {rows, cols};
  for (int d = 0; d < 2; ++d) {
    const coord_t n = size(d);
    const coord_t a = resolve(s[d].start, n, false), b = resolve(s[d].stop, n, true);
    if (a < 0 || b > n || a >= b)
      throw Error(fmt::format(
          "array slice: dimension {} [{}:{}] of extent {} is empty or out of "
          "range",
          d, s[d].start, s[d].stop == kEnd ? std::string("end") : std::to_string(s[d].stop), n));
    v.lo[d] = view_.lo[d] + a;
    v.hi[d] = view_.lo[d] + b - 1;
  }
  return Array(store_, v);
}

void Array::assign(const Array& src) const {
  check_same_shape("assign", *this, src);
  Engine& e = engine();
  // Overlapping views of one region: go through a copy of the source.
  if (src.store_ == store_ && src.view_.overlaps(view_)) {
    assign(src * 1.0);
    return;
  }
  IndexLauncher l(tasks::kCopy, e.colors());
  l.add(tiles(), Projection::identity(), Privilege::WriteDiscard, {kValue});
  l.add(src.tiles(), Projection::identity(), Privilege::ReadOnly, {kValue});
  e.ctx().execute(l);
}

void Array::assign(double v) const {
  Engine& e = engine();
  IndexLauncher l(tasks::kSet, e.colors(), TaskArgs{tasks::SetArgs{v}});
  l.add(tiles(), Projection::identity(), Privilege::WriteDiscard, {kValue});
  e.ctx().execute(l);
}

Future Array::sum() const {
  return engine().ctx().reduce(per_tile(tasks::kSum, *this), ReductionOp::Sum);
}

Future Array::max() const {
  return engine().ctx().reduce(per_tile(tasks::kMax, *this), ReductionOp::Max);
}

Future Array::norm() const {
  Engine& e = engine();
  Future squares = e.ctx().reduce(per_tile(tasks::kSumSquares, *this), ReductionOp::Sum);
  TaskLauncher l(tasks::kSqrt);
  l.add_future(squares);
  return e.ctx().execute(l);
}

std::vector<double> Array::to_vector() const {
  std::vector<double> out(static_cast<std::size_t>(volume()));
  // One point per shard (control replication), each writing into its own process's vector.
  Context& ctx = engine().ctx();
  const IndexSpace shards = ctx.create_index_space(Rect<1>({0}, {coord_t(ctx.num_shards()) - 1}));
  IndexLauncher l(tasks::kRead, shards,
                  TaskArgs{tasks::ViewArgs{view_, reinterpret_cast<std::uintptr_t>(out.data())}});
  l.add(store_->region, Privilege::ReadOnly, {kValue});
  ctx.execute(l).wait();
  return out;
}

Future Array::checksum() const {
  TaskLauncher l(tasks::kChecksum, TaskArgs{tasks::ViewArgs{view_, 0}});
  l.add(store_->region, Privilege::ReadOnly, {kValue});
  return engine().ctx().execute(l);
}

// --- free functions ---

Array operator+(const Array& a, const Array& b) {
  return binary("+", Op::Add, a, b);
}
Array operator-(const Array& a, const Array& b) {
  return binary("-", Op::Sub, a, b);
}
Array operator*(const Array& a, const Array& b) {
  return binary("*", Op::Mul, a, b);
}
Array operator/(const Array& a, const Array& b) {
  return binary("/", Op::Div, a, b);
}
Array operator+(const Array& a, double s) {
  return scalar(Op::Add, a, s, false);
}
Array operator-(const Array& a, double s) {
  return scalar(Op::Sub, a, s, false);
}
Array operator*(const Array& a, double s) {
  return scalar(Op::Mul, a, s, false);
}
Array operator/(const Array& a, double s) {
  return scalar(Op::Div, a, s, false);
}
Array operator+(double s, const Array& a) {
  return scalar(Op::Add, a, s, true);
}
Array operator-(double s, const Array& a) {
  return scalar(Op::Sub, a, s, true);
}
Array operator*(double s, const Array& a) {
  return scalar(Op::Mul, a, s, true);
}
Array operator/(double s, const Array& a) {
  return scalar(Op::Div, a, s, true);
}
Array operator-(const Array& a) {
  return scalar(Op::Neg, a, 0.0, false);
}

Array dot(const Array& m, const Array& v) {
  if (!m.valid() || !v.valid() || m.dim() != 2 || v.dim() != 1)
    throw Error("array dot: needs a 2-d matrix and a 1-d vector");
  if (m.size(1) != v.size(0))
    throw Error(fmt::format("array dot: a {} matrix times a length-{} vector", shape_str(m.shape()),
                            v.size(0)));
  Engine& e = m.engine();
  Array out = e.allocate(Rect<1>({0}, {m.size(0) - 1}));
  IndexLauncher l(tasks::kDot, e.colors(), TaskArgs{tasks::DotArgs{v.view().lo[0]}});
  l.add(out.tiles(), Projection::identity(), Privilege::WriteDiscard, {kValue});
  l.add(m.tiles(), Projection::identity(), Privilege::ReadOnly, {kValue});
  l.add(v.storage()->region, Privilege::ReadOnly, {kValue});
  e.ctx().execute(l);
  return out;
}

Array diag(const Array& a) {
  if (!a.valid() || a.dim() != 2 || a.size(0) != a.size(1))
    throw Error("array diag: needs a square 2-d array");
  Engine& e = a.engine();
  Array out = e.allocate(Rect<1>({0}, {a.size(0) - 1}));
  IndexLauncher l(tasks::kDiag, e.colors());
  l.add(out.tiles(), Projection::identity(), Privilege::WriteDiscard, {kValue});
  l.add(a.tiles(), Projection::identity(), Privilege::ReadOnly, {kValue});
  e.ctx().execute(l);
  return out;
}

Array diag_matrix(const Array& v) {
  if (!v.valid() || v.dim() != 1) throw Error("array diag_matrix: needs a 1-d array");
  Engine& e = v.engine();
  const coord_t n = v.size(0);
  Array out = e.allocate(Rect<2>({0, 0}, {n - 1, n - 1}));
  IndexLauncher l(tasks::kDiagMatrix, e.colors());
  l.add(out.tiles(), Projection::identity(), Privilege::WriteDiscard, {kValue});
  l.add(v.tiles(), Projection::identity(), Privilege::ReadOnly, {kValue});
  e.ctx().execute(l);
  return out;
}

Array copy(const Array& a) {
  if (!a.valid()) throw Error("array copy: an empty array");
  Array out = a.engine().allocate(a.shape());
  out.assign(a);
  return out;
}

Array roll(const Array& a, coord_t shift, int axis) {
  if (!a.valid() || axis < 0 || axis >= a.dim())
    throw Error(fmt::format("array roll: axis {} of a {}-d array", axis, a.valid() ? a.dim() : 0));
  const coord_t n = a.size(axis);
  const coord_t k = ((shift % n) + n) % n;
  if (k == 0) return copy(a);
  Array out = a.engine().allocate(a.shape());
  // out[k:] = a[:n-k]; out[:k] = a[n-k:]
  auto part = [&](const Array& x, coord_t lo, coord_t hi) {
    return a.dim() == 1 ? x(slice(lo, hi))
                        : (axis == 0 ? x(slice(lo, hi), all()) : x(all(), slice(lo, hi)));
  };
  part(out, k, n).assign(part(a, 0, n - k));
  part(out, 0, k).assign(part(a, n - k, n));
  return out;
}

}  // namespace reprise::array

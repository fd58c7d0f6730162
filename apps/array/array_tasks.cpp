#include "array_tasks.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "array.h"

namespace reprise::array::tasks {

double random_value(std::uint64_t seed, std::uint64_t k) {
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ull + k + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53;
}

double apply(Op op, double a, double b) {
  switch (op) {
    case Op::Add:
      return a + b;
    case Op::Sub:
      return a - b;
    case Op::Mul:
      return a * b;
    case Op::Div:
      return a / b;
    case Op::Neg:
      return -a;
  }
  return 0;
}

namespace {

template <int N, typename F>
double fold_n(TaskContext& tc, double init, F&& f) {
  auto a = tc.accessor<const double, N>(0, kValue);
  double acc = init;
  for (auto p : Rect<N>(tc.domain(0))) acc = f(acc, a[p]);
  return acc;
}
template <typename F>
double fold(TaskContext& tc, double init, F&& f) {
  return tc.domain(0).dim == 1 ? fold_n<1>(tc, init, f) : fold_n<2>(tc, init, f);
}
double sum_task(TaskContext& tc) {
  return fold(tc, 0.0, [](double s, double x) { return s + x; });
}
double max_task(TaskContext& tc) {
  return fold(tc, -std::numeric_limits<double>::infinity(),
              [](double s, double x) { return x > s ? x : s; });
}
double sum_squares_task(TaskContext& tc) {
  return fold(tc, 0.0, [](double s, double x) { return s + x * x; });
}
double sqrt_task(TaskContext& tc) {
  return std::sqrt(tc.future<double>(0));
}

template <int N, typename F>
void each_in_view(TaskContext& tc, const Domain& view, F&& f) {
  auto a = tc.accessor<const double, N>(0, kValue);
  for (auto p : Rect<N>(view)) f(a[p]);
}
template <typename F>
void each(TaskContext& tc, const Domain& view, F&& f) {
  view.dim == 1 ? each_in_view<1>(tc, view, f) : each_in_view<2>(tc, view, f);
}
std::uint64_t checksum_task(TaskContext& tc) {
  std::uint64_t h = 1469598103934665603ull;
  each(tc, tc.args<ViewArgs>().view, [&](double x) {
    std::uint64_t bits;
    std::memcpy(&bits, &x, 8);
    h = (h ^ bits) * 1099511628211ull;
  });
  return h;
}
void read_task(TaskContext& tc) {
  const auto a = tc.args<ViewArgs>();
  auto* dest = reinterpret_cast<double*>(a.dest);
  each(tc, a.view, [&](double x) { *dest++ = x; });
}

// The element-wise tasks are written once with kernel::for_each and registered as both CPU
// and GPU variants: a loop on a CPU, a kernel on the GPU's stream (-ll:gpu), the same
// arithmetic per element either way. The folds that return a value (sum, max, sum of squares,
// checksum, read) are CPU tasks: their data comes back from a framebuffer by a copy.
template <int N>
void set_n(TaskContext& tc) {
  const double v = tc.args<SetArgs>().value;
  auto out = tc.accessor<double, N>(0, kValue);
  kernel::for_each(tc, Rect<N>(tc.domain(0)), [=](const Point<N>& p) { out[p] = v; });
}
void set_task(TaskContext& tc) {
  tc.domain(0).dim == 1 ? set_n<1>(tc) : set_n<2>(tc);
}

template <int N>
void random_n(TaskContext& tc) {
  const auto a = tc.args<RandomArgs>();
  auto out = tc.accessor<double, N>(0, kValue);
  kernel::for_each(tc, Rect<N>(tc.domain(0)), [=](const Point<N>& p) {
    const std::uint64_t k = N == 1 ? std::uint64_t(p[0]) : std::uint64_t(p[0] * a.cols + p[N - 1]);
    out[p] = random_value(a.seed, k);
  });
}
void random_task(TaskContext& tc) {
  tc.domain(0).dim == 1 ? random_n<1>(tc) : random_n<2>(tc);
}

// f(out point, the same offset's point in a, in b) as one kernel over out's rectangle.
template <int N, typename F>
void lockstep(TaskContext& tc, const Rect<N>& out, const Rect<N>& a, const Rect<N>& b, F f) {
  kernel::for_each(tc, out,
                   [=](const Point<N>& po) { f(po, po - out.lo + a.lo, po - out.lo + b.lo); });
}

template <int N>
void binary_n(TaskContext& tc) {
  const Op op = tc.args<BinaryArgs>().op;
  auto out = tc.accessor<double, N>(0, kValue);
  auto a = tc.accessor<const double, N>(1, kValue);
  auto b = tc.accessor<const double, N>(2, kValue);
  lockstep<N>(tc, tc.domain(0), tc.domain(1), tc.domain(2),
              [=](auto po, auto pa, auto pb) { out[po] = apply(op, a[pa], b[pb]); });
}
void binary_task(TaskContext& tc) {
  tc.domain(0).dim == 1 ? binary_n<1>(tc) : binary_n<2>(tc);
}

template <int N>
void scalar_n(TaskContext& tc) {
  const auto s = tc.args<ScalarArgs>();
  auto out = tc.accessor<double, N>(0, kValue);
  auto a = tc.accessor<const double, N>(1, kValue);
  lockstep<N>(tc, tc.domain(0), tc.domain(1), tc.domain(1), [=](auto po, auto pa, auto) {
    out[po] = s.scalar_left ? apply(s.op, s.s, a[pa]) : apply(s.op, a[pa], s.s);
  });
}
void scalar_task(TaskContext& tc) {
  tc.domain(0).dim == 1 ? scalar_n<1>(tc) : scalar_n<2>(tc);
}

template <int N>
void copy_n(TaskContext& tc) {
  auto out = tc.accessor<double, N>(0, kValue);
  auto a = tc.accessor<const double, N>(1, kValue);
  lockstep<N>(tc, tc.domain(0), tc.domain(1), tc.domain(1),
              [=](auto po, auto pa, auto) { out[po] = a[pa]; });
}
void copy_task(TaskContext& tc) {
  tc.domain(0).dim == 1 ? copy_n<1>(tc) : copy_n<2>(tc);
}

// out (1-d tile of rows) = m (the same rows, a column range) . v (the whole vector region):
// one thread per row, each summing its row in column order.
void dot_task(TaskContext& tc) {
  const auto a = tc.args<DotArgs>();
  auto out = tc.accessor<double, 1>(0, kValue);
  auto m = tc.accessor<const double, 2>(1, kValue);
  auto v = tc.accessor<const double, 1>(2, kValue);
  const Rect<1> rows = tc.domain(0);
  const Rect<2> mr = tc.domain(1);
  const coord_t cols = mr.hi[1] - mr.lo[1] + 1;
  kernel::for_each(tc, rows, [=](const Point<1>& r) {
    const coord_t i = r[0] - rows.lo[0];
    double s = 0;
    for (coord_t j = 0; j < cols; ++j)
      s += m[Point<2>{mr.lo[0] + i, mr.lo[1] + j}] * v[Point<1>(a.v_offset + j)];
    out[r] = s;
  });
}

// out (1-d tile of a new array) = the diagonal of a (the matching row block of a square
// matrix view, all its columns).
void diag_task(TaskContext& tc) {
  auto out = tc.accessor<double, 1>(0, kValue);
  auto a = tc.accessor<const double, 2>(1, kValue);
  const Rect<1> r = tc.domain(0);
  const Rect<2> ar = tc.domain(1);
  kernel::for_each(tc, r, [=](const Point<1>& p) {
    const coord_t i = p[0] - r.lo[0];
    out[p] = a[Point<2>{ar.lo[0] + i, ar.lo[1] + r.lo[0] + i}];
  });
}

void diag_matrix_task(TaskContext& tc) {
  auto out = tc.accessor<double, 2>(0, kValue);
  auto v = tc.accessor<const double, 1>(1, kValue);
  const Rect<2> r = tc.domain(0);
  const Rect<1> vr = tc.domain(1);
  kernel::for_each(tc, r, [=](const Point<2>& p) {
    out[p] = p[0] == p[1] ? v[Point<1>(vr.lo[0] + (p[0] - r.lo[0]))] : 0.0;
  });
}

}  // namespace

void register_all() {
  if (TaskRegistry::contains(kSet)) return;
  TaskRegistry::add(kSet, "array.set", {cpu(set_task), gpu(set_task)});
  TaskRegistry::add(kRandom, "array.random", {cpu(random_task), gpu(random_task)});
  TaskRegistry::add(kBinary, "array.binary", {cpu(binary_task), gpu(binary_task)});
  TaskRegistry::add(kScalar, "array.scalar", {cpu(scalar_task), gpu(scalar_task)});
  TaskRegistry::add(kCopy, "array.copy", {cpu(copy_task), gpu(copy_task)});
  TaskRegistry::add(kDot, "array.dot", {cpu(dot_task), gpu(dot_task)});
  TaskRegistry::add(kDiag, "array.diag", {cpu(diag_task), gpu(diag_task)});
  TaskRegistry::add(kDiagMatrix, "array.diag_matrix",
                    {cpu(diag_matrix_task), gpu(diag_matrix_task)});
  TaskRegistry::add(kSum, "array.sum", {cpu(sum_task)});
  TaskRegistry::add(kMax, "array.max", {cpu(max_task)});
  TaskRegistry::add(kSumSquares, "array.sum_squares", {cpu(sum_squares_task)});
  TaskRegistry::add(kSqrt, "array.sqrt", {cpu(sqrt_task)});
  TaskRegistry::add(kChecksum, "array.checksum", {cpu(checksum_task)});
  TaskRegistry::add(kRead, "array.read", {cpu(read_task)});
}

}  // namespace reprise::array::tasks

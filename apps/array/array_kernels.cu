// The array library's element-wise tasks, written once with kernel::for_each and registered
// as both CPU and GPU variants: a loop on a CPU, a kernel on the GPU's stream (-ll:gpu), the
// same arithmetic per element either way. array_kernels_host.cpp includes it, compiled by the
// host compiler: the CPU variants (and the GPU variants without CUDA); in CUDA builds nvcc
// also compiles it (--extended-lambda) for the GPU variants (array_tasks.h says why twice).
// The folds that return a value (sum, max, sum of squares, checksum, read) are CPU tasks
// (array_tasks.cpp): their data comes back from a framebuffer by a copy.
#include <reprise/gpu.h>

#include "array.h"
#include "array_tasks.h"

#if defined(__CUDACC__)
namespace reprise::array::tasks::nvcc_kernels {
#else
namespace reprise::array::tasks::host_kernels {
#endif

template <int N>
void set_n(TaskContext& tc) {
  const double v = tc.args<SetArgs>().value;
  auto out = tc.accessor<double, N>(0, kValue);
  kernel::for_each(tc, Rect<N>(tc.domain(0)),
                   [=] REPRISE_HOST_DEVICE(const Point<N>& p) { out[p] = v; });
}
void set_task(TaskContext& tc) {
  tc.domain(0).dim == 1 ? set_n<1>(tc) : set_n<2>(tc);
}

template <int N>
void random_n(TaskContext& tc) {
  const auto a = tc.args<RandomArgs>();
  auto out = tc.accessor<double, N>(0, kValue);
  kernel::for_each(tc, Rect<N>(tc.domain(0)), [=] REPRISE_HOST_DEVICE(const Point<N>& p) {
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
  kernel::for_each(tc, out, [=] REPRISE_HOST_DEVICE(const Point<N>& po) {
    f(po, po - out.lo + a.lo, po - out.lo + b.lo);
  });
}

template <int N>
void binary_n(TaskContext& tc) {
  const Op op = tc.args<BinaryArgs>().op;
  auto out = tc.accessor<double, N>(0, kValue);
  auto a = tc.accessor<const double, N>(1, kValue);
  auto b = tc.accessor<const double, N>(2, kValue);
  lockstep<N>(tc, tc.domain(0), tc.domain(1), tc.domain(2),
              [=] REPRISE_HOST_DEVICE(const Point<N>& po, const Point<N>& pa, const Point<N>& pb) {
                out[po] = apply(op, a[pa], b[pb]);
              });
}
void binary_task(TaskContext& tc) {
  tc.domain(0).dim == 1 ? binary_n<1>(tc) : binary_n<2>(tc);
}

template <int N>
void scalar_n(TaskContext& tc) {
  const auto s = tc.args<ScalarArgs>();
  auto out = tc.accessor<double, N>(0, kValue);
  auto a = tc.accessor<const double, N>(1, kValue);
  lockstep<N>(tc, tc.domain(0), tc.domain(1), tc.domain(1),
              [=] REPRISE_HOST_DEVICE(const Point<N>& po, const Point<N>& pa, const Point<N>&) {
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
              [=] REPRISE_HOST_DEVICE(const Point<N>& po, const Point<N>& pa, const Point<N>&) {
                out[po] = a[pa];
              });
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
  kernel::for_each(tc, rows, [=] REPRISE_HOST_DEVICE(const Point<1>& r) {
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
  kernel::for_each(tc, r, [=] REPRISE_HOST_DEVICE(const Point<1>& p) {
    const coord_t i = p[0] - r.lo[0];
    out[p] = a[Point<2>{ar.lo[0] + i, ar.lo[1] + r.lo[0] + i}];
  });
}

void diag_matrix_task(TaskContext& tc) {
  auto out = tc.accessor<double, 2>(0, kValue);
  auto v = tc.accessor<const double, 1>(1, kValue);
  const Rect<2> r = tc.domain(0);
  const Rect<1> vr = tc.domain(1);
  kernel::for_each(tc, r, [=] REPRISE_HOST_DEVICE(const Point<2>& p) {
    out[p] = p[0] == p[1] ? v[Point<1>(vr.lo[0] + (p[0] - r.lo[0]))] : 0.0;
  });
}

}  // namespace reprise::array::tasks::{host,nvcc}_kernels

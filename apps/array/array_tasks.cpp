#include "array_tasks.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "array.h"

namespace reprise::array::tasks {

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

}  // namespace

void register_all() {
  if (TaskRegistry::contains(kSet)) return;
  namespace c = host_kernels;
#if REPRISE_ARRAY_NVCC_KERNELS
  namespace g = nvcc_kernels;
#else
  namespace g = host_kernels;
#endif
  TaskRegistry::add(kSet, "array.set", {cpu(c::set_task), gpu(g::set_task)});
  TaskRegistry::add(kRandom, "array.random", {cpu(c::random_task), gpu(g::random_task)});
  TaskRegistry::add(kBinary, "array.binary", {cpu(c::binary_task), gpu(g::binary_task)});
  TaskRegistry::add(kScalar, "array.scalar", {cpu(c::scalar_task), gpu(g::scalar_task)});
  TaskRegistry::add(kCopy, "array.copy", {cpu(c::copy_task), gpu(g::copy_task)});
  TaskRegistry::add(kDot, "array.dot", {cpu(c::dot_task), gpu(g::dot_task)});
  TaskRegistry::add(kDiag, "array.diag", {cpu(c::diag_task), gpu(g::diag_task)});
  TaskRegistry::add(kDiagMatrix, "array.diag_matrix",
                    {cpu(c::diag_matrix_task), gpu(g::diag_matrix_task)});
  TaskRegistry::add(kSum, "array.sum", {cpu(sum_task)});
  TaskRegistry::add(kMax, "array.max", {cpu(max_task)});
  TaskRegistry::add(kSumSquares, "array.sum_squares", {cpu(sum_squares_task)});
  TaskRegistry::add(kSqrt, "array.sqrt", {cpu(sqrt_task)});
  TaskRegistry::add(kChecksum, "array.checksum", {cpu(checksum_task)});
  TaskRegistry::add(kRead, "array.read", {cpu(read_task)});
}

}  // namespace reprise::array::tasks

// jacobi2d's GPU variants (-ll:gpu): the same arithmetic per point as its CPU loops, as
// kernels on the GPU's stream (kernel::for_each), so that results are bit-identical. nvcc
// compiles this file in CUDA builds (--extended-lambda); jacobi2d_kernels_host.cpp includes it
// otherwise.
#include <reprise/gpu.h>

#include "jacobi2d_kernels.h"

namespace jacobi2d {

void init_gpu(TaskContext& tc) {
  auto u = tc.accessor<double, 2>(0, FID_U);
  auto v = tc.accessor<double, 2>(0, FID_V);
  kernel::for_each(tc, Rect<2>(tc.domain(0)), [=] REPRISE_HOST_DEVICE(const Point<2>& p) {
    u[p] = v[p] = p[0] == 0 ? 1.0 : 0.0;  // initial(): 1 on the top edge
  });
}

void sweep_gpu(TaskContext& tc) {
  const auto a = tc.args<SweepArgs>();
  auto out = tc.accessor<double, 2>(0, a.to);
  auto in = tc.accessor<const double, 2>(1, a.from);
  const coord_t n = a.n;
  kernel::for_each(tc, Rect<2>(tc.domain(0)), [=] REPRISE_HOST_DEVICE(const Point<2>& p) {
    const coord_t i = p[0], j = p[1];
    if (i == 0 || j == 0 || i == n - 1 || j == n - 1)
      out[p] = in[p];
    else
      out[p] = 0.25 * (in[{i - 1, j}] + in[{i + 1, j}] + in[{i, j - 1}] + in[{i, j + 1}]);
  });
}

}  // namespace jacobi2d

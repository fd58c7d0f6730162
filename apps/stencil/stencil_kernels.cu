// The stencil's GPU variants (-ll:gpu): the same arithmetic per point as its CPU loops, as
// kernels on the GPU's stream (kernel::for_each), so that results are bit-identical. nvcc
// compiles this file in CUDA builds (--extended-lambda); stencil_kernels_host.cpp includes it
// otherwise.
#include <reprise/gpu.h>

#include <algorithm>

#include "stencil_kernels.h"

namespace stencil {

void init_gpu(TaskContext& tc) {
  auto in = tc.accessor<double, 2>(0, FID_IN);
  auto out = tc.accessor<double, 2>(0, FID_OUT);
  kernel::for_each(tc, Rect<2>(tc.domain(0)), [=] REPRISE_HOST_DEVICE(const Point<2>& p) {
    in[p] = kCoefX * double(p[0]) + kCoefY * double(p[1]);
    out[p] = 0.0;
  });
}

void stencil_gpu(TaskContext& tc) {
  const auto a = tc.args<StencilArgs>();
  auto out = tc.accessor<double, 2>(0, FID_OUT);
  auto in = tc.accessor<const double, 2>(1, FID_IN);
  const Rect<2> r = tc.domain(0);
  const int R = a.radius;
  const Rect<2> active(
      {std::max<coord_t>(r.lo[0], R), std::max<coord_t>(r.lo[1], R)},
      {std::min<coord_t>(r.hi[0], a.nx - 1 - R), std::min<coord_t>(r.hi[1], a.ny - 1 - R)});
  kernel::for_each(tc, active, [=] REPRISE_HOST_DEVICE(const Point<2>& p) {
    double s = 0.0;
    for (int k = 1; k <= R; ++k) {
      const double w = 1.0 / (2.0 * k * R);
      s += w * (in[{p[0], p[1] + k}] - in[{p[0], p[1] - k}]);
      s += w * (in[{p[0] + k, p[1]}] - in[{p[0] - k, p[1]}]);
    }
    out[p] += s;
  });
}

void increment_gpu(TaskContext& tc) {
  auto in = tc.accessor<double, 2>(0, FID_IN);
  kernel::for_each(tc, Rect<2>(tc.domain(0)),
                   [=] REPRISE_HOST_DEVICE(const Point<2>& p) { in[p] += 1.0; });
}

}  // namespace stencil

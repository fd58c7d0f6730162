#pragma once
// Kernels written once for GPU (and CPU) variants (docs/gpu.md):
//
//   void scale_gpu(TaskContext& tc) {
//     auto x = tc.accessor<double, 2>(0, FX);
//     kernel::for_each(tc, Rect<2>(tc.domain(0)), [=] REPRISE_HOST_DEVICE (Point<2> p) { x[p] *= 2;
//     });
//   }
//   TaskRegistry::add(T_SCALE, "scale", {cpu(scale_cpu), gpu(scale_gpu)});
//
// On a CUDA GPU (a translation unit compiled by nvcc with --extended-lambda) the lambda runs
// as a CUDA kernel on the point's stream, one thread per point; on the host device backend it
// runs as one kernel — a row-major loop — on the stream's host thread; called from a CPU
// variant it simply loops. The point completes when its stream has run its kernels, so a
// kernel may use the accessors it captured by value; it must not capture references to the
// task's locals.
#include <cstdint>

#include "reprise/accessor.h"
#include "reprise/geometry.h"
#include "reprise/task_context.h"

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#endif

namespace reprise::kernel {

#if defined(__CUDACC__)
namespace detail {
template <int N, typename F>
__global__ void for_each_kernel(Rect<N> rect, std::uint64_t volume, F f) {
  const std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= volume) return;
  // Row-major: the last dimension varies fastest (as on the host).
  Point<N> p;
  std::uint64_t rest = i;
  for (int d = N - 1; d >= 0; --d) {
    const std::uint64_t extent = std::uint64_t(rect.hi[d] - rect.lo[d] + 1);
    p[d] = rect.lo[d] + coord_t(rest % extent);
    rest /= extent;
  }
  f(p);
}
}  // namespace detail
#endif

// f(p) for every point p of rect, as one kernel on the task's stream (see above).
template <int N, typename F>
void for_each(const TaskContext& tc, const Rect<N>& rect, F f) {
  if (rect.empty()) return;
  if (!tc.on_gpu()) {  // a CPU variant: the loop, here (no kernel object to build)
    for (const Point<N>& p : rect) f(p);
    return;
  }
#if defined(__CUDACC__)
  if (tc.gpu_is_cuda()) {
    const std::uint64_t volume = std::uint64_t(rect.volume());
    constexpr unsigned kThreads = 256;
    const unsigned blocks = unsigned((volume + kThreads - 1) / kThreads);
    tc.count_kernel();
    detail::for_each_kernel<N>
        <<<blocks, kThreads, 0, static_cast<cudaStream_t>(tc.stream())>>>(rect, volume, f);
    return;
  }
#endif
  tc.launch_kernel([rect, f] {
    for (const Point<N>& p : rect) f(p);
  });
}

}  // namespace reprise::kernel

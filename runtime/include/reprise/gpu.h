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
#include <algorithm>
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
// One thread per point. x runs along the last dimension (consecutive threads touch
// consecutive elements, row-major like the host loop); y strides over the rows, the points of
// the other dimensions, so no thread divides by more than the middle extent of a 3-d rect (a
// 64-bit division per dimension per thread cost the stencil's kernels their bandwidth).
template <int N, typename F>
__global__ void for_each_kernel(Rect<N> rect, std::uint64_t rows, F f) {
  const std::uint64_t x = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x > std::uint64_t(rect.hi[N - 1] - rect.lo[N - 1])) return;
  Point<N> p;
  p[N - 1] = rect.lo[N - 1] + coord_t(x);
  for (std::uint64_t r = std::uint64_t(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += std::uint64_t(gridDim.y) * blockDim.y) {
    if constexpr (N == 2) {
      p[0] = rect.lo[0] + coord_t(r);
    } else if constexpr (N >= 3) {
      std::uint64_t rest = r;
      for (int d = N - 2; d >= 1; --d) {
        const std::uint64_t extent = std::uint64_t(rect.hi[d] - rect.lo[d] + 1);
        p[d] = rect.lo[d] + coord_t(rest % extent);
        rest /= extent;
      }
      p[0] = rect.lo[0] + coord_t(rest);
    }
    f(p);
  }
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
    // 256 threads a block: up to 256 along the last dimension (whole warps), the rest over
    // rows; at most 65,535 row blocks (the grid's y limit: threads stride beyond it).
    const std::uint64_t inner = std::uint64_t(rect.hi[N - 1] - rect.lo[N - 1] + 1);
    const std::uint64_t rows = std::uint64_t(rect.volume()) / inner;
    constexpr unsigned kThreads = 256;
    const unsigned bx = unsigned(std::min<std::uint64_t>(kThreads, (inner + 31) / 32 * 32));
    const unsigned by = kThreads / bx;
    const dim3 block(bx, by);
    const dim3 grid(unsigned((inner + bx - 1) / bx),
                    unsigned(std::min<std::uint64_t>(65535, (rows + by - 1) / by)));
    tc.count_kernel();
    detail::for_each_kernel<N>
        <<<grid, block, 0, static_cast<cudaStream_t>(tc.stream())>>>(rect, rows, f);
    return;
  }
#endif
  tc.launch_kernel([rect, f] {
    for (const Point<N>& p : rect) f(p);
  });
}

}  // namespace reprise::kernel

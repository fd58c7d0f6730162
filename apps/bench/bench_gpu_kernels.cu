// bench_gpu's kernels. nvcc compiles this file in CUDA builds (--extended-lambda);
// bench_gpu_kernels_host.cpp includes it otherwise.
#include <reprise/gpu.h>

#include "bench_gpu_kernels.h"

namespace bench_gpu {

using namespace reprise;

#if defined(__CUDACC__)
namespace {
__global__ void empty_kernel() {}
}  // namespace
#endif

void bump_gpu(TaskContext& tc) {
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  kernel::for_each(tc, Rect<1>(tc.domain(0)),
                   [=] REPRISE_HOST_DEVICE(const Point<1>& p) { acc[p] += 1; });
}

bool enqueue_empty_kernel(void* stream) {
#if defined(__CUDACC__)
  empty_kernel<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>();
  return true;
#else
  (void)stream;
  return false;
#endif
}

}  // namespace bench_gpu

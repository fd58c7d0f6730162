#pragma once
// bench_gpu's kernels: CUDA code in CUDA builds (bench_gpu_kernels.cu, nvcc), C++ otherwise.
#include <reprise/reprise.h>

namespace bench_gpu {

enum : reprise::TaskID { T_BUMP = 9700 };
enum : reprise::FieldID { FV = 0 };

// Adds 1 to every element of its region (kernel::for_each).
void bump_gpu(reprise::TaskContext& tc);
// Enqueues an empty CUDA kernel on `stream` (a cudaStream_t); false in a build without CUDA.
bool enqueue_empty_kernel(void* stream);

}  // namespace bench_gpu

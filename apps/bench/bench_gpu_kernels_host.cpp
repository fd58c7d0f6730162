// A build without CUDA compiles bench_gpu's kernels as C++ (host loops).
#include "bench_gpu_kernels.cu"  // NOLINT(bugprone-suspicious-include)

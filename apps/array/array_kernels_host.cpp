// A build without CUDA compiles the array library's element-wise tasks as C++ (their kernels
// run as loops on the host device backend's streams, and on CPUs).
#include "array_kernels.cu"  // NOLINT(bugprone-suspicious-include)

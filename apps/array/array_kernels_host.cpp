// The array library's element-wise tasks compiled as C++ by the host compiler: the CPU
// variants (loops the compiler inlines), and without CUDA the GPU variants too (their kernels
// run as loops on the host device backend's streams).
#include "array_kernels.cu"  // NOLINT(bugprone-suspicious-include)

// A build without CUDA compiles jacobi2d's GPU variants as C++ (their kernels run as loops on
// the host device backend's streams).
#include "jacobi2d_kernels.cu"  // NOLINT(bugprone-suspicious-include)

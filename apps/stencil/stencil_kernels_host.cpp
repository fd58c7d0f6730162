// A build without CUDA compiles the GPU variants as C++ (their kernels run as loops on the
// host device backend's streams).
#include "stencil_kernels.cu"  // NOLINT(bugprone-suspicious-include)

#include <cuda_runtime_api.h>

#include "reprise_gpu/devices.h"

namespace reprise::cuda {

bool built_with_cuda() {
  return true;
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

}  // namespace reprise::cuda

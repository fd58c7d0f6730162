#include "reprise_gpu/devices.h"

namespace reprise::cuda {

bool built_with_cuda() {
  return false;
}
int device_count() {
  return 0;
}

}  // namespace reprise::cuda

namespace reprise::devices {

std::unique_ptr<detail::Device> make_cuda_device() {
  return nullptr;
}

}  // namespace reprise::devices

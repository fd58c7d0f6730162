// -ll:gpu_backend: which implementation of the device interface runs GPU processors.
#include <fmt/core.h>

#include "reprise/error.h"
#include "reprise_gpu/devices.h"

namespace reprise::devices {

std::unique_ptr<detail::Device> make_device(const std::string& backend, std::string& notice) {
  if (backend == "host") return make_host_device(1);
  std::unique_ptr<detail::Device> cuda = make_cuda_device();
  if (cuda) return cuda;
  if (backend == "cuda")
    throw Error(fmt::format("-ll:gpu_backend cuda: {}",
                            cuda::built_with_cuda() ? "no CUDA device is visible to this process"
                                                    : "this build has no CUDA support"));
  notice = fmt::format(
      "-ll:gpu: {}; GPU processors run on the host device backend",
      cuda::built_with_cuda() ? "no CUDA device is visible" : "this build has no CUDA support");
  return make_host_device(1);
}

}  // namespace reprise::devices

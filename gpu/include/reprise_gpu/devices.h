#pragma once
// GPU discovery and the device backends (the runtime's device interface, reprise_rt/device.h):
// CUDA when the build found a toolkit and the process sees a GPU, else the host device backend.
#include <memory>
#include <string>

#include "reprise_rt/device.h"

namespace reprise::cuda {

bool built_with_cuda();
// Number of CUDA devices visible to this process (0 without CUDA or without a GPU).
int device_count();

}  // namespace reprise::cuda

namespace reprise::devices {

using cuda::device_count;

// The host device backend with `devices` virtual physical devices.
std::unique_ptr<detail::Device> make_host_device(int devices);
// The CUDA backend, or null when there is no CUDA device (or no CUDA in this build).
std::unique_ptr<detail::Device> make_cuda_device();

// -ll:gpu_backend cuda|host|auto. auto: CUDA when a device exists, else host, and `notice`
// gets the line to show once. cuda without a device is an Error.
std::unique_ptr<detail::Device> make_device(const std::string& backend, std::string& notice);

}  // namespace reprise::devices

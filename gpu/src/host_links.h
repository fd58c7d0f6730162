#pragma once
// The host backend's links between ranks (reprise_rt/device.h, DeviceLinks): NCCL's
// semantics emulated over the runtime's network, so that what the runtime builds on NCCL runs
// and is tested without a GPU.
#include <memory>

#include "reprise_rt/device.h"

namespace reprise::devices {

std::unique_ptr<detail::DeviceLinks> make_host_links(detail::Device& device, int device_index,
                                                     detail::LinkPipe& pipe);

}  // namespace reprise::devices

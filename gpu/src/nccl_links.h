#pragma once
// The CUDA backend's links between ranks (reprise_rt/device.h, DeviceLinks) over NCCL's
// point-to-point sends and receives. NCCL is loaded when first asked for (dlopen), so that a
// binary runs on GPU machines without it (copies between ranks then stage through host memory).
#include <memory>
#include <span>
#include <vector>

#include "reprise_rt/device.h"

namespace reprise::devices {

// Whether an NCCL library loads here (loading it on first call).
bool nccl_loads();
// NCCL's unique id made on this rank, or empty when no NCCL library loads (REPRISE_NCCL_LIBRARY
// names one, else libnccl.so.2 on the library path).
std::vector<std::byte> make_nccl_id();
// Opens this rank's end of a communicator over all ranks on `device_index` (collective).
std::unique_ptr<detail::DeviceLinks> open_nccl_links(detail::Device& device, int device_index,
                                                     std::span<const std::byte> id,
                                                     std::uint32_t rank, std::uint32_t ranks);

}  // namespace reprise::devices

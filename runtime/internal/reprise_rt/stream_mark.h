#pragma once
// Early starts on device streams (Executor::wait_for, -lg:gpu_early): a point whose work runs on
// a device stream (a GPU task's kernels, a copy or fill with a framebuffer end) marks where its
// work ends on that stream. A later point of the same physical device that depends on it then
// starts once that work is enqueued — not finished — and, on another stream, first makes its
// stream wait for the mark's device event (no host round trip).
#include <atomic>
#include <cstdint>

#include "reprise_rt/device.h"

namespace reprise::detail {

struct StreamMark {
  // One for the event table's link (dropped when the point's completion triggers), one per
  // waiter that took it and has not yet enqueued its wait.
  std::atomic<std::uint32_t> refs{1};
  void* stream = nullptr;  // the stream the work went to
  DeviceEvent event;       // recorded after the work, before the early event triggers
};

}  // namespace reprise::detail

#pragma once
// The host device backend's links travel over the runtime's network (reprise_rt/device.h,
// LinkPipe): one queue per sending rank, a blocking receive on the links' stream thread.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "reprise_rt/device.h"
#include "reprise_rt/network.h"

namespace reprise::detail {

class NetworkLinkPipe final : public LinkPipe {
 public:
  explicit NetworkLinkPipe(Network& net);  // installs its handler (before the network starts)
  void send(std::uint32_t to, std::vector<std::byte> bytes) override;
  std::optional<std::vector<std::byte>> receive(std::uint32_t from) override;
  // Receives waiting now or later return nothing.
  void close();

 private:
  Network& net_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<std::deque<std::vector<std::byte>>> from_;  // by rank
  bool closed_ = false;
};

}  // namespace reprise::detail

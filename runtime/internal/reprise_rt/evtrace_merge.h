#pragma once
// -lg:evtrace at exit: the shards' traces meet along a radix tree over the network (each shard
// merges its children's traces into its own and sends the result to its parent), so shard 0
// receives one merged trace and no shard receives more than `radix` of them.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "reprise_rt/evtrace_format.h"

namespace reprise::detail {

class Network;

class EvtraceMerge {
 public:
  static constexpr std::uint32_t kRadix = 4;
  // Installs the handler for Channel::Evtrace (before the network starts).
  explicit EvtraceMerge(Network& net);
  // Every shard calls it once; shard 0 gets the merged trace, the others nothing.
  std::optional<evtrace::Trace> gather(evtrace::Trace mine);

 private:
  Network& net_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<std::string> inbox_;
};

}  // namespace reprise::detail

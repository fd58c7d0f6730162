#include "reprise_rt/evtrace_merge.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "reprise_rt/network.h"

namespace reprise::detail {

EvtraceMerge::EvtraceMerge(Network& net) : net_(net) {
  net.on(Channel::Evtrace, [this](std::uint32_t, std::vector<std::byte>&& bytes) {
    std::string text(bytes.size(), '\0');
    std::memcpy(text.data(), bytes.data(), bytes.size());
    {
      std::lock_guard<std::mutex> g(mutex_);
      inbox_.push_back(std::move(text));
    }
    arrived_.notify_one();
  });
}

std::optional<evtrace::Trace> EvtraceMerge::gather(evtrace::Trace mine) {
  const std::uint32_t me = net_.rank(), n = net_.size();
  // Children of r: r*radix+1 .. r*radix+radix.
  const std::uint32_t first = me * kRadix + 1;
  const std::uint32_t children = first >= n ? 0 : std::min(kRadix, n - first);
  for (std::uint32_t got = 0; got < children; ++got) {
    std::string text;
    {
      std::unique_lock<std::mutex> g(mutex_);
      arrived_.wait(g, [&] { return !inbox_.empty(); });
      text = std::move(inbox_.front());
      inbox_.pop_front();
    }
    evtrace::merge(mine, evtrace::parse(text));
  }
  if (me == 0) return mine;
  const std::string text = evtrace::write(mine);
  std::vector<std::byte> bytes(text.size());
  std::memcpy(bytes.data(), text.data(), text.size());
  net_.send((me - 1) / kRadix, Channel::Evtrace, std::move(bytes));
  return std::nullopt;
}

}  // namespace reprise::detail

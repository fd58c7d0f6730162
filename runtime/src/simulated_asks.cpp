#include "reprise_rt/simulated_asks.h"

#include <algorithm>

#include "reprise_rt/evtrace_recorder.h"

namespace reprise::detail {

void SimulatedAsks::produced(Event done, std::uint32_t owner) {
  if (!done.exists()) return;
  std::lock_guard<std::mutex> g(mutex_);
  owners_[key(done)] = Owner{owner, {}};
  if (owners_.size() >= prune_at_) {
    // Points that have finished are asked for rarely after a while (the analysis prunes its
    // users by completion): forget them, so that the table stays the size of the window.
    std::erase_if(owners_, [&](const auto& entry) {
      const auto& [k, o] = entry;
      return events_.has_triggered(Event{std::uint32_t(k >> 32), std::uint32_t(k)});
    });
    prune_at_ = std::max<std::size_t>(1 << 14, owners_.size() * 2);
  }
}

void SimulatedAsks::ask(Owner& o, std::uint32_t waiter) {
  if (waiter == o.shard) return;
  if (o.asked.empty()) o.asked.resize((shards_ + 63) / 64);
  std::uint64_t& word = o.asked[waiter / 64];
  const std::uint64_t bit = std::uint64_t(1) << (waiter % 64);
  if (word & bit) return;
  word |= bit;
  recorder_.ask(waiter, o.shard);
}

void SimulatedAsks::merged(std::span<const Event> events) {
  std::lock_guard<std::mutex> g(mutex_);
  for (Event e : events)
    if (auto it = owners_.find(key(e)); it != owners_.end())
      for (std::uint32_t s = 0; s < shards_; ++s) ask(it->second, s);
}

void SimulatedAsks::replayed(std::span<const std::uint32_t> instructions) {
  if (!instructions.empty()) recorder_.replay_shares(instructions);
}

}  // namespace reprise::detail

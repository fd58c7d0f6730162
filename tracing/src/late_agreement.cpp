#include "late_agreement.h"

#include <chrono>
#include <cstring>

#include "reprise_rt/runtime.h"

namespace reprise::detail {

ShardLateAgreement::ShardLateAgreement(Runtime& rt, Network& net) : rt_(rt), net_(net) {
  net.on(Channel::Late, [this](std::uint32_t, std::vector<std::byte>&& b) {
    std::uint64_t word = 0;
    if (b.size() != sizeof(word)) return;  // not ours: cannot happen with one sender
    std::memcpy(&word, b.data(), sizeof(word));
    add(word >> 1, (word & 1) != 0);
  });
}

void ShardLateAgreement::add(std::uint64_t k, bool late) {
  {
    std::lock_guard<std::mutex> g(mutex_);
    Verdict& v = verdicts_[k];
    ++v.reports;
    v.late = v.late || late;
  }
  arrived_.notify_all();
}

void ShardLateAgreement::report(std::uint64_t k, bool late) {
  const std::uint64_t word = k << 1 | (late ? 1u : 0u);
  for (std::uint32_t s = 0; s < net_.size(); ++s) {
    if (s == net_.rank()) continue;
    std::vector<std::byte> b(sizeof(word));
    std::memcpy(b.data(), &word, sizeof(word));
    net_.send(s, Channel::Late, std::move(b));
  }
  add(k, late);
}

bool ShardLateAgreement::any_late(std::uint64_t k) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto complete = [&] { return verdicts_[k].reports >= net_.size(); };
  if (!complete()) {
    ++waits_;
    const auto t0 = std::chrono::steady_clock::now();
    // The wake-ups every few milliseconds only notice a failure elsewhere: a shard that has
    // stopped sends nothing more, and then this shard's own verdict is as good as any.
    while (!arrived_.wait_for(lock, std::chrono::milliseconds(5), complete))
      if (rt_.failed()) break;
    rt_.count_shard_wait(std::uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count()));
  }
  const bool late = verdicts_[k].late;
  verdicts_.erase(k);
  return late;
}

}  // namespace reprise::detail

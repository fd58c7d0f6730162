#include "reprise_rt/stream_check.h"

#include <fmt/core.h>

#include <cstring>

#include "reprise/error.h"
#include "reprise_rt/hasher.h"
#include "reprise_rt/log.h"
#include "reprise_rt/runtime.h"

namespace reprise::detail {

StreamCheck::StreamCheck(Runtime& rt, Network& net) : rt_(rt), net_(net) {
  net.on(Channel::Check, [this](std::uint32_t from, std::vector<std::byte>&& b) {
    on_message(from, std::move(b));
  });
}

void StreamCheck::issued(std::uint64_t word) {
  Hasher h{hash_};
  h.mix(word);
  hash_ = h.h;
  prefix_.push_back(hash_);
  const std::uint64_t n = prefix_.size();
  if (n > peer_total_.load(std::memory_order_acquire))
    throw Error(fmt::format(
        "control replication: the shards issued different programs: shard {} ended its program "
        "after {} ops, this shard issued op #{}",
        peer_.load(), peer_total_.load(), n - 1));
}

void StreamCheck::finished() {
  const std::uint64_t n = prefix_.size();
  for (std::uint32_t s = 0; s < net_.size(); ++s)
    if (s != net_.rank()) send(s, Kind::Finished, n, hash_);
}

void StreamCheck::start() {
  watchdog_ = std::thread([this] {
    set_log_thread_name("watchdog");
    std::uint64_t last = ~0ull, probed = ~0ull, reported = ~0ull;
    int stalled_ticks = 0;  // half seconds without a new op
    const int report_ticks = 2 * rt_.config().stall_report_s;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(500), [&] { return stopping_; })) {
      const std::uint64_t n = prefix_.size();
      const std::optional<std::uint64_t> h = hash_of(n);
      if (n == last && n != probed && h) {
        for (std::uint32_t s = 0; s < net_.size(); ++s)
          if (s != net_.rank()) send(s, Kind::Probe, n, *h);
        probed = n;
      }
      stalled_ticks = n == last ? stalled_ticks + 1 : 0;
      if (report_ticks > 0 && stalled_ticks >= report_ticks && n != reported) {
        reported = n;  // once per stall
        lock.unlock();
        rt_.report_stall(stalled_ticks / 2, n);
        lock.lock();
      }
      last = n;
    }
  });
}

void StreamCheck::stop() {
  {
    std::lock_guard<std::mutex> g(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void StreamCheck::send(std::uint32_t to, Kind kind, std::uint64_t count, std::uint64_t hash) {
  std::vector<std::byte> b(1 + 2 * sizeof(std::uint64_t));
  b[0] = std::byte(kind);
  std::memcpy(b.data() + 1, &count, sizeof count);
  std::memcpy(b.data() + 1 + sizeof count, &hash, sizeof hash);
  net_.send(to, Channel::Check, std::move(b));
}

void StreamCheck::diverged(std::uint32_t other, std::uint64_t at) const {
  rt_.record_error(std::make_exception_ptr(
      Error(fmt::format("control replication: the shards issued different programs: shard {} "
                        "and this shard differ within their first {} ops",
                        other, at))));
}

void StreamCheck::on_message(std::uint32_t from, std::vector<std::byte>&& b) {
  if (b.size() != 1 + 2 * sizeof(std::uint64_t)) return;
  std::uint64_t count, hash;
  std::memcpy(&count, b.data() + 1, sizeof count);
  std::memcpy(&hash, b.data() + 1 + sizeof count, sizeof hash);
  const std::uint64_t mine = prefix_.size();
  // Hashes this shard no longer keeps (or not yet) cannot be compared: skip them.
  const std::optional<std::uint64_t> at_count = hash_of(count), at_mine = hash_of(mine);
  REPRISE_LOG_DEBUG(LogCategory::CtrlRepl, "stream check message {} from {}: {} ops {:x} (mine {})",
                    int(b[0]), from, count, hash, mine);
  switch (Kind(b[0])) {
    case Kind::Finished:
      if (count < peer_total_.load()) {
        peer_.store(from);
        peer_total_.store(count, std::memory_order_release);
      }
      if (mine > count) {
        rt_.record_error(std::make_exception_ptr(Error(fmt::format(
            "control replication: the shards issued different programs: shard {} ended its "
            "program after {} ops, this shard issued {}",
            from, count, mine))));
      } else if (mine == count) {
        if (at_mine && *at_mine != hash) diverged(from, mine);
      } else if (at_mine) {
        send(from, Kind::Reply, mine, *at_mine);  // behind: the other compares
      }
      break;
    case Kind::Probe:
    case Kind::Reply:
      if (count <= mine) {
        if (at_count && *at_count != hash) diverged(from, count);
      } else if (Kind(b[0]) == Kind::Probe && at_mine) {
        send(from, Kind::Reply, mine, *at_mine);  // the other has more: it compares
      }
      break;
  }
}

}  // namespace reprise::detail

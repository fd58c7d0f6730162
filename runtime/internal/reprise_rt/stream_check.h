#pragma once
// Control replication: shards whose op streams differ while their ops still pair up by shape
// (no completion message shows it: e.g. one shard issued two extra fences) would otherwise
// wait for each other forever. Two cheap checks end that with an error on every shard:
// * a shard that reaches the end of its program tells the others how many ops it issued and
//   their hash; a shard that issued more, or hashes differently at that length, has diverged;
// * a shard whose op stream has not grown for half a second (blocked, or just busy) sends its
//   length and hash; a shard that has issued at least as many ops compares, one that has
//   issued fewer answers with its own (no reply to a reply), so stalled shards always compare
//   their common prefix.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "reprise_rt/history_ring.h"
#include "reprise_rt/network.h"

namespace reprise::detail {

class Runtime;

class StreamCheck {
 public:
  StreamCheck(Runtime& rt, Network& net);
  // The application thread issued an op (its word): throws if another shard already ended
  // its program with fewer ops.
  void issued(std::uint64_t word);
  // The application thread reached the end of the program.
  void finished();
  // The hash of this shard's first n ops, for n among the last kKept ops issued (nothing for
  // older or future n); every shard that issued the same ops has the same hashes.
  std::optional<std::uint64_t> hash_of(std::uint64_t n) const {
    if (n == 0) return std::uint64_t(0);
    return prefix_.at(n - 1);
  }
  std::uint64_t issued_count() const { return prefix_.size(); }
  static constexpr std::uint64_t kKept = std::uint64_t(1) << 20;
  // The stall watchdog (a thread that wakes twice a second).
  void start();
  void stop();
  ~StreamCheck() { stop(); }

 private:
  enum class Kind : std::uint8_t { Finished, Probe, Reply };
  void on_message(std::uint32_t from, std::vector<std::byte>&& bytes);
  void send(std::uint32_t to, Kind kind, std::uint64_t count, std::uint64_t hash);
  void diverged(std::uint32_t other, std::uint64_t at) const;

  Runtime& rt_;
  Network& net_;
  // prefix_.at(i): the hash of ops 0..i, for the last kKept ops (8 MiB, however long the
  // program runs; shards that stall compare streams within a window's distance).
  HistoryRing<20> prefix_;
  std::uint64_t hash_ = 0;
  // The fewest ops another shard ended its program with (none yet: max).
  std::atomic<std::uint64_t> peer_total_{~0ull};
  std::atomic<std::uint32_t> peer_{0};
  std::thread watchdog_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

}  // namespace reprise::detail

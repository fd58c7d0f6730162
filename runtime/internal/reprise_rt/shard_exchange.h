#pragma once
// Control replication inside one shard. Every shard analyses every op; it runs only the
// points (and generated copies) mapped to it. For the others it holds a proxy event that the
// owner's Done message triggers (with the point's future value or error), so dependences on
// remote work are ordinary events; every point and copy announces its completion to every
// other shard, which keeps each shard's view of every op complete. A copy between shards is
// split: the source shard sends the rectangle once the copy's preconditions hold there, the
// destination writes it into its instance once they hold there too.
#include <cstdint>
#include <exception>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "reprise/registry.h"
#include "reprise_rt/event.h"
#include "reprise_rt/network.h"
#include "reprise_rt/op.h"

namespace reprise::detail {

class Runtime;
struct PointTask;

class ShardExchange {
 public:
  ShardExchange(Runtime& rt, Network& net);
  static constexpr std::uint32_t kCopyBit = 0x80000000u;
  // The index that names point `point` of op, or a generated copy, in messages.
  static std::uint32_t index_of(const Op& op, std::uint32_t point) {
    return op.generated ? kCopyBit | op.copy_index : point;
  }

  // Point/copy `index` of op runs on another shard: the event its Done message triggers.
  Event remote(Op& op, std::uint32_t index);
  // One of ours finished: tell every other shard.
  void finished(const Op& op, std::uint32_t point, const std::exception_ptr& error);
  // The source half of a copy between shards (runs as the copy's task here).
  void send_data(const Op& copy, std::uint32_t to);
  // The destination half: t (whose pending count includes one for the data) is released when
  // the data has arrived; unpack() then writes it into the destination instance.
  void expect_data(PointTask* t);
  void unpack(const Op& copy);
  // After an error: nothing may wait for another shard any more (no hang on the way out).
  void abandon();
  // Sends an Abort with the error's text to every other shard (once).
  void broadcast_abort(const std::exception_ptr& e);

  // Logs (info level) the entries still held: proxies, early completions, receives, data.
  void log_held_entries();

  // A fingerprint of an op's shape (kind, task, launch size, requirements): shards must agree.
  static std::uint64_t shape_of(const Op& op);

 private:
  struct Proxy {
    OpRef op;
    std::uint32_t index = 0;
    Event event;
  };
  struct DoneMsg {
    std::uint32_t from = 0;
    std::uint64_t shape = 0;
    bool failed = false, has_value = false;
    TaskResult value;
    std::string error;
  };
  static std::uint64_t key(std::uint64_t seq, std::uint32_t index) { return seq << 32 | index; }
  void on_done(std::uint32_t from, std::vector<std::byte>&& bytes);
  void on_data(std::uint32_t from, std::vector<std::byte>&& bytes);
  void apply(Proxy& p, const DoneMsg& m);

  Runtime& rt_;
  Network& net_;
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, Proxy> proxies_;
  std::unordered_map<std::uint64_t, DoneMsg> early_done_;
  std::unordered_map<std::uint64_t, PointTask*> recvs_;
  std::unordered_map<std::uint64_t, std::vector<std::byte>> data_;  // arrived, not unpacked
  bool abandoned_ = false;
  bool abort_sent_ = false;
};

}  // namespace reprise::detail

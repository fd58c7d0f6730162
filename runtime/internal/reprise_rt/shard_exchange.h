#pragma once
// Control replication inside one shard. Every shard analyses every op; it runs only the
// points (and halves of generated copies) mapped to it.
//
// Who hears of a point: an op whose points return values (or a single task) announces every
// point to every shard with its value; every other shard holds a proxy event for the point,
// which the owner's Done message triggers. Every other op completes on each shard with the
// work that runs there, and no shard waits for another's points of it: what a shard needs of
// them is data, which reaches it in copies whose send half waits for the data's writer on
// the writer's own shard (the analysis orders every access to a shard's instances after the
// conflicting earlier accesses there). A shard thus hears from the shards whose data it
// reads and from value-returning tasks, not from every shard about every point.
//
// A copy between shards is split: the source shard sends the rectangle once the copy's
// preconditions hold there (the send half ends once the data is packed, and counts towards
// its op's completion there), the destination writes it into its instance once they hold
// there too.
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

  // Whether op completes on each shard with its own work (Op::local_completion): its points
  // return no value that every shard would need.
  static bool completes_locally(const Op& op);

  // Point `index` of op (which does not complete locally) runs on shard `owner`: the event
  // its Done message triggers here.
  Event remote(Op& op, std::uint32_t index, std::uint32_t owner);
  // One of ours finished: for ops that do not complete locally, tell every other shard.
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

  // The other shards this one has received a Done or Data message from.
  std::uint32_t peers_heard();

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
  void heard_from(std::uint32_t from);  // (under mutex_)
  void on_data(std::uint32_t from, std::vector<std::byte>&& bytes);
  void apply(Proxy& p, const DoneMsg& m);

  Runtime& rt_;
  Network& net_;
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, Proxy> proxies_;
  std::unordered_map<std::uint64_t, DoneMsg> early_done_;
  std::unordered_map<std::uint64_t, PointTask*> recvs_;
  std::unordered_map<std::uint64_t, std::vector<std::byte>> data_;  // arrived, not unpacked
  std::vector<std::uint64_t> heard_;  // per shard: Done and Data messages received
  bool abandoned_ = false;
  bool abort_sent_ = false;
};

}  // namespace reprise::detail

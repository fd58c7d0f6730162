#pragma once
// -lg:simulate_shards with -lg:evtrace: the completions a shard would ask of another under
// mpirun. There a point of an op that completes locally (a void index task, a fill, a copy)
// is announced only to the shards that ask for it — since every access waits by data
// (docs/ctrlrepl.md, "Waits by data") only a merge that every shard makes (a fence) may name
// another shard's point: the first time one does, S sends T a Request. One process playing
// every shard sees the same merges, and counts each (asking shard, point) pair once, like the
// exchange's proxies.
#include <cstdint>
#include <mutex>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "reprise_rt/event.h"

namespace reprise::detail {

class EvtraceRecorder;
class EventTable;

class SimulatedAsks {
 public:
  SimulatedAsks(EvtraceRecorder& recorder, EventTable& events, std::uint32_t shards)
      : recorder_(recorder), events_(events), shards_(shards) {}
  // `done` stands for a point of shard `owner` that other shards would have to ask for.
  void produced(Event done, std::uint32_t owner);
  // Every shard merges `events` (a fence, a replay's entry).
  void merged(std::span<const Event> events);
  // A replay: `instructions` (per shard) are each shard's part of it.
  void replayed(std::span<const std::uint32_t> instructions);

 private:
  struct Owner {
    std::uint32_t shard;
    std::vector<std::uint64_t> asked;  // bit s: shard s has asked (sized on the first ask)
  };
  void ask(Owner& o, std::uint32_t waiter);  // (mutex_ held)
  static std::uint64_t key(Event e) { return std::uint64_t(e.id) << 32 | e.gen; }

  EvtraceRecorder& recorder_;
  EventTable& events_;
  std::uint32_t shards_;
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, Owner> owners_;
  std::size_t prune_at_ = 1 << 14;
};

}  // namespace reprise::detail

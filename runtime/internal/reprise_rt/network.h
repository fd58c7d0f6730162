#pragma once
// How the runtime talks to the other shards under control replication. transport/ implements
// it over MPI (a progress thread drives every transfer); a single process has none.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "reprise_rt/spin_policy.h"

namespace reprise::detail {

enum class Channel : std::uint32_t {
  Done = 1,     // a point or copy finished on its shard (with its future value)
  Data = 2,     // the bytes of a copy between shards
  Abort = 3,    // a shard failed: every shard stops with its error
  Check = 4,    // op-stream comparison when a shard ends its program
  Late = 5,     // automatic tracing: whether a shard had to wait for an analysis (a ShardVote)
  Request = 6,  // a shard waits for a point of this one: send its Done when it has finished
  Evtrace = 7,  // -lg:evtrace: a subtree's merged event trace, at exit
  Reduce = 8,   // a future map's values up a tree of shards, the reduction's result down it
  Link = 9,     // the host device backend's links between ranks (DeviceLinks emulated)
  Vote = 10,    // -lg:shard_checks: whether a template's conditions hold, up and down a tree
};

class Network {
 public:
  virtual ~Network() = default;
  virtual std::uint32_t rank() const = 0;
  virtual std::uint32_t size() const = 0;
  // Handlers run on the progress thread, one message at a time; install them before start().
  using Handler = std::function<void(std::uint32_t from, std::vector<std::byte>&& bytes)>;
  virtual void on(Channel c, Handler h) = 0;
  // Starts the progress thread. Idle, it keeps polling for `idle.spin_ns` after its last
  // message (pausing as `idle` says: a message then costs no wake-up), then sleeps in short
  // timed waits.
  virtual void start(const SpinPolicy& idle) = 0;
  // Queues bytes for rank `to`; messages from one rank on one channel arrive in order.
  virtual void send(std::uint32_t to, Channel c, std::vector<std::byte> bytes) = 0;
  // Collectives, blocking the calling thread (never the progress thread, which keeps
  // delivering messages meanwhile): element-wise min and max over the ranks; every rank's
  // values one after the other.
  virtual void allreduce_min_max(std::vector<std::uint64_t>& mins,
                                 std::vector<std::uint64_t>& maxs) = 0;
  virtual std::vector<std::uint64_t> allgather(const std::vector<std::uint64_t>& mine) = 0;
  // Delivers what is queued, waits until every rank has come this far, stops the thread.
  virtual void stop() = 0;
  // Messages this rank has handed to the transport so far (after batching: what MPI sends).
  virtual std::uint64_t messages_sent() const = 0;
  // Ends every rank of the job at once with `code` (a rank that cannot finish normally).
  [[noreturn]] virtual void abort_job(int code) = 0;
};

}  // namespace reprise::detail

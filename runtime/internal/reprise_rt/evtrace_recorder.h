#pragma once
// -lg:evtrace FILE: each shard turns the profiler's records into one op record per op of the
// stream (its points and their durations, copies, data sent to and received from other
// shards, the utility thread's time on it) and compresses them online into loops
// (evtrace::Compressor) in the order of the op stream. At exit the shards merge their traces
// along a radix tree (Runtime::write_evtrace) and shard 0 writes the file.
// Under -lg:simulate_shards one process plays every shard: it keeps one record per op and
// shard (points by their processor's shard, copies between shards as a send and a receive)
// and merges the shards' traces itself.
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "reprise_rt/evtrace_format.h"

namespace reprise::detail {

class EvtraceRecorder {
 public:
  // simulated: this process plays all `shards` shards (shard is then 0).
  EvtraceRecorder(std::uint32_t shard, std::uint32_t shards, bool simulated = false)
      : shard_(shard), shards_(shards), played_(simulated ? shards : 1), compressors_(played_) {}

  // What the profiler saw (any thread). kind: Profiler::Kind as a number; ns: the interval's
  // length; peer: the other shard (messages and copy halves); simulated shards: `shard` is
  // the shard of a point or of a copy's source, `peer` that of a copy's destination.
  struct Seen {
    int kind;
    std::uint64_t seq;
    std::uint8_t op_kind;
    const char* task;
    std::uint32_t trace;
    std::uint64_t ns;
    std::uint64_t bytes;
    std::uint32_t peer;
    bool incoming;  // messages
    bool counted;   // analyses: of a program op (else one the runtime made, e.g. a flush)
    std::uint32_t shard = 0;
  };
  void on_record(const Seen& s);
  // The utility thread starts on op #seq (what it asks of other shards meanwhile is the op's).
  void analysing(std::uint64_t seq) {
    std::lock_guard<std::mutex> g(mutex_);
    current_ = seq;
  }
  // The program blocks (on the application thread) after issuing op #seq.
  void program_waits(std::uint64_t seq);
  // The application thread issues op #seq at now_ns (what it did since it issued the last
  // one, or since it stopped waiting, is the op's issue time); it stopped waiting at now_ns.
  void issued(std::uint64_t seq, std::uint64_t now_ns);
  void program_resumes(std::uint64_t now_ns);
  // Program op #seq has completed on this shard (its points' records are in).
  void retired(std::uint64_t seq);
  // Simulated shards: shard `from` would ask shard `to` for a completion while the current
  // op is analysed (what a Request message does under mpirun).
  void ask(std::uint32_t from, std::uint32_t to);
  // Simulated shards: the current op replays a template of which shard s would run
  // shares[s] instructions (under mpirun each shard replays only its own part).
  void replay_shares(std::span<const std::uint32_t> shares);
  // Everything recorded, as this shard's trace (one group).
  evtrace::Trace finish();

 private:
  // What one shard did for an op.
  struct Work {
    evtrace::Variant work;  // points and copies
    evtrace::Stat point_ns, copy_ns;
    std::map<std::int32_t, std::uint64_t> sends, recvs, asks;  // bytes by peer offset
  };
  struct Pending {
    bool analysed = false, retired = false, then_waits = false;
    std::uint8_t op_kind = 0;
    const char* task = nullptr;
    std::uint32_t trace = 0;
    std::uint64_t util_ns = 0, issue_ns = 0;
    // Simulated replays: each shard's instructions in them (empty: none).
    std::vector<std::uint64_t> replay_shares;
    std::vector<Work> shards;  // one per shard played (by index; sized on first use)
  };
  // The work of `shard` (an index among the shards played) for op record p.
  Work& work_of(Pending& p, std::uint32_t shard);
  std::int32_t offset(std::uint32_t peer, std::uint32_t from) const {
    return std::int32_t(peer) - std::int32_t(played_ > 1 ? from : shard_);
  }
  void flush_ready();  // (mutex_ held)
  void write(std::uint64_t seq, Pending& p);

  std::uint32_t shard_, shards_;
  std::uint32_t played_;  // shards this process records (1, or all when simulated)
  std::mutex mutex_;
  std::map<std::uint64_t, Pending> pending_;
  std::uint64_t last_analysed_ = 0, current_ = 0;
  std::uint64_t app_mark_ns_ = 0;    // the application thread's last issue or resumption
  std::uint64_t written_below_ = 0;  // every op below has been written (or never existed)
  std::vector<evtrace::Compressor> compressors_;  // one per shard played
  std::map<std::string, std::uint64_t> sent_;     // messages by channel
  evtrace::Stat waits_;
  std::uint64_t late_ = 0;
};

}  // namespace reprise::detail

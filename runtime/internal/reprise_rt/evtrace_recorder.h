#pragma once
// -lg:evtrace FILE: each shard turns the profiler's records into one op record per op of the
// stream (its points and their durations, copies, data sent to and received from other
// shards, the utility thread's time on it) and compresses them online into loops
// (evtrace::Compressor) in the order of the op stream. At exit the shards merge their traces
// along a radix tree (Runtime::write_evtrace) and shard 0 writes the file.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "reprise_rt/evtrace_format.h"

namespace reprise::detail {

class EvtraceRecorder {
 public:
  EvtraceRecorder(std::uint32_t shard, std::uint32_t shards) : shard_(shard), shards_(shards) {}

  // What the profiler saw (any thread). kind: Profiler::Kind as a number; ns: the interval's
  // length; peer: the other shard (messages and copy halves).
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
  // Everything recorded, as this shard's trace (one group).
  evtrace::Trace finish();

 private:
  struct Pending {
    bool analysed = false, retired = false, then_waits = false;
    std::uint8_t op_kind = 0;
    const char* task = nullptr;
    std::uint32_t trace = 0;
    std::uint64_t util_ns = 0, issue_ns = 0;
    evtrace::Variant work;  // points and copies
    evtrace::Stat point_ns, copy_ns;
    std::map<std::int32_t, std::uint64_t> sends, recvs, asks;  // bytes by peer offset
  };
  void flush_ready();  // (mutex_ held)
  void write(std::uint64_t seq, Pending& p);

  std::uint32_t shard_, shards_;
  std::mutex mutex_;
  std::map<std::uint64_t, Pending> pending_;
  std::uint64_t last_analysed_ = 0, current_ = 0;
  std::uint64_t app_mark_ns_ = 0;    // the application thread's last issue or resumption
  std::uint64_t written_below_ = 0;  // every op below has been written (or never existed)
  evtrace::Compressor compressor_;
  std::map<std::string, std::uint64_t> sent_;  // messages by channel
  evtrace::Stat waits_;
  std::uint64_t late_ = 0;
};

}  // namespace reprise::detail

#pragma once
// Control replication with GPUs: a copy between two shards' framebuffers goes from device to
// device over the device links (NCCL; reprise_rt/device.h, DeviceLinks) instead of through a
// host message (-ll:nccl).
//
// NCCL matches a pair's sends and receives by the order they are issued, and runs all the
// operations of a rank's communicator one after the other, each waiting for its peer. So
// every shard issues its halves in one global order, the copies' names (op number, point,
// source shard, name), which both shards of a copy derive alike: the halves the analysis (or
// a replay) registers while the utility thread handles one op are sorted and appended to the
// shard's queue, and the queue is issued from its head. A receive is issued as soon as it is
// at the head (into a fresh device buffer; the destination half waits for its arrival and its
// own preconditions, then copies it into the instance), a send once its data is packed. That
// is deadlock-free: the data of copy k depends only on work before k, so the globally first
// copy not yet done is at the head of both its shards' queues, and meets.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "reprise_rt/copy_name.h"
#include "reprise_rt/device.h"
#include "reprise_rt/link_pipe.h"

namespace reprise::detail {

class Runtime;
class Network;
class Op;
struct PointTask;

class ShardLinks {
 public:
  ShardLinks(Runtime& rt, Network& net);  // before the network starts (the pipe's handler)
  ~ShardLinks();

  // Opens the links (-ll:nccl: 1 on, -1 auto): collective over the shards, after the network
  // has started. Whether they are open; with `1`, an Error when they cannot be.
  bool open(int mode);
  bool is_open() const { return links_ != nullptr; }
  // Whether a copy between shards travels over the links: framebuffer to framebuffer, no fold
  // (both shards decide alike).
  bool carries(const Op& copy) const;

  // The halves of a copy, as the analysis or a replay launches them (utility thread).
  void expect_send(const Op& copy, std::uint32_t to);
  void expect_receive(PointTask* t, std::uint32_t from);
  // The halves registered since the last flush go into the queue in name order.
  void flush();
  // The send half runs: packs the data into a buffer of the links and issues what it can.
  void send(const Op& copy);
  // The receive half runs (its data has arrived): writes it into the destination instance.
  void unpack(const Op& copy);

  // After an error: nothing waits for another shard any more.
  void abandon();
  // The end of the run: every copy has completed; closes the links.
  void close();

  std::uint64_t copies() const;
  std::string describe_held();

 private:
  struct Entry {
    ShardLinks* self = nullptr;
    bool send = false;
    bool ready = false;  // a send: packed
    std::uint32_t peer = 0;
    std::size_t bytes = 0;
    void* buffer = nullptr;
    PointTask* task = nullptr;  // a receive: its destination half
  };
  CopyName name_of(const Op& copy) const;
  // Copies every field of copy's rectangle between `buffer` (dense, field after field) and the
  // instance at its end on this shard (into the buffer: the source), on the copy stream, and
  // waits for it.
  void transfer(const Op& copy, void* buffer, bool into_buffer);
  // Issues the queue's head while it can (with the lock held).
  void issue_locked();
  static void arrived(void* entry);

  Runtime& rt_;
  std::unique_ptr<NetworkLinkPipe> pipe_;
  std::unique_ptr<DeviceLinks> links_;
  mutable std::mutex mutex_;
  std::map<CopyName, Entry> entries_;  // registered, not done
  std::vector<CopyName> pending_;      // registered since the last flush
  std::deque<CopyName> queue_;         // in name order, not issued yet
  CopyName last_flushed_;              // the last name queued
  bool any_flushed_ = false;
  std::uint64_t copies_ = 0;
  bool abandoned_ = false;
};

}  // namespace reprise::detail

#pragma once
// Control replication (-lg:shard_checks): the shards decide together whether a template's
// conditions hold, each having read only its part of them. A vote is an AND up a binary tree
// of shards (shard s's parent is (s - 1) / 2) and the verdict back down it: a shard sends at
// most three messages per vote, whatever the number of shards, and hears back after
// 2·log2(shards) hops. Votes are numbered by the order the shards call all() in: every shard
// checks the same templates in the same order, so the k-th vote is the same one everywhere.
// Forwarding happens on the network's progress thread; only the caller waits (on a condition
// variable, never spinning), and stops waiting once the program has failed.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "reprise_rt/network.h"

namespace reprise::detail {

class Runtime;

class ShardVote {
 public:
  // Installs its handler on the network: construct before the network starts.
  ShardVote(Runtime& rt, Network& net);
  // True iff every shard's `mine` is true (after a failure elsewhere: this shard's `mine`).
  bool all(bool mine);
  // Votes this shard had to wait for (another shard was behind).
  std::uint64_t waits() const { return waits_; }

 private:
  struct Round {
    std::uint32_t heard = 0;  // children's votes in (and this shard's own, once cast)
    bool cast = false;
    bool yes = true;
    bool sent_up = false;
    int verdict = -1;  // -1 until the root's answer arrives
    bool forwarded = false;
  };
  struct Message {
    std::uint32_t to;
    std::uint64_t word;
  };
  // With the lock held: the messages a round that just gained a vote or a verdict must send.
  void advance(std::uint64_t k, Round& r, std::vector<Message>& out);
  void send(const std::vector<Message>& out);
  std::uint32_t children() const;

  Runtime& rt_;
  Network& net_;
  std::mutex mutex_;
  std::condition_variable decided_;
  std::unordered_map<std::uint64_t, Round> rounds_;
  std::uint64_t next_ = 0;  // the caller's next vote (the caller's thread only)
  std::uint64_t waits_ = 0;
};

}  // namespace reprise::detail

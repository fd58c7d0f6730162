#pragma once
// Control replication: a decision every shard takes alike from a yes/no of each — an AND up
// the tree of shards (reprise_rt/shard_tree.h) and the verdict back down it. A
// shard sends at most three messages per vote whatever the number of shards (a broadcast to
// every shard would cost it shards - 1), and hears back after 2·log2(shards) hops. Votes are
// numbered: the k-th vote must be the same one on every shard (votes taken in the op stream's
// order). Forwarding happens on the network's progress thread; only a caller of decided()
// waits (on a condition variable, never spinning), and stops waiting once the program has
// failed. Used for trace checks read in parts (-lg:shard_checks) and automatic tracing's late
// analyses.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "reprise_rt/network.h"

namespace reprise::detail {

class Runtime;

class ShardVote {
 public:
  // What a vote needs of its runtime: whether the program has failed (then nobody waits for
  // a verdict), and where the time spent waiting for one goes.
  struct Hooks {
    std::function<bool()> failed;
    std::function<void(std::uint64_t ns)> waited;
  };
  // Installs its handler for `channel` (its own: one vote per channel): construct before the
  // network starts.
  ShardVote(Network& net, Channel channel, Hooks hooks);
  // (Hooks: Runtime::failed, Runtime::count_shard_wait.)
  ShardVote(Runtime& rt, Network& net, Channel channel);
  // Casts this shard's vote on k (once per k).
  void cast(std::uint64_t k, bool yes);
  // True iff every shard voted yes on k; waits until known (after this shard cast its vote).
  // After a failure elsewhere: the AND of the votes that arrived, this shard's included.
  bool decided(std::uint64_t k);
  // cast and decided on the next vote (numbered by the calls: use one way or the other).
  bool all(bool mine);
  // Verdicts this shard had to wait for (another shard was behind).
  std::uint64_t waits() const { return waits_; }

 private:
  struct Round {
    std::uint32_t heard = 0;  // children's votes in, and this shard's own once cast
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
  // With the lock held: what a round that just gained a vote or its verdict must send.
  void advance(std::uint64_t k, Round& r, std::vector<Message>& out);
  void send(const std::vector<Message>& out);

  Network& net_;
  const Channel channel_;
  const Hooks hooks_;
  std::mutex mutex_;
  std::condition_variable decided_;
  std::unordered_map<std::uint64_t, Round> rounds_;
  std::uint64_t next_ = 0;  // all()'s next vote (the caller's thread only)
  std::uint64_t waits_ = 0;
};

}  // namespace reprise::detail

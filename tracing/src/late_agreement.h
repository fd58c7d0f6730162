#pragma once
// Apophenia under control replication (paper §5.1): the shards agree on when analysis results
// are taken in. Each shard votes on whether it had to wait for the k-th analysis; the verdict
// for k is "late" if any shard was — a vote up and down a tree of shards on the network's
// Late channel (reprise_rt/shard_vote.h: at most three messages per shard per analysis).
#include "reprise_rt/shard_vote.h"
#include "reprise_tracing/auto_tracer.h"

namespace reprise::detail {

class ShardLateAgreement final : public tracing::LateAgreement {
 public:
  // Installs its handler on the network: construct before the network starts.
  ShardLateAgreement(Runtime& rt, Network& net) : vote_(rt, net, Channel::Late) {}
  void report(std::uint64_t k, bool late) override { vote_.cast(k, !late); }
  bool any_late(std::uint64_t k) override { return !vote_.decided(k); }
  // Verdicts this shard had to wait for (the other shards were behind).
  std::uint64_t waits() const { return vote_.waits(); }

 private:
  ShardVote vote_;  // yes: on time
};

}  // namespace reprise::detail

#pragma once
// Apophenia under control replication (paper §5.1): the shards agree on when analysis results
// are taken in. Each shard tells every other whether it had to wait for the k-th analysis;
// the verdict for k is "late" if any shard was. Messages travel on the network's Late
// channel; a shard waits for missing verdicts on a condition variable (never spinning) and
// stops waiting once the program has failed (another shard may never send them).
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "reprise_rt/network.h"
#include "reprise_tracing/auto_tracer.h"

namespace reprise::detail {

class Runtime;

class ShardLateAgreement final : public tracing::LateAgreement {
 public:
  // Installs its handler on the network: construct before the network starts.
  ShardLateAgreement(Runtime& rt, Network& net);
  void report(std::uint64_t k, bool late) override;
  bool any_late(std::uint64_t k) override;
  // Verdicts this shard had to wait for (the other shards were behind).
  std::uint64_t waits() const { return waits_; }

 private:
  struct Verdict {
    std::uint32_t reports = 0;
    bool late = false;
  };
  void add(std::uint64_t k, bool late);

  Runtime& rt_;
  Network& net_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::unordered_map<std::uint64_t, Verdict> verdicts_;
  std::uint64_t waits_ = 0;
};

}  // namespace reprise::detail

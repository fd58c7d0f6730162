#pragma once
// What Context::execute made of a task or index launcher's requirements, kept in the launcher
// for its next launch. A launcher kept and launched again (Legion's habit, and every iteration
// of a traced loop) would otherwise check and resolve every requirement again: handles,
// privileges, fields, projections, interference — a third of what Context::execute costs.
// Valid for the same domain while the forest it was resolved against has destroyed nothing
// (nothing else a resolution reads changes: field spaces and partitions are fixed once made).
// It also keeps the launch's token: trace matching's key, a quarter of what the utility
// thread spends on a replayed op.
#include <cstdint>

#include "reprise/types.h"
#include "reprise_rt/inline_vector.h"
#include "reprise_rt/op.h"
#include "reprise_rt/pool.h"

namespace reprise::detail {

struct ResolvedLaunch {
  std::uint64_t forest = 0;       // RegionForest::serial
  std::uint64_t retirements = 0;  // RegionForest::retirements then
  Domain domain;
  ReqList reqs;
  InlineVector<std::uint16_t, 8> req_begin;  // TaskPayload::req_begin
  // The launch's op_token, for a launch with as many futures and the same pinned memory.
  std::uint64_t token = 0;
  std::uint32_t futures = 0;
  std::uint32_t pinned_memory = kInvalidId;

  bool valid_for(const RegionForest& f, const Domain& d) const {
    return forest == f.serial() && retirements == f.retirements() && domain == d;
  }
};

}  // namespace reprise::detail

#pragma once
// Replays as graphs: which of a template's GPU points form per-processor groups launched as
// one captured graph (reprise_rt/gpu_groups.h), planned at the template's first replay.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "reprise_memoizer/trace_template.h"
#include "reprise_rt/gpu_groups.h"

namespace reprise::detail {

// Null when no GPU point of t can be part of a graph. ops: the replayed ops (their futures,
// return values and privileges decide which points a graph may hold). Under control
// replication, `shard`: only the points that run on it form groups (each shard plans its own).
std::shared_ptr<GpuGroups> plan_gpu_groups(const TraceTemplate& t, const std::vector<OpRef>& ops,
                                           std::optional<std::uint32_t> shard = std::nullopt);

}  // namespace reprise::detail

#pragma once
// Replays as graphs: which of a template's GPU points form per-processor groups launched as
// one captured graph (reprise_rt/gpu_groups.h), planned at the template's first replay.
#include <memory>
#include <vector>

#include "reprise_memoizer/trace_template.h"
#include "reprise_rt/gpu_groups.h"

namespace reprise::detail {

// Null when no GPU point of t can be part of a graph. ops: the replayed ops (their futures,
// return values and privileges decide which points a graph may hold).
std::shared_ptr<GpuGroups> plan_gpu_groups(const TraceTemplate& t, const std::vector<OpRef>& ops);

}  // namespace reprise::detail

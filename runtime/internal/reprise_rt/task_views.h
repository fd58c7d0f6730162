#pragma once
// Views of a running internal task's data as a PhysicalRegion (inline_mapping.cpp), for code
// written against mapped regions that runs inside a task (dependent partitioning).
#include <vector>

#include "reprise/inline_mapping.h"
#include "reprise/task_context.h"

namespace reprise::detail {

// Fields `fields` of the task's requirement 0 (region r, read-only), valid while it runs.
PhysicalRegion read_view(TaskContext& tc, Region r, std::vector<FieldID> fields);

}  // namespace reprise::detail

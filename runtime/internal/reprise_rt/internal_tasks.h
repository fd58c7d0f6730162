#pragma once
// Ids of the runtime's internal tasks, all in one enumeration so that no two can share one
// (a registration under a taken id silently replaces the other task's body). Out of the way
// of programs' ids.
#include "reprise/types.h"

namespace reprise::detail {

enum : TaskID {
  kInlineMapTask = 0xFFFFFF01u,  // inline_mapping.cpp
  kInlineHoldTask,
  kAttachTask,  // attach.cpp
  kDetachTask,
  kDependentPartitionTask,  // dependent_partitioning.cpp
};

}  // namespace reprise::detail

#pragma once
// The mapper: the policy that places each task point on a processor.
#include <cstdint>
#include <string_view>

#include "reprise/types.h"

namespace reprise {

struct MapperTaskInfo {
  TaskID task;
  std::string_view task_name;
  Domain launch_domain;  // a single task has a one-point domain
  DomainPoint point;
  std::uint64_t point_index;  // row-major index of point in launch_domain
  std::uint64_t op_seq;       // the op's position in the program's op stream
  bool has_cpu_variant;
  bool has_gpu_variant;
};

struct MachineInfo {
  std::uint32_t num_cpus;
  std::uint32_t num_gpus;
  std::uint32_t shard;
  std::uint32_t num_shards;
};

class Mapper {
 public:
  virtual ~Mapper() = default;
  // Called once per task point on the utility thread; must be cheap and deterministic.
  virtual Processor select_processor(const MapperTaskInfo& task, const MachineInfo& machine) = 0;
};

// Index-launch points in contiguous blocks over the processors of the preferred kind
// (GPU when the task has a GPU variant and GPUs exist); single tasks round-robin by op.
class DefaultMapper : public Mapper {
 public:
  Processor select_processor(const MapperTaskInfo& task, const MachineInfo& machine) override;
};

}  // namespace reprise

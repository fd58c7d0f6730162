#pragma once
// The mapper: the policy that places each task point on a processor and its data in memories.
#include <cstddef>
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

// Memories are numbered: system memories (NUMA domains, -ll:numa) first.
using MemoryID = std::uint32_t;

// Per shard: num_cpus CPUs and num_sysmems system memories; memory ids are global, shard s
// owning [s * num_sysmems, (s + 1) * num_sysmems).
struct MachineInfo {
  std::uint32_t num_cpus;  // per shard
  std::uint32_t num_gpus;  // per shard
  std::uint32_t shard;     // the shard asking (every shard maps every point identically)
  std::uint32_t num_shards;
  std::uint32_t num_sysmems = 1;  // per shard
  std::uint32_t num_memories() const { return num_sysmems * num_shards; }
  // The system memory of a CPU's NUMA domain: the CPUs are divided among them in blocks.
  MemoryID closest_memory(const Processor& p) const {
    const MemoryID base = MemoryID(p.shard) * num_sysmems;
    if (p.kind != ProcessorKind::CPU || num_cpus == 0) return base;
    return base + MemoryID(std::uint64_t(p.index % num_cpus) * num_sysmems / num_cpus);
  }
};

class Mapper {
 public:
  virtual ~Mapper() = default;
  // Called once per task point on the utility thread; must be cheap and deterministic.
  virtual Processor select_processor(const MapperTaskInfo& task, const MachineInfo& machine) = 0;
  // The memory of the instance for requirement `req` of a point mapped to `proc` (asked only
  // when the machine has more than one memory). Default: the processor's closest memory.
  // For a reduction requirement: the memory of the point's reduction instance.
  virtual MemoryID select_memory(const MapperTaskInfo& task, Processor proc, std::size_t req,
                                 const MachineInfo& machine) {
    (void)task;
    (void)req;
    return machine.closest_memory(proc);
  }
};

// Index-launch points in contiguous blocks over the shards, then over each shard's processors
// of the preferred kind (GPU when the task has a GPU variant and GPUs exist); single tasks
// round-robin by op over every shard's processors.
class DefaultMapper : public Mapper {
 public:
  Processor select_processor(const MapperTaskInfo& task, const MachineInfo& machine) override;
};

}  // namespace reprise

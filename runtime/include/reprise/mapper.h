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

// Memories are numbered per shard: its system memories (NUMA domains, -ll:numa) first, then
// one framebuffer per GPU (-ll:gpu), then its zero-copy memory if it has one (-ll:zsize).
using MemoryID = std::uint32_t;

// Per shard: num_cpus CPUs, num_gpus GPUs, num_sysmems system memories, num_gpus
// framebuffers and num_zero_copy zero-copy memories (0 or 1: host memory that CPUs and GPUs
// both use in place); memory ids are global, shard s owning
// [s * memories_per_shard(), (s + 1) * memories_per_shard()).
struct MachineInfo {
  std::uint32_t num_cpus;  // per shard
  std::uint32_t num_gpus;  // per shard
  std::uint32_t shard;     // the shard asking (every shard maps every point identically)
  std::uint32_t num_shards;
  std::uint32_t num_sysmems = 1;    // per shard
  std::uint32_t num_zero_copy = 0;  // per shard
  std::uint32_t memories_per_shard() const { return num_sysmems + num_gpus + num_zero_copy; }
  std::uint32_t num_memories() const { return memories_per_shard() * num_shards; }
  MemoryID first_memory(std::uint32_t s) const { return MemoryID(s) * memories_per_shard(); }
  // GPU g's framebuffer on shard s.
  MemoryID framebuffer(std::uint32_t s, std::uint32_t g) const {
    return first_memory(s) + num_sysmems + g;
  }
  bool is_framebuffer(MemoryID m) const {
    const std::uint32_t k = m % memories_per_shard();
    return k >= num_sysmems && k < num_sysmems + num_gpus;
  }
  // Shard s's zero-copy memory (only when num_zero_copy is 1).
  MemoryID zero_copy(std::uint32_t s) const { return first_memory(s) + num_sysmems + num_gpus; }
  bool is_zero_copy(MemoryID m) const {
    return num_zero_copy > 0 && m % memories_per_shard() == num_sysmems + num_gpus;
  }
  // A GPU's framebuffer; the system memory of a CPU's NUMA domain (the CPUs are divided among
  // them in blocks); a utility processor's first system memory.
  MemoryID closest_memory(const Processor& p) const {
    const MemoryID base = first_memory(p.shard);
    if (p.kind == ProcessorKind::GPU && num_gpus > 0)
      return framebuffer(p.shard, p.index % num_gpus);
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
  // Whether a CPU that has nothing to do may run points this mapper placed on another CPU of
  // the same shard and NUMA domain (the same closest memory, so their instances stay near)
  // once they have waited -ll:steal_ns untaken: their CPU is busy with a longer task, or its
  // thread lost the core; and whether a CPU with nothing else to run may run a point it made
  // ready for such another CPU itself (-ll:keep_ns). Asked once, when the workers start.
  // Default: yes; a mapper whose placement must hold to the core says no.
  virtual bool permit_stealing(const MachineInfo& machine) {
    (void)machine;
    return true;
  }
  // Control replication (optional, a sharding functor): when the points of the launch that
  // select_processor places on `shard` are one range of point indices, sets [first, last) to
  // it and returns true; a shard then asks select_processor only for its own points and for
  // the other shards' points that meet its data. Must agree with select_processor. Default:
  // unknown (every point is asked). `task` is the launch: its point fields are unset.
  virtual bool shard_points(const MapperTaskInfo& task, const MachineInfo& machine,
                            std::uint32_t shard, std::uint64_t& first, std::uint64_t& last) {
    (void)task;
    (void)machine;
    (void)shard;
    (void)first;
    (void)last;
    return false;
  }
};

// Index-launch points in contiguous blocks over the shards, then over each shard's processors
// of the preferred kind (GPU when the task has a GPU variant and GPUs exist); single tasks
// round-robin by op over every shard's processors.
class DefaultMapper : public Mapper {
 public:
  Processor select_processor(const MapperTaskInfo& task, const MachineInfo& machine) override;
  // The blocks of select_processor (only for a DefaultMapper itself: a mapper derived from it
  // that places points otherwise must not inherit the ranges).
  bool shard_points(const MapperTaskInfo& task, const MachineInfo& machine, std::uint32_t shard,
                    std::uint64_t& first, std::uint64_t& last) override;
};

}  // namespace reprise

// The default mapping policy (reprise/mapper.h).
#include <typeinfo>

#include "reprise/mapper.h"

namespace reprise {

Processor DefaultMapper::select_processor(const MapperTaskInfo& task, const MachineInfo& machine) {
  bool gpu = task.has_gpu_variant && machine.num_gpus > 0;
  const std::uint64_t per_shard = gpu ? machine.num_gpus : machine.num_cpus;
  const std::uint64_t n = per_shard * machine.num_shards;
  const ProcessorKind kind = gpu ? ProcessorKind::GPU : ProcessorKind::CPU;
  // (One processor in all: no division; three 64-bit ones were most of a one-point launch's
  // mapping.)
  if (n == 1) return Processor{kind, 0, 0};
  std::uint64_t points = std::uint64_t(task.launch_domain.volume());
  // Contiguous blocks of points per processor keep neighbouring tiles together (and on one
  // shard).
  std::uint64_t global = points <= 1 ? task.op_seq % n : task.point_index * n / points;
  return Processor{kind, std::uint32_t(global % per_shard), std::uint32_t(global / per_shard)};
}

bool DefaultMapper::shard_points(const MapperTaskInfo& task, const MachineInfo& machine,
                                 std::uint32_t shard, std::uint64_t& first, std::uint64_t& last) {
  if (typeid(*this) != typeid(DefaultMapper)) return false;
  const bool gpu = task.has_gpu_variant && machine.num_gpus > 0;
  const std::uint64_t per_shard = gpu ? machine.num_gpus : machine.num_cpus;
  const std::uint64_t n = per_shard * machine.num_shards;
  const std::uint64_t points = std::uint64_t(task.launch_domain.volume());
  if (n == 0) return false;
  if (points <= 1) {
    const bool here = task.op_seq % n / per_shard == shard;
    first = 0;
    last = here ? points : 0;
    return true;
  }
  // Point i goes to shard floor(floor(i * n / points) / per_shard): shard s holds the i with
  // s * per_shard * points <= i * n < (s + 1) * per_shard * points.
  auto bound = [&](std::uint64_t s) { return (s * per_shard * points + n - 1) / n; };
  first = bound(shard);
  last = bound(std::uint64_t(shard) + 1);
  return true;
}

}  // namespace reprise

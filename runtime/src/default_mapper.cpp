// The default mapping policy (reprise/mapper.h).
#include "reprise/mapper.h"

namespace reprise {

Processor DefaultMapper::select_processor(const MapperTaskInfo& task, const MachineInfo& machine) {
  bool gpu = task.has_gpu_variant && machine.num_gpus > 0;
  const std::uint64_t per_shard = gpu ? machine.num_gpus : machine.num_cpus;
  const std::uint64_t n = per_shard * machine.num_shards;
  std::uint64_t points = std::uint64_t(task.launch_domain.volume());
  // Contiguous blocks of points per processor keep neighbouring tiles together (and on one
  // shard).
  std::uint64_t global = points <= 1 ? task.op_seq % n : task.point_index * n / points;
  return Processor{gpu ? ProcessorKind::GPU : ProcessorKind::CPU, std::uint32_t(global % per_shard),
                   std::uint32_t(global / per_shard)};
}

}  // namespace reprise

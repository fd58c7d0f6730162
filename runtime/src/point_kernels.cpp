// What a point does when it runs: a task body (with its TaskContext), a fill, or a copy
// between instances (a fold for reduction instances; a send or receive half between shards).
#include <fmt/core.h>

#include <cstring>
#include <memory>
#include <vector>

#include "reprise/task_context.h"
#include "reprise_rt/executor.h"
#include "reprise_rt/future_state.h"
#include "reprise_rt/runtime.h"
#include "reprise_rt/shard_exchange.h"

namespace reprise::detail {

void Executor::run_task_body(PointTask& t) {
  Op& op = *t.op;
  const std::size_t nreq = op.reqs.size();
  for (std::size_t r = 0; r < nreq; ++r)
    if (op.reqs[r].privilege == Privilege::Reduce) {
      // A reduction instance holds nothing of this task yet (whatever an earlier reducer left
      // there was folded or discarded); reducer<T, N>() initialises what the task uses.
      Instance* inst = op.point_instances[t.point_index * nreq + r];
      for (int fi : op.reqs[r].field_indices) inst->reset_reduction(fi);
    }
  TaskContext tc(t);
  TaskResult result;
  struct Running {  // the task may read its own argument futures (Future::wait checks)
    explicit Running(const Op* o) : prev(set_running_task(o)) {}
    ~Running() { set_running_task(prev); }
    const Op* prev;
  } running(&op);
  if (!steal_pools_.empty() && t.proc.kind == ProcessorKind::CPU) [[unlikely]] {
    StealTaskScope scope;
    if (t.batch) {
      scope.memos = &t.batch->successors->steal_memos;
      scope.point = t.batch_index;
    }
    scope.retentive = rt_.config().retentive;
    scope.sink = steal_sink_.get();
    scope.task = tc.task_name();
    scope.launch_point = t.point_index;
    StealBinding bind(*steal_pools_[t.proc.index % steal_pools_.size()], scope);
    t.variant->entry(t.variant->fn, tc, result);
  } else {
    t.variant->entry(t.variant->fn, tc, result);
  }
  if (op.future) {
    op.future->value = result;
  } else if (op.future_map && op.future_map->kind != ValueKind::None) {
    op.future_map->values[t.point_index] = result;
    if (op.future_map->sharded) op.future_map->produced[t.point_index] = 1;
  }
}

void Executor::run_fill(PointTask& t) {
  Op& op = *t.op;
  const ReqInfo& req = op.reqs[0];
  Instance* inst = op.point_instances[0];
  const Domain& rect = op.rect(0, 0);
  if (rect.empty()) return;  // an empty subregion: nothing to fill
  if (inst->on_device()) return fill_on_device(t);
  const std::size_t size = op.fill().value.size();
  for (int fi : req.field_indices) {
    std::byte* base = inst->field_data(fi);
    Instance::for_each_row(rect, size, [&](const DomainPoint& row, std::size_t bytes) {
      std::byte* p = base + inst->offset_of(row, size);
      for (std::size_t k = 0; k < bytes; k += size)
        std::memcpy(p + k, op.fill().value.data(), size);
    });
  }
}

void Executor::run_copy(PointTask& t) {
  Op& op = *t.op;
  if (op.generated()) rt_.count_copy();
  const ReqInfo& src = op.reqs[0];
  const ReqInfo& dst = op.reqs[1];
  Instance* si = op.point_instances[0];
  Instance* di = op.point_instances[1];
  const Domain& rect = op.rect(0, 0);
  if (rect.empty()) return;  // an empty source: nothing to copy
  if (!rt_.instances().is_local(si->memory()) || !rt_.instances().is_local(di->memory()))
    throw Error(fmt::format("internal: {} copies between memories {} and {}, not both on shard {}",
                            op.describe(), si->memory(), di->memory(), rt_.shard()));
  if (op.folds()) {
    if (!si->host_visible() || !di->host_visible())
      throw Error(
          fmt::format("{} folds a reduction instance in framebuffer memory, which the "
                      "{} backend cannot do yet",
                      op.describe(), rt_.device()->backend()));
    fold_instance(*si, *di, rect, src.field_indices);
    return;
  }
  if (si->on_device() || di->on_device()) return copy_on_device(t);
  for (std::size_t f = 0; f < src.field_indices.size(); ++f) {
    const std::size_t size = si->field_size(src.field_indices[f]);
    const std::byte* sb = si->field_data(src.field_indices[f]);
    std::byte* db = di->field_data(dst.field_indices[f]);
    Instance::for_each_row(rect, size, [&](const DomainPoint& row, std::size_t bytes) {
      std::memmove(db + di->offset_of(row, size), sb + si->offset_of(row, size), bytes);
    });
  }
}

void Executor::fill_on_device(PointTask& t) {
  Op& op = *t.op;
  Instance& inst = *op.point_instances[0];
  const Domain& rect = op.rect(0, 0);
  const auto& value = op.fill().value;
  const std::size_t size = value.size();
  // The pattern goes to the device from a staging buffer, freed once the stream has copied it.
  auto staging = std::make_shared<std::vector<std::byte>>(std::size_t(rect.volume()) * size);
  for (std::size_t k = 0; k < staging->size(); k += size)
    std::memcpy(staging->data() + k, value.data(), size);
  Device& device = *rt_.device();
  const DeviceStream s = work_stream(t);
  for (int fi : op.reqs[0].field_indices)
    device.copy(s, device_copy_of(inst.layout(fi, rect),
                                  StridedLayout::dense(staging->data(), rect, size), rect, size));
  device.launch_host(s, [staging] {});
  rt_.count_device_copy(false, true);
  t.copy_device = std::int16_t(s.device);
}

void Executor::copy_on_device(PointTask& t) {
  Op& op = *t.op;
  Instance& si = *op.point_instances[0];
  Instance& di = *op.point_instances[1];
  const Domain& rect = op.rect(0, 0);
  // (Its device's copy stream: the destination's, else the source's — work_stream.)
  const DeviceStream s = work_stream(t);
  for (std::size_t f = 0; f < op.reqs[0].field_indices.size(); ++f) {
    const int sf = op.reqs[0].field_indices[f];
    const int df = op.reqs[1].field_indices[f];
    rt_.device()->copy(
        s, device_copy_of(di.layout(df, rect), si.layout(sf, rect), rect, si.field_size(sf)));
  }
  rt_.count_device_copy(si.on_device(), di.on_device());
  t.copy_device = std::int16_t(s.device);
}

}  // namespace reprise::detail

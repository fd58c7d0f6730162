#include "reprise_rt/executor.h"

#include <fmt/core.h>

#include <cstring>

#include "reprise/task_context.h"
#include "reprise_rt/assert.h"
#include "reprise_rt/exception_text.h"
#include "reprise_rt/future_state.h"
#include "reprise_rt/log.h"
#include "reprise_rt/runtime.h"
#include "reprise_rt/shard_exchange.h"
#include "reprise_rt/topology.h"

namespace reprise::detail {

namespace {
// What a failed point reports: which op, task, point (and shard) failed, then what it threw —
// anything, not only std::exception (a task that throws 42 must not terminate the process).
std::exception_ptr point_failure(const Runtime& rt, const PointTask& t, std::exception_ptr thrown) {
  const std::string what = exception_text(thrown);
  // The runtime's own errors inside a task name the point already.
  if (what.rfind("op #", 0) == 0) return thrown;
  const std::string shard =
      rt.num_shards() > 1 ? fmt::format(" on shard {}", rt.shard()) : std::string();
  const bool single = t.op->kind != OpKind::IndexTask;
  return std::make_exception_ptr(Error(
      fmt::format("{}{}{}: {}", t.op->describe(),
                  single ? std::string() : fmt::format(", point {}", t.point.str()), shard, what)));
}
}  // namespace

Executor::Executor(Runtime& rt) : rt_(rt) {
  for (int i = 0; i < rt.config().cpus; ++i) cpu_queues_.push_back(std::make_unique<ReadyQueue>());
  for (int i = 1; i < rt.config().utils; ++i) dma_queues_.push_back(std::make_unique<ReadyQueue>());
}

Executor::~Executor() {
  stop();
}

void Executor::start() {
  // Pin workers to distinct cores while there are cores for them; extra workers float.
  int cores = machine_cores();
  // Under control replication several ranks may share a node (and the launcher binds them):
  // leave placement to it.
  bool pin = rt_.config().pin && int(cpu_queues_.size()) <= cores && rt_.num_shards() == 1;
  for (std::size_t i = 0; i < cpu_queues_.size(); ++i)
    threads_.emplace_back(&Executor::worker_loop, this, std::ref(*cpu_queues_[i]),
                          pin ? int(i) : -1, fmt::format("cpu{}", i));
  for (std::size_t i = 0; i < dma_queues_.size(); ++i)
    threads_.emplace_back(&Executor::worker_loop, this, std::ref(*dma_queues_[i]), -1,
                          fmt::format("util{}", i + 1));
}

void Executor::stop() {
  for (auto& q : cpu_queues_) q->stop();
  for (auto& q : dma_queues_) q->stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

ReadyQueue& Executor::queue_of(const Processor& p) {
  if (p.kind == ProcessorKind::Utility && !dma_queues_.empty())
    return *dma_queues_[p.index % dma_queues_.size()];
  return *cpu_queues_[p.index % cpu_queues_.size()];
}

void Executor::precondition_done(void* ctx, std::uint64_t) {
  auto* t = static_cast<PointTask*>(ctx);
  if (t->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) t->exec->enqueue(t);
}

void Executor::init_point(PointTask& t, Op& op, std::uint32_t point, Processor proc,
                          std::int32_t in_edges, const DomainPoint* coords, bool completion_event) {
  t.exec = this;
  t.op = OpRef(&op);
  op.add_ref();
  t.point_index = point;
  t.point = coords ? *coords : op.domain.delinearize(coord_t(point));
  t.proc = proc;
  // (A batch's storage is reused by later replays: nothing of an earlier point may remain.)
  t.send_to = -1;
  t.receive = t.elsewhere = false;
  t.variant = nullptr;
  if (op.task_info) {
    t.variant = op.task_info->variant(proc.kind);
    if (!t.variant) t.variant = op.task_info->variant(ProcessorKind::CPU);
  }
  t.done = completion_event ? rt_.events().create() : kNoEvent;
  op.point_done[point] = t.done;
  if (Profiler* prof = rt_.profiler(); prof && prof->deps()) [[unlikely]]
    prof->produced(t.done, op, point);
  t.pending.store(1 + in_edges, std::memory_order_relaxed);
}

void Executor::wait_for(PointTask* t, std::span<const Event> pre) {
  ShardExchange* x = rt_.exchange();
  if (Profiler* prof = rt_.profiler(); prof && prof->deps()) [[unlikely]]
    for (Event e : pre) prof->waits(*t->op, t->point_index, e);
  for (Event e : pre) {
    // Most preconditions of a replayed or well-pipelined point have triggered already: a
    // lock-free check skips the waiter list.
    if (rt_.events().has_triggered(e)) continue;
    if (x) x->need(e);
    t->pending.fetch_add(1, std::memory_order_relaxed);
    if (!rt_.events().add_waiter(e, &Executor::precondition_done, t, 0))
      t->pending.fetch_sub(1, std::memory_order_relaxed);
  }
}

void Executor::count_down_when(Event e, PointTask* t) {
  if (Profiler* prof = rt_.profiler(); prof && prof->deps()) [[unlikely]]
    prof->waits(*t->op, t->point_index, e);
  if (ShardExchange* x = rt_.exchange(); x && e.exists()) x->need(e);
  if (!rt_.events().add_waiter(e, &Executor::precondition_done, t, 0)) release(t);
}

void Executor::count_off(Op& op, std::uint32_t points) {
  const std::int64_t remaining = op.remaining.fetch_sub(points, std::memory_order_acq_rel);
  REPRISE_ASSERT(remaining >= std::int64_t(points), "an op completes once, after its last point");
  if (remaining == std::int64_t(points)) rt_.op_completed(op);
}

void Executor::leave_elsewhere(PointTask& t) {
  t.elsewhere = true;
  t.pending.store(1 << 30, std::memory_order_relaxed);  // never reaches zero
}

Event Executor::remote_point(Op& op, std::uint32_t point, std::uint32_t owner) {
  const Event e = rt_.exchange()->remote(op, point, owner);
  // An op that completes locally is done with another shard's point as soon as it is launched.
  if (op.local_completion) count_off(op);
  return e;
}

Event Executor::init_batch_point(PointTask& t, Op& op, std::uint32_t point, Processor proc,
                                 std::int32_t in_edges, const DomainPoint* coords,
                                 bool completion_event) {
  ShardExchange* x = rt_.exchange();
  if (!x) {
    init_point(t, op, point, proc, in_edges, coords, completion_event);
    return t.done;
  }
  if (op.kind != OpKind::Copy || !op.generated) {
    if (proc.shard != rt_.shard()) {
      leave_elsewhere(t);
      return remote_point(op, point, proc.shard);
    }
    init_point(t, op, point, proc, in_edges, coords, true);
    return t.done;
  }
  // Control replication: the halves of a copy run on the shards of its two memories.
  const InstanceManager& im = rt_.instances();
  const std::uint32_t me = rt_.shard();
  const std::uint32_t from = im.shard_of(op.point_instances[0]->memory());
  const std::uint32_t to = im.shard_of(op.point_instances[1]->memory());
  rt_.count_shard_bytes(bytes_between_shards(op, im));
  if (from != me && to != me) {
    // Nothing here waits for it: it reads and writes other shards' memories only.
    leave_elsewhere(t);
    return kNoEvent;
  }
  proc.shard = me;
  if (from == to) {
    init_point(t, op, point, proc, in_edges, coords, true);
    return t.done;
  }
  if (from == me) {
    init_point(t, op, point, proc, in_edges, coords, true);
    t.send_to = std::int32_t(to);
    // Until the data is packed its source must stay: the send half keeps its op incomplete
    // here (a fence or a destruction after it waits for it).
    if (op.parent && op.parent->local_completion)
      op.parent->remaining.fetch_add(1, std::memory_order_relaxed);
    return t.done;  // done here once the data is packed
  }
  init_point(t, op, point, proc, in_edges + 1, coords, true);  // one more: the data
  t.receive = true;
  x->expect_data(&t);
  return t.done;
}

std::uint64_t Executor::copy_bytes(const Op& copy) {
  std::uint64_t bytes = 0;
  for (int fi : copy.reqs[0].field_indices)
    bytes += copy.point_instances[0]->field_size(fi) * std::uint64_t(copy.point_rects[0].volume());
  return bytes;
}

std::uint64_t Executor::bytes_between_shards(const Op& copy, const InstanceManager& im) {
  const std::uint32_t from = im.shard_of(copy.point_instances[0]->memory());
  const std::uint32_t to = im.shard_of(copy.point_instances[1]->memory());
  return from == to ? 0 : copy_bytes(copy);
}

void Executor::release(PointTask* t) {
  if (t->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) enqueue(t);
}

Event Executor::op(Op& op, std::uint32_t point, Processor proc, std::span<const Event> pre) {
  // (Another shard's point needs no task here: checked before one is allocated.)
  if (rt_.exchange() && proc.shard != rt_.shard()) return remote_point(op, point, proc.shard);
  return launch(op, point, proc, pre);
}

Event Executor::copy(const OpRef& copy, Processor proc, std::span<const Event> pre, std::uint32_t) {
  return launch(*copy, 0, proc, pre);
}

Event Executor::launch(Op& op, std::uint32_t point, Processor proc, std::span<const Event> pre) {
  PoolPtr<PointTask> task = make_pooled<PointTask>();
  const Event done = init_batch_point(*task, op, point, proc, 0, nullptr, true);
  if (task->elsewhere) return done;
  PointTask* t = task.release();  // owned by the executor until it has run
  wait_for(t, pre);
  release(t);
  return done;
}

Event Executor::merge(std::span<const Event> events) {
  if (ShardExchange* x = rt_.exchange())
    for (Event e : events) x->need(e);
  const Event merged = rt_.events().merge(events);
  if (Profiler* prof = rt_.profiler(); prof && prof->deps()) [[unlikely]]
    prof->merged(merged, events);
  return merged;
}

Event Executor::fence(std::span<const Event> before) {
  return merge(before);
}

void Executor::enqueue(PointTask* t) {
  queue_of(t->proc).push(t);
}

void Executor::worker_loop(ReadyQueue& q, int pin_core, std::string name) {
  set_log_thread_name(std::move(name));
  if (pin_core >= 0 && !pin_current_thread(pin_core))
    REPRISE_LOG_DEBUG(LogCategory::Runtime, "could not pin a worker to core {}", pin_core);
  int spin = rt_.config().spin_us;
  while (PointTask* list = q.pop_all(spin)) {
    while (list) {
      PointTask* next = list->next;
      run_point(list);
      list = next;
    }
  }
}

void Executor::run_point(PointTask* t) {
  // (Profiling takes another path, so that the usual one stays as short as it was.)
  if (Profiler* prof = rt_.profiler()) [[unlikely]] {
    const std::uint64_t t0 = Profiler::now_ns();
    std::exception_ptr point_error = execute_point(*t);
    profile_point(*prof, *t, t0);
    return finish_point(t, std::move(point_error));
  }
  finish_point(t, execute_point(*t));
}

std::exception_ptr Executor::execute_point(PointTask& t) {
  Op& op = *t.op;
  ShardExchange* exchange = rt_.exchange();
  std::exception_ptr point_error;
  if (!rt_.failed()) {
    try {
      switch (op.kind) {
        case OpKind::Task:
        case OpKind::IndexTask:
          run_task_body(t);
          break;
        case OpKind::Fill:
          run_fill(t);
          break;
        case OpKind::Copy:
          if (t.send_to >= 0) {
            exchange->send_data(op, std::uint32_t(t.send_to));
          } else if (t.receive) {
            exchange->unpack(op);
            rt_.count_copy();
          } else {
            run_copy(t);
          }
          break;
        default:
          break;
      }
    } catch (...) {
      point_error = point_failure(rt_, t, std::current_exception());
      if (!op.error_set.exchange(true)) op.error = point_error;  // read when the op completes
      rt_.record_error(point_error);
    }
  }
  return point_error;
}

void Executor::finish_point(PointTask* t, std::exception_ptr point_error) {
  Op& op = *t->op;
  ShardExchange* exchange = rt_.exchange();
  // Control replication: the other shards hold a proxy for this point.
  if (exchange && !op.generated) exchange->finished(op, t->point_index, point_error);
  const bool sent = t->send_to >= 0;
  Event done = t->done;
  OpRef keep = std::move(t->op);
  SuccessorBlock* block = t->block;
  const std::uint32_t batch_index = t->batch_index;
  if (!block) PoolDelete<PointTask>{}(t);  // a batch's points go with their block
  if (done.exists()) rt_.events().trigger(done);
  if (block) {
    const SuccessorLists& s = *block->successors;
    const std::uint32_t* next = s.targets.data() + s.begin[batch_index];
    for (std::uint32_t i = 0; i < s.count[batch_index]; ++i) release(&block->tasks[next[i]]);
    if (block->cross) cross_done(*block, batch_index);
    const std::int32_t unfinished = block->unfinished.fetch_sub(1, std::memory_order_acq_rel);
    REPRISE_ASSERT(unfinished > 0, "a batch finishes each of its points once");
    if (unfinished == 1) retire_batch(block);
  }
  if (keep->generated) {
    // No program op to complete; a send half counted towards its op's completion here.
    if (sent && keep->parent && keep->parent->local_completion) count_off(*keep->parent);
    return;
  }
  count_off(*keep);
}

void Executor::profile_point(Profiler& prof, const PointTask& t, std::uint64_t t0) {
  const Op& op = *t.op;
  Profiler::Kind kind = Profiler::Kind::Task;
  std::uint64_t bytes = 0;
  if (op.kind == OpKind::Fill) {
    kind = Profiler::Kind::Fill;
  } else if (op.kind == OpKind::Copy) {
    kind = t.send_to >= 0 ? Profiler::Kind::Send
           : t.receive    ? Profiler::Kind::Receive
                          : Profiler::Kind::Copy;
    bytes = copy_bytes(op);
  }
  prof.record(kind, op, t.point_index, t.point, t0, Profiler::now_ns(), bytes);
}

void Executor::count_down_cross(const SuccessorBlock& b, std::uint32_t j,
                                const SuccessorBlock& next) {
  const CrossLinks& c = *b.cross;
  for (std::uint32_t i = 0; i < c.count[j]; ++i) release(&next.tasks[c.targets[c.begin[j] + i]]);
}

void Executor::cross_done(SuccessorBlock& b, std::uint32_t j) {
  if (b.cross->count[j] == 0) return;
  // Dekker-style: mark done, then look for the next batch; the launcher publishes the next
  // batch, then looks for done marks. Whoever sees the other claims j (exactly once).
  b.state[j].fetch_or(SuccessorBlock::kDone, std::memory_order_seq_cst);
  SuccessorBlock* next = b.next.load(std::memory_order_seq_cst);
  if (next && !(b.state[j].fetch_or(SuccessorBlock::kClaimed) & SuccessorBlock::kClaimed))
    count_down_cross(b, j, *next);
}

void Executor::link_batches(SuccessorBlock& prev, SuccessorBlock& next) {
  prev.next.store(&next, std::memory_order_seq_cst);
  const CrossLinks& c = *prev.cross;
  for (std::uint32_t j = 0; j < c.count.size(); ++j) {
    if (c.count[j] == 0) continue;
    if ((prev.state[j].load(std::memory_order_seq_cst) & SuccessorBlock::kDone) &&
        !(prev.state[j].fetch_or(SuccessorBlock::kClaimed) & SuccessorBlock::kClaimed))
      count_down_cross(prev, j, next);
  }
}

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
    explicit Running(const Op* o) : prev(t_running_task) { t_running_task = o; }
    ~Running() { t_running_task = prev; }
    const Op* prev;
  } running(&op);
  t.variant->entry(t.variant->fn, tc, result);
  if (op.future) {
    op.future->value = result;
  } else if (op.future_map) {
    op.future_map->values[t.point_index] = result;
  }
}

void Executor::run_fill(PointTask& t) {
  Op& op = *t.op;
  const ReqInfo& req = op.reqs[0];
  Instance* inst = op.point_instances[0];
  const Domain& rect = op.rect(0, 0);
  if (rect.empty()) return;  // an empty subregion: nothing to fill
  const std::size_t size = op.fill_value.size();
  for (int fi : req.field_indices) {
    std::byte* base = inst->field_data(fi);
    Instance::for_each_row(rect, size, [&](const DomainPoint& row, std::size_t bytes) {
      std::byte* p = base + inst->offset_of(row, size);
      for (std::size_t k = 0; k < bytes; k += size) std::memcpy(p + k, op.fill_value.data(), size);
    });
  }
}

void Executor::run_copy(PointTask& t) {
  Op& op = *t.op;
  if (op.generated) rt_.count_copy();
  const ReqInfo& src = op.reqs[0];
  const ReqInfo& dst = op.reqs[1];
  Instance* si = op.point_instances[0];
  Instance* di = op.point_instances[1];
  const Domain& rect = op.rect(0, 0);
  if (rect.empty()) return;  // an empty source: nothing to copy
  if (!rt_.instances().is_local(si->memory()) || !rt_.instances().is_local(di->memory()))
    throw Error(fmt::format("internal: {} copies between memories {} and {}, not both on shard {}",
                            op.describe(), si->memory(), di->memory(), rt_.shard()));
  if (op.fold) {
    fold_instance(*si, *di, rect, src.field_indices);
    return;
  }
  for (std::size_t f = 0; f < src.field_indices.size(); ++f) {
    const std::size_t size = si->field_size(src.field_indices[f]);
    const std::byte* sb = si->field_data(src.field_indices[f]);
    std::byte* db = di->field_data(dst.field_indices[f]);
    Instance::for_each_row(rect, size, [&](const DomainPoint& row, std::size_t bytes) {
      std::memmove(db + di->offset_of(row, size), sb + si->offset_of(row, size), bytes);
    });
  }
}

}  // namespace reprise::detail

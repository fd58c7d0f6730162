#include "reprise/future.h"

#include <fmt/core.h>

#include "reprise/reduction.h"
#include "reprise_rt/future_state.h"
#include "reprise_rt/op.h"
#include "reprise_rt/runtime.h"

namespace reprise {

namespace detail {
namespace {
thread_local const Op* t_running_task = nullptr;
}  // namespace
const Op* set_running_task(const Op* op) {
  const Op* prev = t_running_task;
  t_running_task = op;
  return prev;
}
}  // namespace detail

namespace {
[[noreturn]] void throw_wait_in_task(const char* what) {
  throw Error(fmt::format(
      "{} inside a task body (or on a thread other than the top-level task's): a task reads "
      "only the futures given to it (add_future, then TaskContext::future)",
      what));
}

const char* kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::None:
      return "void";
    case ValueKind::I32:
      return "int32";
    case ValueKind::I64:
      return "int64";
    case ValueKind::U32:
      return "uint32";
    case ValueKind::U64:
      return "uint64";
    case ValueKind::F32:
      return "float";
    case ValueKind::F64:
      return "double";
    case ValueKind::Bytes:
      return "bytes";
  }
  return "?";
}

void wait_event(detail::Event e, const std::atomic<bool>& ready) {
  detail::Runtime* rt = detail::Runtime::current();
  if (ready.load(std::memory_order_acquire)) {
    if (rt) rt->note_program_wait();
    return;
  }
  if (!rt) throw Error("Future::wait: no runtime is running and the future is not ready");
  rt->wait(e);
}
}  // namespace

void Future::wait() const {
  if (!state_) throw Error("Future::wait: empty future");
  // Off the top-level task's thread only a running task's own argument futures may be read,
  // and that is checked whether or not the future is ready yet: a task reading a future it was
  // not given fails every time, not only when it happens to run before the producer.
  const detail::Runtime* rt = detail::Runtime::current();
  if (rt && !rt->on_app_thread()) {
    bool own = false;
    if (const detail::Op* op = detail::t_running_task)
      for (const Future& f : op->futures()) own = own || f.state_ == state_;
    if (!own) throw_wait_in_task("Future::wait");
  }
  wait_event(state_->ready_event, state_->ready);
  if (const auto& gate = state_->gate) {
    wait_event(gate->ready_event, gate->ready);
    if (gate->error) std::rethrow_exception(gate->error);
  }
  if (state_->map) {
    wait_event(state_->map->ready_event, state_->map->ready);
    if (state_->map->error) std::rethrow_exception(state_->map->error);
  }
  if (state_->error) std::rethrow_exception(state_->error);
}

bool Future::ready() const {
  if (!state_) return false;
  auto done = [&] {
    if (state_->gate && !state_->gate->ready.load(std::memory_order_acquire)) return false;
    if (state_->map) return state_->map->ready.load(std::memory_order_acquire);
    return state_->ready.load(std::memory_order_acquire);
  };
  if (done()) return true;
  // (-ll:app_cpu: the application thread runs its CPU's queued points before it answers no.)
  if (detail::Runtime* rt = detail::Runtime::current()) rt->help_app();
  return done();
}

ValueKind Future::kind() const {
  if (!state_) return ValueKind::None;
  return state_->map ? state_->map->kind : state_->kind;
}

void Future::copy_value(void* dst, std::size_t size, ValueKind want) const {
  wait();
  static const TaskResult kNothing{};  // a void task's map holds no values
  const TaskResult& v = !state_->map ? state_->value
                        : state_->map_index < state_->map->values.size()
                            ? state_->map->values[state_->map_index]
                            : kNothing;
  ValueKind have = kind();
  if (v.size != size || (want != ValueKind::Bytes && have != want && have != ValueKind::Bytes))
    throw Error(fmt::format("Future::get: the future holds a {} of {} bytes, asked for a {} of {}",
                            kind_name(have), v.size, kind_name(want), size));
  std::memcpy(dst, v.data(), size);
}

void FutureMap::wait() const {
  if (!state_) throw Error("FutureMap::wait: empty future map");
  const detail::Runtime* rt = detail::Runtime::current();
  if (rt && !rt->on_app_thread()) throw_wait_in_task("FutureMap::wait");
  wait_event(state_->ready_event, state_->ready);
  if (state_->error) std::rethrow_exception(state_->error);
}

Future FutureMap::get(const DomainPoint& p) const {
  if (!state_) throw Error("FutureMap::get: empty future map");
  if (!state_->domain.contains(p))
    throw Error(fmt::format("FutureMap::get: point {} is outside the launch domain {}", p.str(),
                            state_->domain.str()));
  const auto index = std::uint64_t(state_->domain.linearize(p));
  detail::Runtime* rt = detail::Runtime::current();
  if (state_->sharded && (!rt || !rt->on_app_thread()))
    throw Error(
        "FutureMap::get under control replication: only the top-level task reads a future "
        "map's points (a task is given them with add_future)");
  if (state_->sharded && !state_->gathered) {
    // Control replication: this shard holds only its own points' values; the first get
    // gathers every point's value to every shard (ShardExchange::reduce: up a tree of
    // shards and down again, O(log shards) messages per shard) — an op every shard issues
    // here in the same place of its program. Later gets read them here.
    detail::OpRef op = detail::make_op();
    op->kind = detail::OpKind::FutureReduce;
    op->domain = Domain(Rect<1>({0}, {0}));
    op->payload = detail::FutureReducePayload{*this, ReductionOp::None, true};
    op->future = detail::make_future_state();
    state_->gathered = op->future;
    rt->issue(std::move(op));
  }
  auto s = std::make_shared<detail::FutureState>();
  s->gate = state_->gathered;  // (null in one process: the map's values are all here)
  s->map = state_;
  s->map_index = index;
  s->ready.store(true);  // readiness is the map's
  return Future(s);
}

const Domain& FutureMap::domain() const {
  if (!state_) throw Error("FutureMap::domain: empty future map");
  return state_->domain;
}

namespace detail {

namespace {
template <typename T>
void fold_typed(TaskResult& a, const TaskResult& b, ReductionOp op) {
  T x, y;
  std::memcpy(&x, a.data(), sizeof(T));
  std::memcpy(&y, b.data(), sizeof(T));
  switch (op) {
    case ReductionOp::Sum:
      x = T(x + y);
      break;
    case ReductionOp::Prod:
      x = T(x * y);
      break;
    case ReductionOp::Min:
      x = y < x ? y : x;
      break;
    case ReductionOp::Max:
      x = y > x ? y : x;
      break;
    case ReductionOp::None:
      throw Error("reduce: no reduction operator given");
  }
  std::memcpy(a.mutable_data(), &x, sizeof(T));
}
}  // namespace

void fold_value(TaskResult& a, const TaskResult& b, ValueKind k, ReductionOp op) {
  if (const CustomReduction* r = custom_reduction(op)) {
    if (a.size != r->size || b.size != r->size)
      throw Error(fmt::format("reduce: operator '{}' folds values of {} bytes; the tasks return {}",
                              r->name, r->size, b.size));
    return r->fold(a.mutable_data(), b.data(), 1);
  }
  switch (k) {
    case ValueKind::I32:
      return fold_typed<std::int32_t>(a, b, op);
    case ValueKind::I64:
      return fold_typed<std::int64_t>(a, b, op);
    case ValueKind::U32:
      return fold_typed<std::uint32_t>(a, b, op);
    case ValueKind::U64:
      return fold_typed<std::uint64_t>(a, b, op);
    case ValueKind::F32:
      return fold_typed<float>(a, b, op);
    case ValueKind::F64:
      return fold_typed<double>(a, b, op);
    default:
      throw Error(fmt::format("reduce: values of kind {} cannot be reduced", kind_name(k)));
  }
}

}  // namespace detail
}  // namespace reprise

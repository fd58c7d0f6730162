// Reductions of sharded future maps across shards (ShardExchange::reduce): a tree rooted at
// shard 0 (reprise_rt/shard_tree.h) gathers every shard's values and spreads the result.
#include <fmt/core.h>

#include <algorithm>

#include "reprise/error.h"
#include "reprise_rt/exception_text.h"
#include "reprise_rt/future_state.h"
#include "reprise_rt/log.h"
#include "reprise_rt/runtime.h"
#include "reprise_rt/shard_exchange.h"
#include "reprise_rt/shard_tree.h"
#include "reprise_rt/wire.h"

namespace reprise::detail {

using wire::get;
using wire::get_value;
using wire::put;
using wire::put_text;
using wire::put_value;

namespace {
enum class ReduceMsg : std::uint8_t { Up = 1, Down = 2 };

using PointValues = std::vector<std::pair<std::uint32_t, TaskResult>>;
void put_values(std::vector<std::byte>& b, const PointValues& values) {
  put(b, std::uint32_t(values.size()));
  for (const auto& [p, v] : values) {
    put(b, p);
    put_value(b, v);
  }
}
PointValues get_values(const std::vector<std::byte>& b, std::size_t& at) {
  PointValues values;
  const auto count = get<std::uint32_t>(b, at);
  for (std::uint32_t i = 0; i < count; ++i) {
    const auto p = get<std::uint32_t>(b, at);
    values.emplace_back(p, get_value(b, at));
  }
  return values;
}

}  // namespace

std::vector<std::uint32_t> ShardExchange::tree_children() const {
  std::vector<std::uint32_t> out;
  const std::uint32_t me = net_.rank();
  for (std::uint32_t i = 0; i < tree_child_count(me, net_.size()); ++i)
    out.push_back(tree_child(me, i));
  return out;
}

void ShardExchange::reduce(const OpRef& op) {
  const FutureMapState& map = *op->future_reduce().source.state();
  rt_.count_value_round();
  bool abandoned = false;
  {
    std::lock_guard<std::mutex> g(mutex_);
    abandoned = abandoned_;
    if (!abandoned) reductions_[op->seq].op = op;
  }
  if (abandoned) {
    finish_reduction(*op, nullptr, "");
    return;
  }
  // (The map completes here when this shard's points have: its values are then in.)
  if (map.ready.load(std::memory_order_acquire) ||
      !rt_.events().add_waiter(map.ready_event, &ShardExchange::contribute_when_ready, this,
                               op->seq))
    contribute(op->seq);
}

void ShardExchange::contribute_when_ready(void* self, std::uint64_t seq) {
  static_cast<ShardExchange*>(self)->contribute(seq);
}

void ShardExchange::contribute(std::uint64_t seq) {
  std::vector<Outgoing> out;
  Reduction root;
  bool at_root = false;
  {
    std::lock_guard<std::mutex> g(mutex_);
    auto it = reductions_.find(seq);
    if (it == reductions_.end()) return;  // abandoned meanwhile
    Reduction& r = it->second;
    const FutureReducePayload& what = r.op->future_reduce();
    const FutureMapState& map = *what.source.state();
    if (map.error) {
      if (r.error.empty()) r.error = exception_text(map.error);
    } else {
      for (std::size_t p = 0; p < map.produced.size(); ++p)
        if (map.produced[p]) r.values.emplace_back(std::uint32_t(p), map.values[p]);
    }
    r.own_in = true;
    if (advance(r, seq, out)) {
      root = std::move(r);
      at_root = true;
      reductions_.erase(it);
    }
  }
  for (Outgoing& o : out) send(o.to, Channel::Reduce, std::move(o.bytes));
  if (at_root) conclude(std::move(root), seq);
}

bool ShardExchange::advance(Reduction& r, std::uint64_t seq, std::vector<Outgoing>& out) {
  const std::uint32_t me = net_.rank();
  if (!r.own_in || r.children_in < tree_children().size() || r.sent_up) return false;
  r.sent_up = true;
  if (me == 0) return true;
  std::vector<std::byte> b;
  put(b, ReduceMsg::Up);
  put(b, seq);
  put(b, std::uint8_t(r.error.empty() ? 0 : 1));
  if (!r.error.empty()) {
    put_text(b, r.error);
  } else {
    put_values(b, r.values);
  }
  r.values.clear();
  out.push_back(Outgoing{tree_parent(me), std::move(b)});
  return false;
}

void ShardExchange::conclude(Reduction r, std::uint64_t seq) {
  // The root: every point's value is here; fold them in point order, as one process does.
  TaskResult result;
  if (r.error.empty()) {
    const FutureReducePayload& what = r.op->future_reduce();
    const FutureMapState& map = *what.source.state();
    std::sort(r.values.begin(), r.values.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    if (r.values.size() != map.values.size()) {
      r.error = fmt::format(
          "control replication: {} heard {} values of {} (every point's shard sends its own)",
          r.op->describe(), r.values.size(), map.values.size());
    } else if (what.gather) {
      store_gathered(*r.op, r.values);
    } else {
      try {
        result = fold_in_point_order(
            r.values.size(), [&](std::size_t i) -> const TaskResult& { return r.values[i].second; },
            map.kind, what.op);
      } catch (...) {
        r.error = exception_text(std::current_exception());
      }
    }
  }
  std::vector<std::byte> b;
  put(b, ReduceMsg::Down);
  put(b, seq);
  put(b, std::uint8_t(r.error.empty() ? 0 : 1));
  if (!r.error.empty()) {
    put_text(b, r.error);
  } else if (r.op->future_reduce().gather) {
    put_values(b, r.values);  // (in point order)
  } else {
    put_value(b, result);
  }
  for (std::uint32_t c : tree_children()) send(c, Channel::Reduce, b);
  finish_reduction(*r.op, r.error.empty() ? &result : nullptr, r.error);
}

void ShardExchange::on_reduce(std::uint32_t from, std::vector<std::byte>&& b) {
  std::size_t at = 0;
  const auto kind = get<ReduceMsg>(b, at);
  const auto seq = get<std::uint64_t>(b, at);
  const bool failed = get<std::uint8_t>(b, at) != 0;
  std::vector<Outgoing> out;
  TaskResult result;
  OpRef finished;
  std::string error;
  Reduction root;
  bool at_root = false;
  if (kind == ReduceMsg::Up) {
    std::vector<std::pair<std::uint32_t, TaskResult>> values;
    if (failed)
      error = wire::rest_text(b, at);
    else
      values = get_values(b, at);
    std::lock_guard<std::mutex> g(mutex_);
    heard_from(from);
    if (abandoned_) return;
    auto it = reductions_.try_emplace(seq).first;
    Reduction& r = it->second;
    ++r.children_in;
    if (!error.empty() && r.error.empty()) r.error = std::move(error);
    for (auto& v : values) r.values.push_back(std::move(v));
    if (advance(r, seq, out)) {
      root = std::move(r);
      at_root = true;
      reductions_.erase(it);
    }
  } else {
    std::lock_guard<std::mutex> g(mutex_);
    heard_from(from);
    if (abandoned_) return;
    auto it = reductions_.find(seq);
    // (This shard sent its values up: its op is analysed here.)
    if (it == reductions_.end() || !it->second.op) {
      rt_.record_error(std::make_exception_ptr(Error(fmt::format(
          "control replication: the result of reduction #{} came from shard {} before this "
          "shard's values went up",
          seq, from))));
      return;
    }
    finished = std::move(it->second.op);
    if (failed)
      error = wire::rest_text(b, at);
    else if (finished->future_reduce().gather)
      store_gathered(*finished, get_values(b, at));
    else
      result = get_value(b, at);
    reductions_.erase(it);
    for (std::uint32_t c : tree_children()) out.push_back(Outgoing{c, b});
  }
  for (Outgoing& o : out) send(o.to, Channel::Reduce, std::move(o.bytes));
  if (at_root) conclude(std::move(root), seq);
  if (finished) finish_reduction(*finished, error.empty() ? &result : nullptr, error);
}

void ShardExchange::store_gathered(
    const Op& op, const std::vector<std::pair<std::uint32_t, TaskResult>>& values) {
  // Every shard writes the other shards' points only (its own are there, and may be read
  // meanwhile); nothing reads them before the gather completes (FutureState::gate).
  FutureMapState& map = *op.future_reduce().source.state();
  for (const auto& [p, v] : values)
    if (p < map.values.size() && !map.produced[p]) map.values[p] = v;
}

void ShardExchange::finish_reduction(Op& op, const TaskResult* value, const std::string& error) {
  if (value) {
    op.future->value = *value;
  } else {
    // A failure of the map's task was recorded where it happened (and reaches every shard);
    // a fold that failed on the root is recorded here, on every shard, with its text.
    std::exception_ptr e = rt_.failed() ? rt_.first_error() : nullptr;
    if (!error.empty() && !e) {
      e = std::make_exception_ptr(Error(error));
      rt_.record_error(e);
    }
    if (!e) e = std::make_exception_ptr(Error(op.describe() + ": abandoned"));
    if (!op.error_set.exchange(true)) op.error = e;
  }
  rt_.op_completed(op);
}

}  // namespace reprise::detail

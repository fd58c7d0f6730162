#include "reprise_rt/shard_exchange.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "reprise/error.h"
#include "reprise_rt/exception_text.h"
#include "reprise_rt/executor.h"
#include "reprise_rt/hasher.h"
#include "reprise_rt/instance.h"
#include "reprise_rt/log.h"
#include "reprise_rt/pool.h"
#include "reprise_rt/runtime.h"
#include "reprise_rt/shard_tree.h"
#include "reprise_rt/wire.h"

namespace reprise::detail {

using wire::get;
using wire::put;
using wire::put_text;

namespace {
// A Done's flags: 1 failed, 2 carries a value, 4 relayed (the shard it finished on follows).
constexpr std::uint8_t kDoneRelayed = 4;
}  // namespace

ShardExchange::ShardExchange(Runtime& rt, Network& net)
    : rt_(rt), net_(net), heard_(net.size(), 0) {
  if (rt.device() && rt.config().nccl != 0) links_ = std::make_unique<ShardLinks>(rt, net);
  listen(Channel::Request, [this](std::uint32_t from, std::vector<std::byte>&& b) {
    on_request(from, std::move(b));
  });
  listen(Channel::Done,
         [this](std::uint32_t from, std::vector<std::byte>&& b) { on_done(from, std::move(b)); });
  listen(Channel::Data,
         [this](std::uint32_t from, std::vector<std::byte>&& b) { on_data(from, std::move(b)); });
  listen(Channel::Reduce,
         [this](std::uint32_t from, std::vector<std::byte>&& b) { on_reduce(from, std::move(b)); });
  listen(Channel::Abort, [this](std::uint32_t from, std::vector<std::byte>&& b) {
    std::size_t at = 0;
    const bool ending_job = get<std::uint8_t>(b, at) != 0;
    const std::string text = wire::rest_text(b, at);
    {
      std::lock_guard<std::mutex> g(mutex_);
      abort_sent_ = true;  // no need to tell the others again
    }
    if (ending_job) {
      // The sender ends the whole job in a moment (MPI_Abort): say now why this shard stops,
      // while it still can.
      std::fprintf(stderr, "reprise: error: shard %u: shard %u ends the job: %s\n", net_.rank(),
                   from, text.c_str());
      std::fflush(stderr);
    }
    rt_.record_error(std::make_exception_ptr(Error(fmt::format("shard {}: {}", from, text))));
  });
}

void ShardExchange::listen(Channel c, Network::Handler handler) {
  net_.on(c,
          [this, c, handler = std::move(handler)](std::uint32_t from, std::vector<std::byte>&& b) {
            Profiler* prof = rt_.profiler();
            if (!prof) return handler(from, std::move(b));
            const std::uint64_t t0 = Profiler::stamp(), bytes = b.size();
            handler(from, std::move(b));
            prof->record_message(true, channel_name(c), from, bytes, t0, Profiler::stamp());
          });
}

void ShardExchange::send(std::uint32_t to, Channel c, std::vector<std::byte> bytes) {
  if (Profiler* prof = rt_.profiler()) {
    const std::uint64_t t = Profiler::stamp();
    prof->record_message(false, channel_name(c), to, bytes.size(), t, t);
  }
  net_.send(to, c, std::move(bytes));
}

const char* ShardExchange::channel_name(Channel c) {
  switch (c) {
    case Channel::Done:
      return "done";
    case Channel::Data:
      return "data";
    case Channel::Abort:
      return "abort";
    case Channel::Request:
      return "request";
    case Channel::Reduce:
      return "reduce";
    default:
      return "other";
  }
}

std::uint64_t ShardExchange::shape_of(const Op& op) {
  Hasher h;
  h.mix(std::uint64_t(op.kind) << 32 | op.task);
  h.mix(std::uint64_t(op.domain.volume()));
  for (const ReqInfo& q : op.reqs) {
    h.mix(q.tree);
    h.mix(std::uint64_t(q.privilege) << 32 | q.mask);
  }
  return h.h;
}

bool ShardExchange::completes_locally(const Op& op) {
  switch (op.kind) {
    case OpKind::IndexTask:
      // (A future map's values reach another shard only through a reduction or a gather:
      // reduce().)
      return true;
    case OpKind::Fill:
    case OpKind::Copy:
      return !op.future && !op.future_map;
    default:
      return false;  // single tasks: every shard may read their future
  }
}

Event ShardExchange::remote(Op& op, std::uint32_t index, std::uint32_t owner) {
  Event e = rt_.events().create();
  rt_.events().mark_remote(e);
  REPRISE_LOG_DEBUG(LogCategory::CtrlRepl, "proxy for op #{} index {:x} on shard {}", op.seq, index,
                    owner);
  const std::uint64_t k = key(op.seq, index);
  DoneMsg early;
  bool have_early = false, abandoned = false;
  std::vector<Event> swept;
  {
    std::lock_guard<std::mutex> g(mutex_);
    ++remote_proxies_;
    // (Under the lock: answer() reads it, and a deferred proxy is made after the op launched.)
    if (!op.generated() && index < op.point_done.size()) op.point_done[index] = e;
    abandoned = abandoned_;
    if (abandoned) {
      // (Triggered below.)
    } else if (op.local_completion) {
      // Its owner says nothing until asked (need()).
      lazy_.put(e, Lazy{e.gen, &op, index, owner});
      rt_.events().mark(e);
      auto [it, fresh] = groups_.try_emplace(&op);
      if (fresh) {
        op.add_ref();
        it->second.op = OpRef(&op);
      }
      it->second.events.push_back(e);
      if (groups_.size() >= sweep_at_) {
        sweep(swept);
        sweep_at_ = std::max<std::size_t>(256, groups_.size() * 2);
      }
    } else if (auto it = early_done_.find(k); it != early_done_.end()) {
      early = std::move(it->second);
      early_done_.erase(it);
      have_early = true;
    } else {
      op.add_ref();
      proxies_.emplace(k, Proxy{OpRef(&op), index, e});
    }
  }
  for (Event s : swept) rt_.events().trigger(s);
  if (have_early || abandoned) {
    op.add_ref();
    Proxy p{OpRef(&op), index, e};
    apply(p, early);
  }
  return e;
}

void ShardExchange::sweep(std::vector<Event>& out) {
  for (auto it = groups_.begin(); it != groups_.end();) {
    if (!it->second.op->only_reference()) {
      ++it;
      continue;
    }
    for (Event e : it->second.events) {
      Lazy* l = lazy_.find(e);
      if (!l) continue;  // asked for meanwhile
      lazy_.erase(l);
      out.push_back(e);  // nobody can wait for it: its slot may be reused
    }
    it = groups_.erase(it);
  }
}

void ShardExchange::need(Event e) {
  if (!rt_.events().marked(e)) return;  // (most events are not lazy proxies: no lock)
  Lazy l;
  OpRef op;
  {
    std::lock_guard<std::mutex> g(mutex_);
    Lazy* it = lazy_.find(e);
    if (!it) return;
    l = *it;
    lazy_.erase(it);
    rt_.events().unmark(e);
    l.op->add_ref();
    op = OpRef(l.op);
    proxies_.emplace(key(op->seq, l.index), Proxy{op, l.index, e});
    ++requests_sent_;
  }
  REPRISE_LOG_DEBUG(LogCategory::CtrlRepl, "asks shard {} for op #{} index {:x}", l.owner, op->seq,
                    l.index);
  std::vector<std::byte> b;
  put(b, op->seq);
  put(b, l.index);
  put(b, shape_of(*op));
  send(l.owner, Channel::Request, std::move(b));
}

void ShardExchange::launched(const OpRef& op) {
  std::vector<std::pair<std::uint64_t, std::uint32_t>> ready;  // (key, shard)
  {
    std::lock_guard<std::mutex> g(mutex_);
    if (abandoned_) return;
    frontier_ = op->seq;
    launched_any_ = true;
    // (An op that completed already needs no entry: a request finds it finished.)
    if (op->remaining.load(std::memory_order_acquire) > 0) launched_ops_.emplace(op->seq, op);
    while (!early_requests_.empty() && (early_requests_.begin()->first >> 32) <= frontier_) {
      auto node = early_requests_.extract(early_requests_.begin());
      for (std::uint32_t from : node.mapped()) ready.emplace_back(node.key(), from);
    }
  }
  for (const auto& [k, from] : ready) answer(k >> 32, std::uint32_t(k), from);
}

void ShardExchange::completed(const Op& op) {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = launched_ops_.find(op.seq);
  if (it != launched_ops_.end() && it->second.get() == &op) launched_ops_.erase(it);
}

void ShardExchange::on_request(std::uint32_t from, std::vector<std::byte>&& b) {
  std::size_t at = 0;
  const auto seq = get<std::uint64_t>(b, at);
  const auto index = get<std::uint32_t>(b, at);
  const auto shape = get<std::uint64_t>(b, at);
  OpRef op;
  {
    std::lock_guard<std::mutex> g(mutex_);
    heard_from(from);
    if (abandoned_) return;
    if (!launched_any_ || seq > frontier_) {
      early_requests_[key(seq, index)].push_back(from);  // answered once launched here
      return;
    }
    if (auto it = launched_ops_.find(seq); it != launched_ops_.end()) op = it->second;
  }
  if (op && shape != shape_of(*op)) {
    record_divergence(*op, from);
    return;
  }
  answer(seq, index, from);
}

namespace {
struct PendingAnswer {
  ShardExchange* exchange;
  OpRef op;
  std::uint32_t index;
  std::uint32_t to;
};
}  // namespace

void ShardExchange::answer_when_done(void* ctx, std::uint64_t) {
  PoolPtr<PendingAnswer> a(static_cast<PendingAnswer*>(ctx));
  a->exchange->send_done(a->to, a->op.get(), a->op->seq, a->index);
}

void ShardExchange::answer(std::uint64_t seq, std::uint32_t index, std::uint32_t to) {
  OpRef op;
  bool elsewhere = false;
  {
    std::lock_guard<std::mutex> g(mutex_);
    auto it = launched_ops_.find(seq);
    if (it == launched_ops_.end()) {
      // Launched here and complete: every point of it that runs here has finished.
    } else if (index >= it->second->point_done.size()) {
      elsewhere = true;
    } else {
      op = it->second;
      const Event e = op->point_done[index];
      // (A point of this shard always has an event; another's may have none yet: deferred.)
      elsewhere = !e.exists() || proxies_.count(key(seq, index)) || lazy_.find(e) != nullptr;
    }
  }
  if (elsewhere) {
    rt_.record_error(std::make_exception_ptr(Error(fmt::format(
        "control replication: shard {} waits for point {} of op #{} from shard {}, which runs it "
        "elsewhere (the mapper must choose the same processors on every shard)",
        to, index, seq, net_.rank()))));
    return;
  }
  if (!op) {
    send_done(to, nullptr, seq, index);
    return;
  }
  const Event e = op->point_done[index];
  auto pending = make_pooled<PendingAnswer>(PendingAnswer{this, op, index, to});
  if (rt_.events().add_waiter(e, &ShardExchange::answer_when_done, pending.get(), 0)) {
    pending.release();  // answered when the point finishes
    return;
  }
  send_done(to, op.get(), seq, index);
}

void ShardExchange::send_done(std::uint32_t to, const Op* op, std::uint64_t seq,
                              std::uint32_t index) {
  std::vector<std::byte> b;
  put(b, seq);
  put(b, index);
  put(b, op ? shape_of(*op) : std::uint64_t(0));
  // After a failure here the answer carries it (see finished()).
  const std::exception_ptr error = rt_.failed() ? rt_.first_error() : nullptr;
  put(b, std::uint8_t(error ? 1 : 0));
  if (error) {
    put_text(b, exception_text(error));
  }
  send(to, Channel::Done, std::move(b));
}

void ShardExchange::heard_from(std::uint32_t from) {
  if (from < heard_.size()) ++heard_[from];
}

ShardExchange::Counters ShardExchange::counters() {
  std::lock_guard<std::mutex> g(mutex_);
  Counters c;
  for (std::uint64_t n : heard_)
    if (n) ++c.peers_heard;
  c.requests_sent = requests_sent_;
  c.remote_proxies = remote_proxies_;
  return c;
}

void ShardExchange::record_divergence(const Op& op, std::uint32_t from) {
  rt_.record_error(std::make_exception_ptr(Error(fmt::format(
      "control replication: the shards issued different programs: {} here is another kind, "
      "task or requirements on shard {} (every shard must issue the same ops in the same order)",
      op.describe(), from))));
}

void ShardExchange::apply(Proxy& p, const DoneMsg& m) {
  Op& op = *p.op;
  if (m.shape && m.shape != shape_of(op)) {
    record_divergence(op, m.from);
  } else if (m.failed) {
    // A point's error names its op, point and shard already (Executor's point_failure).
    auto e = std::make_exception_ptr(
        Error(m.error.rfind("op #", 0) == 0
                  ? m.error
                  : fmt::format("{} failed on shard {}: {}", op.describe(), m.from, m.error)));
    if (!op.error_set.exchange(true)) op.error = e;
    rt_.record_error(e);
  } else if (m.has_value && !op.generated()) {
    if (op.future)
      op.future->value = m.value;
    else if (op.future_map && p.index < op.future_map->values.size())
      op.future_map->values[p.index] = m.value;
  }
  rt_.events().trigger(p.event);
  // (An op that completes locally counted its remote points when they were launched.)
  if (!op.generated() && !op.local_completion) rt_.executor().count_off(op);
}

void ShardExchange::finished(const Op& op, std::uint32_t point, const std::exception_ptr& failure) {
  if (op.local_completion || op.generated()) return;  // told when asked (answer())
  // After a failure here every completion carries it: the receiver records it before it
  // completes anything this Done completes (the Abort travels on another channel).
  const std::exception_ptr error = failure || !rt_.failed() ? failure : rt_.first_error();
  REPRISE_LOG_DEBUG(LogCategory::CtrlRepl, "op #{} point {} done", op.seq, point);
  std::vector<std::byte> b;
  put(b, op.seq);
  put(b, point);
  put(b, op.generated() ? std::uint64_t(0) : shape_of(op));
  const TaskResult* value = nullptr;
  if (!op.generated()) {
    if (op.future)
      value = &op.future->value;
    else if (op.future_map && point < op.future_map->values.size())
      value = &op.future_map->values[point];
  }
  // (Relayed: a broadcast from here would cost this shard a message per other shard.)
  std::uint8_t flags = (error ? 1 : 0) | (value && value->size ? 2 : 0) | kDoneRelayed;
  put(b, flags);
  put(b, net_.rank());
  if (error) {
    put_text(b, exception_text(error));
  } else if (flags & 2) {
    wire::put_value(b, *value);
  }
  relay_done(b, net_.rank());
}

void ShardExchange::relay_done(const std::vector<std::byte>& bytes, std::uint32_t root) {
  const std::uint32_t me = net_.rank(), n = net_.size();
  for (std::uint32_t i = 0; i < rooted_child_count(root, me, n); ++i)
    send(rooted_child(root, me, i, n), Channel::Done, bytes);
}

void ShardExchange::on_done(std::uint32_t from, std::vector<std::byte>&& b) {
  std::size_t at = 0;
  const auto seq = get<std::uint64_t>(b, at);
  const auto index = get<std::uint32_t>(b, at);
  DoneMsg m;
  m.from = from;
  m.shape = get<std::uint64_t>(b, at);
  const auto flags = get<std::uint8_t>(b, at);
  m.failed = flags & 1;
  m.has_value = flags & 2;
  if (flags & kDoneRelayed) {
    // Passed on before it is taken in here: the shards below wait for it too.
    m.from = get<std::uint32_t>(b, at);
    relay_done(b, m.from);
  }
  if (m.failed)
    m.error = wire::rest_text(b, at);
  else if (m.has_value)
    m.value = wire::get_value(b, at);
  REPRISE_LOG_DEBUG(LogCategory::CtrlRepl, "done op #{} index {:x} from {}", seq, index, from);
  Proxy p;
  {
    std::lock_guard<std::mutex> g(mutex_);
    heard_from(from);
    auto it = proxies_.find(key(seq, index));
    if (it == proxies_.end()) {
      early_done_.emplace(key(seq, index), std::move(m));
      return;
    }
    p = std::move(it->second);
    proxies_.erase(it);
  }
  apply(p, m);
}

void ShardExchange::stage(int device, const StridedLayout& dst, const StridedLayout& src,
                          const Domain& rect, std::size_t size, bool to_device) {
  // The message is a host buffer the send needs now: the copy stream runs the copy and this
  // thread waits for it (a blocking wait, not a spin).
  Device& d = *rt_.device();
  const DeviceStream s = rt_.executor().copy_stream(device);
  d.copy(s, device_copy_of(dst, src, rect, size));
  d.synchronize(s);
  rt_.count_device_copy(!to_device, to_device);
}

void ShardExchange::open_links() {
  if (links_) {
    links_->open(rt_.config().nccl);
  } else if (rt_.config().nccl == 1) {
    throw Error(
        "-ll:nccl 1: copies between framebuffers need GPUs; this run has none (add -ll:gpu N)");
  }
}

void ShardExchange::close_links() {
  if (links_) links_->close();
}

void ShardExchange::send_data(const Op& copy, std::uint32_t to) {
  if (ShardLinks* l = links(); l && l->carries(copy)) return l->send(copy);
  const Instance& src = *copy.point_instances[0];
  const Domain& rect = copy.point_rects[0];
  std::vector<std::byte> b;
  const GeneratedCopy& g = *copy.generated_copy();
  put(b, copy.seq);
  put(b, g.point);
  put(b, g.name);
  for (int fi : copy.reqs[0].field_indices) {
    if (copy.folds()) {
      // A reduction instance: its element type and operator travel with it (the receiver
      // folds), and a field its reducer did not touch travels as nothing.
      const ReductionField& rf = src.reduction_field(fi);
      put(b, std::uint8_t(rf.touched));
      put(b, std::uint8_t(rf.type));
      put(b, std::uint8_t(rf.op));
      if (!rf.touched) continue;
    }
    const std::size_t size = src.field_size(fi);
    if (src.on_device() && !copy.folds()) {
      // Out of a framebuffer: staged through host memory (the message) by a device copy.
      const std::size_t at = b.size();
      b.resize(at + std::size_t(rect.volume()) * size);
      stage(src.device_index(), StridedLayout::dense(b.data() + at, rect, size),
            src.layout(fi, rect), rect, size, false);
      continue;
    }
    const std::byte* base = src.field_data(fi);
    Instance::for_each_row(rect, size, [&](const DomainPoint& row, std::size_t n) {
      const std::byte* from = base + src.offset_of(row, size);
      b.insert(b.end(), from, from + n);
    });
  }
  REPRISE_LOG_DEBUG(LogCategory::CtrlRepl, "data op #{} point {} copy {} to {} ({} bytes)",
                    copy.seq, g.point, g.name, to, b.size());
  send(to, Channel::Data, std::move(b));
}

void ShardExchange::on_data(std::uint32_t from, std::vector<std::byte>&& b) {
  std::size_t at = 0;
  CopyName k;
  k.seq = get<std::uint64_t>(b, at);
  k.point = get<std::uint32_t>(b, at);
  k.name = get<std::uint32_t>(b, at);
  k.from = from;
  PointTask* t = nullptr;
  {
    std::lock_guard<std::mutex> g(mutex_);
    heard_from(from);
    data_.emplace(k, std::move(b));
    auto it = recvs_.find(k);
    if (it == recvs_.end()) return;  // the analysis has not reached this copy yet
    t = it->second;
    recvs_.erase(it);
  }
  rt_.executor().release(t);
}

void ShardExchange::expect_data(PointTask* t) {
  const CopyName k = copy_name(*t->op, rt_.instances());
  {
    std::lock_guard<std::mutex> g(mutex_);
    if (!data_.count(k) && !abandoned_) {
      recvs_.emplace(k, t);
      return;
    }
  }
  rt_.executor().release(t);
}

void ShardExchange::unpack(const Op& copy) {
  if (ShardLinks* l = links(); l && l->carries(copy)) return l->unpack(copy);
  std::vector<std::byte> b;
  {
    std::lock_guard<std::mutex> g(mutex_);
    auto it = data_.find(copy_name(copy, rt_.instances()));
    if (it == data_.end()) return;  // abandoned after an error
    b = std::move(it->second);
    data_.erase(it);
  }
  const Instance& dst = *copy.point_instances[1];
  const Domain& rect = copy.point_rects[0];
  std::size_t at = sizeof(std::uint64_t) + 2 * sizeof(std::uint32_t);
  for (int fi : copy.reqs[1].field_indices) {
    ReductionField rf;
    if (copy.folds()) {
      rf.touched = get<std::uint8_t>(b, at) != 0;
      rf.type = ScalarType(get<std::uint8_t>(b, at));
      rf.op = ReductionOp(get<std::uint8_t>(b, at));
      if (!rf.touched) continue;
    }
    const std::size_t size = dst.field_size(fi);
    if (dst.on_device() && !copy.folds()) {
      // Into a framebuffer: a device copy out of the message.
      const std::size_t n = std::size_t(rect.volume()) * size;
      if (at + n > b.size())
        throw Error(fmt::format(
            "control replication: the data of op #{}'s copy {}.{} is too "
            "short ({} bytes)",
            copy.seq, copy.generated_copy()->point, copy.generated_copy()->name, b.size()));
      stage(dst.device_index(), dst.layout(fi, rect),
            StridedLayout::dense(b.data() + at, rect, size), rect, size, true);
      at += n;
      continue;
    }
    std::byte* base = dst.field_data(fi);
    Instance::for_each_row(rect, size, [&](const DomainPoint& row, std::size_t n) {
      if (at + n > b.size())
        throw Error(fmt::format(
            "control replication: the data of op #{}'s copy {}.{} is too "
            "short ({} bytes)",
            copy.seq, copy.generated_copy()->point, copy.generated_copy()->name, b.size()));
      std::byte* to = base + dst.offset_of(row, size);
      if (copy.folds())
        fold_elements(rf.type, rf.op, to, b.data() + at, n / size);
      else
        std::memcpy(to, b.data() + at, n);
      at += n;
    });
  }
}

void ShardExchange::abandon() {
  std::vector<OpRef> failed_reductions;
  std::vector<Proxy> proxies;
  std::vector<PointTask*> recvs;
  std::vector<Event> lazy;
  {
    std::lock_guard<std::mutex> g(mutex_);
    if (abandoned_) return;
    abandoned_ = true;
    for (auto& [k, p] : proxies_) proxies.push_back(std::move(p));
    proxies_.clear();
    for (auto& [k, t] : recvs_) recvs.push_back(t);
    recvs_.clear();
    lazy_.for_each([&](Event e) { lazy.push_back(e); });
    lazy_.clear();
    groups_.clear();
    launched_ops_.clear();
    early_requests_.clear();
    for (auto& [seq, r] : reductions_)
      if (r.op) failed_reductions.push_back(std::move(r.op));
    reductions_.clear();
  }
  for (Event e : lazy) rt_.events().trigger(e);
  for (const OpRef& op : failed_reductions) finish_reduction(*op, nullptr, "");
  const DoneMsg none{};
  for (Proxy& p : proxies) apply(p, none);
  for (PointTask* t : recvs) rt_.executor().release(t);
  if (links_) links_->abandon();
}

std::string ShardExchange::describe_held() {
  std::lock_guard<std::mutex> g(mutex_);
  std::string out;
  // The oldest few keys (op number, index) of a table, by op number.
  const auto oldest = [&](const char* what, std::vector<std::uint64_t> keys, auto&& extra) {
    if (keys.empty()) return;
    std::sort(keys.begin(), keys.end());
    out += fmt::format("; {} {}:", keys.size(), what);
    for (std::size_t i = 0; i < std::min<std::size_t>(keys.size(), 4); ++i)
      out +=
          fmt::format(" op #{} point {}{}", keys[i] >> 32, std::uint32_t(keys[i]), extra(keys[i]));
    if (keys.size() > 4) out += " ...";
  };
  const auto none = [](std::uint64_t) { return std::string(); };
  std::vector<std::uint64_t> k;
  for (const auto& [key, p] : proxies_) k.push_back(key);
  oldest("completions awaited from other shards", k, none);
  k.clear();
  // The oldest few copies of a table (op number, point, name, source shard).
  const auto oldest_copies = [&](const char* what, std::vector<CopyName> keys) {
    if (keys.empty()) return;
    std::sort(keys.begin(), keys.end());
    out += fmt::format("; {} {}:", keys.size(), what);
    for (std::size_t i = 0; i < std::min<std::size_t>(keys.size(), 4); ++i)
      out += fmt::format(" op #{} copy {}.{} (from shard {})", keys[i].seq, keys[i].point,
                         keys[i].name, keys[i].from);
    if (keys.size() > 4) out += " ...";
  };
  std::vector<CopyName> copies;
  for (const auto& [key, t] : recvs_) copies.push_back(key);
  oldest_copies("copies waiting for their data", std::move(copies));
  copies.clear();
  for (const auto& [key, from] : early_requests_) k.push_back(key);
  oldest("requests for ops not launched here yet", k, [&](std::uint64_t key) {
    return fmt::format(" (from shard {})", early_requests_.at(key).front());
  });
  k.clear();
  for (const auto& [key, m] : early_done_) k.push_back(key);
  oldest("completions heard of before their op was launched here", k, none);
  k.clear();
  for (const auto& [key, bytes] : data_) copies.push_back(key);
  oldest_copies("copies' data not unpacked yet", std::move(copies));
  if (!lazy_.empty())
    out += fmt::format("; {} proxies of other shards' points nobody here waited for", lazy_.size());
  if (!reductions_.empty()) {
    // (A reduction waits for this shard's points, then its tree children, then the result.)
    out += fmt::format("; {} future-map reductions in progress:", reductions_.size());
    std::size_t shown = 0;
    for (const auto& [seq, r] : reductions_) {
      if (shown++ == 4) {
        out += " ...";
        break;
      }
      out += fmt::format(" op #{} (awaits {})", seq,
                         !r.own_in                                ? "this shard's values"
                         : r.children_in < tree_children().size() ? "values from child shards"
                         : r.sent_up                              ? "the result"
                                                                  : "sending");
    }
  }
  if (ShardLinks* l = links())
    if (std::string held = l->describe_held(); !held.empty()) out += "; " + held;
  if (out.empty()) return "nothing held for other shards";
  return out.substr(2);
}

void ShardExchange::broadcast_abort(const std::exception_ptr& e, bool ending_job) {
  {
    std::lock_guard<std::mutex> g(mutex_);
    if (abort_sent_ && !ending_job) return;
    abort_sent_ = true;
  }
  std::vector<std::byte> b;
  put(b, std::uint8_t(ending_job ? 1 : 0));
  put_text(b, exception_text(e));
  for (std::uint32_t s = 0; s < net_.size(); ++s)
    if (s != net_.rank()) send(s, Channel::Abort, b);
}

}  // namespace reprise::detail

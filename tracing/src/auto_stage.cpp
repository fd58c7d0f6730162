#include "auto_stage.h"

#include <fmt/core.h>

#include <exception>

#include "reprise_rt/log.h"
#include "reprise_rt/op_token.h"

namespace reprise::detail {

namespace {
bool traceable(const Op& op) {
  switch (op.kind) {
    case OpKind::Task:
    case OpKind::IndexTask:
    case OpKind::Fill:
    case OpKind::Copy:
    case OpKind::FutureReduce:
      return true;
    default:
      return false;
  }
}

std::unique_ptr<ShardLateAgreement> make_agreement(Runtime& rt) {
  if (!rt.network() || rt.num_shards() < 2) return nullptr;
  return std::make_unique<ShardLateAgreement>(rt, *rt.network());
}
}  // namespace

AutoTraceStage::AutoTraceStage(Runtime& rt, std::unique_ptr<Memoizer> next,
                               const tracing::AutoTraceOptions& opt, const std::string& log_path)
    : rt_(rt),
      next_(std::move(next)),
      agreement_(make_agreement(rt)),
      tracer_(opt, *this, agreement_.get()),
      max_held_(std::size_t(rt.window()) / 4),
      follows_(rt.config().at_follow != 0) {
  if (!log_path.empty()) {
    // Under control replication every shard writes its own log: <file>.<shard>.
    const std::string path =
        rt.num_shards() > 1 ? fmt::format("{}.{}", log_path, rt.shard()) : log_path;
    log_ = std::fopen(path.c_str(), "w");
    if (!log_)
      REPRISE_LOG_WARN(LogCategory::AutoTrace, "auto tracing: cannot write the log {}", path);
    else
      std::fputs(
          "# found <trace> length <n> at_op <i> | trace <id> first_op <i> length <n> | "
          "op <index> <T|U> [trace]\n",
          log_);
  }
}

AutoTraceStage::~AutoTraceStage() {
  if (log_) {
    const auto& s = tracer_.stats();
    std::fprintf(log_,
                 "# ops %llu analyses %llu skipped %llu late %llu candidates %llu traces %llu "
                 "traced_ops %llu\n",
                 (unsigned long long)s.ops, (unsigned long long)s.analyses,
                 (unsigned long long)s.analyses_skipped, (unsigned long long)s.late_analyses,
                 (unsigned long long)s.candidates, (unsigned long long)s.traces_issued,
                 (unsigned long long)s.ops_traced);
    // The same on every shard of a run: the delay is agreed; the waits are this shard's.
    std::fprintf(log_, "# ingest_delay %zu agreement_waits %llu\n", tracer_.ingest_delay(),
                 (unsigned long long)(agreement_ ? agreement_->waits() : 0));
    // Recorded in vain (so far): traces issued once; replays of held ops at barriers; loops
    // dropped for the outer loop they are nested in.
    std::fprintf(log_,
                 "# recorded_not_replayed %llu held_replays %llu prefix_replays %llu "
                 "inner_loops_demoted %llu\n",
                 (unsigned long long)tracer_.recorded_not_replayed(),
                 (unsigned long long)s.held_replays, (unsigned long long)s.prefix_replays,
                 (unsigned long long)s.inner_loops_demoted);
    std::fprintf(log_, "# traces_ahead %llu withdrawn %llu\n", (unsigned long long)traces_ahead_,
                 (unsigned long long)withdrawn_);
    const tracing::CoverageSummary sum = tracing::summarize_coverage(replayed_);
    std::fprintf(log_, "# coverage %.4f first_replay %lld steady_at %lld\n", sum.coverage,
                 sum.first_replay, sum.steady_at);
    std::fclose(log_);
  }
}

bool AutoTraceStage::holds(Event e) const {
  if (!e.exists()) return true;  // waiting for everything
  for (const OpRef& o : held_)
    if (o->done == e) return true;
  return false;
}

void AutoTraceStage::submit(const OpRef& op) {
  if (in_manual_trace_) {
    // The program traces these ops itself; automatic traces must not nest inside.
    if (op->kind == OpKind::EndTrace) in_manual_trace_ = false;
    next_->submit(op);
    return;
  }
  if (traceable(*op)) {
    const std::uint64_t token = token_of(*op);
    if (!ahead_.empty() && token == ahead_[ahead_held_]) {
      follow(op);
    } else {
      unfollow();
      hold(op, token);
    }
    look_ahead();
    return;
  }
  // (Nothing is left ahead past another op: the tracer sees the ops followed first.)
  unfollow();
  if (op->kind == OpKind::Flush) {
    // Only a wait on an op still held (or on everything) has to release what is held. Such a
    // wait is announced on every shard: an op still held cannot have completed anywhere.
    if (holds(op->awaited())) tracer_.barrier();
    next_->submit(op);
    look_ahead();
    return;
  }
  // Fences, destruction and manual trace marks: nothing may be held across them, and no
  // repeat may span them.
  tracer_.barrier();
  if (op->kind == OpKind::BeginTrace) in_manual_trace_ = true;
  next_->submit(op);
  look_ahead();
}

void AutoTraceStage::hold(const OpRef& op, std::uint64_t token) {
  held_.push_back(op);
  tracer_.push(token);
  // Never hold so many that the application's window (it waits until half the window has
  // drained) could not drain past them. Decided by the op stream alone, not by timing, so
  // every shard of a control-replicated run decides alike.
  if (held_.size() > max_held_) tracer_.flush();
}

bool AutoTraceStage::take_followed(OpRef& op) {
  // (Not the run's last op: the trace's replay runs in Runtime::analyse, timed and guarded.)
  if (ahead_held_ + 1 >= ahead_.size() || !traceable(*op) || token_of(*op) != ahead_[ahead_held_])
    return false;
  follow(std::move(op));
  return true;
}

void AutoTraceStage::look_ahead_now() {
  if (ahead_open()) return;
  std::uint32_t id = 0;
  const std::vector<std::uint64_t>* run =
      follows_ && held_.empty() && !in_manual_trace_ ? tracer_.run_ahead(id) : nullptr;
  // (No more ops ahead than may be held: hold() would have flushed them on the way.)
  if (!run || run->size() < 2 || run->size() > max_held_) {
    if (!ahead_.empty()) {
      ahead_.clear();
      rt_.set_following(false);
    }
    return;
  }
  if (ahead_.empty()) rt_.set_following(true);
  if (ahead_.empty() || id != ahead_id_) ahead_.assign(run->begin(), run->end());
  ahead_id_ = id;
}

void AutoTraceStage::follow(OpRef op) {
  if (!ahead_open()) next_->submit(marker(OpKind::BeginTrace, ahead_id_));
  next_->hold_in_trace(std::move(op));
  if (++ahead_held_ == ahead_.size()) push_followed();
}

void AutoTraceStage::push_followed() {
  // The tracer sees them now, as hold() would have shown them (at most max_held_ of them: no
  // flush on the way). Where it issues the trace followed over them, begin_trace and
  // end_trace only confirm it; anything else it does with them withdraws them first.
  std::exception_ptr error = push_ahead(ahead_held_);
  withdraw();  // (the tracer holds them still: held here)
  if (error) std::rethrow_exception(error);
}

std::exception_ptr AutoTraceStage::push_ahead(std::size_t n) {
  // Every token goes in even where the analysis of an op handed on meanwhile throws: an op
  // held here whose token the tracer never saw would never be handed on. The first error is
  // the caller's to throw.
  std::exception_ptr first;
  for (std::size_t i = 0; i < n;) {
    // (Most of a followed run only goes on: taken in at once, with nothing to hand on.)
    if (const std::size_t k = tracer_.follow({ahead_.data() + i, n - i})) {
      i += k;
      continue;
    }
    try {
      tracer_.push(ahead_[i++]);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  return first;
}

void AutoTraceStage::withdraw() {
  if (!ahead_open()) return;
  next_->withdraw_trace(held_);
  withdrawn_ += ahead_held_;
  ahead_held_ = 0;
}

void AutoTraceStage::unfollow() {
  if (!ahead_open()) return;
  const std::size_t n = ahead_held_;
  withdraw();
  // Their tokens, as hold() would have pushed them: the ops are held already (at most
  // max_held_: no flush on the way).
  if (std::exception_ptr error = push_ahead(n)) std::rethrow_exception(error);
}

OpRef AutoTraceStage::take(std::uint64_t index) {
  // The tracer reports ops in order, each once.
  (void)index;
  OpRef op = std::move(held_.front());
  held_.pop_front();
  ++held_base_;
  return op;
}

OpRef AutoTraceStage::marker(OpKind kind, std::uint32_t id, bool prefix) {
  // Two per trace: a loop traced six ops at a time made and freed one op for every three it
  // launched before its marks were used again.
  return trace_mark(kind == OpKind::BeginTrace ? begin_mark_ : end_mark_, kind, id, prefix);
}

void AutoTraceStage::forward_untraced(std::uint64_t index) {
  withdraw();
  if (log_) {
    std::fprintf(log_, "op %llu U\n", (unsigned long long)index);
    replayed_.push_back(false);
  }
  next_->submit(take(index));
}

void AutoTraceStage::begin_trace(std::uint32_t id, std::uint64_t first_op, std::size_t length) {
  if (log_) {
    std::fprintf(log_, "trace %u first_op %llu length %zu\n", id, (unsigned long long)first_op,
                 length);
    replaying_ = !issued_.insert(id).second;
  }
  current_trace_ = id;
  if (ahead_open()) {
    // (Ops are ahead during a callback only while push_followed shows them: unfollow withdraws
    // them before it pushes.) The trace followed, over them: its BeginTrace went in before them.
    if (id == ahead_id_ && length == ahead_held_ && first_op == held_base_) {
      ahead_issued_ = true;
      return;
    }
    withdraw();
  }
  next_->submit(marker(OpKind::BeginTrace, id));
}

void AutoTraceStage::begin_prefix(std::uint32_t id, std::uint64_t first_op, std::size_t length) {
  if (log_)
    std::fprintf(log_, "prefix %u first_op %llu length %zu\n", id, (unsigned long long)first_op,
                 length);
  current_trace_ = id;
  replaying_ = true;  // (read with the log only)
  withdraw();
  next_->submit(marker(OpKind::BeginTrace, id, true));
}

void AutoTraceStage::forward_traced(std::uint64_t index) {
  if (log_) {
    std::fprintf(log_, "op %llu T %u\n", (unsigned long long)index, current_trace_);
    replayed_.push_back(replaying_);
  }
  // (Between this trace's marks the memoizer only buffers it: handed over, not submitted.)
  if (!ahead_issued_) next_->hold_in_trace(take(index));
}

void AutoTraceStage::forward_trace_ops(std::uint64_t first, std::uint64_t end) {
  if (ahead_issued_ && !log_) return;  // (handed on ahead)
  for (std::uint64_t i = first; i < end; ++i) forward_traced(i);
}

void AutoTraceStage::end_trace(std::uint32_t id) {
  if (ahead_issued_) {
    held_base_ += ahead_held_;
    ahead_held_ = 0;
    ahead_issued_ = false;
    ++traces_ahead_;
  }
  next_->submit(marker(OpKind::EndTrace, id));
}

void AutoTraceStage::candidate_found(std::uint32_t id, std::size_t length, std::uint64_t at_op) {
  // A trace longer than may be held: a larger window where it can grow (decided by the
  // candidates found, the same on every shard).
  if (length > max_held_) max_held_ = std::size_t(rt_.raise_window(std::int64_t(4 * length))) / 4;
  if (log_)
    std::fprintf(log_, "found %u length %zu at_op %llu\n", id, length, (unsigned long long)at_op);
}

}  // namespace reprise::detail

#pragma once
// The automatic-tracing stage of the pipeline: hashes each op into a token for the Apophenia
// front-end, holds the ops it may still wrap in a trace, and passes them on — untraced, or
// between a begin_trace and an end_trace of an automatic trace id — to the memoizer.
#include <cstdio>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "late_agreement.h"
#include "reprise_memoizer/memoizer.h"
#include "reprise_rt/graph.h"
#include "reprise_rt/runtime.h"
#include "reprise_tracing/auto_tracer.h"

namespace reprise::detail {

class AutoTraceStage final : public OpSink, private tracing::AutoTraceSink {
 public:
  AutoTraceStage(Runtime& rt, std::unique_ptr<Memoizer> next, const tracing::AutoTraceOptions& opt,
                 const std::string& log_path);
  ~AutoTraceStage() override;
  void submit(const OpRef& op) override;
  // Runtime::issue offers each op here first where analysis runs inline (Runtime::follower_):
  // an op that goes on the loop's run being followed, not its last, is handed to the
  // memoizer at once, as a manual trace's are — no push, analyse or stage in between.
  bool take_followed(OpRef& op) override;
  // Background analyses spawned from this thread finish on it (where TBB has no worker thread,
  // nobody else would run them).
  void finish() override {
    unfollow();
    tracer_.finish_background();
    next_->finish();
  }

 private:
  void forward_untraced(std::uint64_t op) override;
  void begin_trace(std::uint32_t id, std::uint64_t first_op, std::size_t length) override;
  void begin_prefix(std::uint32_t id, std::uint64_t first_op, std::size_t length) override;
  void forward_traced(std::uint64_t op) override;
  void forward_trace_ops(std::uint64_t first, std::uint64_t end) override;
  void end_trace(std::uint32_t id) override;
  void candidate_found(std::uint32_t id, std::size_t length, std::uint64_t at_op) override;
  OpRef take(std::uint64_t index);
  void hold(const OpRef& op, std::uint64_t token);
  // Following a settled loop (AutoTracer::run_ahead): the ops that go on its run are handed
  // to the memoizer as they come, after a BeginTrace given ahead, and their tokens pushed
  // when the trace's last op is in (the tracer sees the same ops in the same order, and
  // decides alike). Where it issues that trace over those ops, only the EndTrace is left to
  // give; anything else (an op off the run, a wait, another trace) withdraws them first
  // (unfollow): they are held here as any other op, as they would have been.
  void follow(OpRef op);
  void unfollow();
  void withdraw();  // the ops handed on ahead: held here (their tokens pushed or not)
  void push_followed();
  std::exception_ptr push_ahead(std::size_t n);  // the first n tokens ahead
  // After each op: whether a run is followed now, and which (look_ahead_now).
  void look_ahead() {
    if (held_.empty() || !ahead_.empty()) look_ahead_now();
  }
  void look_ahead_now();
  bool ahead_open() const { return ahead_held_ > 0; }
  OpRef marker(OpKind kind, std::uint32_t id, bool prefix = false);
  bool holds(Event e) const;

  Runtime& rt_;
  std::unique_ptr<Memoizer> next_;
  std::unique_ptr<ShardLateAgreement> agreement_;  // control replication only
  tracing::AutoTracer tracer_;
  std::size_t max_held_;  // most ops held at once (a quarter of the window)
  std::deque<OpRef> held_;
  // The run followed: the trace it goes on with (its tokens; empty while not following), the
  // ops of it handed on ahead (their tokens not pushed yet: the tracer has not seen them),
  // and, while they are pushed, whether the tracer issued that very trace.
  std::vector<std::uint64_t> ahead_;
  std::uint32_t ahead_id_ = 0;
  std::size_t ahead_held_ = 0;
  bool ahead_issued_ = false;
  bool follows_;  // -lg:auto_trace:follow
  // For the log: traces issued over ops handed on ahead, and ops withdrawn.
  std::uint64_t traces_ahead_ = 0, withdrawn_ = 0;
  // The last begin and end marks (marker): reused while nothing else holds them.
  OpRef begin_mark_, end_mark_;
  std::uint64_t held_base_ = 0;  // tracer index of held_.front()
  std::FILE* log_ = nullptr;
  std::uint32_t current_trace_ = 0;
  // With the log: per op, whether the tracer issued it in a replay (a trace id issued
  // before, or a prefix), for the log's coverage and steady-state line.
  std::vector<bool> replayed_;
  std::unordered_set<std::uint32_t> issued_;
  bool replaying_ = false;
  bool in_manual_trace_ = false;  // the program's own trace: its ops pass straight through
};

}  // namespace reprise::detail

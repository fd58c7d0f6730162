#pragma once
// The automatic-tracing stage of the pipeline: hashes each op into a token for the Apophenia
// front-end, holds the ops it may still wrap in a trace, and passes them on — untraced, or
// between a begin_trace and an end_trace of an automatic trace id — to the memoizer.
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "late_agreement.h"
#include "reprise_rt/graph.h"
#include "reprise_rt/runtime.h"
#include "reprise_tracing/auto_tracer.h"

namespace reprise::detail {

class AutoTraceStage final : public OpSink, private tracing::AutoTraceSink {
 public:
  AutoTraceStage(Runtime& rt, std::unique_ptr<OpSink> next, const tracing::AutoTraceOptions& opt,
                 const std::string& log_path);
  ~AutoTraceStage() override;
  void submit(const OpRef& op) override;
  // Background analyses spawned from this thread finish on it (where TBB has no worker thread,
  // nobody else would run them).
  void finish() override {
    tracer_.finish_background();
    next_->finish();
  }

 private:
  void forward_untraced(std::uint64_t op) override;
  void begin_trace(std::uint32_t id, std::uint64_t first_op, std::size_t length) override;
  void begin_prefix(std::uint32_t id, std::uint64_t first_op, std::size_t length) override;
  void forward_traced(std::uint64_t op) override;
  void end_trace(std::uint32_t id) override;
  void candidate_found(std::uint32_t id, std::size_t length, std::uint64_t at_op) override;
  OpRef take(std::uint64_t index);
  OpRef marker(OpKind kind, std::uint32_t id, bool prefix = false);
  bool holds(Event e) const;

  Runtime& rt_;
  std::unique_ptr<OpSink> next_;
  std::unique_ptr<ShardLateAgreement> agreement_;  // control replication only
  tracing::AutoTracer tracer_;
  std::size_t max_held_;  // most ops held at once (a quarter of the window)
  std::deque<OpRef> held_;
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

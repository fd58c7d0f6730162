#pragma once
// The recorder: a GraphSink that forwards every instruction to the executor (the recorded
// iteration runs normally) and writes it into a template in SSA form. Preconditions on events
// produced before the trace become waits on the template's fence (slot 0).
#include <cstdint>
#include <span>
#include <unordered_map>

#include "reprise_memoizer/trace_template.h"
#include "reprise_rt/graph.h"

namespace reprise::detail {

class Recorder final : public GraphSink {
 public:
  explicit Recorder(GraphSink& inner) : inner_(inner) {}
  void start(TraceTemplate* t);
  void set_current_op(std::uint32_t index) { current_op_ = index; }
  void finish() { t_ = nullptr; }

  Event op(Op& op, std::uint32_t point, Processor proc, std::span<const Event> pre) override;
  Event copy(const OpRef& copy, Processor proc, std::span<const Event> pre,
             std::uint32_t for_point) override;
  Event merge(std::span<const Event> events) override;
  // The copy (its index in the template's copies) that defined event e, or -1.
  std::int32_t copy_of(Event e) const;
  Event fence(std::span<const Event> before) override { return inner_.fence(before); }

 private:
  static std::uint64_t key(Event e) { return std::uint64_t(e.id) << 32 | e.gen; }
  // Appends the slots of events to the template's pool; true if one came from outside.
  bool add_pre(std::span<const Event> events, Instruction& in);

  GraphSink& inner_;
  TraceTemplate* t_ = nullptr;
  std::uint32_t current_op_ = 0;
  std::unordered_map<std::uint64_t, std::uint32_t> slot_of_;
  std::unordered_map<std::uint64_t, std::int32_t> copy_of_;
};

}  // namespace reprise::detail

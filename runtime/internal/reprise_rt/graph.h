#pragma once
// The graph calculus of the dynamic-tracing paper: what the analysis emits per op. The
// executor implements it by launching work; the memoizer's recorder wraps it to record.
//   e := fence            e := op(k, pre)            e := merge(e1..en)
//   e := copy(src, dst, rect, fields, pre)
// (send/recv instructions join with control replication.)
#include <cstdint>
#include <span>

#include "reprise/types.h"
#include "reprise_rt/assert.h"
#include "reprise_rt/event.h"
#include "reprise_rt/op.h"

namespace reprise::detail {

class GraphSink {
 public:
  virtual ~GraphSink() = default;
  // Launches point `point` of op on proc once every event in pre has triggered; returns the
  // point's completion event (also stored in op.point_done[point]).
  virtual Event op(Op& op, std::uint32_t point, Processor proc, std::span<const Event> pre) = 0;
  // Runs a generated copy (an Op with `generated` set: reqs[0]/[1] name the fields, its
  // instances the source and destination, rect(0,0) the rectangle) on proc once pre has
  // triggered. `for_point` is the point of the op being analysed that needs it.
  virtual Event copy(const OpRef& copy, Processor proc, std::span<const Event> pre,
                     std::uint32_t for_point) = 0;
  virtual Event merge(std::span<const Event> events) = 0;
  // e := fence: an event that triggers once every event in `before` (the completions of all
  // ops issued earlier) has triggered.
  virtual Event fence(std::span<const Event> before) = 0;
  // Eager launches (Analysis, -lg:eager): whether a point mapped to proc can run on the
  // calling thread now, and running it there — to completion, its op counted off — where
  // nothing it could wait for is pending. A sink that records, or whose points run on threads
  // of their own, cannot. (kind: the op's task, null for a fill or copy.)
  virtual bool runs_inline(Processor, const TaskInfo*) const { return false; }
  // (coords: the point's coordinates where the caller has them, else delinearized.)
  virtual void run_inline(Op&, std::uint32_t, Processor, const DomainPoint* = nullptr) {
    assertion_failed("runs_inline(proc)", "a point runs inline only where its sink can run it",
                     __FILE__, __LINE__);
  }
};

// A stage of the utility thread's pipeline: receives ops in program order.
class OpSink {
 public:
  virtual ~OpSink() = default;
  virtual void submit(const OpRef& op) = 0;
  // An op of a trace the stage holds until the trace ends, handed over between the trace's
  // marks (Runtime::issue for a manual trace analysed inline; the automatic tracing stage for
  // its own traces): only the memoizer is given these.
  virtual void hold_in_trace(OpRef op) { submit(op); }
  // Offered each op first by Runtime::issue where the stage asked for it (the automatic
  // tracing stage following a loop: set_pipeline's follower): true if it took the op.
  virtual bool take_followed(OpRef& /*op*/) { return false; }
  // Called on the utility thread after the last op, before it exits.
  virtual void finish() {}
};

}  // namespace reprise::detail

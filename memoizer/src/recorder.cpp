#include "reprise_memoizer/recorder.h"

namespace reprise::detail {

void Recorder::start(TraceTemplate* t) {
  t_ = t;
  current_op_ = 0;
  slot_of_.clear();
  copy_of_.clear();
}

bool Recorder::add_pre(std::span<const Event> events, Instruction& in) {
  in.pre_begin = std::uint32_t(t_->pre_slots.size());
  bool external = false;
  for (Event e : events) {
    if (!e.exists()) continue;
    auto it = slot_of_.find(key(e));
    if (it == slot_of_.end()) {
      external = true;  // produced before the trace: covered by the entry fence
    } else {
      t_->pre_slots.push_back(it->second);
    }
  }
  in.pre_count = std::uint32_t(t_->pre_slots.size()) - in.pre_begin;
  return external;
}

Event Recorder::op(Op& op, std::uint32_t point, Processor proc, std::span<const Event> pre) {
  Event out = inner_.op(op, point, proc, pre);
  if (!t_) return out;
  Instruction in;
  in.kind = Instruction::Kind::Op;
  in.op = current_op_;
  in.point = point;
  in.proc = proc;
  // Every op of a trace is ordered after the trace's entry fence, whatever the recorded
  // iteration happened to depend on: a replay may follow different ops than the recording
  // did. Transitive reduction later drops the waits a predecessor already implies.
  add_pre(pre, in);
  in.uses_fence = true;
  in.out = t_->num_slots++;
  t_->instrs.push_back(in);
  // (Control replication: another shard's point that nothing here waits for has no event.)
  if (out.exists()) slot_of_[key(out)] = in.out;
  return out;
}

Event Recorder::copy(const OpRef& copy, Processor proc, std::span<const Event> pre,
                     std::uint32_t for_point) {
  Event out = inner_.copy(copy, proc, pre, for_point);
  if (!t_) return out;
  Instruction in;
  in.kind = Instruction::Kind::Copy;
  in.op = std::uint32_t(t_->copies.size());
  in.point = 0;
  in.proc = proc;
  add_pre(pre, in);
  in.uses_fence = true;  // like ops: after the entry fence, whatever it followed here
  in.out = t_->num_slots++;
  t_->instrs.push_back(in);
  t_->copies.push_back(TemplateCopy{copy, current_op_, for_point});
  if (!out.exists()) return out;  // (control replication: a copy between two other shards)
  slot_of_[key(out)] = in.out;
  copy_of_[key(out)] = std::int32_t(in.op);
  return out;
}

std::int32_t Recorder::copy_of(Event e) const {
  auto it = copy_of_.find(key(e));
  return it == copy_of_.end() ? -1 : it->second;
}

Event Recorder::merge(std::span<const Event> events) {
  Event out = inner_.merge(events);
  if (!t_ || !out.exists()) return out;
  Instruction in;
  in.kind = Instruction::Kind::Merge;
  in.uses_fence = add_pre(events, in);
  in.out = t_->num_slots++;
  t_->instrs.push_back(in);
  slot_of_[key(out)] = in.out;
  return out;
}

}  // namespace reprise::detail

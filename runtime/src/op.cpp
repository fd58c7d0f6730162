#include "reprise_rt/op.h"

#include <fmt/core.h>

#include "reprise_rt/assert.h"
#include "reprise_rt/runtime.h"

namespace reprise::detail {

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::Task:
      return "task";
    case OpKind::IndexTask:
      return "index task";
    case OpKind::Fill:
      return "fill";
    case OpKind::Copy:
      return "copy";
    case OpKind::FutureReduce:
      return "future reduction";
    case OpKind::Fence:
      return "fence";
    case OpKind::DestroyRegion:
      return "destruction";
    case OpKind::BeginTrace:
      return "begin trace";
    case OpKind::EndTrace:
      return "end trace";
    case OpKind::Flush:
      return "flush";
    case OpKind::Summary:
      return "trace summary";
  }
  return "?";
}

std::string Op::describe() const {
  if (task_info) return fmt::format("op #{} ({} '{}')", seq, to_string(kind), task_info->name);
  return fmt::format("op #{} ({})", seq, to_string(kind));
}

OpRef make_mark(OpKind kind, TraceID id, bool prefix) {
  REPRISE_ASSERT(kind == OpKind::BeginTrace || kind == OpKind::EndTrace, "a mark begins or ends");
  OpRef op = make_op();
  op->kind = kind;
  op->payload = TracePayload{id, prefix};
  op->domain = Domain(Rect<1>({0}, {0}));
  return op;
}

OpRef trace_mark(OpRef& kept, OpKind kind, TraceID id, bool prefix) {
  if (!kept || !kept->only_reference()) {
    kept = make_mark(kind, id, prefix);
    kept->counted = false;
    return kept;
  }
  REPRISE_ASSERT(kept->kind == kind, "a kept mark is used again for its own kind");
  kept->payload = TracePayload{id, prefix};
  return kept;
}

void Op::destroy() {
  Recycler<Op>::destroy(this);
}

}  // namespace reprise::detail

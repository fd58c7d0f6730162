#include "reprise_rt/op.h"

#include <fmt/core.h>

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

void Op::destroy() {
  Recycler<Op>::destroy(this);
}

}  // namespace reprise::detail

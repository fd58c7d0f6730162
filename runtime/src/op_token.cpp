#include "reprise_rt/op_token.h"

#include "reprise_rt/hasher.h"

namespace reprise::detail {

std::uint64_t op_token(const Op& op) {
  Hasher h;
  h.mix(std::uint64_t(op.kind));
  h.mix(op.task);
  h.mix(op.domain);
  h.mix(op.reqs.size());
  for (const ReqInfo& r : op.reqs) {
    h.mix(r.uid);  // (a node's slot may be reused after destruction, its uid never)
    h.mix(r.projection.hash());
    h.mix(std::uint64_t(r.privilege) << 8 | std::uint64_t(r.redop));
    h.mix(r.mask);
    for (FieldID f : r.fields) h.mix(f);  // the order names accessor positions
  }
  h.mix(op.futures().size());
  if (const auto* t = std::get_if<TaskPayload>(&op.payload); t && t->pinned_memory != kInvalidId)
    h.mix(t->pinned_memory);  // (a replay must not map an attach to another memory)
  if (op.kind == OpKind::FutureReduce) {
    h.mix(std::uint64_t(op.future_reduce().op));
    h.mix(std::uint64_t(op.future_reduce().gather));
  }
  return h.h;
}

}  // namespace reprise::detail

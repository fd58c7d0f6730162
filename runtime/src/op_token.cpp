#include "reprise_rt/op_token.h"

#include "reprise_rt/hasher.h"

namespace reprise::detail {

// Two ops with equal tokens are taken for the same op by trace matching, so every word mixed
// in is packed losslessly; small fields share a word (each mix is a multiply chain, and a
// replayed op's token is most of what the utility thread spends on it). A requirement's field
// mask is not mixed: its fields and its node (the uid) determine it.
std::uint64_t op_token(const Op& op) {
  Hasher h;
  h.mix(std::uint64_t(op.kind) | std::uint64_t(op.task) << 8);
  // (At most 0xffff requirements: a launch expanding into more is refused.)
  h.mix(std::uint64_t(op.reqs.size()) | std::uint64_t(op.domain.dim) << 16 |
        std::uint64_t(op.futures().size()) << 24);
  for (int i = 0; i < op.domain.dim; ++i) {
    h.mix(std::uint64_t(op.domain.lo[i]));
    h.mix(std::uint64_t(op.domain.hi[i]));
  }
  for (const ReqInfo& r : op.reqs) {
    h.mix(r.uid);  // (a node's slot may be reused after destruction, its uid never)
    const auto projection = r.projection.kind();
    h.mix(std::uint64_t(r.privilege) | std::uint64_t(r.redop) << 8 |
          std::uint64_t(projection) << 16 | std::uint64_t(r.fields.size()) << 24);
    if (projection != Projection::Kind::Identity) h.mix(r.projection.hash());
    // The order names accessor positions; two field ids a word.
    const std::size_t n = r.fields.size();
    for (std::size_t i = 0; i < n; i += 2)
      h.mix(std::uint64_t(r.fields[i]) | (i + 1 < n ? std::uint64_t(r.fields[i + 1]) << 32 : 0));
  }
  if (const auto* t = std::get_if<TaskPayload>(&op.payload); t && t->pinned_memory != kInvalidId)
    h.mix(t->pinned_memory);  // (a replay must not map an attach to another memory)
  if (op.kind == OpKind::FutureReduce) {
    h.mix(std::uint64_t(op.future_reduce().op));
    h.mix(std::uint64_t(op.future_reduce().gather));
  }
  return h.h;
}

}  // namespace reprise::detail

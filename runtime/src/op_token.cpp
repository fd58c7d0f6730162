#include "reprise_rt/op_token.h"

namespace reprise::detail {

namespace {
struct Hasher {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  void mix(std::uint64_t v) {
    // splitmix64 finaliser per word: cheap and well distributed.
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
  }
  void mix(const Domain& d) {
    mix(std::uint64_t(d.dim));
    for (int i = 0; i < d.dim; ++i) {
      mix(std::uint64_t(d.lo[i]));
      mix(std::uint64_t(d.hi[i]));
    }
  }
};
}  // namespace

std::uint64_t op_token(const Op& op) {
  Hasher h;
  h.mix(std::uint64_t(op.kind));
  h.mix(op.task);
  h.mix(op.domain);
  h.mix(op.reqs.size());
  for (const ReqInfo& r : op.reqs) {
    h.mix(r.tree);
    h.mix(r.region);
    h.mix(r.partition);
    h.mix(r.projection.hash());
    h.mix(std::uint64_t(r.privilege) << 8 | std::uint64_t(r.redop));
    h.mix(r.mask);
    for (FieldID f : r.fields) h.mix(f);  // the order names accessor positions
  }
  h.mix(op.futures.size());
  if (op.kind == OpKind::FutureReduce) h.mix(std::uint64_t(op.reduce_op));
  return h.h;
}

}  // namespace reprise::detail

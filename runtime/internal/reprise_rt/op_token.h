#pragma once
// The token of an op: a 64-bit hash of everything about it that affects the dependence
// analysis (kind, task, launch domain, and per requirement the tree, region or partition,
// projection, privilege, reduction operator and fields) and nothing that does not (scalar
// arguments, fill values, future values).
#include <cstdint>

#include "reprise_rt/op.h"

namespace reprise::detail {

std::uint64_t op_token(const Op& op);

// op_token, computed once and kept in Op::token (the memoizer and the automatic tracer both
// match on it; untraced ops never pay for it).
inline std::uint64_t token_of(Op& op) {
  if (op.token == 0) op.token = op_token(op);
  return op.token;
}

}  // namespace reprise::detail

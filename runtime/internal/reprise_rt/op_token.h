#pragma once
// The token of an op: a 64-bit hash of everything about it that affects the dependence
// analysis (kind, task, launch domain, and per requirement the tree, region or partition,
// projection, privilege, reduction operator and fields) and nothing that does not (scalar
// arguments, fill values, future values). Runtime::issue stores it in Op::token: the memoizer
// and the automatic tracer both match on it.
#include <cstdint>

#include "reprise_rt/op.h"

namespace reprise::detail {

std::uint64_t op_token(const Op& op);

}  // namespace reprise::detail

// Program surgery: the minimizer's step and deliberate breakage for the harness's own tests.
#include "random_program_core.h"

namespace reprise_random {

// ------------------------------------------------------------------------------------------
// Program surgery: minimization and deliberate breakage.

Program without_op(const Program& p, std::size_t i) {
  if (i >= p.ops.size() || p.ops[i].init || p.ops[i].kind == OpKind::BeginTrace ||
      p.ops[i].kind == OpKind::EndTrace)
    return p;  // (an empty trace is still a trace)
  std::vector<char> dead_part(p.parts.size(), 0), dead_fut(p.future_types.size(), 0),
      dead_map(p.map_types.size(), 0);
  auto ref_dead = [&](const RegionRef& r) { return r.part >= 0 && dead_part[std::size_t(r.part)]; };
  Program q = p;
  q.ops.clear();
  for (std::size_t j = 0; j < p.ops.size(); ++j) {
    const OpSpec& op = p.ops[j];
    bool dead = j == i;
    if (!dead) {
      switch (op.kind) {
        case OpKind::CreatePartition: {
          const PartSpec& ps = p.parts[std::size_t(op.part)];
          dead = ref_dead(ps.parent) || (ps.base >= 0 && dead_part[std::size_t(ps.base)]);
          break;
        }
        case OpKind::Task:
        case OpKind::IndexTask:
          for (const auto& r : op.reqs)
            dead = dead || ref_dead(r.region) || (r.part >= 0 && dead_part[std::size_t(r.part)]);
          for (int f : op.futures) dead = dead || dead_fut[std::size_t(f)];
          break;
        case OpKind::Fill:
          dead = ref_dead(op.dst);
          break;
        case OpKind::Copy:
          dead = ref_dead(op.src) || ref_dead(op.dst);
          break;
        case OpKind::ReduceFutures:
        case OpKind::PointFuture:
          dead = dead_map[std::size_t(op.source)];
          break;
        case OpKind::GetFuture:
          dead = dead_fut[std::size_t(op.source)];
          break;
        case OpKind::Fence:
        case OpKind::BeginTrace:
        case OpKind::EndTrace:
          break;
      }
    }
    if (dead && op.init) dead = false;  // cannot happen: init ops depend on nothing
    if (!dead) {
      q.ops.push_back(op);
      continue;
    }
    switch (op.kind) {
      case OpKind::CreatePartition:
        dead_part[std::size_t(op.part)] = 1;
        break;
      case OpKind::Task:
      case OpKind::ReduceFutures:
      case OpKind::PointFuture:
        dead_fut[std::size_t(op.result)] = 1;
        break;
      case OpKind::IndexTask:
        dead_map[std::size_t(op.result)] = 1;
        break;
      default:
        break;
    }
  }
  return q;
}

Program reordered(const Program& p, bool* found) {
  auto touches_data = [](const OpSpec& op) {
    return !op.init && (op.kind == OpKind::Task || op.kind == OpKind::IndexTask ||
                        op.kind == OpKind::Fill || op.kind == OpKind::Copy);
  };
  for (std::size_t i = p.ops.size(); i-- > 1;) {
    const OpSpec& a = p.ops[i - 1];
    const OpSpec& b = p.ops[i];
    if (!touches_data(a) || !touches_data(b)) continue;
    if (a.kind == OpKind::Task &&
        std::find(b.futures.begin(), b.futures.end(), a.result) != b.futures.end())
      continue;
    bool dependent = false;
    for (const auto& x : op_footprints(p, a))
      for (const auto& y : op_footprints(p, b)) dependent = dependent || interferes(x, y);
    if (!dependent) continue;
    Program q = p;
    std::swap(q.ops[i - 1], q.ops[i]);
    if (found) *found = true;
    return q;
  }
  if (found) *found = false;
  return p;
}

Program perturbed(const Program& p) {
  Program q = p;
  for (auto& op : q.ops)
    if (op.kind == OpKind::Task || op.kind == OpKind::IndexTask) op.salt ^= 1;
  return q;
}

}  // namespace reprise_random

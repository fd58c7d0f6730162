// Which GPU points of a template replay as one graph per GPU processor (reprise_rt/gpu_groups.h):
// task points on a GPU whose op neither reads futures nor returns values nor reduces (a graph
// replays kernels, not the host code that computes such things), grouped by processor, and
// split by dependence level so that no group waits for itself. Under control replication a
// shard groups its own points: the other shards' points (proxies, or not there at all) and the
// halves of cross-shard copies are outside every group, so an edge through them raises the
// level as any other does.
#include "reprise_memoizer/gpu_groups.h"

#include <algorithm>
#include <map>
#include <utility>

#include "reprise_rt/assert.h"
#include "reprise_rt/future_state.h"
#include "reprise_rt/log.h"

namespace reprise::detail {

namespace {

bool graphable(const Op& op) {
  if (op.kind != OpKind::Task && op.kind != OpKind::IndexTask) return false;
  if (!op.futures().empty()) return false;
  if (op.future && op.future->kind != ValueKind::None) return false;
  if (op.future_map && op.future_map->kind != ValueKind::None) return false;
  return std::none_of(op.reqs.begin(), op.reqs.end(),
                      [](const ReqInfo& q) { return q.privilege == Privilege::Reduce; });
}

}  // namespace

std::shared_ptr<GpuGroups> plan_gpu_groups(const TraceTemplate& t, const std::vector<OpRef>& ops,
                                           std::optional<std::uint32_t> shard) {
  const std::size_t n = t.instrs.size();
  std::vector<bool> gpu_member(n, false);
  for (std::uint32_t i = 0; i < n; ++i) {
    const Instruction& in = t.instrs[i];
    gpu_member[i] = in.kind == Instruction::Kind::Op && in.proc.kind == ProcessorKind::GPU &&
                    (!shard || in.proc.shard == *shard) && graphable(*ops[in.op]);
  }
  if (std::none_of(gpu_member.begin(), gpu_member.end(), [](bool m) { return m; })) return nullptr;
  // A group's points become ready together, so a group must not wait for itself, directly or
  // through other work. Levels rule that out: an edge that stays on one GPU processor keeps
  // the level, any other edge raises it; a group is one processor's points of one level, so
  // every edge between groups (or through other instructions) goes up a level.
  const BatchEdges& succ = *t.successors;
  std::vector<std::uint32_t> level(n, 0);
  const auto gpu_of = [&](std::uint32_t i) -> std::int64_t {
    return gpu_member[i] ? std::int64_t(t.instrs[i].proc.index) : -1;
  };
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t k = 0; k < succ.count[i]; ++k) {
      const std::uint32_t s = succ.targets[succ.begin[i] + k];
      REPRISE_ASSERT(s > i, "a template's edges go forward (instructions are in issue order)");
      const bool same = gpu_of(i) >= 0 && gpu_of(i) == gpu_of(s);
      level[s] = std::max(level[s], level[i] + (same ? 0u : 1u));
    }
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::uint32_t>> groups;
  for (std::uint32_t i = 0; i < n; ++i)
    if (gpu_member[i]) groups[{t.instrs[i].proc.index, level[i]}].push_back(i);
  auto plan = std::make_shared<GpuGroups>();
  plan->group_of.assign(n, -1);
  for (auto& [key, members] : groups) {
    for (std::uint32_t m : members) plan->group_of[m] = std::int32_t(plan->groups.size());
    auto group = std::make_unique<GpuGroup>();
    group->proc = t.instrs[members.front()].proc;
    group->members = std::move(members);
    plan->groups.push_back(std::move(group));
  }
  REPRISE_LOG_DEBUG(LogCategory::Gpu, "trace {}: {} GPU points replay as {} graphs", t.id,
                    std::count(gpu_member.begin(), gpu_member.end(), true), plan->groups.size());
  if (plan->groups.empty()) return nullptr;
  // The successor lists without in-group edges (the stream orders those).
  auto edges = std::make_shared<BatchEdges>();
  edges->begin.assign(n, 0);
  edges->count.assign(n, 0);
  plan->removed_in.assign(n, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    edges->begin[i] = std::uint32_t(edges->targets.size());
    for (std::uint32_t k = 0; k < succ.count[i]; ++k) {
      const std::uint32_t s = succ.targets[succ.begin[i] + k];
      if (plan->group_of[i] >= 0 && plan->group_of[i] == plan->group_of[s]) {
        ++plan->removed_in[s];
        continue;
      }
      edges->targets.push_back(s);
    }
    edges->count[i] = std::uint32_t(edges->targets.size()) - edges->begin[i];
  }
  // A point's completion matters early only to successors outside its group; the others (and
  // the op's completion) can wait for the next callback in the graph.
  for (auto& group : plan->groups) {
    const std::size_t m = group->members.size();
    group->callback_after.assign(m, false);
    for (std::size_t k = 0; k < m; ++k)
      group->callback_after[k] = k + 1 == m || edges->count[group->members[k]] > 0;
  }
  plan->successors = std::move(edges);
  return plan;
}

}  // namespace reprise::detail

// Control replication: what a replay on one shard does with each of a template's physical
// effects (skip, defer into a list, or apply after so many of the list's entries).
#include <map>

#include "reprise_memoizer/trace_template.h"
#include "reprise_rt/instance.h"

namespace reprise::detail {

EffectPlan plan_effects(const TraceTemplate& t, const InstanceManager& im, std::uint32_t shard,
                        bool defer_writes) {
  EffectPlan plan;
  std::map<std::uint32_t, std::shared_ptr<WriteList>> lists;  // by tree (in tree order)
  plan.step.reserve(t.effects.size());
  for (const PhysicalEffect& e : t.effects) {
    const bool elsewhere = im.shard_of(e.mem) != shard;
    // (Such a copy has no event here: the executor makes none for it.)
    if (e.kind == PhysicalEffect::Kind::Copied && !e.ready.exists() && elsewhere) {
      plan.step.push_back(EffectPlan::kSkipped);
      continue;
    }
    auto it = lists.find(e.tree);
    if (!defer_writes || e.kind != PhysicalEffect::Kind::Written || !elsewhere) {
      plan.step.push_back(it == lists.end() ? 0 : std::int32_t(it->second->entries.size()));
      continue;
    }
    if (it == lists.end()) {
      it = lists.emplace(e.tree, std::make_shared<WriteList>()).first;
      it->second->tree = e.tree;
      it->second->root = e.root;
    }
    WriteList& l = *it->second;
    l.index.insert(e.rect, std::uint32_t(l.entries.size()));
    l.hull = bounding_union(l.entries.empty() ? Domain() : l.hull, e.rect);
    l.entries.push_back(WriteList::Entry{e.field, e.rect, e.mem});
    l.mask |= FieldMask(1) << e.field;
    plan.step.push_back(EffectPlan::kDeferred);
  }
  for (auto& [tree, l] : lists) plan.lists.push_back(std::move(l));
  return plan;
}

}  // namespace reprise::detail

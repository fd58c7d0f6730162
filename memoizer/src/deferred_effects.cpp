// Control replication (-lg:defer_replays): which of a template's effects a replay defers.
#include <map>

#include "reprise_memoizer/trace_template.h"
#include "reprise_rt/instance.h"

namespace reprise::detail {

std::unique_ptr<DeferredEffects> defer_other_writes(const TraceTemplate& t,
                                                    const InstanceManager& im,
                                                    std::uint32_t shard) {
  auto d = std::make_unique<DeferredEffects>();
  std::map<std::uint32_t, std::shared_ptr<WriteList>> lists;  // by tree (in tree order)
  d->horizon.reserve(t.effects.size());
  for (const PhysicalEffect& e : t.effects) {
    auto it = lists.find(e.tree);
    if (e.kind != PhysicalEffect::Kind::Written || im.shard_of(e.mem) == shard) {
      d->horizon.push_back(it == lists.end() ? 0 : std::int32_t(it->second->entries.size()));
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
    d->horizon.push_back(-1);
  }
  if (lists.empty()) return nullptr;
  for (auto& [tree, l] : lists) d->lists.push_back(std::move(l));
  return d;
}

}  // namespace reprise::detail

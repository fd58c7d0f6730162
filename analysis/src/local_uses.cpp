#include "reprise_analysis/local_uses.h"

#include <algorithm>

#include "reprise_rt/instance.h"

namespace reprise::detail {

void LocalUses::conflicts(const Instance* inst, const Domain& rect, FieldMask mask, bool write,
                          std::vector<Event>& out) const {
  auto it = uses_.find(inst);
  if (it == uses_.end()) return;
  for (const Use& u : it->second.uses)
    if ((write || u.write) && (u.mask & mask) && u.rect.overlaps(rect) &&
        !events_.has_triggered(u.done))
      out.push_back(u.done);
}

void LocalUses::add(const Instance* inst, const Domain& rect, FieldMask mask, bool write,
                    Event done) {
  if (!done.exists() || rect.empty()) return;
  List& l = uses_[inst];
  // A write orders every later access behind the accesses it waited for: those it covers
  // are no longer needed.
  if (write)
    std::erase_if(l.uses,
                  [&](const Use& u) { return (u.mask & ~mask) == 0 && rect.contains(u.rect); });
  l.uses.push_back(Use{rect, mask, done, write});
  if (l.uses.size() >= l.prune_at) {
    std::erase_if(l.uses, [&](const Use& u) { return events_.has_triggered(u.done); });
    l.prune_at = std::max<std::size_t>(32, l.uses.size() * 2);
  }
}

void LocalUses::forget_tree(std::uint32_t tree) {
  std::erase_if(uses_, [&](const auto& e) { return e.first->tree() == tree; });
}

}  // namespace reprise::detail

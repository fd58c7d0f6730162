#include "reprise_analysis/local_uses.h"

#include <algorithm>

#include "reprise_analysis/physical.h"
#include "reprise_rt/instance.h"
#include "reprise_rt/rect_sets.h"

namespace reprise::detail {

void LocalUses::conflicts(const Instance* inst, const Domain& rect, FieldMask mask, bool write,
                          std::vector<Event>& out) const {
  auto it = uses_.find(inst);
  if (it == uses_.end()) return;
  for (const Use& u : it->second.uses)
    if ((write || u.write) && (u.mask & mask) && u.rect.overlaps(rect) &&
        (!prune_completed_ || !events_.has_triggered(u.done)))
      out.push_back(u.done);
}

void LocalUses::add(const Instance* inst, const Domain& rect, FieldMask mask, bool write,
                    Event done) {
  if (!done.exists() || rect.empty()) return;
  List& l = uses_[inst];
  // A write orders every later access to its rectangle behind the accesses it waited for:
  // what it overlaps of an earlier access (of no other field) no longer needs remembering.
  if (write) {
    std::size_t kept = 0;
    const std::size_t n = l.uses.size();
    for (std::size_t i = 0; i < n; ++i) {
      const Use u = l.uses[i];
      if ((u.mask & ~mask) != 0 || !u.rect.overlaps(rect)) {
        l.uses[kept++] = u;
        continue;
      }
      parts_.clear();
      cut_away(u.rect, rect, parts_);
      for (const Domain& part : parts_) l.uses.push_back(Use{part, u.mask, u.done, u.write});
    }
    // (The pieces appended above stay; the uses replaced by them go.)
    l.uses.erase(l.uses.begin() + std::ptrdiff_t(kept), l.uses.begin() + std::ptrdiff_t(n));
  }
  l.uses.push_back(Use{rect, mask, done, write});
  if (prune_completed_ && l.uses.size() >= l.prune_at) {
    std::erase_if(l.uses, [&](const Use& u) { return events_.has_triggered(u.done); });
    l.prune_at = std::max<std::size_t>(32, l.uses.size() * 2);
  }
}

void LocalUses::forget_tree(std::uint32_t tree) {
  std::erase_if(uses_, [&](const auto& e) { return e.first->tree() == tree; });
}

}  // namespace reprise::detail

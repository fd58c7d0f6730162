#include "reprise_rt/resolution_cache.h"

#include <algorithm>
#include <bit>

namespace reprise::detail {

ResolutionCache::Key ResolutionCache::key_of(TaskID task, bool index, const Domain& domain,
                                             std::span<const RegionRequirement> reqs) {
  // A multiply per word, not Hasher's finaliser: every launch of a launcher made afresh pays
  // for it, and equal hashes are compared in full anyway.
  std::uint64_t h = std::uint64_t(task) << 1 | (index ? 1 : 0);
  auto mix = [&h](std::uint64_t v) { h = (std::rotl(h, 23) ^ v) * 0x9e3779b97f4a7c15ull; };
  mix(std::uint64_t(domain.dim));
  for (int i = 0; i < domain.dim; ++i) {
    mix(std::uint64_t(domain.lo[i]));
    mix(std::uint64_t(domain.hi[i]));
  }
  for (const RegionRequirement& r : reqs) {
    mix(r.region.uid());
    mix(r.partition.uid());
    if (r.projection.kind() != Projection::Kind::Identity) mix(r.projection.hash());
    mix(std::uint64_t(r.privilege) << 32 | std::uint64_t(r.redop));
    for (FieldID f : r.fields) mix(f);
    mix(r.fields.size());
  }
  return Key{h | 1, task, index, reqs};  // (0 marks an empty slot)
}

bool ResolutionCache::same(const Entry& e, const Key& key) {
  if (e.task != key.task || e.index != key.index || e.reqs.size() != key.reqs.size()) return false;
  for (std::size_t i = 0; i < e.reqs.size(); ++i) {
    const RegionRequirement &a = e.reqs[i], &b = key.reqs[i];
    if (!(a.region == b.region) || !(a.partition == b.partition) ||
        !(a.projection == b.projection) || a.privilege != b.privilege || a.redop != b.redop ||
        a.fields != b.fields)
      return false;
  }
  return true;
}

std::shared_ptr<const ResolvedLaunch> ResolutionCache::find(const Key& key,
                                                            const RegionForest& forest,
                                                            const Domain& domain) {
  for (std::size_t s = 0; s < kSlots; ++s) {
    if (hashes_[s] != key.hash) continue;
    Entry& e = entries_[s];
    if (!e.resolved->valid_for(forest, domain) || !same(e, key)) continue;
    e.used = ++clock_;
    return e.resolved;
  }
  return nullptr;
}

bool ResolutionCache::missed_before(const Key& key) {
  if (std::find(missed_.begin(), missed_.end(), key.hash) != missed_.end()) return true;
  missed_[next_missed_] = key.hash;
  next_missed_ = (next_missed_ + 1) % kMissed;
  return false;
}

void ResolutionCache::keep(const Key& key, std::shared_ptr<const ResolvedLaunch> resolved) {
  // The same content's slot (its resolution no longer valid), an empty one, or the least
  // recently used.
  std::size_t slot = 0;
  for (std::size_t s = 0; s < kSlots; ++s) {
    if (hashes_[s] == key.hash && same(entries_[s], key)) {
      slot = s;
      break;
    }
    if (hashes_[s] == 0 || entries_[s].used < entries_[slot].used) slot = s;
    if (hashes_[s] == 0) break;
  }
  Entry& e = entries_[slot];
  hashes_[slot] = key.hash;
  e.task = key.task;
  e.index = key.index;
  e.reqs.assign(key.reqs.begin(), key.reqs.end());
  e.resolved = std::move(resolved);
  e.used = ++clock_;
}

}  // namespace reprise::detail

#pragma once
// Resolutions of task launches (ResolvedLaunch) found by what the launch asks for, for
// programs that build a new launcher for every launch (the stencil and jacobi apps do, every
// iteration): their launchers keep nothing, so each launch resolved every requirement again
// (~1,400 application-thread instructions more than a kept launcher's) and handed the analysis
// a requirement list of its own, which the dependence memo never answers. Keyed by the task,
// whether it is an index launch, the launch domain and the requirements as written (regions
// and partitions by uid, projections by value); valid as a launcher's kept resolution is
// (ResolvedLaunch::valid_for). Content launched once costs a hash: a resolution is kept once
// the same content missed twice within the last kMissed misses. Application thread only, as
// Context::execute.
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "reprise/launcher.h"
#include "reprise_rt/resolved_launch.h"

namespace reprise::detail {

class ResolutionCache {
 public:
  static constexpr std::size_t kSlots = 16, kMissed = 16;

  struct Key {
    std::uint64_t hash = 0;
    TaskID task = 0;
    bool index = false;
    std::span<const RegionRequirement> reqs;
  };
  static Key key_of(TaskID task, bool index, const Domain& domain,
                    std::span<const RegionRequirement> reqs);

  // A kept resolution of this content over `domain`, still valid; else null.
  std::shared_ptr<const ResolvedLaunch> find(const Key& key, const RegionForest& forest,
                                             const Domain& domain);
  // After a miss: whether the same content missed recently too (then keep() its resolution).
  bool missed_before(const Key& key);
  void keep(const Key& key, std::shared_ptr<const ResolvedLaunch> resolved);

 private:
  struct Entry {
    TaskID task = 0;
    bool index = false;
    std::vector<RegionRequirement> reqs;
    std::shared_ptr<const ResolvedLaunch> resolved;
    std::uint64_t used = 0;
  };
  static bool same(const Entry& e, const Key& key);
  std::array<std::uint64_t, kSlots> hashes_{};  // 0: an empty slot
  std::array<Entry, kSlots> entries_;
  std::array<std::uint64_t, kMissed> missed_{};
  std::size_t next_missed_ = 0;
  std::uint64_t clock_ = 0;
};

}  // namespace reprise::detail

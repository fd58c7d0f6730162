#pragma once
// Control replication: the accesses this shard runs on its own instances, for ordering by
// data rather than by region. Every access to a memory runs on the memory's shard (points on
// their own memories, the halves of copies at their ends), so ordering each access after the
// conflicting earlier accesses to the same instance, all local, is enough for the data: no
// shard's correctness then depends on another shard's completion (a replay on another shard
// covers what came before it with that shard's own fence only, so dependences that pass
// through another shard's op are not transitive).
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "reprise/geometry.h"
#include "reprise_rt/event.h"
#include "reprise_rt/forest.h"

namespace reprise::detail {

class EventTable;
class Instance;

class LocalUses {
 public:
  explicit LocalUses(EventTable& events) : events_(events) {}
  // Appends to out the events of earlier accesses to inst that an access (a write or a
  // read) of the fields in mask over rect must wait for.
  void conflicts(const Instance* inst, const Domain& rect, FieldMask mask, bool write,
                 std::vector<Event>& out) const;
  // Records an access that completes with `done`.
  void add(const Instance* inst, const Domain& rect, FieldMask mask, bool write, Event done);
  // The instances of tree are gone; a fence orders everything before it: forget all.
  void forget_tree(std::uint32_t tree);
  void clear() { uses_.clear(); }
  // Off while a trace is recorded: an access that has finished still orders the later ones
  // in the template (a replay runs them again).
  void set_prune_completed(bool on) { prune_completed_ = on; }

 private:
  struct Use {
    Domain rect;
    FieldMask mask;
    Event done;
    bool write;
  };
  struct List {
    std::vector<Use> uses;
    std::size_t prune_at = 32;
  };
  EventTable& events_;
  bool prune_completed_ = true;
  std::unordered_map<const Instance*, List> uses_;
  std::vector<Domain> parts_;
};

}  // namespace reprise::detail

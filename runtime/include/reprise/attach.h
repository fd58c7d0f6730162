#pragma once
// Attaching the program's own arrays (Legion's attach_external_resource /
// detach_external_resource): an array becomes the storage of a region's field in a system
// memory, so the tasks mapped there read and write it in place, with no copy in:
//   std::vector<double> xs(n);                 // row-major over the region's bounds
//   AttachLauncher al(region);
//   al.attach_array(FID_X, xs.data());
//   Attachment a = ctx.attach(al);             // FID_X of region now holds xs's values
//   ...                                        // tasks on region and its subregions
//   ctx.detach(a).wait();                      // xs holds the region's latest values
// Scope: a root region (all its points), any of its fields, one array per field holding the
// root's points row-major (the last dimension contiguous), element size as the field's, in a
// system memory (the first of shard 0 unless set_memory names another). From attach until
// the detach's future is ready the arrays belong to the runtime: the program must not touch
// them (a task that ran in another memory may hold the latest values; detach brings them
// back). After detach the region keeps its values, in the runtime's own memory. Under control
// replication every shard calls attach alike with its own arrays; the arrays of the shard that
// owns the memory are the ones used. Not inside a trace, not from a task.
#include <cstdint>
#include <memory>
#include <vector>

#include "reprise/mapper.h"
#include "reprise/types.h"

namespace reprise {

namespace detail {
struct Attached;
}

class AttachLauncher {
 public:
  explicit AttachLauncher(Region root) : region_(root) {}
  // Field fid's elements are at `array`: one per point of the region, row-major.
  AttachLauncher& attach_array(FieldID fid, void* array) {
    arrays_.push_back({fid, array});
    return *this;
  }
  // The system memory that holds the arrays (a global id: MachineInfo::first_memory(s) + k
  // for shard s's k-th system memory).
  AttachLauncher& set_memory(MemoryID memory) {
    memory_ = memory;
    return *this;
  }

  struct Array {
    FieldID field;
    void* data;
  };
  Region region() const { return region_; }
  const std::vector<Array>& arrays() const { return arrays_; }
  MemoryID memory() const { return memory_; }

 private:
  Region region_;
  std::vector<Array> arrays_;
  MemoryID memory_ = 0;
};

// What attach returns; detach ends it. Dropping it without detaching leaves the arrays attached
// until the region is destroyed (the arrays must live that long).
class Attachment {
 public:
  Attachment() = default;
  bool is_attached() const;
  Region region() const;

 private:
  friend class Context;
  std::shared_ptr<detail::Attached> a_;
};

}  // namespace reprise

#pragma once
// Memories and physical instances. An instance stores some fields of a region tree over a
// rectangle, field-major (one row-major array per field). An instance spans its tree's root
// in its memory (pages are committed on first touch, so the parts a memory never uses cost
// address space, not RAM); which parts of it hold valid data is the physical analysis's job.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "reprise/accessor.h"
#include "reprise/types.h"
#include "reprise_rt/forest.h"

namespace reprise::detail {

struct FreeDeleter {
  void operator()(void* p) const noexcept { std::free(p); }
};

struct Memory {
  std::uint32_t id = 0;
  std::string name;
  std::size_t capacity = 0;  // bytes
  std::size_t used = 0;      // touched by the utility thread only
};

class Instance {
 public:
  // remote: a memory of another shard; the instance only names it (no storage here).
  Instance(std::uint32_t tree, std::uint32_t memory, const Domain& bounds, const FieldSpaceInfo& fs,
           bool remote = false);
  std::uint32_t tree() const { return tree_; }
  std::uint32_t memory() const { return memory_; }
  const Domain& bounds() const { return bounds_; }
  std::size_t bytes() const { return bytes_; }
  // Untyped access to field index fi (the field's position in its field space).
  RawAccess access(int fi) const;
  std::byte* field_data(int fi) const { return fields_[fi].data.get(); }
  std::size_t field_size(int fi) const { return fields_[fi].size; }
  // Byte offset of point p inside a field array of element size `size`.
  std::size_t offset_of(const DomainPoint& p, std::size_t size) const;
  // Calls f(first point, bytes) for each contiguous row (last dimension) of rect, in
  // row-major order, for elements of `size` bytes.
  template <typename F>
  static void for_each_row(const Domain& rect, std::size_t size, F&& f) {
    Domain rows = rect;
    const int last = rect.dim - 1;
    rows.hi[last] = rows.lo[last];
    const std::size_t row_bytes = std::size_t(rect.extent(last)) * size;
    for (coord_t i = 0; i < rows.volume(); ++i) f(rows.delinearize(i), row_bytes);
  }

 private:
  struct FieldStorage {
    std::size_t size = 0;
    std::unique_ptr<std::byte, FreeDeleter> data;
  };
  std::uint32_t tree_, memory_;
  Domain bounds_;
  std::size_t bytes_ = 0;
  std::vector<FieldStorage> fields_;
};

// Owns memories and instances. Instances are created by the utility thread and released by
// whichever thread completes a region's destruction, hence the (rarely taken) lock.
class InstanceManager {
 public:
  // `sysmems` system memories of sysmem_bytes each (the NUMA domains of -ll:numa) per shard;
  // this process holds the data of shard `shard`'s memories only.
  InstanceManager(std::size_t sysmem_bytes, int sysmems, std::uint32_t shard = 0,
                  std::uint32_t shards = 1);
  const Memory& memory(std::uint32_t id) const { return memories_[id]; }
  std::uint32_t num_memories() const { return std::uint32_t(memories_.size()); }
  std::uint32_t shard_of(std::uint32_t memory) const { return memory / per_shard_; }
  bool is_local(std::uint32_t memory) const { return shard_of(memory) == shard_; }
  // The instance of a whole region tree in a memory, created zero-filled on first use.
  Instance* tree_instance(const RegionForest& forest, std::uint32_t tree, std::uint32_t memory);
  void release_tree(std::uint32_t tree);
  std::size_t instance_count() const;

 private:
  mutable std::mutex mutex_;
  std::vector<Memory> memories_;
  std::uint32_t per_shard_ = 1, shard_ = 0;
  std::vector<std::vector<std::unique_ptr<Instance>>> by_tree_;  // [tree][memory]
};

}  // namespace reprise::detail

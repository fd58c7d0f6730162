#pragma once
// Memories and physical instances. An instance stores some fields of a region tree over a
// rectangle, field-major (one row-major array per field). An instance spans its tree's root
// in its memory (pages are committed on first touch, so the parts a memory never uses cost
// address space, not RAM); which parts of it hold valid data is the physical analysis's job.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "reprise/accessor.h"
#include "reprise/types.h"
#include "reprise_rt/device.h"
#include "reprise_rt/forest.h"
#include "reprise_rt/topology.h"

namespace reprise::detail {

// Field data of a rectangle as a device copy sees it: its first element and the bytes from one
// index to the next in each dimension (row-major; the last is the element size).
struct StridedLayout {
  std::byte* at = nullptr;
  std::array<std::size_t, kMaxDim> strides{};
  // A dense row-major buffer holding exactly rect's elements (a staging buffer).
  static StridedLayout dense(std::byte* at, const Domain& rect, std::size_t size);
};

enum class MemoryKind : std::uint8_t { System, Framebuffer, ZeroCopy };

struct Memory {
  std::uint32_t id = 0;
  std::string name;
  std::size_t capacity = 0;  // bytes
  std::size_t used = 0;      // touched by the utility thread only
  MemoryKind kind = MemoryKind::System;
  std::uint32_t gpu = 0;  // framebuffers: the GPU (of its shard) it belongs to
};

// Where an instance's data lives: nowhere (another shard's memory), host memory (bound to a
// NUMA node, or not), or a device's framebuffer.
struct Placement {
  bool remote = false;
  int numa_node = -1;
  Device* device = nullptr;  // a framebuffer: allocated by the device backend
  int device_index = 0;
  Device* zero_copy = nullptr;  // zero-copy memory: host memory from the device backend
};

// What the reducer of a reduction instance's field folded in since the instance was handed to
// it: written by that task, read by the fold that follows it (ordered by events).
struct ReductionField {
  bool touched = false;  // the task asked for a reducer on it (and initialised it)
  ScalarType type = ScalarType::None;
  ReductionOp op = ReductionOp::None;
};

class Instance {
 public:
  // A remote placement names a memory of another shard: no storage here.
  Instance(std::uint32_t tree, std::uint32_t memory, const Domain& bounds, const FieldSpaceInfo& fs,
           const Placement& where = {});
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  // A reduction instance: slot `slot` of (tree, memory, bounds); one reducing point at a time.
  static std::unique_ptr<Instance> reduction(std::uint32_t tree, std::uint32_t memory,
                                             const Domain& bounds, const FieldSpaceInfo& fs,
                                             std::uint32_t slot, const Placement& where);
  // Whether CPU threads may touch the data (false for a framebuffer on a real GPU: fills and
  // copies there go through the device).
  bool host_visible() const { return host_visible_; }
  // The framebuffer's device and its index, for fills and copies through it (null: host data).
  Device* device() const { return device_; }
  int device_index() const { return device_index_; }
  bool is_reduction() const { return reduction_; }
  std::uint32_t slot() const { return slot_; }
  // Reduction instances: the per-field state of the current reducer (see ReductionField).
  ReductionField& reduction_field(int fi) { return reduction_fields_[std::size_t(fi)]; }
  const ReductionField& reduction_field(int fi) const { return reduction_fields_[std::size_t(fi)]; }
  // A reducer starts: nothing of it is folded in yet.
  void reset_reduction(int fi) {
    if (!bounds_.empty()) reduction_fields_[std::size_t(fi)].touched = false;
  }
  // The task asks for a reducer on field fi: the first time, fill it with the identity. False
  // if the task asked for it before with another element type or operator.
  bool begin_reduction(int fi, ScalarType type, ReductionOp op);
  std::uint32_t tree() const { return tree_; }
  std::uint32_t memory() const { return memory_; }
  const Domain& bounds() const { return bounds_; }
  std::size_t bytes() const { return bytes_; }
  // Field fi's view with these bounds, built whole (every accessor a task makes comes from
  // here: one initialisation of each member, not a zero-filled view written over).
  RawAccess view(int fi, const Domain& bounds, bool check, const AccessSite& site) const {
    const FieldStorage& f = fields_[std::size_t(fi)];
    return RawAccess{f.base, f.strides, bounds, check, site};
  }
  // Untyped access to field index fi (the field's position in its field space): its base and
  // strides, the caller sets the rest.
  RawAccess access(int fi) const { return view(fi, Domain(), false, AccessSite()); }
  std::byte* field_data(int fi) const { return fields_[std::size_t(fi)].at; }
  // Attached host memory (Context::attach): field fi's elements live in the program's array
  // `array` (dense, row-major over the bounds) instead of the instance's own storage, which is
  // kept for detach_external. Called by the attach and detach ops' points, which hold the
  // whole tree's field: nothing else touches the field while it switches.
  void attach_external(int fi, std::byte* array);
  // Copies the array's elements into the instance's own storage and uses that again.
  void detach_external(int fi);
  // Whether the instance lives in a framebuffer: data moves in and out of it by device copies
  // on a copy stream, on either backend (so the host backend runs the CUDA backend's paths).
  bool on_device() const { return device_ != nullptr; }
  // Where field fi's elements of rect (inside the bounds) start, and its strides.
  StridedLayout layout(int fi, const Domain& rect) const;
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
    HostBytes data;               // host memory
    std::byte* device = nullptr;  // or a framebuffer allocation (released by the destructor)
    std::byte* at = nullptr;      // where the elements are: one of the above, or an attached array
    bool attached = false;
    // What access() returns, computed once: every accessor of every task asks for it.
    std::uintptr_t base = 0;  // the address of the point at the origin (may lie outside)
    std::array<coord_t, kMaxDim> strides{};
  };
  std::uint32_t tree_, memory_;
  Domain bounds_;
  std::size_t bytes_ = 0;
  std::vector<FieldStorage> fields_;
  // Points field i's `at`, and the access() base and strides derived from it, at `data`.
  void place_field(std::size_t i, std::byte* data);
  bool reduction_ = false;
  std::uint32_t slot_ = 0;
  std::vector<ReductionField> reduction_fields_;
  Device* device_ = nullptr;
  int device_index_ = 0;
  Device* zero_copy_ = nullptr;  // its fields' host memory came from this device backend
  bool host_visible_ = true;
};

// A device copy of rect's elements of `size` bytes between two strided layouts (rect.dim <= 3;
// the last dimension is contiguous in both).
DeviceCopy device_copy_of(const StridedLayout& dst, const StridedLayout& src, const Domain& rect,
                          std::size_t size);

// Reduction arithmetic on untyped element arrays.
void fill_identity(ScalarType type, ReductionOp op, std::byte* dst, std::size_t count);
// dst[i] = dst[i] op src[i] for count elements.
void fold_elements(ScalarType type, ReductionOp op, std::byte* dst, const std::byte* src,
                   std::size_t count);
// Folds fields of reduction instance src over rect into dst (fields its reducer touched).
void fold_instance(const Instance& src, Instance& dst, const Domain& rect,
                   std::span<const int> fields);

class Op;
// The bytes a generated copy moves (its fields over its rectangle).
std::uint64_t copy_bytes(const Op& copy);

// Owns memories and instances. Instances are created by the utility thread and released by
// whichever thread completes a region's destruction, hence the (rarely taken) lock.
class InstanceManager {
 public:
  // Per shard: `sysmems` system memories of sysmem_bytes each (the NUMA domains of
  // -ll:numa), then `gpus` framebuffers of fb_bytes each (-ll:gpu, -ll:fsize), then a
  // zero-copy memory of zc_bytes if that is not 0 (-ll:zsize); this process holds the data of
  // shard `shard`'s memories only.
  InstanceManager(std::size_t sysmem_bytes, int sysmems, std::uint32_t shard = 0,
                  std::uint32_t shards = 1, int gpus = 0, std::size_t fb_bytes = 0,
                  std::size_t zc_bytes = 0);
  // The device backend that allocates framebuffer instances (set before the first one).
  void set_device(Device* device) { device_ = device; }
  const Memory& memory(std::uint32_t id) const { return memories_[id]; }
  std::uint32_t num_memories() const { return std::uint32_t(memories_.size()); }
  std::uint32_t shard_of(std::uint32_t memory) const { return memory / per_shard_; }
  std::uint32_t memories_per_shard() const { return per_shard_; }
  bool is_local(std::uint32_t memory) const { return all_local_ || shard_of(memory) == shard_; }
  // -lg:simulate_shards: this process plays every shard, so it holds every memory's data.
  void hold_every_shard() { all_local_ = true; }
  // The shards of a generated copy's source and destination memories.
  struct CopyShards {
    std::uint32_t from, to;
  };
  CopyShards copy_shards(const Op& copy) const;
  // The NUMA node a memory's data is bound to: with several system memories per shard on a
  // machine with several NUMA nodes, memory i of a shard binds to node i (modulo the nodes);
  // -1 (unbound) otherwise.
  int numa_node_of(std::uint32_t memory) const;
  // The instance of a whole region tree in a memory, created zero-filled on first use.
  Instance* tree_instance(const RegionForest& forest, std::uint32_t tree, std::uint32_t memory);
  // Reduction instance `slot` of tree over rect in a memory, created on first use and kept
  // for reuse until the tree is destroyed; find_reduction does not create it.
  Instance* reduction_instance(const RegionForest& forest, std::uint32_t tree, std::uint32_t memory,
                               const Domain& rect, std::uint32_t slot);
  Instance* find_reduction(std::uint32_t tree, std::uint32_t memory, const Domain& rect,
                           std::uint32_t slot) const;
  void release_tree(std::uint32_t tree);
  std::size_t instance_count() const;  // tree instances
  std::size_t reduction_instance_count() const;

 private:
  mutable std::mutex mutex_;
  std::vector<Memory> memories_;
  std::uint32_t per_shard_ = 1, shard_ = 0, sysmems_ = 1;
  bool all_local_ = false;
  Device* device_ = nullptr;
  Placement placement_of(std::uint32_t memory) const;
  Instance* find_reduction_locked(std::uint32_t tree, std::uint32_t memory, const Domain& rect,
                                  std::uint32_t slot) const;
  // Checks the memory has room for `want` bytes and accounts them.
  void reserve(std::uint32_t memory, std::size_t want, const Domain& rect);
  std::vector<std::vector<std::unique_ptr<Instance>>> by_tree_;  // [tree][memory]
  std::vector<std::vector<std::unique_ptr<Instance>>> reductions_by_tree_;
  std::unordered_multimap<std::uint64_t, Instance*> reduction_index_;  // by reduction_key
};

}  // namespace reprise::detail

#include "reprise_rt/instance.h"

#include <fmt/core.h>

#include <cstring>

#include "reprise/error.h"
#include "reprise_rt/assert.h"
#include "reprise_rt/device.h"
#include "reprise_rt/hasher.h"
#include "reprise_rt/op.h"

namespace reprise::detail {

std::uint64_t copy_bytes(const Op& copy) {
  std::uint64_t bytes = 0;
  for (int fi : copy.reqs[0].field_indices)
    bytes += copy.point_instances[0]->field_size(fi) * std::uint64_t(copy.point_rects[0].volume());
  return bytes;
}

InstanceManager::CopyShards InstanceManager::copy_shards(const Op& copy) const {
  return {shard_of(copy.point_instances[0]->memory()), shard_of(copy.point_instances[1]->memory())};
}

Instance::Instance(std::uint32_t tree, std::uint32_t memory, const Domain& bounds,
                   const FieldSpaceInfo& fs, const Placement& where)
    : tree_(tree),
      memory_(memory),
      bounds_(bounds),
      device_(where.device),
      device_index_(where.device_index),
      zero_copy_(where.zero_copy),
      host_visible_(!where.device || where.device->host_addressable()) {
  std::size_t points = std::size_t(bounds.volume());
  fields_.resize(fs.fields.size());
  for (std::size_t i = 0; i < fs.fields.size(); ++i) {
    fields_[i].size = fs.fields[i].size;
    if (where.remote) continue;
    const std::size_t want = (points ? points : 1) * fs.fields[i].size;
    if (where.device) {
      fields_[i].device = static_cast<std::byte*>(where.device->allocate(where.device_index, want));
      if (!fields_[i].device)
        throw Error(fmt::format("an instance of region {} needs {} bytes: out of device memory",
                                bounds.str(), want));
    } else if (where.zero_copy) {
      fields_[i].device = static_cast<std::byte*>(where.zero_copy->allocate_host(want));
      if (!fields_[i].device)
        throw Error(fmt::format(
            "an instance of region {} needs {} bytes: out of pinned (zero-copy) host memory",
            bounds.str(), want));
    } else {
      fields_[i].data = host_allocate(want, where.numa_node);
      if (!fields_[i].data)
        throw Error(fmt::format("an instance of region {} needs {} bytes: out of host memory",
                                bounds.str(), points * fs.fields[i].size));
    }
    bytes_ += points * fs.fields[i].size;
    place_field(i, fields_[i].device ? fields_[i].device : fields_[i].data.get());
  }
}

void Instance::place_field(std::size_t i, std::byte* data) {
  FieldStorage& f = fields_[i];
  f.at = data;
  coord_t stride = coord_t(f.size);
  f.base = reinterpret_cast<std::uintptr_t>(data);
  for (int d = bounds_.dim - 1; d >= 0; --d) {
    f.strides[std::size_t(d)] = stride;
    f.base -= std::uintptr_t(bounds_.lo[std::size_t(d)] * stride);
    stride *= bounds_.extent(d);
  }
}

void Instance::attach_external(int fi, std::byte* array) {
  FieldStorage& f = fields_[std::size_t(fi)];
  REPRISE_ASSERT(!f.attached && !f.device && f.data,
                 "only a host instance's field that is not attached already takes an array");
  f.attached = true;
  place_field(std::size_t(fi), array);
}

void Instance::detach_external(int fi) {
  FieldStorage& f = fields_[std::size_t(fi)];
  REPRISE_ASSERT(f.attached, "a field is detached only while attached");
  std::memcpy(f.data.get(), f.at, std::size_t(bounds_.volume()) * f.size);
  f.attached = false;
  place_field(std::size_t(fi), f.data.get());
}

StridedLayout StridedLayout::dense(std::byte* at, const Domain& rect, std::size_t size) {
  StridedLayout l{at, {}};
  std::size_t stride = size;
  for (int d = rect.dim - 1; d >= 0; --d) {
    l.strides[std::size_t(d)] = stride;
    stride *= std::size_t(rect.extent(d));
  }
  return l;
}

StridedLayout Instance::layout(int fi, const Domain& rect) const {
  const FieldStorage& f = fields_[std::size_t(fi)];
  StridedLayout l{field_data(fi) + offset_of(rect.lo_point(), f.size), {}};
  for (int d = 0; d < rect.dim; ++d)
    l.strides[std::size_t(d)] = std::size_t(f.strides[std::size_t(d)]);
  return l;
}

DeviceCopy device_copy_of(const StridedLayout& dst, const StridedLayout& src, const Domain& rect,
                          std::size_t size) {
  REPRISE_ASSERT(rect.dim >= 1 && rect.dim <= 3, "a device copy has one to three dimensions");
  const int n = rect.dim;
  DeviceCopy c;
  c.dst = dst.at;
  c.src = src.at;
  c.row_bytes = std::size_t(rect.extent(n - 1)) * size;
  c.dst_pitch = c.src_pitch = c.row_bytes;
  if (n >= 2) {
    c.height = std::size_t(rect.extent(n - 2));
    c.dst_pitch = dst.strides[std::size_t(n - 2)];
    c.src_pitch = src.strides[std::size_t(n - 2)];
  }
  if (n == 3) {
    c.depth = std::size_t(rect.extent(0));
    c.dst_slice = dst.strides[0];
    c.src_slice = src.strides[0];
  }
  return c;
}

Instance::~Instance() {
  for (FieldStorage& f : fields_) {
    if (!f.device) continue;
    if (zero_copy_)
      zero_copy_->release_host(f.device);
    else
      device_->release(device_index_, f.device);
  }
}

std::unique_ptr<Instance> Instance::reduction(std::uint32_t tree, std::uint32_t memory,
                                              const Domain& bounds, const FieldSpaceInfo& fs,
                                              std::uint32_t slot, const Placement& where) {
  auto inst = std::make_unique<Instance>(tree, memory, bounds, fs, where);
  inst->reduction_ = true;
  inst->slot_ = slot;
  inst->reduction_fields_.resize(fs.fields.size());
  return inst;
}

bool Instance::begin_reduction(int fi, ScalarType type, ReductionOp op) {
  // An empty rectangle holds nothing to fold (and its instance may serve several points).
  if (bounds_.empty()) return true;
  ReductionField& rf = reduction_fields_[std::size_t(fi)];
  if (rf.touched) return rf.type == type && rf.op == op;
  if (!host_visible_)
    throw Error(
        "a reduction instance in a framebuffer cannot be initialised: reductions into "
        "framebuffers on the CUDA backend are not supported yet (map them to system memory)");
  fill_identity(type, op, field_data(fi), std::size_t(bounds_.volume()));
  rf = ReductionField{true, type, op};
  return true;
}

std::size_t Instance::offset_of(const DomainPoint& p, std::size_t size) const {
  return std::size_t(bounds_.linearize(p)) * size;
}

InstanceManager::InstanceManager(std::size_t sysmem_bytes, int sysmems, std::uint32_t shard,
                                 std::uint32_t shards, int gpus, std::size_t fb_bytes,
                                 std::size_t zc_bytes)
    : per_shard_(std::uint32_t(sysmems + gpus + (zc_bytes ? 1 : 0))),
      shard_(shard),
      sysmems_(std::uint32_t(sysmems)) {
  for (std::uint32_t s = 0; s < shards; ++s) {
    const std::string at = shards == 1 ? std::string() : fmt::format("@shard{}", s);
    for (int i = 0; i < sysmems; ++i) {
      Memory sys;
      sys.id = std::uint32_t(memories_.size());
      sys.name = fmt::format("sysmem{}{}", i, at);
      sys.capacity = sysmem_bytes;
      memories_.push_back(sys);
    }
    for (int g = 0; g < gpus; ++g) {
      Memory fb;
      fb.id = std::uint32_t(memories_.size());
      fb.name = fmt::format("fbmem{}{}", g, at);
      fb.capacity = fb_bytes;
      fb.kind = MemoryKind::Framebuffer;
      fb.gpu = std::uint32_t(g);
      memories_.push_back(fb);
    }
    if (zc_bytes) {
      Memory zc;
      zc.id = std::uint32_t(memories_.size());
      zc.name = fmt::format("zcmem{}", at);
      zc.capacity = zc_bytes;
      zc.kind = MemoryKind::ZeroCopy;
      memories_.push_back(zc);
    }
  }
}

int InstanceManager::numa_node_of(std::uint32_t memory) const {
  const int nodes = numa_nodes();
  if (sysmems_ < 2 || nodes < 2 || memory % per_shard_ >= sysmems_) return -1;
  return int(memory % per_shard_) % nodes;
}

Placement InstanceManager::placement_of(std::uint32_t memory) const {
  Placement p;
  p.remote = !is_local(memory);
  const Memory& m = memories_[memory];
  if (m.kind == MemoryKind::Framebuffer && !p.remote) {
    REPRISE_ASSERT(device_ != nullptr, "framebuffers exist only with a device backend");
    p.device = device_;
    p.device_index = device_ ? int(m.gpu) % device_->devices() : 0;
  } else if (m.kind == MemoryKind::ZeroCopy && !p.remote) {
    REPRISE_ASSERT(device_ != nullptr, "zero-copy memory exists only with a device backend");
    p.zero_copy = device_;
  } else {
    p.numa_node = numa_node_of(memory);
  }
  return p;
}

void InstanceManager::reserve(std::uint32_t memory, std::size_t want, const Domain& rect) {
  Memory& m = memories_[memory];
  if (m.used + want > m.capacity)
    throw Error(fmt::format(
        "memory {} is full: capacity {} MiB, {} MiB in use, an instance of region {} needs "
        "{:.1f} MiB (raise {})",
        m.name, m.capacity >> 20, m.used >> 20, rect.str(), double(want) / (1 << 20),
        m.kind == MemoryKind::Framebuffer ? "-ll:fsize"
        : m.kind == MemoryKind::ZeroCopy  ? "-ll:zsize"
                                          : "-ll:csize"));
  m.used += want;
}

namespace {
std::uint64_t reduction_key(std::uint32_t tree, std::uint32_t memory, const Domain& rect,
                            std::uint32_t slot) {
  Hasher h;
  h.mix(std::uint64_t(tree) << 32 | memory);
  h.mix(slot);
  h.mix(rect);
  return h.h;
}
}  // namespace

Instance* InstanceManager::find_reduction(std::uint32_t tree, std::uint32_t memory,
                                          const Domain& rect, std::uint32_t slot) const {
  std::lock_guard<std::mutex> g(mutex_);
  return find_reduction_locked(tree, memory, rect, slot);
}

Instance* InstanceManager::find_reduction_locked(std::uint32_t tree, std::uint32_t memory,
                                                 const Domain& rect, std::uint32_t slot) const {
  auto [it, end] = reduction_index_.equal_range(reduction_key(tree, memory, rect, slot));
  for (; it != end; ++it) {
    Instance* i = it->second;
    if (i->tree() == tree && i->memory() == memory && i->slot() == slot && i->bounds() == rect)
      return i;
  }
  return nullptr;
}

Instance* InstanceManager::reduction_instance(const RegionForest& forest, std::uint32_t tree,
                                              std::uint32_t memory, const Domain& rect,
                                              std::uint32_t slot) {
  std::lock_guard<std::mutex> g(mutex_);
  if (Instance* i = find_reduction_locked(tree, memory, rect, slot)) return i;
  const FieldSpaceInfo& fs = forest.field_space(forest.tree(tree).field_space);
  const bool remote = !is_local(memory);
  if (!remote) {
    std::size_t want = 0;
    for (const auto& f : fs.fields) want += std::size_t(rect.volume()) * f.size;
    reserve(memory, want, rect);
  }
  if (reductions_by_tree_.size() <= tree) reductions_by_tree_.resize(tree + 1);
  auto inst = Instance::reduction(tree, memory, rect, fs, slot, placement_of(memory));
  Instance* raw = inst.get();
  reductions_by_tree_[tree].push_back(std::move(inst));
  reduction_index_.emplace(reduction_key(tree, memory, rect, slot), raw);
  return raw;
}

Instance* InstanceManager::tree_instance(const RegionForest& forest, std::uint32_t tree,
                                         std::uint32_t memory) {
  std::lock_guard<std::mutex> g(mutex_);
  if (by_tree_.size() <= tree) by_tree_.resize(tree + 1);
  auto& per_mem = by_tree_[tree];
  if (per_mem.size() <= memory) per_mem.resize(memory + 1);
  if (!per_mem[memory]) {
    const TreeInfo& t = forest.tree(tree);
    const Domain& bounds = forest.region(t.root).bounds;
    const FieldSpaceInfo& fs = forest.field_space(t.field_space);
    std::size_t want = 0;
    for (const auto& f : fs.fields) want += std::size_t(bounds.volume()) * f.size;
    // (Another shard's: a name for the analysis, no data here.)
    if (is_local(memory)) reserve(memory, want, bounds);
    per_mem[memory] = std::make_unique<Instance>(tree, memory, bounds, fs, placement_of(memory));
  }
  return per_mem[memory].get();
}

void InstanceManager::release_tree(std::uint32_t tree) {
  std::lock_guard<std::mutex> g(mutex_);
  auto release = [&](std::unique_ptr<Instance>& inst) {
    if (!inst) return;
    if (is_local(inst->memory())) {
      Memory& m = memories_[inst->memory()];
      REPRISE_ASSERT(m.used >= inst->bytes(), "a memory's use counts each live instance once");
      m.used -= inst->bytes();
    }
    inst.reset();
  };
  if (tree < by_tree_.size())
    for (auto& inst : by_tree_[tree]) release(inst);
  if (tree < reductions_by_tree_.size()) {
    for (auto& inst : reductions_by_tree_[tree]) {
      auto [it, end] = reduction_index_.equal_range(
          reduction_key(tree, inst->memory(), inst->bounds(), inst->slot()));
      for (; it != end; ++it)
        if (it->second == inst.get()) {
          reduction_index_.erase(it);
          break;
        }
      release(inst);
    }
    reductions_by_tree_[tree].clear();
  }
}

std::size_t InstanceManager::reduction_instance_count() const {
  std::lock_guard<std::mutex> g(mutex_);
  return reduction_index_.size();
}

std::size_t InstanceManager::instance_count() const {
  std::lock_guard<std::mutex> g(mutex_);
  std::size_t n = 0;
  for (const auto& t : by_tree_)
    for (const auto& i : t) n += i ? 1 : 0;
  return n;
}

}  // namespace reprise::detail

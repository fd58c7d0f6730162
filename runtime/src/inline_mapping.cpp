// Inline mappings (reprise/inline_mapping.h). A mapping is two internal single tasks on the
// region: the *map* task (the mapped privilege) records where each field's data is and
// returns; map_region waits for it. The *hold* task (the same privilege) waits for a future
// that unmapping sets, so the ops issued after the mapping that conflict with it wait for the
// unmapping through the ordinary dependence analysis — no blocked worker, nothing special in
// the analysis or the executor.
#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "reprise/context.h"
#include "reprise/registry.h"
#include "reprise/task_context.h"
#include "reprise_rt/future_state.h"
#include "reprise_rt/internal_tasks.h"
#include "reprise_rt/runtime.h"
#include "reprise_rt/task_views.h"

namespace reprise {

namespace detail {

struct InlineMapping {
  Runtime* rt = nullptr;
  Region region;
  Privilege privilege = Privilege::ReadOnly;
  std::vector<FieldID> fields;
  std::vector<RawAccess> access;      // per field, filled by the map task
  std::vector<std::size_t> sizes;     // per field
  std::shared_ptr<FutureState> held;  // the hold task's future: set by unmapping
  bool mapped = false;
  void unmap() {
    if (!mapped) return;
    mapped = false;
    if (!held) return;  // a task's view (InlineMapTask::view): nothing holds the region
    held->ready.store(true, std::memory_order_release);
    rt->events().trigger(held->ready_event);
  }
  ~InlineMapping() { unmap(); }
};

struct InlineMapTask {
  static void run(TaskContext& tc) {
    locate(tc, *reinterpret_cast<InlineMapping*>(tc.args<std::uintptr_t>()));
  }
  // Where each of m's fields is, in the running task's instance of requirement 0.
  static void locate(TaskContext& tc, InlineMapping& m) {
    m.access.resize(m.fields.size());
    m.sizes.resize(m.fields.size());
    for (std::size_t k = 0; k < m.fields.size(); ++k)
      m.access[k] = tc.raw_inline(m.fields[k], m.sizes[k]);
  }
  static PhysicalRegion view(TaskContext& tc, Region r, std::vector<FieldID> fields) {
    auto m = std::make_shared<InlineMapping>();
    m->region = r;
    m->fields = std::move(fields);
    locate(tc, *m);
    m->mapped = true;
    PhysicalRegion pr;
    pr.m_ = std::move(m);
    return pr;
  }
};

PhysicalRegion read_view(TaskContext& tc, Region r, std::vector<FieldID> fields) {
  return InlineMapTask::view(tc, r, std::move(fields));
}

namespace {
void hold_task(TaskContext&) {}
}  // namespace

}  // namespace detail

PhysicalRegion Context::map_region(Region r, Privilege privilege, std::vector<FieldID> fields) {
  detail::Runtime& rtm = rt("map_region");
  rtm.check_not_in_trace("map_region");  // (rt() checked the thread)
  if (privilege == Privilege::Reduce)
    throw Error("map_region: a region cannot be mapped with REDUCE privilege");
  if (fields.empty()) throw Error("map_region: no fields named");
  static const bool registered = [] {
    TaskRegistry::add(detail::kInlineMapTask, "inline_map", {cpu(&detail::InlineMapTask::run)});
    TaskRegistry::add(detail::kInlineHoldTask, "inline_hold", {cpu(&detail::hold_task)});
    return true;
  }();
  (void)registered;
  auto m = std::make_shared<detail::InlineMapping>();
  m->rt = &rtm;
  m->region = r;
  m->privilege = privilege;
  m->fields = fields;  // (the map task locates them: InlineMapTask::locate)
  // The map task: the analysis makes the data valid in its (host) memory first; its
  // requirement checks the region and fields like any task's.
  TaskLauncher map(detail::kInlineMapTask,
                   TaskArgs{std::uintptr_t(reinterpret_cast<std::uintptr_t>(m.get()))});
  map.add(r, privilege, fields);
  // A write-discard mapping still holds what later readers will see: the hold keeps it
  // read-write (it writes nothing itself).
  const Privilege hold_privilege =
      privilege == Privilege::ReadOnly ? Privilege::ReadOnly : Privilege::ReadWrite;
  m->held = std::make_shared<detail::FutureState>();
  m->held->ready_event = rtm.events().create();
  TaskLauncher hold(detail::kInlineHoldTask);
  hold.add(r, hold_privilege, std::move(fields));
  hold.add_future(Future(m->held));
  Future mapped;
  if (rtm.num_shards() == 1) {
    mapped = execute(map);
    m->mapped = true;  // from here on the hold must be released, whatever happens
    execute(hold);
  } else {
    // Control replication: every shard maps the region into its own first system memory,
    // through tasks pinned there (shard s's run only on s, with s's arguments). The maps read,
    // so every shard sees the same values; the other shards' holds read, and shard 0's hold,
    // issued last, has the mapping's privilege: a writing mapping leaves shard 0's memory
    // holding the region (what every shard wrote, the program being replicated) and the other
    // shards' copies stale. Each memory's later users wait for its shard's hold, the later
    // conflicting ops for every hold. A writing mapping first claims the region in shard 0's
    // memory (after every earlier user, which may have been copying out of a shard's memory),
    // and every shard waits for all the maps (their copies read shard 0's memory): no copy
    // reads a memory while its shard's program writes it.
    const MachineInfo machine = rtm.machine();
    const bool writes = privilege != Privilege::ReadOnly;
    if (writes) {
      TaskLauncher claim(detail::kInlineHoldTask);
      claim.add(r, Privilege::ReadWrite, m->fields);
      execute_task(claim, machine.first_memory(0));
    }
    TaskLauncher read_map(detail::kInlineMapTask,
                          TaskArgs{std::uintptr_t(reinterpret_cast<std::uintptr_t>(m.get()))});
    read_map.add(r, Privilege::ReadOnly, m->fields);
    TaskLauncher read_hold(detail::kInlineHoldTask);
    read_hold.add(r, Privilege::ReadOnly, m->fields);
    read_hold.add_future(Future(m->held));
    std::vector<Future> maps;
    for (std::uint32_t s = 0; s < rtm.num_shards(); ++s) {
      Future f = execute_task(read_map, machine.first_memory(s));
      if (s == rtm.shard()) mapped = f;
      if (writes) maps.push_back(f);
    }
    m->mapped = true;
    for (std::uint32_t s = 1; s < rtm.num_shards(); ++s)
      execute_task(read_hold, machine.first_memory(s));
    execute_task(hold, machine.first_memory(0));
    for (const Future& f : maps) f.wait();
  }
  mapped.wait();
  PhysicalRegion pr;
  pr.m_ = std::move(m);
  return pr;
}

void Context::unmap_region(PhysicalRegion& region) {
  if (!region.m_ || !region.m_->mapped)
    throw Error("unmap_region: the region is not mapped (unmapped already, or never mapped)");
  region.m_->unmap();
}

bool PhysicalRegion::is_mapped() const {
  return m_ && m_->mapped;
}

Region PhysicalRegion::region() const {
  if (!m_) throw Error("PhysicalRegion::region: not a mapping");
  return m_->region;
}

detail::RawAccess PhysicalRegion::raw(FieldID fid, std::size_t elem_size, bool read_only,
                                      int dim) const {
  if (!is_mapped()) throw Error("PhysicalRegion::accessor: the region is not mapped");
  const auto at = std::find(m_->fields.begin(), m_->fields.end(), fid);
  if (at == m_->fields.end())
    throw Error(fmt::format("PhysicalRegion::accessor: field {} is not mapped", fid));
  const std::size_t k = std::size_t(at - m_->fields.begin());
  if (m_->sizes[k] != elem_size)
    throw Error(
        fmt::format("PhysicalRegion::accessor: field {} has {} bytes, the accessor's type "
                    "has {}",
                    fid, m_->sizes[k], elem_size));
  if (m_->access[k].bounds.dim != dim)
    throw Error(fmt::format("PhysicalRegion::accessor: the region is {}-d, the accessor {}-d",
                            m_->access[k].bounds.dim, dim));
  if (!read_only && m_->privilege == Privilege::ReadOnly)
    throw Error(
        "PhysicalRegion::accessor: the mapping is READ_ONLY; ask for a read accessor "
        "(accessor<const T, N>)");
  detail::RawAccess a = m_->access[k];
  const detail::Runtime* rt = detail::Runtime::current();
  a.check = rt && rt->config().bounds_checks;
  return a;
}

}  // namespace reprise

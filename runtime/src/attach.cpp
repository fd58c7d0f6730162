// Attaching the program's arrays (reprise/attach.h). An attach is an internal single task on
// the root region with WRITE_DISCARD on the attached fields, pinned to the chosen memory: the
// analysis takes it for a write of the whole region there (every other memory's copy is stale
// after it), and its point — which runs after every earlier user of those fields and before
// every later one — switches the fields of the tree's instance in that memory to the arrays. A
// detach is the same with READ_WRITE: the analysis first brings the latest values into that
// memory (so into the arrays), then its point copies them into the instance's own storage and
// switches back. Nothing special in the analysis or the executor beyond the pinned placement.
#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

#include "reprise/context.h"
#include "reprise/registry.h"
#include "reprise/task_context.h"
#include "reprise_rt/instance.h"
#include "reprise_rt/internal_tasks.h"
#include "reprise_rt/runtime.h"

namespace reprise {

namespace detail {

struct Attached {
  Region region;
  MemoryID memory = 0;
  std::vector<FieldID> fields;
  std::vector<std::byte*> arrays;  // this shard's, per field
  Future detached;                 // the detach's result: valid once detach was called
  bool attached() const { return !detached.valid(); }
};

struct AttachTask {
  static const Attached& of(TaskContext& tc) {
    return *reinterpret_cast<const Attached*>(tc.args<std::uintptr_t>());
  }
  static void attach(TaskContext& tc) {
    const Attached& a = of(tc);
    for (std::size_t k = 0; k < a.fields.size(); ++k) {
      int fi = 0;
      tc.instance_field(a.fields[k], fi).attach_external(fi, a.arrays[k]);
    }
  }
  static void detach(TaskContext& tc) {
    const Attached& a = of(tc);
    for (FieldID f : a.fields) {
      int fi = 0;
      tc.instance_field(f, fi).detach_external(fi);
    }
  }
};

namespace {

void register_tasks() {
  static const bool registered = [] {
    TaskRegistry::add(kAttachTask, "attach", {cpu(&AttachTask::attach)});
    TaskRegistry::add(kDetachTask, "detach", {cpu(&AttachTask::detach)});
    return true;
  }();
  (void)registered;
}

// An element of `size` bytes is read as the widest power of two dividing it, up to 16.
std::size_t alignment_of(std::size_t size) {
  return std::min<std::size_t>(std::size_t(1) << std::countr_zero(size), 16);
}

void check_memory(Runtime& rt, MemoryID memory) {
  const InstanceManager& im = rt.instances();
  if (memory >= im.num_memories())
    throw Error(fmt::format("attach: memory {} does not exist (the machine has {} memories)",
                            memory, im.num_memories()));
  const Memory& m = im.memory(memory);
  if (m.kind != MemoryKind::System)
    throw Error(fmt::format(
        "attach: memory {} ({}) is not a system memory: only host arrays in a system memory "
        "can be attached",
        memory, m.name));
}

void check_arrays(Runtime& rt, const AttachLauncher& l, const FieldSpaceInfo& fs) {
  if (l.arrays().empty()) throw Error("attach: no arrays named (AttachLauncher::attach_array)");
  for (std::size_t k = 0; k < l.arrays().size(); ++k) {
    const auto& [field, data] = l.arrays()[k];
    const int fi = fs.index_of(field);
    if (fi < 0)
      throw Error(fmt::format("attach: field {} is not in the region's field space ({})", field,
                              rt.forest().field_list(l.region().field_space().id)));
    for (std::size_t j = 0; j < k; ++j)
      if (l.arrays()[j].field == field)
        throw Error(fmt::format("attach: field {} is named twice", field));
    if (!data) throw Error(fmt::format("attach: the array of field {} is null", field));
    const std::size_t size = fs.fields[std::size_t(fi)].size;
    if (reinterpret_cast<std::uintptr_t>(data) % alignment_of(size) != 0)
      throw Error(fmt::format(
          "attach: the array of field {} is not aligned to {} bytes (its elements have {})", field,
          alignment_of(size), size));
  }
}

// Attachments whose detach has completed are forgotten (their arrays are the program's).
void forget_detached(std::vector<std::shared_ptr<Attached>>& all) {
  std::erase_if(all, [](const std::shared_ptr<Attached>& a) {
    return !a->attached() && a->detached.ready();
  });
}

}  // namespace

}  // namespace detail

Attachment Context::attach(const AttachLauncher& l) {
  detail::Runtime& rtm = rt("attach");
  rtm.check_not_in_trace("attach");  // (rt() checked the thread)
  rtm.forest().check_region(l.region(), "attach");
  const Region r = l.region();
  if (rtm.forest().region(r.node()).parent_partition != kInvalidId)
    throw Error(fmt::format(
        "attach: region {} is a subregion; only a root region (all its points) can be attached",
        r.bounds().str()));
  detail::check_memory(rtm, l.memory());
  const detail::FieldSpaceInfo& fs = rtm.forest().field_space(r.field_space().id);
  detail::check_arrays(rtm, l, fs);
  auto& all = rtm.attachments();
  detail::forget_detached(all);
  for (const auto& a : all)
    if (a->attached() && a->region == r && a->memory == l.memory())
      for (const auto& array : l.arrays())
        if (std::find(a->fields.begin(), a->fields.end(), array.field) != a->fields.end())
          throw Error(fmt::format(
              "attach: field {} of region {} is attached in memory {} already (detach it first)",
              array.field, r.bounds().str(), l.memory()));
  detail::register_tasks();
  auto a = std::make_shared<detail::Attached>();
  a->region = r;
  a->memory = l.memory();
  for (const auto& [field, data] : l.arrays()) {
    a->fields.push_back(field);
    a->arrays.push_back(static_cast<std::byte*>(data));
  }
  TaskLauncher attach(detail::kAttachTask,
                      TaskArgs{std::uintptr_t(reinterpret_cast<std::uintptr_t>(a.get()))});
  attach.add(r, Privilege::WriteDiscard, a->fields);
  execute_task(attach, a->memory);
  all.push_back(a);  // (kept until its detach has completed: the ops' arguments point at it)
  Attachment out;
  out.a_ = std::move(a);
  return out;
}

Future Context::detach(Attachment& attachment) {
  detail::Runtime& rtm = rt("detach");
  if (!attachment.a_ || !attachment.a_->attached())
    throw Error("detach: nothing is attached (detached already, or never attached)");
  rtm.check_not_in_trace("detach");
  detail::Attached& a = *attachment.a_;
  rtm.forest().check_region(a.region, "detach");
  TaskLauncher detach(detail::kDetachTask,
                      TaskArgs{std::uintptr_t(reinterpret_cast<std::uintptr_t>(&a))});
  detach.add(a.region, Privilege::ReadWrite, a.fields);
  a.detached = execute_task(detach, a.memory);
  return a.detached;
}

bool Attachment::is_attached() const {
  return a_ && a_->attached();
}

Region Attachment::region() const {
  if (!a_) throw Error("Attachment::region: not an attachment");
  return a_->region;
}

}  // namespace reprise

#include "reprise/registry.h"

#include <fmt/core.h>

#include <mutex>
#include <unordered_map>

#include "reprise_rt/runtime.h"

namespace reprise {

namespace detail {
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<TaskID, TaskInfo>& registry_table() {
  static std::unordered_map<TaskID, TaskInfo> t;
  return t;
}
}  // namespace detail

void TaskRegistry::add(TaskID id, std::string name, std::initializer_list<TaskVariant> variants) {
  if (variants.size() == 0)
    throw Error(fmt::format("TaskRegistry::add: task {} ('{}') has no variant", id, name));
  detail::TaskInfo info;
  info.id = id;
  info.name = std::move(name);
  info.set_variants(std::span<const TaskVariant>(variants.begin(), variants.size()));
  std::lock_guard<std::mutex> g(detail::registry_mutex());
  detail::registry_table()[id] = std::move(info);
}

bool TaskRegistry::contains(TaskID id) {
  std::lock_guard<std::mutex> g(detail::registry_mutex());
  return detail::registry_table().count(id) != 0;
}

std::optional<TaskVariant> TaskRegistry::variant(TaskID id, ProcessorKind kind) {
  std::lock_guard<std::mutex> g(detail::registry_mutex());
  const auto& table = detail::registry_table();
  const auto it = table.find(id);
  if (it == table.end()) return std::nullopt;
  const TaskVariant* v = it->second.variant(kind);
  return v ? std::optional<TaskVariant>(*v) : std::nullopt;
}

}  // namespace reprise

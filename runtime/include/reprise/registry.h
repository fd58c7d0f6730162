#pragma once
// The task registry: task ids, names and their CPU (and GPU) variants.
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "reprise/future.h"
#include "reprise/task_context.h"
#include "reprise/types.h"

namespace reprise {

// Storage a task body writes its return value into.
struct TaskResult {
  static constexpr std::size_t kCapacity = 64;
  alignas(16) std::byte bytes[kCapacity];
  std::size_t size = 0;
};

using TaskEntry = void (*)(const void* fn, TaskContext& tc, TaskResult& result);

struct TaskVariant {
  ProcessorKind kind;
  const void* fn;   // the user's function
  TaskEntry entry;  // calls fn with the right signature
  ValueKind result_kind;
  std::size_t result_size;
};

namespace detail {
template <typename R>
void invoke_task(const void* fn, TaskContext& tc, TaskResult& result) {
  auto f = reinterpret_cast<R (*)(TaskContext&)>(const_cast<void*>(fn));
  if constexpr (std::is_void_v<R>) {
    f(tc);
    result.size = 0;
  } else {
    static_assert(std::is_trivially_copyable_v<R> && sizeof(R) <= TaskResult::kCapacity,
                  "task results are trivially copyable values of at most 64 bytes");
    R v = f(tc);
    std::memcpy(result.bytes, &v, sizeof(R));
    result.size = sizeof(R);
  }
}
template <typename R>
TaskVariant make_variant(ProcessorKind kind, R (*f)(TaskContext&)) {
  std::size_t size = 0;
  if constexpr (!std::is_void_v<R>) size = sizeof(R);
  return TaskVariant{kind, reinterpret_cast<const void*>(f), &invoke_task<R>, value_kind_of<R>(),
                     size};
}
}  // namespace detail

// cpu(f), gpu(f): f is a function or captureless lambda `R f(TaskContext&)`.
template <typename F>
TaskVariant cpu(F f) {
  return detail::make_variant(ProcessorKind::CPU, +f);
}
template <typename F>
TaskVariant gpu(F f) {
  return detail::make_variant(ProcessorKind::GPU, +f);
}

class TaskRegistry {
 public:
  // Registers (or replaces) task `id`. Call before or during start().
  static void add(TaskID id, std::string name, std::initializer_list<TaskVariant> variants);
  static bool contains(TaskID id);
};

}  // namespace reprise

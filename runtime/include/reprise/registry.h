#pragma once
// The task registry: task ids, names and their CPU (and GPU) variants.
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "reprise/future.h"
#include "reprise/task_context.h"
#include "reprise/types.h"

namespace reprise {

// Storage a task body writes its return value into: values of up to kInline bytes inside it
// (no allocation: the common case of a number or a small struct), bigger ones in a buffer
// shared by the copies of the result (copied before one of them is changed).
struct TaskResult {
  static constexpr std::size_t kInline = 64;
  alignas(16) std::byte bytes[kInline];
  std::size_t size = 0;
  std::shared_ptr<std::byte[]> heap;  // when size > kInline

  const std::byte* data() const { return size > kInline ? heap.get() : bytes; }
  std::byte* mutable_data() {
    if (size > kInline && heap.use_count() > 1) {
      auto own = std::make_shared<std::byte[]>(size);
      std::memcpy(own.get(), heap.get(), size);
      heap = std::move(own);
    }
    return size > kInline ? heap.get() : bytes;
  }
  void assign(const void* v, std::size_t n) {
    size = n;
    if (n > kInline) {
      heap = std::make_shared<std::byte[]>(n);
      std::memcpy(heap.get(), v, n);
    } else {
      heap.reset();
      if (n) std::memcpy(bytes, v, n);
    }
  }
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
    static_assert(std::is_trivially_copyable_v<R>, "task results are trivially copyable values");
    R v = f(tc);
    result.assign(&v, sizeof(R));
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
  // The variant task `id` runs on a processor of this kind — the one registered for the kind,
  // as the runtime picks it — or none if the task is not registered or has none for the kind.
  static std::optional<TaskVariant> variant(TaskID id, ProcessorKind kind);
};

}  // namespace reprise

#pragma once
// What a running task sees: its point, arguments, futures and region accessors.
#include <cstddef>
#include <cstring>
#include <functional>
#include <span>
#include <type_traits>
#include <vector>

#include "reprise/accessor.h"
#include "reprise/error.h"
#include "reprise/fork_join.h"
#include "reprise/future.h"

namespace reprise {

namespace detail {
struct PointTask;
struct InlineMapTask;
struct AttachTask;
class Instance;
}  // namespace detail

class TaskContext {
 public:
  explicit TaskContext(detail::PointTask& t) : t_(t) {}
  TaskContext(const TaskContext&) = delete;
  TaskContext& operator=(const TaskContext&) = delete;

  // Typed view of field `fid` of requirement `req`. Use const T for read-only access.
  template <typename T, int N>
  Accessor<T, N> accessor(int req, FieldID fid) const {
    return Accessor<T, N>(raw(req, fid, sizeof(std::remove_const_t<T>), std::is_const_v<T>, N));
  }
  template <typename T, int N>
  Reducer<T, N> reducer(int req, FieldID fid) const {
    // Built-in operators fold integers and floating-point values; a user-defined operator
    // (reprise/reduction.h) any trivially-copyable type of its value_type's size.
    static_assert(std::is_trivially_copyable_v<T>, "reducer<T, N>: T must be trivially copyable");
    std::vector<detail::RawAccess> runs;  // a sparse piece's rectangles (else left empty)
    const detail::RawAccess first =
        raw_reduce(req, fid, sizeof(T), N, detail::scalar_type_of<T>(), runs);
    if (!runs.empty()) return Reducer<T, N>(std::span<const detail::RawAccess>(runs), redop(req));
    return Reducer<T, N>(first, redop(req));
  }
  // Bounds of requirement `req`'s region for this point (for a piece of a sparse partition,
  // the bounding box of its rectangles: iterate rects(req) to visit only its points).
  Domain domain(int req) const;
  // The rectangles of requirement `req`'s region for this point: one for a dense region, the
  // piece's disjoint rectangles (sorted, empty ones left out) for a sparse one.
  std::vector<Domain> rects(int req) const;
  int num_requirements() const;
  DomainPoint point() const;
  Domain launch_domain() const;
  const char* task_name() const;

  template <typename T>
  T args() const {
    static_assert(std::is_trivially_copyable_v<T>);
    auto b = arg_bytes();
    if (b.size() != sizeof(T)) arg_size_mismatch(sizeof(T));
    T v;
    std::memcpy(&v, b.data(), sizeof(T));
    return v;
  }
  std::span<const std::byte> arg_bytes() const;
  // This point's value in the launch's ArgumentMap (an error if the map has none for it).
  template <typename T>
  T local_args() const {
    static_assert(std::is_trivially_copyable_v<T>);
    auto b = local_arg_bytes();
    if (b.size() != sizeof(T)) local_arg_size_mismatch(sizeof(T));
    T v;
    std::memcpy(&v, b.data(), sizeof(T));
    return v;
  }
  // This point's bytes in the launch's ArgumentMap (empty if it has none).
  std::span<const std::byte> local_arg_bytes() const;

  // The value of the i-th future given to the launcher (ready before the task starts).
  template <typename T>
  T future(int i) const {
    return future_handle(i).get<T>();
  }
  const Future& future_handle(int i) const;

  // Fork-join inside this task (reprise/fork_join.h, docs/forkjoin.md): parallel on the
  // processor's helpers with -ll:othr, sequential without. FinishScope is the spawn/sync form.
  template <typename F>
  void parallel_for(std::int64_t lo, std::int64_t hi, std::int64_t grain, F&& fn) const {
    reprise::parallel_for(lo, hi, grain, std::forward<F>(fn));
  }
  template <typename F>
  void parallel_for(const Rect<1>& r, std::int64_t grain, F&& fn) const {
    reprise::parallel_for(r.lo[0], r.hi[0] + 1, grain, std::forward<F>(fn));
  }
  template <typename... F>
  void fork(F&&... fns) const {
    reprise::fork(std::forward<F>(fns)...);
  }

  // GPU variants (-ll:gpu, docs/gpu.md): whether this point runs on a GPU processor, whether
  // that GPU is a CUDA device (else the host device backend), and the processor's stream (a
  // cudaStream_t on CUDA; raw kernels may go there). Kernels are asynchronous: the point
  // completes once its stream has run them.
  bool on_gpu() const;
  bool gpu_is_cuda() const;
  void* stream() const;
  // Enqueues a host function as the next kernel on this point's stream — how kernel::for_each
  // runs on the host backend; on a CPU processor it runs at once.
  void launch_kernel(std::function<void()> kernel) const;
  // Counts a kernel the task launched on stream() itself (gpu_kernels on RESULT lines).
  void count_kernel() const;

 private:
  detail::RawAccess raw(int req, FieldID fid, std::size_t elem_size, bool read_only, int dim) const;
  detail::RawAccess raw_reduce(int req, FieldID fid, std::size_t elem_size, int dim,
                               detail::ScalarType type, std::vector<detail::RawAccess>& runs) const;
  ReductionOp redop(int req) const;
  // Inline mappings (reprise/inline_mapping.h): field fid of requirement 0, with its size.
  friend struct detail::InlineMapTask;
  detail::RawAccess raw_inline(FieldID fid, std::size_t& elem_size) const;
  // Attach and detach (reprise/attach.h): requirement 0's instance and fid's index in it.
  friend struct detail::AttachTask;
  detail::Instance& instance_field(FieldID fid, int& field_index) const;
  [[noreturn]] void arg_size_mismatch(std::size_t asked) const;
  [[noreturn]] void local_arg_size_mismatch(std::size_t asked) const;
  detail::PointTask& t_;
};

}  // namespace reprise

#pragma once
// Launchers: descriptions of the ops a program issues (tasks, index launches, fills, copies).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "reprise/future.h"
#include "reprise/types.h"

namespace reprise {
namespace detail {
struct ResolvedLaunch;
// A launcher's kept resolutions (Context::execute): the most recently used first; `missed`
// fingerprints the domains of the last two launches that found none (0: none), so that a
// resolution is kept only for a domain launched before.
struct KeptLaunches {
  std::shared_ptr<const ResolvedLaunch> resolved[2];
  std::uint64_t missed[2] = {};
  void reset() {
    resolved[0].reset();
    resolved[1].reset();
  }
};
}  // namespace detail
class Context;

// Scalar task arguments: the bytes of one trivially-copyable value (use a struct for several).
class TaskArgs {
 public:
  TaskArgs() = default;
  template <typename T, typename = std::enable_if_t<!std::is_same_v<std::decay_t<T>, TaskArgs>>>
  TaskArgs(const T& v) {  // NOLINT: implicit by design, as in TaskArgs{alpha}
    static_assert(std::is_trivially_copyable_v<T>, "task arguments must be trivially copyable");
    size_ = sizeof(T);
    if (sizeof(T) > kInline) heap_.resize(sizeof(T));
    std::memcpy(sizeof(T) > kInline ? heap_.data() : inline_, &v, sizeof(T));
  }
  const std::byte* data() const { return size_ > kInline ? heap_.data() : inline_; }
  std::size_t size() const { return size_; }

 private:
  // Arguments are usually a few words: kept inside the launcher, no allocation per launch.
  static constexpr std::size_t kInline = 64;
  alignas(16) std::byte inline_[kInline]{};
  std::size_t size_ = 0;
  std::vector<std::byte> heap_;
};

// Per-point arguments of an index launch (Legion's ArgumentMap): the task of point p reads
// the value set for p with TaskContext::local_args<T>(). Points the map does not name get no
// local arguments; points it names outside the launch domain are ignored (one map may serve
// launches over several domains). A map is a value: a launch keeps the contents it was
// launched with (changing the map afterwards copies it first), so a kept launcher may be
// relaunched with a map changed between launches — also inside a trace, whose replays pass
// each point its current value.
class ArgumentMap {
 public:
  ArgumentMap& set_point(const DomainPoint& p, const TaskArgs& value);
  bool has_point(const DomainPoint& p) const;
  // The bytes set for p (empty if none).
  std::span<const std::byte> bytes(const DomainPoint& p) const;
  std::size_t size() const;
  void clear() { data_.reset(); }

 private:
  struct Data;
  std::shared_ptr<Data> data_;  // shared with the launches made with it; copied on write
};

// What a task declares about one region it uses.
struct RegionRequirement {
  Region region;        // the region (single launches), or the partition's parent
  Partition partition;  // valid for index launches over a partition
  Projection projection = Projection::identity();
  Privilege privilege = Privilege::ReadOnly;
  ReductionOp redop = ReductionOp::None;
  std::vector<FieldID> fields;
};

// A single task.
class TaskLauncher {
 public:
  TaskLauncher(TaskID task, TaskArgs args = {}) : task_(task), args_(std::move(args)) {}
  TaskLauncher& add(Region r, Privilege p, std::initializer_list<FieldID> fields);
  TaskLauncher& add(Region r, Privilege p, std::vector<FieldID> fields);
  TaskLauncher& add_reduction(Region r, ReductionOp op, std::initializer_list<FieldID> fields);
  // The task waits for f and may read it with TaskContext::future<T>(i).
  TaskLauncher& add_future(Future f);
  // A launcher may be kept and launched again with other arguments.
  TaskLauncher& set_args(TaskArgs args) {
    args_ = std::move(args);
    return *this;
  }

  TaskID task() const { return task_; }
  const TaskArgs& args() const { return args_; }
  const std::vector<RegionRequirement>& requirements() const { return reqs_; }
  const std::vector<Future>& futures() const { return futures_; }

 private:
  friend class Context;
  TaskID task_;
  TaskArgs args_;
  std::vector<RegionRequirement> reqs_;
  std::vector<Future> futures_;
  // What the runtime made of reqs_ at recent launches (Context::execute, on the application
  // thread): one per launch domain, for the last two domains launched twice (a launcher
  // launched once, or over ever new domains, pays nothing for it); dropped by add().
  mutable detail::KeptLaunches kept_;
};

// One task per point of a launch domain.
class IndexLauncher {
 public:
  IndexLauncher(TaskID task, const Domain& launch_domain, TaskArgs args = {})
      : task_(task), domain_(launch_domain), args_(std::move(args)) {}
  IndexLauncher(TaskID task, const IndexSpace& launch_space, TaskArgs args = {})
      : IndexLauncher(task, launch_space.bounds(), std::move(args)) {}
  IndexLauncher& add(const Partition& p, const Projection& proj, Privilege priv,
                     std::initializer_list<FieldID> fields);
  IndexLauncher& add(const Partition& p, const Projection& proj, Privilege priv,
                     std::vector<FieldID> fields);
  // Every point uses the whole region r.
  IndexLauncher& add(Region r, Privilege priv, std::initializer_list<FieldID> fields);
  IndexLauncher& add_reduction(const Partition& p, const Projection& proj, ReductionOp op,
                               std::initializer_list<FieldID> fields);
  IndexLauncher& add_reduction(Region r, ReductionOp op, std::initializer_list<FieldID> fields);
  IndexLauncher& add_future(Future f);
  // A launcher may be kept and launched again with other arguments or another domain of the
  // same shape (Legion's habit of reusing launchers): nothing is rebuilt per launch.
  IndexLauncher& set_args(TaskArgs args) {
    args_ = std::move(args);
    return *this;
  }
  IndexLauncher& set_domain(const Domain& d) {
    domain_ = d;
    return *this;
  }
  IndexLauncher& set_argument_map(ArgumentMap m) {
    point_args_ = std::move(m);
    return *this;
  }
  // Whether Context::execute makes the launch a FutureMap (the default). Without one it returns
  // an empty map: the launch is waited for only through a fence or the regions it writes, its
  // points' values are dropped, and a point's failure is reported by the next wait — a
  // fire-and-forget launch, as an MPI code's timestep (Task Bench's). It costs less: no map,
  // and a replayed launch makes no completion event of its own (docs/api.md).
  IndexLauncher& set_future_map(bool make) {
    future_map_ = make;
    return *this;
  }

  TaskID task() const { return task_; }
  const Domain& domain() const { return domain_; }
  const TaskArgs& args() const { return args_; }
  const ArgumentMap& argument_map() const { return point_args_; }
  const std::vector<RegionRequirement>& requirements() const { return reqs_; }
  const std::vector<Future>& futures() const { return futures_; }
  bool makes_future_map() const { return future_map_; }

 private:
  friend class Context;
  TaskID task_;
  Domain domain_;
  TaskArgs args_;
  ArgumentMap point_args_;
  bool future_map_ = true;
  std::vector<RegionRequirement> reqs_;
  std::vector<Future> futures_;
  // What the runtime made of reqs_ at recent launches (Context::execute, on the application
  // thread): one per launch domain, for the last two domains launched twice (a launcher
  // launched once, or over ever new domains, pays nothing for it); dropped by add().
  mutable detail::KeptLaunches kept_;
};

// Sets fields of a region (all of it, or a subregion) to one value.
struct FillLauncher {
  Region region;
  std::vector<FieldID> fields;
  std::vector<std::byte> value;
  template <typename T>
  static FillLauncher of(Region r, std::initializer_list<FieldID> f, const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    FillLauncher l{r, f, std::vector<std::byte>(sizeof(T))};
    std::memcpy(l.value.data(), &v, sizeof(T));
    return l;
  }
};

// Copies src_fields of src into dst_fields of dst over src's bounds, which dst's bounds must
// contain; fields are paired in order and must have equal sizes.
struct CopyLauncher {
  Region src;
  std::vector<FieldID> src_fields;
  Region dst;
  std::vector<FieldID> dst_fields;
};

}  // namespace reprise

#pragma once
// How the executor hands a task body to its CPU processor's StealPool (-ll:othr): the pool's
// worker 0 becomes the thread running the body, and the body's fork-join regions find here
// the schedules retained for this point of a replayed template (retentive stealing, memoized
// with the trace) and where -lg:steal_trace writes.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "reprise/fork_join.h"

namespace reprise::detail {

struct StealTree;

// The steal trees retained for one point of a template: one per region its body runs.
class StealMemo {
 public:
  std::shared_ptr<const StealTree> get(std::uint32_t region) const;
  void put(std::uint32_t region, std::shared_ptr<const StealTree> tree);

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const StealTree>> trees_;
};

// Per template: one memo per point, made when a point first forks.
class StealMemos {
 public:
  StealMemo& at(std::uint32_t point);

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<StealMemo>> memos_;
};

// -lg:steal_trace: the regions' trees, appended as they end, written at shutdown.
class StealTraceSink {
 public:
  void add(const std::string& label, const StealTree& tree);
  void write(const std::string& path) const;  // throws Error if it cannot

 private:
  mutable std::mutex mutex_;
  std::string text_;
};

// The task body now running on this thread, for its regions.
struct StealTaskScope {
  StealMemos* memos = nullptr;     // the template's (null: the point is not being replayed)
  std::uint32_t point = 0;         // the point's place in the template
  std::uint32_t launch_point = 0;  // its index in its launch (for labels)
  bool retentive = true;           // -lg:retentive
  StealTraceSink* sink = nullptr;
  const char* task = "";
  std::uint32_t regions = 0;  // regions begun so far
  std::string label() const;
};

// While alive, this thread runs as worker 0 of `pool` for the task in `scope`.
class StealBinding {
 public:
  StealBinding(StealPool& pool, StealTaskScope& scope);
  ~StealBinding();
  StealBinding(const StealBinding&) = delete;
  StealBinding& operator=(const StealBinding&) = delete;

 private:
  StealWorker* prev_worker_;
  StealTaskScope* prev_scope_;
};

}  // namespace reprise::detail

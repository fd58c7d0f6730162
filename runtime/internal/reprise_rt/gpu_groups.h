#pragma once
// Replays as graphs (DESIGN.md §9): the GPU points of a replayed template that run on one GPU
// processor form a group, captured once as a device graph — their kernels in template order,
// and completion callbacks — and launched as one unit per replay. A callback (a host node on
// CUDA, costing a round trip to a host thread) follows only a point whose successors lie
// outside the group, and the last point; it completes every point since the previous one.
//
// A group's in-group edges are left to the stream's order (the group's batch counters do not
// count them), so its points become ready together once their outside preconditions hold; the
// last one to become ready launches the graph. That is safe only when no path leaves the group
// and comes back (a point would wait for its own graph): the memoizer forms groups that way.
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "reprise/types.h"
#include "reprise_rt/device.h"
#include "reprise_rt/replay_batch.h"

namespace reprise::detail {

class Executor;

struct GpuGroup {
  Processor proc;
  std::vector<std::uint32_t> members;  // instructions of the template, in its order
  std::vector<bool> callback_after;    // per member: a completion callback follows its kernels
  // The graph (none before its first capture, or once stale) and what it was captured with
  // (read and written by proc's GPU thread only).
  DeviceGraph graph;
  bool off = false;  // its points run kernel by kernel (arguments that keep changing, errors)
  int captures = 0;
  std::vector<std::vector<std::byte>> captured_args;  // per member, its task's arguments
  // Batches whose graph is launched and not yet finished, in stream order: a callback in the
  // graph completes its point of the oldest.
  std::mutex mutex;
  std::deque<ReplayBatch*> in_flight;
  struct Step {
    Executor* exec;
    GpuGroup* group;
    std::uint32_t first, last;  // the members it completes (indices into members)
  };
  std::vector<Step> steps;  // the callbacks' arguments (addresses fixed at capture)
};

struct GpuGroups {
  std::vector<std::unique_ptr<GpuGroup>> groups;
  std::vector<std::int32_t> group_of;  // per instruction: its group, or -1
  // The template's successor lists without in-group edges, and per instruction the in-group
  // predecessors left out of its counter.
  std::shared_ptr<const BatchEdges> successors;
  std::vector<std::uint32_t> removed_in;
  // Set at the first capture (by whichever thread launches a group: groups of different GPUs
  // may be captured at once, hence atomic); retires the graphs.
  std::atomic<Executor*> exec{nullptr};
  GpuGroups() = default;
  GpuGroups(const GpuGroups&) = delete;
  GpuGroups& operator=(const GpuGroups&) = delete;
  ~GpuGroups();
};

}  // namespace reprise::detail

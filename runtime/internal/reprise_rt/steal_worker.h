#pragma once
// The work-stealing scheduler's parts (docs/forkjoin.md): a running task is a StealFrame on
// its worker's stack; work offered to thieves is a StealJob in the worker's deque (or, when a
// retained schedule says who ran it last time, in that worker's mailbox); a fork waits on a
// StealJoin. Frames and jobs live on the stacks of the forks that made them, which wait for
// them, so a fork allocates nothing.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "reprise/fork_join.h"
#include "reprise_rt/steal_deque.h"
#include "reprise_rt/steal_tree.h"

namespace reprise::detail {

struct StealFrame {
  const StealFrame* parent = nullptr;   // null at a working phase's root
  std::uint32_t step_in_parent = 0;     // the step its parent spawned it at
  std::uint32_t steps = 0;              // the step of its next child
  std::uint32_t phase = 0;              // the worker's phase it runs in (when recording)
  const StealTrie* frontier = nullptr;  // retained schedule: jobs taken below this task
};

struct StealJoin {
  explicit StealJoin(StealWorker& o) : owner(&o) {}
  std::atomic<std::int32_t> pending{0};
  StealWorker* owner;  // woken when pending reaches 0
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // the first exception (written by whoever set `failed`)

  void add() { pending.fetch_add(1, std::memory_order_relaxed); }
  void take_back() { pending.fetch_sub(1, std::memory_order_relaxed); }  // owner, not taken
  void fail(std::exception_ptr e) {
    if (!failed.exchange(true)) error = std::move(e);
  }
  void done();  // a job finished elsewhere: count down, wake the owner at 0
  void rethrow();
};

struct WorkFirstGroup;

struct StealJob {
  enum class Kind : std::uint8_t { Child, Continuation };
  Kind kind = Kind::Child;
  ForkFn fn{};                      // Child
  WorkFirstGroup* group = nullptr;  // Continuation: the fork whose later children it spawns
  std::uint32_t next = 0;           // Continuation: the first of them
  StealJoin* join = nullptr;
  const StealFrame* parent = nullptr;  // the task that offered it
  std::uint32_t step = 0;              // its step in that task
  std::int32_t victim = 0;             // the worker that offered it, and that worker's phase
  std::uint32_t victim_phase = 0;
  const StealTrie* frontier = nullptr;  // retained schedule: jobs taken within this job
};

// A work-first fork: its children and its continuation (one at a time in some deque).
struct WorkFirstGroup {
  const ForkFn* fns;
  std::size_t n;
  StealJob cont;
};

struct StealWorker {
  StealPool::Impl* pool = nullptr;
  std::int32_t id = 0;
  StealDeque<StealJob> deque;
  // Jobs handed to this worker by a retained schedule (few per region).
  std::mutex mail_mutex;
  std::deque<StealJob*> mail;
  std::atomic<int> mail_count{0};
  // Sleeping: a waker that sees `parked` takes the mutex before it notifies.
  std::mutex park_mutex;
  std::condition_variable park_cv;
  std::atomic<bool> parked{false};
  StealFrame* frame = nullptr;  // the task it runs now (null: none; worker 0 outside regions)
  std::vector<StealPhase> log;  // phases begun in this region (when recording)
  // Retentive regions: the phases the retained tree gives this worker, and how many it has
  // been handed so far; until the first arrives (or kRetainWait passes) it does not steal.
  std::atomic<std::uint32_t> expected_mail{0}, received_mail{0};
  // When its last phase ended (steady clock; written before the phase's join counts down).
  std::int64_t last_done_ns = 0;
  std::atomic<std::uint64_t> steals{0}, deliveries{0};
  std::uint32_t rng = 0;
};

}  // namespace reprise::detail

namespace reprise {

struct StealPool::Impl {
  StealPolicy policy = StealPolicy::WorkFirst;
  std::vector<std::unique_ptr<detail::StealWorker>> workers;
  std::vector<std::thread> helpers;
  std::atomic<bool> active{false}, stop{false};
  // Set by worker 0 before a region's first job is offered, read by the region's jobs.
  bool recording = false;
  std::atomic<bool> allow_steals{true};  // (idle helpers read it between regions too)
  const detail::StealTree* replay = nullptr;
  std::atomic<std::uint64_t> regions{0}, phases{0}, tree_bytes{0};
  std::atomic<std::int64_t> region_start_ns{0};  // steady clock, when the region began
  std::mutex last_mutex;
  std::shared_ptr<const detail::StealTree> last;
};

}  // namespace reprise

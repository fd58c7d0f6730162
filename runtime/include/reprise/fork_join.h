#pragma once
// Fork-join work inside a task, on a work-stealing scheduler whose schedule is traced as a
// steal tree (Lifflander et al., PLDI'13) and can be retained from one run to the next
// (retentive stealing). docs/forkjoin.md explains the model.
//
// Inside a task body on a CPU processor with helpers (-ll:othr T: the processor's worker plus
// T-1 helper threads), fork(), parallel_for() and FinishScope run in parallel; elsewhere they
// run sequentially, in the order a sequential program would. Either way the results are those
// of the sequential program when the forked work is free of data races.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace reprise {

// Work-first (Cilk): a fork runs its first child at once and leaves the rest of the fork (the
// continuation) to thieves. Help-first (X10, oneTBB): a fork offers its children to thieves
// and runs the youngest. FinishScope::spawn is always help-first (the code after a spawn is a
// C++ frame that no other thread can resume).
enum class StealPolicy : std::uint8_t { WorkFirst, HelpFirst };
const char* to_string(StealPolicy p);

namespace detail {
struct StealWorker;
struct StealTree;
struct StealJob;
class StealBinding;
struct ForkFn {
  void (*call)(const void*);
  const void* obj;
};
struct RangeFn {
  void (*call)(const void*, std::int64_t, std::int64_t);
  const void* obj;
};
void fork_erased(const ForkFn* fns, std::size_t n);
void parallel_for_erased(std::int64_t lo, std::int64_t hi, std::int64_t grain, RangeFn fn);
}  // namespace detail

// Runs every callable (possibly in parallel) and returns when all are done. An exception from
// any of them is rethrown here (the first one caught) once all have finished.
template <typename... F>
void fork(F&&... fns) {
  const detail::ForkFn list[] = {
      {[](const void* o) { (*static_cast<std::remove_reference_t<F>*>(const_cast<void*>(o)))(); },
       static_cast<const void*>(&fns)}...};
  detail::fork_erased(list, sizeof...(F));
}

// fn(i) for every i in [lo, hi), split in halves down to at most `grain` indices per piece.
// An Error for grain < 1 or hi < lo.
template <typename F>
void parallel_for(std::int64_t lo, std::int64_t hi, std::int64_t grain, F&& fn) {
  detail::parallel_for_erased(
      lo, hi, grain,
      {[](const void* o, std::int64_t a, std::int64_t b) {
         auto& f = *static_cast<std::remove_reference_t<F>*>(const_cast<void*>(o));
         for (std::int64_t i = a; i < b; ++i) f(i);
       },
       static_cast<const void*>(&fn)});
}

// X10's finish: spawn() offers a child to thieves at once (help-first) and returns; sync()
// (or the destructor) waits for every child spawned here, and rethrows the first exception
// one of them threw. Spawned callables are stored in the scope, so they may be temporaries.
class FinishScope {
 public:
  FinishScope();
  FinishScope(const FinishScope&) = delete;
  FinishScope& operator=(const FinishScope&) = delete;
  // Waits for the children; rethrows a child's exception unless the stack is unwinding.
  ~FinishScope() noexcept(false);

  template <typename F>
  void spawn(F&& fn) {
    spawn_function(std::function<void()>(std::forward<F>(fn)));
  }
  void sync();

 private:
  void spawn_function(std::function<void()> fn);
  struct Child;
  struct State;
  std::unique_ptr<State> state_;
};

// Counters of one pool: steals from deques (thieves taking work), deliveries (work handed to
// the worker that ran it in the retained schedule), working phases and the size of the steal
// trees recorded.
struct StealStats {
  std::uint64_t regions = 0;     // fork-join regions run (outermost fork/parallel_for/scope)
  std::uint64_t steals = 0;      // jobs taken from another worker's deque
  std::uint64_t deliveries = 0;  // jobs handed over by a retained schedule
  std::uint64_t phases = 0;      // working phases recorded (regions + steals + deliveries)
  std::uint64_t tree_bytes = 0;  // steal trees recorded, encoded size in bytes
};

// A steal tree recorded from one region, to start the next from (retentive stealing).
class StealSchedule {
 public:
  StealSchedule();
  ~StealSchedule();
  StealSchedule(StealSchedule&&) noexcept;
  StealSchedule& operator=(StealSchedule&&) noexcept;
  bool empty() const;
  std::size_t phases() const;
  std::size_t bytes() const;  // encoded size (docs/forkjoin.md)
  // Whether its workers finished close together; a retentive run starts only from such a one.
  bool balanced() const;
  std::string text() const;  // the tree, one working phase per line
  // A schedule from text() output (one region of a -lg:steal_trace file): to keep one across
  // program runs. An Error names the line that is malformed.
  static StealSchedule from_text(const std::string& text);

 private:
  friend class StealPool;
  std::shared_ptr<const detail::StealTree> tree_;
};

// A pool of `threads` workers: the thread that calls run() is worker 0, the others are helper
// threads that sleep while no region runs. Reprise gives each CPU processor one (-ll:othr);
// a program may also make its own.
class StealPool {
 public:
  explicit StealPool(int threads, StealPolicy policy = StealPolicy::WorkFirst);
  ~StealPool();
  StealPool(const StealPool&) = delete;
  StealPool& operator=(const StealPool&) = delete;

  // Runs fn as a fork-join region rooted on this thread. With `retain`, the region starts
  // from the schedule it holds (each worker is handed the work it ran then, and may still
  // steal) and leaves there the schedule of this run; `record` records the steal tree even
  // without (see stats() and last_schedule()).
  void run(const std::function<void()>& fn, StealSchedule* retain = nullptr, bool record = false);
  // Replays a recorded schedule exactly: each worker runs the working phases it ran then, and
  // nothing is stolen (the program must fork as it did). Records the run (last_schedule()).
  void replay(const std::function<void()>& fn, const StealSchedule& schedule);
  StealSchedule last_schedule() const;
  StealStats stats() const;
  int threads() const;
  StealPolicy policy() const;

  struct Impl;  // the scheduler's state (runtime-internal)

 private:
  friend class detail::StealBinding;
  std::shared_ptr<detail::StealTree> run_region(const std::function<void()>& fn,
                                                std::shared_ptr<const detail::StealTree> replay,
                                                bool record, bool allow_steals);
  std::unique_ptr<Impl> impl_;
};

}  // namespace reprise

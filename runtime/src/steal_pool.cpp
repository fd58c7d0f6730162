// The work-stealing scheduler behind reprise/fork_join.h (docs/forkjoin.md): forks, the
// steal path (which records the steal tree), waiting, regions and the pool's helper threads.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <chrono>

#include "reprise/error.h"
#include "reprise/fork_join.h"
#include "reprise_rt/assert.h"
#include "reprise_rt/steal_scope.h"
#include "reprise_rt/steal_tree.h"
#include "reprise_rt/steal_worker.h"

namespace reprise {

const char* to_string(StealPolicy p) {
  return p == StealPolicy::WorkFirst ? "work-first" : "help-first";
}

}  // namespace reprise

namespace reprise::detail {

namespace {

thread_local StealWorker* tl_worker = nullptr;
thread_local StealTaskScope* tl_scope = nullptr;

// An idle worker tries this many rounds (yielding between them) before it sleeps; a sleep
// while a region runs is short (20 µs, doubling to 1 ms), so that work offered meanwhile is
// found without a wake-up on every push.
constexpr unsigned kSpinRounds = 32;
// A worker that a retained schedule gives work waits this long for the first of it before it
// steals (paper §8.2: each worker begins with what it ran last time); the bound covers a
// schedule whose steps the program no longer reaches.
constexpr std::int64_t kRetainWaitNs = 1'000'000;
// Every steal in a retentive run splits a retained phase, and phases are never merged again,
// so a schedule that keeps being corrected fragments; past this many phases per thread it is
// dropped and the next run steals afresh (and records a new one).
constexpr std::size_t kMaxRetainedPhasesPerThread = 32;
// A worker that ran phases and then sat idle for more than this share of the region's time
// makes its tree unbalanced: a retained split is corrected only by steals, which come too
// late when the last pieces are coarse, so the next run steals afresh instead.
constexpr double kIdleShareUnbalanced = 0.02;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void wake(StealWorker& w) {
  if (w.parked.load(std::memory_order_seq_cst)) {
    std::lock_guard<std::mutex> lock(w.park_mutex);
    w.park_cv.notify_one();
  }
}

// Sleeps until woken, `timeout` (zero: none) passes, or ready() holds. Wakers change what
// ready() reads (seq_cst), then read `parked` (seq_cst): either they see it set and notify
// under the mutex, or this sees what they changed.
template <typename Ready>
void park(StealWorker& w, std::chrono::microseconds timeout, Ready ready) {
  std::unique_lock<std::mutex> lock(w.park_mutex);
  w.parked.store(true, std::memory_order_seq_cst);
  if (!ready()) {
    if (timeout.count() > 0)
      w.park_cv.wait_for(lock, timeout);
    else
      w.park_cv.wait(lock);
  }
  w.parked.store(false, std::memory_order_relaxed);
}

template <typename Ready>
void back_off(StealWorker& w, unsigned idle, Ready ready) {
  if (idle < kSpinRounds) {
    std::this_thread::yield();
    return;
  }
  const unsigned shift = std::min(idle - kSpinRounds, 6u);
  park(w, std::chrono::microseconds(std::min(1000u, 20u << shift)), ready);
}

StealJob* take_mail(StealWorker& w) {
  if (w.mail_count.load(std::memory_order_acquire) == 0) return nullptr;
  std::lock_guard<std::mutex> lock(w.mail_mutex);
  if (w.mail.empty()) return nullptr;
  StealJob* j = w.mail.front();
  w.mail.pop_front();
  w.mail_count.fetch_sub(1, std::memory_order_relaxed);
  return j;
}

void deliver(StealWorker& to, StealJob& j) {
  {
    std::lock_guard<std::mutex> lock(to.mail_mutex);
    to.mail.push_back(&j);
    to.mail_count.fetch_add(1, std::memory_order_seq_cst);
  }
  wake(to);
}

StealJob* steal_one(StealWorker& w) {
  StealPool::Impl& pool = *w.pool;
  const std::size_t n = pool.workers.size();
  if (n < 2) return nullptr;
  if (w.received_mail.load(std::memory_order_relaxed) == 0 &&
      w.expected_mail.load(std::memory_order_relaxed) > 0 &&
      now_ns() - pool.region_start_ns.load(std::memory_order_relaxed) < kRetainWaitNs)
    return nullptr;
  w.rng ^= w.rng << 13;
  w.rng ^= w.rng >> 17;
  w.rng ^= w.rng << 5;
  const std::size_t start = w.rng % (n - 1);
  for (std::size_t k = 0; k + 1 < n; ++k) {
    const std::size_t v = (std::size_t(w.id) + 1 + (start + k) % (n - 1)) % n;
    StealDeque<StealJob>& d = pool.workers[v]->deque;
    // Seeing the entry orders this after the region's start, so the flag read is that
    // region's (an exact replay forbids steals).
    if (!d.maybe_nonempty()) continue;
    if (!pool.allow_steals.load(std::memory_order_relaxed)) return nullptr;
    if (StealJob* j = d.steal()) return j;
  }
  return nullptr;
}

void work_first_loop(StealWorker& w, StealFrame& f, WorkFirstGroup& g, std::size_t first,
                     StealJoin& join);
void wait_join(StealWorker& w, StealJoin& join);

// Runs a job: popped here (in the phase of the task that offered it) or as the root of a new
// working phase. The job's join is the last thing touched: its fork may return at once.
void run_job(StealWorker& w, StealJob& j, bool phase_root, std::uint32_t phase) {
  StealFrame f;
  f.parent = phase_root ? nullptr : j.parent;
  f.step_in_parent = j.step;
  f.phase = phase_root ? phase : j.parent->phase;
  f.frontier = j.frontier;
  StealJoin* join = j.join;
  StealFrame* prev = std::exchange(w.frame, &f);
  if (j.kind == StealJob::Kind::Child) {
    try {
      j.fn.call(j.fn.obj);
    } catch (...) {
      join->fail(std::current_exception());
    }
  } else {
    REPRISE_ASSERT(phase_root, "a continuation only ever runs where it was stolen or delivered");
    // This frame stands for the rest of the forking task: it spawns the fork's later children
    // (at the steps the task would have used) and waits for what is taken from it.
    WorkFirstGroup& g = *j.group;
    const std::size_t next = j.next;
    f.steps = j.step;
    StealJoin local(w);
    work_first_loop(w, f, g, next, local);  // reuses g.cont, which is j
    wait_join(w, local);
    if (local.failed.load()) join->fail(local.error);
  }
  w.frame = prev;
  if (phase_root && w.pool->recording) w.last_done_ns = now_ns();
  join->done();
}

// A job taken from another worker (or handed over): recorded by the thief alone, as the
// path from the victim phase's root down to the job.
void begin_phase(StealWorker& w, StealJob& j, bool delivered) {
  (delivered ? w.deliveries : w.steals).fetch_add(1, std::memory_order_relaxed);
  if (delivered) w.received_mail.fetch_add(1, std::memory_order_relaxed);
  std::uint32_t phase = 0;
  if (w.pool->recording) {
    StealPhase ph;
    ph.victim = j.victim;
    ph.victim_phase = j.victim_phase;
    ph.continuation = j.kind == StealJob::Kind::Continuation;
    ph.delivered = delivered;
    for (const StealFrame* f = j.parent; f && f->parent; f = f->parent)
      ph.path.push_back(f->step_in_parent);
    std::reverse(ph.path.begin(), ph.path.end());
    ph.path.push_back(j.step);
    phase = std::uint32_t(w.log.size());
    w.log.push_back(std::move(ph));
  }
  run_job(w, j, true, phase);
}

// An idle or waiting worker's next work: what was handed to it, else what it can steal, run as
// a new working phase. False if it found nothing.
bool run_found_work(StealWorker& w) {
  StealJob* j = take_mail(w);
  const bool delivered = j != nullptr;
  if (!j) j = steal_one(w);
  if (!j) return false;
  begin_phase(w, *j, delivered);
  return true;
}

enum class Offer { Pushed, Delivered, Inline };

// Makes a job available: to the worker that ran it in the retained schedule, else to thieves
// through this worker's deque (Inline: the deque is full, run it now).
Offer offer(StealWorker& w, const StealFrame& f, StealJob& j) {
  j.parent = &f;
  j.victim = w.id;
  j.victim_phase = f.phase;
  const StealTrie* below = nullptr;
  if (f.frontier) {
    if (const StealTrie::Entry* e = f.frontier->find(j.step)) {
      StealPool::Impl& pool = *w.pool;
      if (e->thief >= 0 && e->thief != w.id && std::size_t(e->thief) < pool.workers.size()) {
        j.frontier = pool.replay->trie(e->thief, e->thief_phase);
        deliver(*pool.workers[std::size_t(e->thief)], j);
        return Offer::Delivered;
      }
      below = e->below.get();
    }
  }
  // A continuation spawns the rest of f's children: what was taken below f applies to it.
  j.frontier = j.kind == StealJob::Kind::Continuation ? f.frontier : below;
  return w.deque.push(&j) ? Offer::Pushed : Offer::Inline;
}

void run_inline(StealWorker& w, StealFrame& parent, const ForkFn& fn, std::uint32_t step,
                StealJoin& join) {
  StealFrame f;
  f.parent = &parent;
  f.step_in_parent = step;
  f.phase = parent.phase;
  if (parent.frontier)
    if (const StealTrie::Entry* e = parent.frontier->find(step)) f.frontier = e->below.get();
  StealFrame* prev = std::exchange(w.frame, &f);
  try {
    fn.call(fn.obj);
  } catch (...) {
    join.fail(std::current_exception());
  }
  w.frame = prev;
}

// Work-first: each child runs at once while the fork's continuation waits in the deque; if a
// thief took it, the thief spawns the remaining children and this returns.
void work_first_loop(StealWorker& w, StealFrame& f, WorkFirstGroup& g, std::size_t first,
                     StealJoin& join) {
  for (std::size_t i = first; i < g.n; ++i) {
    const std::uint32_t step = f.steps++;
    StealJob* cont = nullptr;
    Offer how = Offer::Inline;
    if (i + 1 < g.n) {
      cont = &g.cont;
      cont->kind = StealJob::Kind::Continuation;
      cont->group = &g;
      cont->next = std::uint32_t(i + 1);
      cont->join = &join;
      cont->step = step + 1;
      join.add();
      how = offer(w, f, *cont);
      if (how == Offer::Inline) join.take_back();
    }
    run_inline(w, f, g.fns[i], step, join);
    if (how == Offer::Delivered) return;
    if (how == Offer::Pushed) {
      StealJob* back = w.deque.pop();
      REPRISE_ASSERT(!back || back == cont,
                     "what a child pushed it popped again, so the deque's top is its "
                     "continuation or nothing");
      if (back != cont) return;  // stolen
      join.take_back();
    }
  }
}

// Runs what this task pushed since `mark` and nobody stole.
void drain(StealWorker& w, std::int64_t mark) {
  while (w.deque.bottom() > mark) {
    StealJob* j = w.deque.pop();
    if (!j) return;
    run_job(w, *j, false, 0);
  }
}

// Waits for jobs taken by others, running handed-over or stolen work meanwhile (each a new
// working phase nested on this stack).
void wait_join(StealWorker& w, StealJoin& join) {
  unsigned idle = 0;
  while (join.pending.load(std::memory_order_acquire) > 0) {
    if (run_found_work(w)) {
      idle = 0;
      continue;
    }
    back_off(w, idle++, [&] {
      return join.pending.load(std::memory_order_seq_cst) == 0 ||
             w.mail_count.load(std::memory_order_seq_cst) > 0;
    });
  }
}

void fork_in(StealWorker& w, const ForkFn* fns, std::size_t n) {
  if (n == 0) return;
  StealFrame& f = *w.frame;
  StealJoin join(w);
  const std::uint32_t base = f.steps;
  if (n == 1) {
    f.steps = base + 1;
    run_inline(w, f, fns[0], base, join);
  } else if (w.pool->policy == StealPolicy::WorkFirst) {
    WorkFirstGroup g{fns, n, {}};
    work_first_loop(w, f, g, 0, join);
    f.steps = base + std::uint32_t(n);
    wait_join(w, join);
  } else {
    // Help-first: offer all children but the youngest, run it, then the others that are left
    // (youngest first); thieves take the oldest.
    f.steps = base + std::uint32_t(n);
    const std::int64_t mark = w.deque.bottom();
    std::array<StealJob, 8> small;
    std::vector<StealJob> large(n > small.size() + 1 ? n - 1 : 0);
    StealJob* jobs = large.empty() ? small.data() : large.data();
    for (std::size_t i = 0; i + 1 < n; ++i) {
      StealJob& j = jobs[i];
      j.fn = fns[i];
      j.join = &join;
      j.step = base + std::uint32_t(i);
      join.add();
      if (offer(w, f, j) == Offer::Inline) {
        join.take_back();
        run_inline(w, f, fns[i], j.step, join);
      }
    }
    run_inline(w, f, fns[n - 1], base + std::uint32_t(n - 1), join);
    drain(w, mark);
    wait_join(w, join);
  }
  join.rethrow();
}

template <typename F>
void call_thunk(const void* o) {
  (*static_cast<const F*>(o))();
}

void parallel_for_in(StealWorker& w, std::int64_t lo, std::int64_t hi, std::int64_t grain,
                     const RangeFn& fn) {
  if (hi - lo <= grain) {
    fn.call(fn.obj, lo, hi);
    return;
  }
  const std::int64_t mid = lo + (hi - lo) / 2;
  auto left = [&] { parallel_for_in(*tl_worker, lo, mid, grain, fn); };
  auto right = [&] { parallel_for_in(*tl_worker, mid, hi, grain, fn); };
  const ForkFn halves[2] = {{call_thunk<decltype(left)>, &left},
                            {call_thunk<decltype(right)>, &right}};
  fork_in(w, halves, 2);
}

void run_sequentially(const ForkFn* fns, std::size_t n) {
  std::exception_ptr first;
  for (std::size_t i = 0; i < n; ++i) try {
      fns[i].call(fns[i].obj);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  if (first) std::rethrow_exception(first);
}

// One fork-join region on worker 0: its root frame, and what it retains and records.
struct Region {
  StealWorker* w = nullptr;
  StealFrame root;
  std::shared_ptr<const StealTree> replay;
  StealMemo* memo = nullptr;  // a task region: where the tree is retained
  std::uint32_t ordinal = 0;
  bool record = false;
};

void begin_region(Region& r, StealWorker& w, std::shared_ptr<const StealTree> replay, bool record,
                  bool allow_steals) {
  StealPool::Impl& pool = *w.pool;
  REPRISE_ASSERT(w.id == 0 && !w.frame, "regions begin on worker 0, outside any region");
  if (replay && allow_steals &&
      (!replay->balanced ||
       replay->num_phases() > kMaxRetainedPhasesPerThread * pool.workers.size()))
    replay = nullptr;
  r.w = &w;
  r.replay = std::move(replay);
  r.record = record;
  pool.replay = r.replay.get();
  pool.recording = record;
  pool.allow_steals.store(allow_steals, std::memory_order_relaxed);
  for (std::size_t i = 0; i < pool.workers.size(); ++i) {
    StealWorker& x = *pool.workers[i];
    x.log.clear();
    const std::size_t given =
        r.replay && i < r.replay->phases.size()
            ? r.replay->phases[i].size() - (i == 0 && !r.replay->phases[i].empty())
            : 0;
    x.expected_mail.store(std::uint32_t(given), std::memory_order_relaxed);
    x.received_mail.store(0, std::memory_order_relaxed);
  }
  pool.region_start_ns.store(now_ns(), std::memory_order_relaxed);
  if (record) w.log.emplace_back();  // the root phase
  r.root.frontier = r.replay ? r.replay->trie(0, 0) : nullptr;
  w.frame = &r.root;
  pool.active.store(true, std::memory_order_seq_cst);
  for (std::size_t i = 1; i < pool.workers.size(); ++i) wake(*pool.workers[i]);
}

std::shared_ptr<StealTree> end_region(Region& r) {
  StealWorker& w = *r.w;
  StealPool::Impl& pool = *w.pool;
  w.frame = nullptr;
  pool.active.store(false, std::memory_order_seq_cst);
  pool.regions.fetch_add(1, std::memory_order_relaxed);
  pool.replay = nullptr;
  if (!r.record) return nullptr;
  auto tree = std::make_shared<StealTree>();
  tree->threads = int(pool.workers.size());
  tree->policy = pool.policy;
  const std::int64_t end = now_ns();
  const std::int64_t span = end - pool.region_start_ns.load(std::memory_order_relaxed);
  for (std::size_t i = 1; i < pool.workers.size(); ++i)
    if (!pool.workers[i]->log.empty() &&
        double(end - pool.workers[i]->last_done_ns) > kIdleShareUnbalanced * double(span))
      tree->balanced = false;
  for (auto& x : pool.workers) tree->phases.push_back(std::move(x->log));
  tree->index();
  pool.phases.fetch_add(tree->num_phases(), std::memory_order_relaxed);
  pool.tree_bytes.fetch_add(tree->bytes(), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(pool.last_mutex);
    pool.last = tree;
  }
  return tree;
}

// A region begun by a task body (the outermost fork, parallel_for or FinishScope): retained
// and recorded as the executor's scope says.
void begin_task_region(Region& r, StealWorker& w) {
  StealTaskScope* scope = tl_scope;
  std::shared_ptr<const StealTree> retained;
  bool record = false;
  if (scope) {
    r.ordinal = scope->regions++;
    if (scope->memos && scope->retentive) {
      r.memo = &scope->memos->at(scope->point);
      retained = r.memo->get(r.ordinal);
    }
    record = r.memo || scope->sink;
  }
  begin_region(r, w, std::move(retained), record, true);
}

void end_task_region(Region& r) {
  std::shared_ptr<StealTree> tree = end_region(r);
  if (!tree) return;
  if (r.memo) r.memo->put(r.ordinal, tree);
  if (StealTaskScope* scope = tl_scope; scope && scope->sink)
    scope->sink->add(fmt::format("{} region={}", scope->label(), r.ordinal), *tree);
}

template <typename F>
void in_task_region(StealWorker& w, F&& body) {
  Region r;
  begin_task_region(r, w);
  std::exception_ptr error;
  try {
    body();
  } catch (...) {
    error = std::current_exception();
  }
  end_task_region(r);
  if (error) std::rethrow_exception(error);
}

void helper_loop(StealWorker& w) {
  tl_worker = &w;
  StealPool::Impl& pool = *w.pool;
  unsigned idle = 0;
  while (!pool.stop.load(std::memory_order_acquire)) {
    if (!pool.active.load(std::memory_order_acquire)) {
      park(w, std::chrono::microseconds(0), [&] {
        return pool.active.load(std::memory_order_seq_cst) ||
               pool.stop.load(std::memory_order_seq_cst);
      });
      idle = 0;
      continue;
    }
    if (run_found_work(w)) {
      idle = 0;
      continue;
    }
    back_off(w, idle++, [&] {
      return w.mail_count.load(std::memory_order_seq_cst) > 0 ||
             !pool.active.load(std::memory_order_seq_cst) ||
             pool.stop.load(std::memory_order_seq_cst);
    });
  }
  tl_worker = nullptr;
}

}  // namespace

void StealJoin::done() {
  StealWorker* o = owner;  // the join may be gone once pending reaches 0
  if (pending.fetch_sub(1, std::memory_order_seq_cst) == 1) wake(*o);
}

void StealJoin::rethrow() {
  if (!failed.load(std::memory_order_acquire)) return;
  failed.store(false, std::memory_order_relaxed);
  std::rethrow_exception(std::exchange(error, nullptr));
}

void fork_erased(const ForkFn* fns, std::size_t n) {
  StealWorker* w = tl_worker;
  if (!w) return run_sequentially(fns, n);
  if (w->frame) return fork_in(*w, fns, n);
  in_task_region(*w, [&] { fork_in(*tl_worker, fns, n); });
}

void parallel_for_erased(std::int64_t lo, std::int64_t hi, std::int64_t grain, RangeFn fn) {
  if (grain < 1)
    throw Error(
        fmt::format("parallel_for: grain {} is not positive (it is the most indices one "
                    "piece runs)",
                    grain));
  if (hi < lo)
    throw Error(fmt::format("parallel_for: the range [{}, {}) ends before it begins", lo, hi));
  StealWorker* w = tl_worker;
  if (!w) return fn.call(fn.obj, lo, hi);
  if (w->frame) return parallel_for_in(*w, lo, hi, grain, fn);
  in_task_region(*w, [&] { parallel_for_in(*tl_worker, lo, hi, grain, fn); });
}

StealBinding::StealBinding(StealPool& pool, StealTaskScope& scope)
    : prev_worker_(tl_worker), prev_scope_(tl_scope) {
  tl_worker = pool.impl_->workers[0].get();
  tl_scope = &scope;
}

StealBinding::~StealBinding() {
  tl_worker = prev_worker_;
  tl_scope = prev_scope_;
}

}  // namespace reprise::detail

namespace reprise {

using detail::StealWorker;

// ---- FinishScope ----

struct FinishScope::Child {
  std::function<void()> fn;
  detail::StealJob job;
};

struct FinishScope::State {
  StealWorker* worker = nullptr;  // null: sequential (no pool on this thread)
  detail::StealFrame* frame = nullptr;
  std::unique_ptr<detail::StealJoin> join;
  std::int64_t mark = 0;
  std::deque<Child> children;
  std::exception_ptr sequential_error;
  std::unique_ptr<detail::Region> region;  // when the scope began one
};

FinishScope::FinishScope() : state_(std::make_unique<State>()) {
  StealWorker* w = detail::tl_worker;
  if (!w) return;
  state_->worker = w;
  if (!w->frame) {
    state_->region = std::make_unique<detail::Region>();
    detail::begin_task_region(*state_->region, *w);
  }
  state_->frame = w->frame;
  state_->join = std::make_unique<detail::StealJoin>(*w);
  state_->mark = w->deque.bottom();
}

void FinishScope::spawn_function(std::function<void()> fn) {
  State& s = *state_;
  if (!s.worker) {
    try {
      fn();
    } catch (...) {
      if (!s.sequential_error) s.sequential_error = std::current_exception();
    }
    return;
  }
  if (detail::tl_worker != s.worker || s.worker->frame != s.frame)
    throw Error("FinishScope::spawn: called from another task than the one that made the scope");
  Child& c = s.children.emplace_back();
  c.fn = std::move(fn);
  c.job.fn = {[](const void* o) { (*static_cast<const std::function<void()>*>(o))(); }, &c.fn};
  c.job.join = s.join.get();
  c.job.step = s.frame->steps++;
  s.join->add();
  if (detail::offer(*s.worker, *s.frame, c.job) == detail::Offer::Inline) {
    s.join->take_back();
    detail::run_inline(*s.worker, *s.frame, c.job.fn, c.job.step, *s.join);
  }
}

void FinishScope::sync() {
  State& s = *state_;
  if (!s.worker) {
    if (s.sequential_error) std::rethrow_exception(std::exchange(s.sequential_error, nullptr));
    return;
  }
  if (detail::tl_worker != s.worker || s.worker->frame != s.frame)
    throw Error("FinishScope::sync: called from another task than the one that made the scope");
  detail::drain(*s.worker, s.mark);
  detail::wait_join(*s.worker, *s.join);
  s.children.clear();
  s.join->rethrow();
}

FinishScope::~FinishScope() noexcept(false) {
  State& s = *state_;
  std::exception_ptr error;
  if (s.worker && (detail::tl_worker != s.worker || s.worker->frame != s.frame)) {
    // Destroyed elsewhere than made: nothing safe to do but wait for the children.
    while (s.join->pending.load(std::memory_order_acquire) > 0) std::this_thread::yield();
  } else {
    try {
      sync();
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (s.region) detail::end_task_region(*s.region);
  if (error && std::uncaught_exceptions() == 0) std::rethrow_exception(error);
}

// ---- StealSchedule ----

StealSchedule::StealSchedule() = default;
StealSchedule::~StealSchedule() = default;
StealSchedule::StealSchedule(StealSchedule&&) noexcept = default;
StealSchedule& StealSchedule::operator=(StealSchedule&&) noexcept = default;
bool StealSchedule::empty() const {
  return !tree_;
}
bool StealSchedule::balanced() const {
  return tree_ && tree_->balanced;
}
std::size_t StealSchedule::phases() const {
  return tree_ ? tree_->num_phases() : 0;
}
std::size_t StealSchedule::bytes() const {
  return tree_ ? tree_->bytes() : 0;
}
std::string StealSchedule::text() const {
  return tree_ ? tree_->text() : std::string();
}

StealSchedule StealSchedule::from_text(const std::string& text) {
  std::vector<std::string> lines;
  for (std::size_t from = 0; from < text.size();) {
    const std::size_t nl = std::min(text.find('\n', from), text.size());
    if (nl > from && text[from] != '#') lines.push_back(text.substr(from, nl - from));
    from = nl + 1;
  }
  std::string label;
  StealSchedule s;
  s.tree_ = std::make_shared<detail::StealTree>(detail::StealTree::parse_region(lines, label));
  return s;
}

// ---- StealPool ----

StealPool::StealPool(int threads, StealPolicy policy) : impl_(std::make_unique<Impl>()) {
  if (threads < 1 || threads > 1024)
    throw Error(fmt::format("StealPool: {} threads (expected 1 to 1024)", threads));
  impl_->policy = policy;
  for (int i = 0; i < threads; ++i) {
    auto w = std::make_unique<StealWorker>();
    w->pool = impl_.get();
    w->id = i;
    w->rng = 0x9e3779b9u * std::uint32_t(i + 1);
    impl_->workers.push_back(std::move(w));
  }
  for (int i = 1; i < threads; ++i)
    impl_->helpers.emplace_back(detail::helper_loop, std::ref(*impl_->workers[std::size_t(i)]));
}

StealPool::~StealPool() {
  impl_->stop.store(true, std::memory_order_seq_cst);
  for (std::size_t i = 1; i < impl_->workers.size(); ++i) detail::wake(*impl_->workers[i]);
  for (std::thread& t : impl_->helpers) t.join();
}

void StealPool::run(const std::function<void()>& fn, StealSchedule* retain, bool record) {
  std::shared_ptr<detail::StealTree> tree =
      run_region(fn, retain ? retain->tree_ : nullptr, record || retain, true);
  if (retain) retain->tree_ = std::move(tree);
}

void StealPool::replay(const std::function<void()>& fn, const StealSchedule& schedule) {
  if (schedule.empty()) throw Error("StealPool::replay: the schedule is empty (record one first)");
  run_region(fn, schedule.tree_, true, false);
}

std::shared_ptr<detail::StealTree> StealPool::run_region(
    const std::function<void()>& fn, std::shared_ptr<const detail::StealTree> replay, bool record,
    bool allow_steals) {
  StealWorker& w = *impl_->workers[0];
  if (w.frame)
    throw Error("StealPool::run: called inside a region of the same pool (fork there instead)");
  StealWorker* prev = std::exchange(detail::tl_worker, &w);
  detail::StealTaskScope* prev_scope = std::exchange(detail::tl_scope, nullptr);
  detail::Region r;
  detail::begin_region(r, w, std::move(replay), record, allow_steals);
  std::exception_ptr error;
  try {
    fn();
  } catch (...) {
    error = std::current_exception();
  }
  std::shared_ptr<detail::StealTree> tree = detail::end_region(r);
  detail::tl_worker = prev;
  detail::tl_scope = prev_scope;
  if (error) std::rethrow_exception(error);
  return tree;
}

StealSchedule StealPool::last_schedule() const {
  StealSchedule s;
  std::lock_guard<std::mutex> lock(impl_->last_mutex);
  s.tree_ = impl_->last;
  return s;
}

StealStats StealPool::stats() const {
  StealStats s;
  s.regions = impl_->regions.load(std::memory_order_relaxed);
  s.phases = impl_->phases.load(std::memory_order_relaxed);
  s.tree_bytes = impl_->tree_bytes.load(std::memory_order_relaxed);
  for (const auto& w : impl_->workers) {
    s.steals += w->steals.load(std::memory_order_relaxed);
    s.deliveries += w->deliveries.load(std::memory_order_relaxed);
  }
  return s;
}

int StealPool::threads() const {
  return int(impl_->workers.size());
}
StealPolicy StealPool::policy() const {
  return impl_->policy;
}

}  // namespace reprise

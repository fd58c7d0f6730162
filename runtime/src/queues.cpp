#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <thread>

#include "reprise_rt/assert.h"
#include "reprise_rt/op_queue.h"
#include "reprise_rt/ready_queue.h"
#include "reprise_rt/spin_lock.h"

namespace reprise::detail {

namespace {
// Futex wait and wake on the queue's sleeping_ word directly: std::atomic::wait has no timeout.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, const timespec* timeout) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, timeout,
          nullptr, 0);
}
void futex_wake(std::atomic<std::uint32_t>& word, int count) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, count, nullptr,
          nullptr, 0);
}
}  // namespace

void ReadyQueue::set_siblings(std::span<ReadyQueue* const> siblings) {
  siblings_ = siblings;
}

void ReadyQueue::link(PointTask* t, std::memory_order order) {
  PointTask* old = head_.load(std::memory_order_relaxed);
  do {
    t->next = old;
  } while (!head_.compare_exchange_weak(old, t, order, std::memory_order_relaxed));
}

bool ReadyQueue::wake_if_asleep() {
  if (!sleeping_.load(std::memory_order_seq_cst) || sleeping_.exchange(0) != 1) return false;
  futex_wake(sleeping_, 1);
  return true;
}

void ReadyQueue::push(PointTask* t) {
  link(t, std::memory_order_seq_cst);
  wake_if_asleep();
  // (Its consumer away, a sibling takes the point: one asleep would look only within a
  // millisecond. Its sleep() reads this queue's head_ seq_cst too.)
  if (unattended_.load(std::memory_order_relaxed)) [[unlikely]]
    for (ReadyQueue* sibling : siblings_)
      if (sibling->wake_if_asleep()) break;
}

void ReadyQueue::push_kept(PointTask* t) {
  kept_.store(true, std::memory_order_relaxed);
  link(t, std::memory_order_release);
}

PointTask* ReadyQueue::take(ReadyQueue* taker) {
  if (!head_.load(std::memory_order_relaxed)) return nullptr;
  // (seq_cst: a look at the taker's state after one that finds this queue empty through this
  // take sees it left between lists: Executor::workers_idle.)
  if (taker) taker->leave_between_lists();
  // Newest first: reversed into push order (usually one or two points).
  PointTask* list = head_.exchange(nullptr, std::memory_order_seq_cst);
  if (!list && taker) taker->enter_between_lists();  // (a sibling took them first)
  if (kept_.load(std::memory_order_relaxed)) kept_.store(false, std::memory_order_relaxed);
  PointTask* ordered = nullptr;
  while (list) {
    PointTask* next = list->next;
    list->next = ordered;
    ordered = list;
    list = next;
  }
  return ordered;
}

namespace {
// A sibling's pointer (its queue's head, or the rest of its taken list) watched for staying
// the same: due once unchanged for `after` ns. (A pointer seen again after its worker took it
// and the same task was queued anew only makes a steal come early.)
struct Watch {
  PointTask* seen = nullptr;
  std::uint64_t since = 0;
  bool due(PointTask* now_seen, std::uint64_t now, std::uint64_t after) {
    if (now_seen != seen) {
      seen = now_seen;
      since = now;
      return false;
    }
    return now_seen && now - since >= after;
  }
};
}  // namespace

PointTask* ReadyQueue::take_rest(ReadyQueue& taker) {
  taker.leave_between_lists();
  PointTask* rest = rest_.exchange(nullptr, std::memory_order_seq_cst);
  if (!rest) taker.enter_between_lists();
  return rest;
}

PointTask* ReadyQueue::pop_all(const SpinPolicy& spin, const std::atomic<std::uint32_t>* interrupt,
                               std::uint32_t seen) {
  std::uint64_t start = 0;
  Watch head[kWatched], rest[kWatched];
  const std::size_t watched = spin.steal_after_ns ? std::min(siblings_.size(), kWatched) : 0;
  for (;;) {
    if (PointTask* list = take(this)) return list;
    if (stopping_.load(std::memory_order_acquire)) return nullptr;
    if (interrupt && interrupt->load(std::memory_order_seq_cst) != seen) return nullptr;
    const std::uint64_t now = now_ns();
    if (start == 0) start = now;
    for (std::size_t i = 0; i < watched; ++i) {
      ReadyQueue& sibling = *siblings_[i];
      PointTask* const sibling_head = sibling.head_.load(std::memory_order_relaxed);
      if (sibling_head && sibling.unattended_.load(std::memory_order_relaxed))
        if (PointTask* list = sibling.take(this)) return list;
      const std::uint64_t head_after = sibling.kept_.load(std::memory_order_relaxed)
                                           ? spin.kept_steal_after_ns
                                           : spin.steal_after_ns;
      if (head[i].due(sibling_head, now, head_after))
        if (PointTask* list = sibling.take(this)) return list;
      if (rest[i].due(sibling.rest_.load(std::memory_order_relaxed), now, spin.steal_after_ns))
        if (PointTask* list = sibling.take_rest(*this)) return list;
    }
    if (now - start < spin.spin_ns) {
      spin.pause(now - start, head_);
      continue;
    }
    // (No new spin after a sleep: woken by a push it takes the list above, woken to look at
    // its siblings it looks once and sleeps again — spinning after every look would cost an
    // idle worker a twentieth of a core. A pause between looks while a sibling has points
    // queued, and sleep() would not sleep: a sibling short of a core gets it.)
    sleep(watched, interrupt, seen);
    spin.pause(now - start);
  }
}

void ReadyQueue::sleep(std::size_t watched, const std::atomic<std::uint32_t>* interrupt,
                       std::uint32_t seen) {
  sleeping_.store(1, std::memory_order_seq_cst);
  // (seq_cst with nudge(): either the interrupt's change is seen here, or its nudge sees this.)
  bool work = head_.load(std::memory_order_seq_cst) || stopping_.load(std::memory_order_seq_cst) ||
              (interrupt && interrupt->load(std::memory_order_seq_cst) != seen);
  for (std::size_t i = 0; i < watched && !work; ++i)
    work = siblings_[i]->head_.load(std::memory_order_seq_cst) != nullptr ||
           siblings_[i]->rest_.load(std::memory_order_seq_cst) != nullptr;
  if (work) {
    sleeping_.store(0, std::memory_order_relaxed);
    return;
  }
  // With siblings, wake now and then to look at their queues: a point queued behind a long
  // task on a sibling (or a thief that took this worker's points) has no one else to take
  // it. (A push wakes only its own queue's worker: waking a sibling at every push onto a busy
  // worker's queue cost the pushes, and the woken workers' spinning cost the application and
  // utility threads their cores on a small machine.)
  static constexpr timespec kLookEvery{0, 1'000'000};
  futex_wait(sleeping_, 1, watched ? &kLookEvery : nullptr);
  sleeping_.store(0, std::memory_order_relaxed);
}

void ReadyQueue::nudge() {
  wake_if_asleep();
}

void ReadyQueue::stop() {
  stopping_.store(true, std::memory_order_seq_cst);
  sleeping_.store(0, std::memory_order_seq_cst);
  futex_wake(sleeping_, INT_MAX);
}

OpQueue::OpQueue(std::size_t capacity) {
  std::size_t cap = 2;
  while (cap < capacity) cap <<= 1;
  ring_.assign(cap, nullptr);
  mask_ = cap - 1;
}

OpQueue::~OpQueue() {
  OpRef drop;
  while (try_pop(drop)) drop = OpRef();
}

void OpQueue::push(OpRef op) {
  std::uint64_t t = tail_.load(std::memory_order_relaxed);
  while (t - head_.load(std::memory_order_acquire) > mask_) std::this_thread::yield();
  REPRISE_ASSERT(ring_[t & mask_] == nullptr, "the ring never holds more ops than its capacity");
  ring_[t & mask_] = op.detach();  // the ring owns the reference now
  tail_.store(t + 1, std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_seq_cst)) {
    signal_.fetch_add(1, std::memory_order_seq_cst);
    signal_.notify_one();
  }
}

bool OpQueue::try_pop(OpRef& out) {
  std::uint64_t h = head_.load(std::memory_order_relaxed);
  if (h == tail_.load(std::memory_order_acquire)) return false;
  REPRISE_ASSERT(ring_[h & mask_] != nullptr, "a pushed op is popped once");
  out = OpRef(ring_[h & mask_]);
  ring_[h & mask_] = nullptr;
  head_.store(h + 1, std::memory_order_release);
  return true;
}

void OpQueue::sleep_until_push() {
  std::uint64_t h = head_.load(std::memory_order_relaxed);
  std::uint32_t s = signal_.load(std::memory_order_seq_cst);
  sleeping_.store(true, std::memory_order_seq_cst);
  if (tail_.load(std::memory_order_seq_cst) == h && !stopping_.load(std::memory_order_seq_cst))
    signal_.wait(s, std::memory_order_seq_cst);
  sleeping_.store(false, std::memory_order_relaxed);
}

void OpQueue::wake() {
  signal_.fetch_add(1, std::memory_order_seq_cst);
  signal_.notify_all();
}

void OpQueue::stop() {
  stopping_.store(true, std::memory_order_seq_cst);
  signal_.fetch_add(1, std::memory_order_seq_cst);
  signal_.notify_all();
}

}  // namespace reprise::detail

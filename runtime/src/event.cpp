#include "reprise_rt/event.h"

#include <algorithm>
#include <semaphore>
#include <utility>

#include "reprise_rt/assert.h"
#include "reprise_rt/pool.h"
#include "reprise_rt/stream_mark.h"

namespace reprise::detail {

namespace {
constexpr std::uint32_t kFreeBatch = 32;
// Slots asked for ahead of their use (for writing: the analysis adds waiters to an event soon
// after it makes it, and the slot's line comes over from the core that triggered it last).
constexpr std::uint32_t kAhead = 3;

// Live tables by serial: a thread that leaves a table gives its batches back only to a live one.
std::mutex& live_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::pair<std::uint64_t, EventTable*>>& live_tables() {
  static std::vector<std::pair<std::uint64_t, EventTable*>> tables;
  return tables;
}
std::atomic<std::uint64_t> g_next_serial{1};
}  // namespace

struct EventTable::FreeBatch {
  FreeBatch* next = nullptr;  // shared batches, and those a thread took with this one
  std::uint32_t count = 0;
  Event ids[kFreeBatch];  // free slots, each with the generation it is made with next
};

// One thread's free ids, of the one table it used last: those it triggered (made again here
// first: the slot is in this core's cache) and those it took from the shared ones. Using another
// table gives them back first (to a live table; dropped otherwise), and so does the thread's exit.
struct EventTable::ThreadFree {
  std::uint64_t serial = 0;
  EventTable* table = nullptr;
  FreeBatch* giving = nullptr;
  FreeBatch* taking = nullptr;
  ThreadFree() = default;
  ThreadFree(const ThreadFree&) = delete;
  ThreadFree& operator=(const ThreadFree&) = delete;
  ~ThreadFree() { leave(); }
  void leave() noexcept;
};

void EventTable::ThreadFree::leave() noexcept {
  FreeBatch* batches[] = {std::exchange(giving, nullptr), std::exchange(taking, nullptr)};
  EventTable* const was = std::exchange(table, nullptr);
  const std::uint64_t was_serial = std::exchange(serial, 0);
  if (!was) return;
  // (Under the registry's lock: a live table cannot be destroyed while it takes them.)
  std::lock_guard<std::mutex> g(live_mutex());
  auto& tables = live_tables();
  const bool alive =
      std::find(tables.begin(), tables.end(), std::pair{was_serial, was}) != tables.end();
  for (FreeBatch* b : batches) {
    while (b) {
      FreeBatch* next = std::exchange(b->next, nullptr);
      if (alive && b->count)
        was->share(b);
      else
        PoolDelete<FreeBatch>{}(b);
      b = next;
    }
  }
}

EventTable::ThreadFree& EventTable::thread_free() {
  thread_local ThreadFree own;
  return own;
}

EventTable::ThreadFree& EventTable::own_free() {
  ThreadFree& own = thread_free();
  if (own.serial != serial_) [[unlikely]] {
    own.leave();
    own.serial = serial_;
    own.table = this;
  }
  return own;
}

EventTable::EventTable()
    : chunks_(std::make_unique<std::atomic<Slot*>[]>(kMaxChunks)),
      serial_(g_next_serial.fetch_add(1, std::memory_order_relaxed)) {
  for (std::uint32_t i = 0; i < kMaxChunks; ++i) chunks_[i].store(nullptr);
  {
    std::lock_guard<std::mutex> g(live_mutex());
    live_tables().emplace_back(serial_, this);
  }
  grow();
}

EventTable::~EventTable() {
  {
    std::lock_guard<std::mutex> g(live_mutex());
    auto& tables = live_tables();
    tables.erase(std::find(tables.begin(), tables.end(), std::pair{serial_, this}));
  }
  if (ThreadFree& own = thread_free(); own.serial == serial_) own.leave();  // (dropped: not live)
  for (FreeBatch* b = shared_.exchange(nullptr, std::memory_order_acquire); b;)
    PoolDelete<FreeBatch>{}(std::exchange(b, b->next));
}

void EventTable::share(FreeBatch* full) {
  full->next = shared_.load(std::memory_order_relaxed);
  while (!shared_.compare_exchange_weak(full->next, full, std::memory_order_release,
                                        std::memory_order_relaxed)) {
  }
}

void EventTable::grow() {
  std::lock_guard<std::mutex> g(grow_mutex_);
  if (shared_.load(std::memory_order_acquire)) return;  // shared meanwhile
  std::uint32_t chunk = std::uint32_t(owned_.size());
  if (chunk >= kMaxChunks) throw std::bad_alloc();
  owned_.push_back(std::make_unique<Slot[]>(kChunk));
  chunks_[chunk].store(owned_.back().get(), std::memory_order_release);
  allocated_.fetch_add(kChunk, std::memory_order_relaxed);
  // Slot 0 of chunk 0 is the "no event" id and never handed out. (Batches filled from the top
  // and shared last first: the lowest ids are made first.)
  FreeBatch* b = nullptr;
  for (std::uint32_t i = kChunk; i-- > (chunk == 0 ? 1u : 0u);) {
    if (!b) b = make_pooled<FreeBatch>().release();
    b->ids[b->count++] = Event{(chunk << kChunkBits) | i, 1};
    if (b->count == kFreeBatch) share(std::exchange(b, nullptr));
  }
  if (b) share(b);
}

Event EventTable::create() {
  ThreadFree& own = own_free();
  if (FreeBatch* g = own.giving; g && g->count) return g->ids[--g->count];
  if (FreeBatch* t = own.taking; t && t->count) [[likely]] {
    const std::uint32_t n = --t->count;
    if (n >= kAhead) __builtin_prefetch(&slot(t->ids[n - kAhead].id), 1);
    return t->ids[n];
  }
  return create_slow(own);
}

Event EventTable::create_slow(ThreadFree& own) {
  for (;;) {
    FreeBatch* t = own.taking;
    if (t && t->next) {
      own.taking = t->next;
      PoolDelete<FreeBatch>{}(t);
    } else if (FreeBatch* shared = shared_.exchange(nullptr, std::memory_order_acquire)) {
      if (t) PoolDelete<FreeBatch>{}(t);
      own.taking = shared;
    } else {
      grow();
      continue;
    }
    if (FreeBatch* now = own.taking; now->count) {
      for (std::uint32_t i = 1; i <= kAhead && i < now->count; ++i)
        __builtin_prefetch(&slot(now->ids[now->count - 1 - i].id), 1);
      return now->ids[--now->count];
    }
  }
}

void EventTable::trigger(Event e) {
  if (e.id == 0) return;
  Slot& s = slot(e.id);
  s.lock.lock();
  REPRISE_ASSERT(s.triggered_gen.load(std::memory_order_relaxed) < e.gen,
                 "an event triggers once, and after every earlier generation of its slot");
  s.triggered_gen.store(e.gen, std::memory_order_release);
  s.lock.unlock();
  // No waiter can be added any more (add_waiter sees the trigger under the lock), and the
  // slot is not reused before it is freed below, so the list is ours.
  for (std::size_t i = 0; i < s.waiters.size(); ++i) {
    Waiter w = s.waiters[i];
    w.fn(w.ctx, w.arg);
  }
  s.waiters.clear();
  ThreadFree& own = own_free();
  FreeBatch* g = own.giving;
  if (!g || g->count == kFreeBatch) [[unlikely]] {
    if (g) share(g);
    void* mem = pool_malloc(sizeof(FreeBatch));
    own.giving = g = mem ? ::new (mem) FreeBatch{} : nullptr;
    if (!g) return;  // (no memory for a batch: the slot is not recycled)
  }
  g->ids[g->count++] = Event{e.id, e.gen + 1};
}

void EventTable::link_early(Event e, Event early, std::uint32_t tag, StreamMark* mark) {
  Slot& s = slot(e.id);
  s.lock.lock();
  s.early_for_gen = e.gen;
  s.early_tag = tag;
  s.early = early;
  s.early_mark = mark;
  s.lock.unlock();
}

Event EventTable::early_stand_in(Event e, std::uint32_t tag, StreamMark** mark) const {
  *mark = nullptr;
  if (e.id == 0) return e;
  const Slot& s = slot(e.id);
  s.lock.lock();
  // (A triggered e needs no stand-in; an untriggered one still owns its slot, so a link made
  // for its generation is its own, and so is its mark: the point drops the link's reference
  // only after e has triggered, under this lock.)
  const bool linked = s.triggered_gen.load(std::memory_order_relaxed) < e.gen &&
                      s.early_for_gen == e.gen && s.early_tag == tag;
  const Event out = linked ? s.early : e;
  if (linked) {
    *mark = s.early_mark;
    (*mark)->refs.fetch_add(1, std::memory_order_relaxed);
  }
  s.lock.unlock();
  return out;
}

bool EventTable::add_waiter(Event e, WaiterFn fn, void* ctx, std::uint64_t arg) {
  if (e.id == 0) return false;
  Slot& s = slot(e.id);
  s.lock.lock();
  if (s.triggered_gen.load(std::memory_order_relaxed) >= e.gen) {
    s.lock.unlock();
    return false;
  }
  s.waiters.push_back(Waiter{fn, ctx, arg});
  s.lock.unlock();
  return true;
}

void EventTable::wait(Event e) {
  if (has_triggered(e)) return;
  std::binary_semaphore done(0);
  if (!add_waiter(
          e, [](void* ctx, std::uint64_t) { static_cast<std::binary_semaphore*>(ctx)->release(); },
          &done, 0))
    return;
  done.acquire();
}

namespace {
struct MergeState {
  EventTable* table;
  Event out;
  std::atomic<std::int32_t> pending;
};
void merge_input_done(void* ctx, std::uint64_t) {
  auto* m = static_cast<MergeState*>(ctx);
  if (m->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    EventTable* table = m->table;
    Event out = m->out;
    PoolDelete<MergeState>{}(m);
    table->trigger(out);
  }
}
}  // namespace

Event EventTable::merge(std::span<const Event> events) {
  Event only{};
  std::size_t live = 0;
  for (Event e : events) {
    if (!has_triggered(e)) {
      only = e;
      ++live;
    }
  }
  if (live == 0) return kNoEvent;
  if (live == 1) return only;
  auto m = make_pooled<MergeState>();
  m->table = this;
  m->out = create();
  m->pending.store(1, std::memory_order_relaxed);  // held until every input is registered
  Event out = m->out;
  MergeState* raw = m.release();  // owned by its pending count from here on
  for (Event e : events) {
    raw->pending.fetch_add(1, std::memory_order_relaxed);
    if (!add_waiter(e, &merge_input_done, raw, 0)) raw->pending.fetch_sub(1);
  }
  merge_input_done(raw, 0);
  return out;
}

}  // namespace reprise::detail

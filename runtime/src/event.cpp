#include "reprise_rt/event.h"

#include <algorithm>
#include <semaphore>
#include <utility>

#include "reprise_rt/assert.h"
#include "reprise_rt/pool.h"
#include "reprise_rt/stream_mark.h"

namespace reprise::detail {

namespace {
// Live tables by serial: a thread that leaves a table gives its ids back only to a live one.
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

// One thread's free ids, of the one table it used last (trivially destructible: no guard on
// the fast path). Using another table gives them back first (to a live table, found by its
// serial; dropped otherwise), and so does the thread's exit (ExitHook).
struct EventTable::ThreadFree {
  std::uint64_t serial = 0;  // of the table the ids are of (0: none)
  BatchExchange<Event>::Local ids;

  void leave() noexcept {
    const std::uint64_t was = std::exchange(serial, 0);
    if (!was) return;
    // (Under the registry's lock: a live table cannot be destroyed while it takes them.)
    std::lock_guard<std::mutex> g(live_mutex());
    auto& tables = live_tables();
    const auto live = std::find_if(tables.begin(), tables.end(),
                                   [was](const auto& entry) { return entry.first == was; });
    if (live != tables.end())
      live->second->free_.give_back_all(ids);
    else
      BatchExchange<Event>::free_batches(ids);
  }
};

struct EventTable::ExitHook {
  ~ExitHook() { tl_free.leave(); }
  static constinit thread_local ThreadFree tl_free;
};
constinit thread_local EventTable::ThreadFree EventTable::ExitHook::tl_free{};

EventTable::ThreadFree& EventTable::own_free() {
  ThreadFree& own = ExitHook::tl_free;
  if (own.serial != serial_) [[unlikely]] {
    thread_local ExitHook hook;  // (registered on the thread's first use of any table)
    (void)hook;
    own.leave();
    own.serial = serial_;
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
  if (ThreadFree& own = ExitHook::tl_free; own.serial == serial_) own.leave();  // (not live)
  free_.free_shared();
}

void EventTable::grow() {
  std::lock_guard<std::mutex> g(grow_mutex_);
  if (free_.any_shared()) return;  // shared meanwhile
  std::uint32_t chunk = std::uint32_t(owned_.size());
  if (chunk >= kMaxChunks) throw std::bad_alloc();
  owned_.push_back(std::make_unique<Slot[]>(kChunk));
  chunks_[chunk].store(owned_.back().get(), std::memory_order_release);
  allocated_.fetch_add(kChunk, std::memory_order_relaxed);
  // Slot 0 of chunk 0 is the "no event" id and never handed out. (Batches filled from the top
  // and shared last first: the lowest ids are made first.)
  BatchExchange<Event>::Local filling;
  for (std::uint32_t i = kChunk; i-- > (chunk == 0 ? 1u : 0u);) {
    const Event id{(chunk << kChunkBits) | i, 1};
    if (!filling.push(id) && !free_.give(filling, id)) throw std::bad_alloc();
  }
  free_.give_back_all(filling);
}

Event EventTable::create() {
  ThreadFree& own = own_free();
  Event e;
  return own.ids.pop(e) ? e : create_slow(own);
}

Event EventTable::create_slow(ThreadFree& own) {
  Event e;
  while (!free_.refill(own.ids) || !own.ids.pop(e)) grow();
  return e;
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
  const Event next{e.id, e.gen + 1};
  if (!own.ids.push(next)) [[unlikely]]
    free_.give(own.ids, next);  // (false: no memory for a batch, the slot is not recycled)
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
  if (shared_sub(m->pending, 1, std::memory_order_acq_rel) == 1) {
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
    shared_add(raw->pending, 1, std::memory_order_relaxed);
    if (!add_waiter(e, &merge_input_done, raw, 0))
      shared_sub(raw->pending, 1, std::memory_order_seq_cst);
  }
  merge_input_done(raw, 0);
  return out;
}

}  // namespace reprise::detail

#include "reprise_rt/event.h"

#include <semaphore>

#include "reprise_rt/assert.h"
#include "reprise_rt/pool.h"
#include "reprise_rt/stream_mark.h"

namespace reprise::detail {

EventTable::EventTable() : chunks_(std::make_unique<std::atomic<Slot*>[]>(kMaxChunks)) {
  for (std::uint32_t i = 0; i < kMaxChunks; ++i) chunks_[i].store(nullptr);
  grow();
}

EventTable::~EventTable() = default;

void EventTable::grow() {
  std::lock_guard<std::mutex> g(grow_mutex_);
  if ((free_head_.load(std::memory_order_acquire) & 0xffffffffu) != 0) return;  // refilled
  std::uint32_t chunk = std::uint32_t(owned_.size());
  if (chunk >= kMaxChunks) throw std::bad_alloc();
  owned_.push_back(std::make_unique<Slot[]>(kChunk));
  chunks_[chunk].store(owned_.back().get(), std::memory_order_release);
  allocated_.fetch_add(kChunk, std::memory_order_relaxed);
  // Slot 0 of chunk 0 is the "no event" id and never handed out.
  for (std::uint32_t i = kChunk; i-- > (chunk == 0 ? 1u : 0u);)
    push_free((chunk << kChunkBits) | i);
}

std::uint32_t EventTable::pop_free() {
  for (;;) {
    std::uint64_t head = free_head_.load(std::memory_order_acquire);
    std::uint32_t id = std::uint32_t(head);
    if (id == 0) {
      grow();
      continue;
    }
    std::uint32_t next = slot(id).next_free.load(std::memory_order_relaxed);
    std::uint64_t tag = (head >> 32) + 1;
    if (free_head_.compare_exchange_weak(head, (tag << 32) | next, std::memory_order_acq_rel))
      return id;
  }
}

void EventTable::push_free(std::uint32_t id) {
  std::uint64_t head = free_head_.load(std::memory_order_relaxed);
  for (;;) {
    slot(id).next_free.store(std::uint32_t(head), std::memory_order_relaxed);
    std::uint64_t tag = (head >> 32) + 1;
    if (free_head_.compare_exchange_weak(head, (tag << 32) | id, std::memory_order_acq_rel)) return;
  }
}

Event EventTable::create() {
  std::uint32_t id = pop_free();
  Slot& s = slot(id);
  return Event{id, s.next_gen};
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
  // slot is not reused before it is pushed back below, so the list is ours.
  for (std::size_t i = 0; i < s.waiters.size(); ++i) {
    Waiter w = s.waiters[i];
    w.fn(w.ctx, w.arg);
  }
  s.waiters.clear();
  s.next_gen = e.gen + 1;
  push_free(e.id);
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

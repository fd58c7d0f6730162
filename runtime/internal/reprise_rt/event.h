#pragma once
// Events: one-shot completion signals. A handle is (slot, generation); a slot is recycled as
// soon as its event triggers, and a handle whose generation is at or below the slot's last
// triggered generation reads as triggered, so recycling never confuses old handles.
// Free slots go round in batches of ids with their next generation, apart from the slots
// (batch_exchange.h): neither a trigger nor a create reads a freed slot or touches a shared head
// per event. (At two CPUs each slot was written on one core, triggered by a worker, and then
// read on the other, made again by the analysis, through a shared list: ~half of `create`'s
// time, and a compare-and-swap of the list's head on each side per event.)
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "reprise_rt/batch_exchange.h"
#include "reprise_rt/inline_vector.h"
#include "reprise_rt/spin_lock.h"

namespace reprise::detail {

struct StreamMark;

struct Event {
  std::uint32_t id = 0;  // 0: the event that has always triggered
  std::uint32_t gen = 0;
  bool exists() const { return id != 0; }
  friend bool operator==(const Event&, const Event&) = default;
};
inline constexpr Event kNoEvent{};

using WaiterFn = void (*)(void* ctx, std::uint64_t arg);

class EventTable {
 public:
  EventTable();
  ~EventTable();
  EventTable(const EventTable&) = delete;
  EventTable& operator=(const EventTable&) = delete;

  Event create();
  // Triggers e and runs its waiters on the calling thread.
  void trigger(Event e);
  // (Inline: asked for every precondition of every point, ~17 instructions as a call.)
  bool has_triggered(Event e) const {
    return e.id == 0 || slot(e.id).triggered_gen.load(std::memory_order_acquire) >= e.gen;
  }
  // Arranges fn(ctx, arg) to run when e triggers. Returns false, without calling fn, if e has
  // triggered already.
  bool add_waiter(Event e, WaiterFn fn, void* ctx, std::uint64_t arg);
  // A mark on an event that has not triggered (control replication: a proxy nobody waits for
  // yet). Lock-free; a mark never outlives its event (generations are not reused).
  void mark(Event e) { slot(e.id).marked_gen.store(e.gen, std::memory_order_release); }
  void unmark(Event e) { slot(e.id).marked_gen.store(0, std::memory_order_release); }
  bool marked(Event e) const {
    return e.id != 0 && slot(e.id).marked_gen.load(std::memory_order_acquire) == e.gen;
  }
  // Control replication: e is the proxy of another shard's point (for as long as its
  // generation lives).
  void mark_remote(Event e) { slot(e.id).remote_gen.store(e.gen, std::memory_order_relaxed); }
  bool remote(Event e) const {
    return e.id != 0 && slot(e.id).remote_gen.load(std::memory_order_relaxed) == e.gen;
  }
  // An earlier event that stands in for e for waiters that carry `tag` (points of one device:
  // e is a point's completion, `early` the moment its work was enqueued on a stream of the
  // device, `mark` where that work ends there — reprise_rt/stream_mark.h). Set once, right
  // after e is created.
  void link_early(Event e, Event early, std::uint32_t tag, StreamMark* mark);
  // e's stand-in for a waiter with this tag (nonzero), or e itself. With a stand-in, *mark is
  // its mark with a reference taken for the caller (else null).
  Event early_stand_in(Event e, std::uint32_t tag, StreamMark** mark) const;
  // Blocks the calling thread until e triggers.
  void wait(Event e);
  // An event that triggers when all of events have (kNoEvent if they all have already).
  Event merge(std::span<const Event> events);

  // Slots allocated so far: bounded by the number of events alive at once, not ever created.
  std::size_t slots_allocated() const { return allocated_.load(std::memory_order_relaxed); }

 private:
  struct Waiter {
    WaiterFn fn;
    void* ctx;
    std::uint64_t arg;
  };
  struct Slot {
    std::atomic<std::uint32_t> triggered_gen{0};
    std::atomic<std::uint32_t> marked_gen{0};
    std::atomic<std::uint32_t> remote_gen{0};
    mutable SpinLock lock;
    // Inline: a point's completion has up to four waiters in a stencil (the next timestep's
    // readers and the write after them); a heap list grown per slot cost an allocation and a
    // free per timestep on the utility thread, and one more cache line per trigger.
    InlineVector<Waiter, 4> waiters;
    // link_early's stand-in (under lock), valid while triggered_gen < early_for_gen.
    std::uint32_t early_for_gen = 0;
    std::uint32_t early_tag = 0;
    Event early;
    StreamMark* early_mark = nullptr;
  };
  static constexpr std::uint32_t kChunkBits = 12;
  static constexpr std::uint32_t kChunk = 1u << kChunkBits;
  static constexpr std::uint32_t kMaxChunks = 1u << 14;

  Slot& slot(std::uint32_t id) const {
    return chunks_[id >> kChunkBits].load(std::memory_order_acquire)[id & (kChunk - 1)];
  }
  struct ThreadFree;
  struct ExitHook;
  ThreadFree& own_free();  // this thread's free ids, of this table
  Event create_slow(ThreadFree& own);
  void grow();

  std::unique_ptr<std::atomic<Slot*>[]> chunks_;
  // (Read on every create and trigger: kept apart from the shared batches' heads.)
  const std::uint64_t serial_;  // which table a thread's batches are of (never reused)
  std::vector<std::unique_ptr<Slot[]>> owned_;
  std::mutex grow_mutex_;
  // Free ids, each with the generation it is made with next (batch_exchange.h).
  BatchExchange<Event> free_;
  std::atomic<std::size_t> allocated_{0};
};

}  // namespace reprise::detail

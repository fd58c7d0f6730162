#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "reprise_rt/event.h"

using namespace reprise::detail;

TEST(Events, TriggerRunsWaitersOnce) {
  EventTable t;
  Event e = t.create();
  EXPECT_FALSE(t.has_triggered(e));
  int calls = 0;
  ASSERT_TRUE(t.add_waiter(
      e, [](void* c, std::uint64_t a) { *static_cast<int*>(c) += int(a); }, &calls, 5));
  t.trigger(e);
  EXPECT_EQ(calls, 5);
  EXPECT_TRUE(t.has_triggered(e));
  // Too late: the waiter is refused and not called.
  EXPECT_FALSE(t.add_waiter(
      e, [](void* c, std::uint64_t) { *static_cast<int*>(c) = -1; }, &calls, 0));
  EXPECT_EQ(calls, 5);
}

TEST(Events, RecycledSlotsDoNotConfuseOldHandles) {
  EventTable t;
  Event a = t.create();
  t.trigger(a);
  Event b = t.create();  // reuses a's slot with the next generation
  EXPECT_EQ(a.id, b.id);
  EXPECT_NE(a.gen, b.gen);
  EXPECT_TRUE(t.has_triggered(a));
  EXPECT_FALSE(t.has_triggered(b));
  t.trigger(b);
  EXPECT_TRUE(t.has_triggered(b));
}

TEST(Events, NoUnboundedGrowth) {
  EventTable t;
  std::size_t before = t.slots_allocated();
  for (int i = 0; i < 1000000; ++i) t.trigger(t.create());
  EXPECT_EQ(t.slots_allocated(), before);
  // Many alive at once grow the table, then recycling keeps it there.
  std::vector<Event> alive;
  for (int i = 0; i < 10000; ++i) alive.push_back(t.create());
  std::size_t grown = t.slots_allocated();
  EXPECT_GE(grown, 10000u);
  for (Event e : alive) t.trigger(e);
  for (int round = 0; round < 50; ++round) {
    alive.clear();
    for (int i = 0; i < 10000; ++i) alive.push_back(t.create());
    for (Event e : alive) t.trigger(e);
  }
  EXPECT_EQ(t.slots_allocated(), grown);
}

TEST(Events, SlotsTriggeredOnAnotherThreadAreMadeAgainHere) {
  EventTable t;
  std::vector<Event> alive;
  for (int i = 0; i < 10000; ++i) alive.push_back(t.create());
  // Every slot in use (but the "no event" one): a single slot lost on the way back would grow
  // the table.
  const std::size_t grown = t.slots_allocated();
  while (alive.size() < grown - 1) alive.push_back(t.create());
  ASSERT_EQ(t.slots_allocated(), grown);
  for (int round = 0; round < 20; ++round) {
    std::thread other([&] {
      for (Event e : alive) t.trigger(e);
    });
    other.join();  // (its last, partly filled batch goes back to the table as it exits)
    for (Event e : alive) EXPECT_TRUE(t.has_triggered(e));
    std::vector<Event> again;
    for (std::size_t i = 0; i < grown - 1; ++i) again.push_back(t.create());
    std::vector<std::uint32_t> ids;
    for (Event e : again) {
      EXPECT_FALSE(t.has_triggered(e));
      ids.push_back(e.id);
    }
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end()) << "a slot made twice";
    alive = std::move(again);
  }
  EXPECT_EQ(t.slots_allocated(), grown);
  for (Event e : alive) t.trigger(e);
}

TEST(Events, AThreadMovingBetweenTablesGivesTheirSlotsBack) {
  // A thread keeps free slots of the table it used last; using another gives them back (to a
  // live table), and a table destroyed meanwhile is not touched (AddressSanitizer would say).
  EventTable a;
  const std::size_t a_slots = a.slots_allocated();
  std::atomic<int> stage{0};
  std::thread holder;
  {
    EventTable b;
    const std::size_t b_slots = b.slots_allocated();
    for (int round = 0; round < 100; ++round) {
      for (int i = 0; i < 100; ++i) a.trigger(a.create());
      for (int i = 0; i < 100; ++i) b.trigger(b.create());
    }
    EXPECT_EQ(a.slots_allocated(), a_slots);
    EXPECT_EQ(b.slots_allocated(), b_slots);
    holder = std::thread([&] {
      for (int i = 0; i < 50; ++i) b.trigger(b.create());  // holds b's slots as b goes
      stage.store(1);
      while (stage.load() != 2) std::this_thread::yield();
      for (int i = 0; i < 50; ++i) a.trigger(a.create());
    });
    while (stage.load() != 1) std::this_thread::yield();
  }
  stage.store(2);
  holder.join();
  std::vector<Event> alive;
  for (int i = 0; i < 3000; ++i) alive.push_back(a.create());
  for (Event e : alive) a.trigger(e);
  EXPECT_EQ(a.slots_allocated(), a_slots);
  for (Event e : alive) EXPECT_TRUE(a.has_triggered(e));
}

TEST(Events, MergeTriggersAfterAllInputs) {
  EventTable t;
  Event a = t.create(), b = t.create(), c = t.create();
  Event m = t.merge(std::vector<Event>{a, b, c});
  t.trigger(b);
  t.trigger(a);
  EXPECT_FALSE(t.has_triggered(m));
  t.trigger(c);
  EXPECT_TRUE(t.has_triggered(m));
  // Merging triggered events gives the always-triggered event; one live input is itself.
  EXPECT_FALSE(t.merge(std::vector<Event>{a, b}).exists());
  Event d = t.create();
  EXPECT_EQ(t.merge(std::vector<Event>{a, d}), d);
  t.trigger(d);
}

TEST(Events, ConcurrentTriggerAndWait) {
  EventTable t;
  constexpr int kEvents = 2000;
  std::vector<Event> evs;
  for (int i = 0; i < kEvents; ++i) evs.push_back(t.create());
  std::atomic<int> fired{0};
  std::thread waiter([&] {
    for (Event e : evs)
      if (!t.add_waiter(
              e, [](void* c, std::uint64_t) { static_cast<std::atomic<int>*>(c)->fetch_add(1); },
              &fired, 0))
        fired.fetch_add(1);
  });
  std::thread trigger([&] {
    for (Event e : evs) t.trigger(e);
  });
  waiter.join();
  trigger.join();
  EXPECT_EQ(fired.load(), kEvents);
  Event last = t.create();
  std::thread late([&] { t.trigger(last); });
  t.wait(last);
  late.join();
  EXPECT_TRUE(t.has_triggered(last));
}

// LocalUses (control replication): an access to an instance waits for the conflicting earlier
// accesses to the same instance, and only those.
#include <gtest/gtest.h>

#include <algorithm>

#include "reprise_analysis/local_uses.h"
#include "reprise_rt/event.h"

using namespace reprise;
using detail::Event;
using detail::EventTable;
using detail::Instance;
using detail::LocalUses;

namespace {
Domain r1(coord_t lo, coord_t hi) {
  return Domain(Rect<1>({lo}, {hi}));
}
// Instances are only keys here.
const Instance* instance(std::uintptr_t k) {
  return reinterpret_cast<const Instance*>(k * 64);
}
bool has(const std::vector<Event>& v, Event e) {
  return std::find(v.begin(), v.end(), e) != v.end();
}
}  // namespace

TEST(LocalUses, ReadsWaitForWritesAndWritesForEverything) {
  EventTable events;
  LocalUses uses(events);
  const Event w = events.create(), r = events.create(), other = events.create();
  uses.add(instance(1), r1(0, 9), 0b01, true, w);
  uses.add(instance(1), r1(0, 4), 0b01, false, r);
  uses.add(instance(2), r1(0, 9), 0b01, true, other);  // another instance
  std::vector<Event> out;
  uses.conflicts(instance(1), r1(3, 3), 0b01, false, out);  // a read: the write only
  EXPECT_EQ(out, std::vector<Event>{w});
  out.clear();
  uses.conflicts(instance(1), r1(3, 3), 0b01, true, out);  // a write: both
  EXPECT_TRUE(has(out, w) && has(out, r) && out.size() == 2);
  out.clear();
  uses.conflicts(instance(1), r1(5, 9), 0b01, true, out);  // the read does not reach here
  EXPECT_EQ(out, std::vector<Event>{w});
  out.clear();
  uses.conflicts(instance(1), r1(0, 9), 0b10, true, out);  // another field
  EXPECT_TRUE(out.empty());
  for (Event e : {w, r, other}) events.trigger(e);
}

TEST(LocalUses, ACoveringWriteStandsForWhatItCovers) {
  EventTable events;
  LocalUses uses(events);
  const Event a = events.create(), b = events.create(), c = events.create();
  uses.add(instance(1), r1(0, 4), 0b1, false, a);
  uses.add(instance(1), r1(5, 9), 0b1, true, b);
  uses.add(instance(1), r1(0, 9), 0b1, true, c);  // waited for a and b: covers them
  std::vector<Event> out;
  uses.conflicts(instance(1), r1(0, 9), 0b1, true, out);
  EXPECT_EQ(out, std::vector<Event>{c});
  // Finished accesses impose nothing.
  events.trigger(c);
  out.clear();
  uses.conflicts(instance(1), r1(0, 9), 0b1, true, out);
  EXPECT_TRUE(out.empty());
  uses.clear();
  for (Event e : {a, b}) events.trigger(e);
}

// A write after a reader that read all of an earlier write's footprint waits for the reader's
// points only (LogicalAnalysis::set_order_through_readers): each of them waited for the earlier
// writer's points it read. Where the reader read less, other fields, or the later op is a
// reader itself, the earlier writer is still waited for.
#include <gtest/gtest.h>

#include <vector>

#include "logical_fixture.h"

using namespace logical_fixture;

namespace {

// Writes the halves, then reads through `reads` (over both colors, on `read_mask`), then
// writes the halves again on `write_mask` (or reads them, when `write` is false). Gives what
// the last launch's points wait for, and the first write's and the reader's point events.
struct Stencil {
  std::vector<std::vector<Event>> last;
  Event w[2], r[2];
};
Stencil write_read_then(Fixture& f, const Partition& halves, const Partition& reads,
                        detail::FieldMask read_mask, detail::FieldMask write_mask,
                        bool write = true) {
  const OpRef w = f.launch(f.colors, halves, Privilege::WriteDiscard, 3);
  f.analyse(w);
  const OpRef r = f.launch(f.colors, reads, Privilege::ReadOnly, read_mask);
  f.analyse(r);
  Stencil s;
  s.last = f.analyse(
      f.launch(f.colors, halves, write ? Privilege::ReadWrite : Privilege::ReadOnly, write_mask));
  for (int p = 0; p < 2; ++p)
    s.w[p] = w->point_done[std::size_t(p)], s.r[p] = r->point_done[std::size_t(p)];
  return s;
}

// write_read_then over the halves and a complete aliased partition that reads all of them
// ([0, 60], [40, 99]), with the analysis ordering through readers or not.
Stencil through_ghosts(bool order_through_readers, detail::FieldMask read_mask,
                       detail::FieldMask write_mask, bool write = true) {
  Fixture f;
  f.logical.set_order_through_readers(order_through_readers);
  const Partition halves = f.partition({r1(0, 49), r1(50, 99)});
  const Partition ghosts = f.partition({r1(0, 60), r1(40, 99)});
  return write_read_then(f, halves, ghosts, read_mask, write_mask, write);
}

}  // namespace

TEST(OrderThroughReaders, AWriteAfterACoveringReaderWaitsForTheReaderOnly) {
  const Stencil s = through_ghosts(true, 1, 1);
  EXPECT_EQ(s.last[0], sorted({s.r[0], s.r[1]}));
  EXPECT_EQ(s.last[1], sorted({s.r[0], s.r[1]}));
}

TEST(OrderThroughReaders, OffTheWriteWaitsForTheEarlierWriterToo) {
  const Stencil s = through_ghosts(false, 1, 1);
  EXPECT_EQ(s.last[0], sorted({s.w[0], s.r[0], s.r[1]}));
  EXPECT_EQ(s.last[1], sorted({s.w[1], s.r[0], s.r[1]}));
}

TEST(OrderThroughReaders, AReaderOfLessThanTheFootprintOrdersNothing) {
  Fixture f;
  f.logical.set_order_through_readers(true);
  const Partition halves = f.partition({r1(0, 49), r1(50, 99)});
  // [61, 99] is read by nobody: the second half's rewrite must wait for its first write.
  const Partition part = f.partition({r1(0, 30), r1(40, 60)});
  const Stencil s = write_read_then(f, halves, part, 1, 1);
  EXPECT_EQ(s.last[0], sorted({s.w[0], s.r[0], s.r[1]}));
  EXPECT_EQ(s.last[1], sorted({s.w[1], s.r[1]}));
}

TEST(OrderThroughReaders, OnlyTheFieldsReadAreOrderedThroughTheReader) {
  // The reader read field 1; the rewrite writes field 2: only the first write ordered it.
  const Stencil s = through_ghosts(true, 1, 2);
  EXPECT_EQ(s.last[0], std::vector<Event>{s.w[0]});
  EXPECT_EQ(s.last[1], std::vector<Event>{s.w[1]});
}

TEST(OrderThroughReaders, ALaterReaderStillWaitsForTheWriter) {
  // Readers do not wait for each other: the writer is this reader's only order.
  const Stencil s = through_ghosts(true, 1, 1, /*write=*/false);
  EXPECT_EQ(s.last[0], std::vector<Event>{s.w[0]});
  EXPECT_EQ(s.last[1], std::vector<Event>{s.w[1]});
}

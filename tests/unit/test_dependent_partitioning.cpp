// Dependent partitioning: partitions by field, image and preimage computed from data written
// by tasks issued just before (the partition must see their values), and set operations. Every
// piece is compared with the set computed here from the same data. The calls are ops in the
// stream: they return before the writers of the fields they read have run, and a later writer
// does not change what they compute. Also run on 3 ranks (mpi_dependent_partitioning_np3).
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "error_text.h"
#include "piece_signatures.h"

using namespace reprise;

namespace {
enum : TaskID {
  T_COLORS = 10600,
  T_POINTERS,
  T_RANGES,
  T_SIGNATURE,
  T_GATED_COLORS,
  T_RECOLOR,
  T_FAILING_COLORS,
  T_SLOW_COLORS
};
enum : FieldID { F_COLOR = 0, F_PTR = 1, F_RANGE = 2, F_VALUE = 3 };
constexpr coord_t kNodes = 50, kWires = 36;
constexpr coord_t kColors = 5;

coord_t color_of(coord_t i) {
  return (i * 7) % kColors + (i % 11 == 10 ? 100 : 0);  // every 11th: no color
}
coord_t pointer_of(coord_t w) {
  return (w * 13 + 3) % kNodes;
}
Rect<1> range_of(coord_t w) {
  return Rect<1>({(w * 5) % kNodes}, {(w * 5) % kNodes + w % 3 - 1});  // empty when w % 3 == 0
}

void colors(TaskContext& tc) {
  auto c = tc.accessor<coord_t, 1>(0, F_COLOR);
  for (auto p : Rect<1>(tc.domain(0))) c[p] = color_of(p[0]);
}
void pointers(TaskContext& tc) {
  auto ptr = tc.accessor<coord_t, 1>(0, F_PTR);
  auto range = tc.accessor<Rect<1>, 1>(0, F_RANGE);
  for (auto p : Rect<1>(tc.domain(0))) {
    ptr[p] = pointer_of(p[0]);
    range[p] = range_of(p[0]);
  }
}
// The gated writer waits (at most 20 s) until the program opens the gate: a call that
// waited for it would keep the gate shut, and the test would see the writer time out.
std::atomic<bool> g_gate{false}, g_writer_timed_out{false};
void gated_colors(TaskContext& tc) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!g_gate.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!g_gate.load()) g_writer_timed_out = true;
  colors(tc);
}
void slow_colors(TaskContext& tc) {
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  colors(tc);
}
void recolor(TaskContext& tc) {
  auto c = tc.accessor<coord_t, 1>(0, F_COLOR);
  for (auto p : Rect<1>(tc.domain(0))) c[p] = 0;
}
void failing_colors(TaskContext&) {
  throw std::runtime_error("the colors could not be computed");
}
void register_all() {
  TaskRegistry::add(T_GATED_COLORS, "gated_colors", {cpu(gated_colors)});
  TaskRegistry::add(T_RECOLOR, "recolor", {cpu(recolor)});
  TaskRegistry::add(T_SLOW_COLORS, "slow_colors", {cpu(slow_colors)});
  TaskRegistry::add(T_FAILING_COLORS, "failing_colors", {cpu(failing_colors)});
  TaskRegistry::add(T_COLORS, "colors", {cpu(colors)});
  TaskRegistry::add(T_POINTERS, "pointers", {cpu(pointers)});
  TaskRegistry::add(T_SIGNATURE, "signature", {cpu(signature_1d)});
}

std::set<coord_t> all_of(const Domain& d) {
  std::set<coord_t> s;
  for (auto p : Rect<1>(d)) s.insert(p[0]);
  return s;
}

// What most tests partition: nodes in equal blocks of kColors colors, and wires (in 3 blocks)
// whose fields point into the nodes; one field space with every field.
struct Graph {
  Region nodes, wires;
  IndexSpace colors;
  Partition blocks, wire_blocks;
};
Graph make_graph(Context& ctx) {
  FieldSpace fs = ctx.create_field_space({{F_COLOR, sizeof(coord_t)},
                                          {F_PTR, sizeof(coord_t)},
                                          {F_RANGE, sizeof(Rect<1>)},
                                          {F_VALUE, sizeof(double)}});
  Graph g;
  g.nodes = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {kNodes - 1})), fs);
  g.wires = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {kWires - 1})), fs);
  g.colors = ctx.create_index_space(Rect<1>({0}, {kColors - 1}));
  g.blocks = ctx.partition_equal(g.nodes, g.colors);
  g.wire_blocks = ctx.partition_equal(g.wires, ctx.create_index_space(Rect<1>({0}, {2})));
  return g;
}
// The nodes' colors, by `task` (T_COLORS or a variant; T_RECOLOR reads them), block by block.
void write_colors(Context& ctx, const Graph& g, TaskID task,
                  Privilege privilege = Privilege::WriteDiscard) {
  IndexLauncher l(task, g.colors.bounds());
  l.add(g.blocks, Projection::identity(), privilege, {F_COLOR});
  ctx.execute(l);
}
void write_pointers(Context& ctx, const Graph& g) {
  IndexLauncher l(T_POINTERS, g.wire_blocks.color_space());
  l.add(g.wire_blocks, Projection::identity(), Privilege::WriteDiscard, {F_PTR, F_RANGE});
  ctx.execute(l);
}
// The nodes of each color (color_of), and each block's nodes of other colors.
std::vector<std::set<coord_t>> nodes_by_color() {
  std::vector<std::set<coord_t>> want(kColors);
  for (coord_t i = 0; i < kNodes; ++i)
    if (color_of(i) < kColors) want[std::size_t(color_of(i))].insert(i);
  return want;
}
std::vector<std::set<coord_t>> blocks_without_their_color(const Graph& g) {
  std::vector<std::set<coord_t>> want(kColors);
  for (coord_t c = 0; c < kColors; ++c)
    for (coord_t p : all_of(g.blocks.rect(DomainPoint(c))))
      if (color_of(p) != c) want[std::size_t(c)].insert(p);
  return want;
}
}  // namespace

TEST(DependentPartitioning, ByFieldImagePreimageAndSetOperationsMatchTheData) {
  register_all();
  for (const char* numa : {"1", "2"}) {
    reprise::run({"-ll:cpu", "2", "-ll:numa", numa}, [&](Context& ctx) {
      const Graph g = make_graph(ctx);
      const Region nodes = g.nodes, wires = g.wires;
      const IndexSpace cs = g.colors;
      const Partition wire_blocks = g.wire_blocks;
      // Written by index launches issued just before the partitions that read them.
      write_colors(ctx, g, T_COLORS);
      write_pointers(ctx, g);

      // By field: sparse pieces (colors interleave), the uncolored points in none.
      Partition by_color = ctx.partition_by_field(nodes, F_COLOR, cs);
      const std::vector<std::set<coord_t>> want = nodes_by_color();
      EXPECT_TRUE(by_color.disjoint());
      EXPECT_FALSE(by_color.complete());
      expect_pieces(ctx, by_color, want, T_SIGNATURE, F_VALUE, "by field");

      // Image of the wire blocks through the pointers, and through the ranges.
      Partition image = ctx.partition_by_image(nodes, wire_blocks, F_PTR);
      Partition range_image = ctx.partition_by_image(nodes, wire_blocks, F_RANGE);
      std::vector<std::set<coord_t>> want_image(3), want_ranges(3);
      for (coord_t c = 0; c < 3; ++c)
        for (auto w : Rect<1>(wire_blocks.rect(DomainPoint(c)))) {
          want_image[std::size_t(c)].insert(pointer_of(w[0]));
          for (auto p : range_of(w[0])) want_ranges[std::size_t(c)].insert(p[0]);
        }
      expect_pieces(ctx, image, want_image, T_SIGNATURE, F_VALUE, "image");
      expect_pieces(ctx, range_image, want_ranges, T_SIGNATURE, F_VALUE, "image of ranges");

      // Preimage: the wires that point into each color's nodes.
      Partition pre = ctx.partition_by_preimage(by_color, wires, F_PTR);
      std::vector<std::set<coord_t>> want_pre(kColors);
      for (coord_t w = 0; w < kWires; ++w)
        for (coord_t c = 0; c < kColors; ++c)
          if (want[std::size_t(c)].count(pointer_of(w))) want_pre[std::size_t(c)].insert(w);
      expect_pieces(ctx, pre, want_pre, T_SIGNATURE, F_VALUE, "preimage");
      EXPECT_TRUE(pre.disjoint());

      // Set operations, color by color.
      Partition blocks = ctx.partition_equal(nodes, cs);
      Partition u = ctx.partition_union(by_color, blocks);
      Partition x = ctx.partition_intersection(by_color, blocks);
      Partition d = ctx.partition_difference(blocks, by_color);
      std::vector<std::set<coord_t>> want_u(kColors), want_x(kColors), want_d(kColors);
      for (coord_t c = 0; c < kColors; ++c) {
        const auto block = all_of(blocks.rect(DomainPoint(c)));
        const auto& field = want[std::size_t(c)];
        std::set_union(block.begin(), block.end(), field.begin(), field.end(),
                       std::inserter(want_u[std::size_t(c)], want_u[std::size_t(c)].end()));
        std::set_intersection(block.begin(), block.end(), field.begin(), field.end(),
                              std::inserter(want_x[std::size_t(c)], want_x[std::size_t(c)].end()));
        std::set_difference(block.begin(), block.end(), field.begin(), field.end(),
                            std::inserter(want_d[std::size_t(c)], want_d[std::size_t(c)].end()));
      }
      expect_pieces(ctx, u, want_u, T_SIGNATURE, F_VALUE, "union");
      expect_pieces(ctx, x, want_x, T_SIGNATURE, F_VALUE, "intersection");
      expect_pieces(ctx, d, want_d, T_SIGNATURE, F_VALUE, "difference");
      EXPECT_FALSE(u.disjoint());
      // Pending partitions: color c from other regions of the tree, color by color.
      Partition pending = ctx.partition_pending(nodes, cs, [&](const DomainPoint& c) {
        return std::vector<Region>{by_color[c], blocks[DomainPoint((c[0] + 1) % kColors)]};
      });
      Partition pending_x = ctx.partition_pending(
          nodes, cs,
          [&](const DomainPoint& c) {
            return std::vector<Region>{by_color[c], blocks[c]};
          },
          Context::PieceOp::Intersection);
      Partition pending_d = ctx.partition_pending(
          nodes, cs,
          [&](const DomainPoint& c) {
            return std::vector<Region>{blocks[c], by_color[c]};
          },
          Context::PieceOp::Difference);
      std::vector<std::set<coord_t>> want_pending(kColors);
      for (coord_t c = 0; c < kColors; ++c) {
        want_pending[std::size_t(c)] = want[std::size_t(c)];
        for (coord_t p : all_of(blocks.rect(DomainPoint((c + 1) % kColors))))
          want_pending[std::size_t(c)].insert(p);
      }
      expect_pieces(ctx, pending, want_pending, T_SIGNATURE, F_VALUE, "pending union");
      expect_pieces(ctx, pending_x, want_x, T_SIGNATURE, F_VALUE, "pending intersection");
      expect_pieces(ctx, pending_d, want_d, T_SIGNATURE, F_VALUE, "pending difference");
      // The difference of a partition with itself: empty pieces, dense.
      Partition none = ctx.partition_difference(blocks, blocks);
      EXPECT_TRUE(none.rect(DomainPoint(0)).empty());
    });
  }
}

TEST(DependentPartitioning, CallsGoOnBeforeTheWritersRunAndLaterWritersDoNotChangeThem) {
  register_all();
  for (const char* numa : {"1", "3"}) {
    g_gate = false;
    g_writer_timed_out = false;
    reprise::run({"-ll:cpu", "2", "-ll:numa", numa}, [&](Context& ctx) {
      const Graph g = make_graph(ctx);
      const Region nodes = g.nodes, wires = g.wires;
      const IndexSpace cs = g.colors;
      const Partition blocks = g.blocks;
      write_pointers(ctx, g);
      write_colors(ctx, g, T_GATED_COLORS);
      // Each of these reads the colors or a partition made from them: none may wait.
      Partition by_color = ctx.partition_by_field(nodes, F_COLOR, cs);
      Partition pre = ctx.partition_by_preimage(by_color, wires, F_PTR);
      Partition image = ctx.partition_by_image(nodes, pre, F_PTR);
      Partition rest = ctx.partition_difference(blocks, by_color);
      // A later writer of the colors waits for the partition that reads them.
      write_colors(ctx, g, T_RECOLOR, Privilege::ReadWrite);
      g_gate = true;

      const std::vector<std::set<coord_t>> want = nodes_by_color(),
                                           want_rest = blocks_without_their_color(g);
      std::vector<std::set<coord_t>> want_pre(kColors), want_image(kColors);
      for (coord_t c = 0; c < kColors; ++c)
        for (coord_t w = 0; w < kWires; ++w)
          if (want[std::size_t(c)].count(pointer_of(w))) {
            want_pre[std::size_t(c)].insert(w);
            want_image[std::size_t(c)].insert(pointer_of(w));
          }
      // (Used in another order than made: the set operation and the image first.)
      expect_pieces(ctx, rest, want_rest, T_SIGNATURE, F_VALUE, "difference");
      expect_pieces(ctx, image, want_image, T_SIGNATURE, F_VALUE, "image of the preimage");
      EXPECT_TRUE(pre.disjoint());
      expect_pieces(ctx, pre, want_pre, T_SIGNATURE, F_VALUE, "preimage");
      EXPECT_FALSE(by_color.complete());
      expect_pieces(ctx, by_color, want, T_SIGNATURE, F_VALUE, "by field");
      // After the later writer: every color is 0.
      Partition after = ctx.partition_by_field(nodes, F_COLOR, cs);
      EXPECT_EQ(after.rect(DomainPoint(0)), nodes.bounds());
      EXPECT_TRUE(after.rect(DomainPoint(1)).empty());
    });
    EXPECT_FALSE(g_writer_timed_out)
        << "a call waited for the writer of the colors (-ll:numa " << numa << ")";
  }
}

TEST(DependentPartitioning, AFailedWriterIsAnErrorWhereThePartitionIsUsed) {
  register_all();
  EXPECT_ERROR(reprise::run({"-ll:cpu", "2"},
                            [&](Context& ctx) {
                              FieldSpace fs = ctx.create_field_space({{F_COLOR, sizeof(coord_t)}});
                              Region r =
                                  ctx.create_region(ctx.create_index_space(Rect<1>({0}, {9})), fs);
                              TaskLauncher fail(T_FAILING_COLORS);
                              fail.add(r, Privilege::WriteDiscard, {F_COLOR});
                              ctx.execute(fail);
                              IndexSpace two = ctx.create_index_space(Rect<1>({0}, {1}));
                              Partition p = ctx.partition_by_field(r, F_COLOR, two);
                              Partition q = ctx.partition_difference(p, p);
                              (void)q.disjoint();
                              ADD_FAILURE() << "the partition was used after a failed writer";
                            }),
               "the colors could not be computed");
}

// A partition made before a trace and first used inside it: its pieces are waited for there
// (its task was issued before the trace, so the wait can end), every time, whether or not
// they are ready yet.
TEST(DependentPartitioning, FirstUsedInsideATrace) {
  register_all();
  for (const bool automatic : {false, true}) {
    std::vector<std::string> flags = {"-ll:cpu", "2"};
    if (!automatic) flags.push_back("-lg:no_auto_tracing");
    reprise::run(flags, [&](Context& ctx) {
      const Graph g = make_graph(ctx);
      write_colors(ctx, g, T_SLOW_COLORS);
      Partition by_color = ctx.partition_by_field(g.nodes, F_COLOR, g.colors);
      Partition rest = ctx.partition_difference(g.blocks, by_color);
      IndexLauncher sig(T_SIGNATURE, g.colors.bounds());
      sig.add(rest, Projection::identity(), Privilege::ReadOnly, {F_VALUE});
      FutureMap fm;
      for (int it = 0; it < 3; ++it) {
        ctx.begin_trace(4);
        fm = ctx.execute(sig);
        ctx.end_trace(4);
      }
      const std::vector<std::set<coord_t>> want = blocks_without_their_color(g);
      for (coord_t c = 0; c < kColors; ++c)
        EXPECT_EQ(fm.get(DomainPoint(c)).get<std::int64_t>(), signature_of(want[std::size_t(c)]))
            << c;
    });
  }
}

// Attach and dependent partitioning in one process: each internal task runs its own body
// (they once shared an id, and whichever registered last ran for both).
TEST(DependentPartitioning, BesideAnAttachInOneProcess) {
  register_all();
  reprise::run({"-ll:cpu", "2"}, [&](Context& ctx) {
    const Graph g = make_graph(ctx);
    const Region nodes = g.nodes;
    const IndexSpace cs = g.colors;
    const std::vector<std::set<coord_t>> want = nodes_by_color();
    // A partition, an attach, a partition: either internal task registered after the other.
    write_colors(ctx, g, T_COLORS);
    expect_pieces(ctx, ctx.partition_by_field(nodes, F_COLOR, cs), want, T_SIGNATURE, F_VALUE,
                  "by field");
    std::vector<coord_t> colors_array(static_cast<std::size_t>(kNodes));
    for (coord_t i = 0; i < kNodes; ++i) colors_array[std::size_t(i)] = color_of(i);
    AttachLauncher al(nodes);
    al.attach_array(F_COLOR, colors_array.data());
    Attachment a = ctx.attach(al);
    Partition by_color = ctx.partition_by_field(nodes, F_COLOR, cs);
    expect_pieces(ctx, by_color, want, T_SIGNATURE, F_VALUE, "by field of an attached array");
    ctx.detach(a).wait();
  });
}

// Traced: a loop whose trace makes a partition by field each iteration replays it, and each
// replay's partition reads the colors of its own iteration (written outside the trace, in turn
// the data's colors and all zero).
TEST(DependentPartitioning, MadeInsideATraceThatReplays) {
  register_all();
  for (const char* memories : {"1", "3"}) {
    reprise::run({"-ll:cpu", "2", "-ll:numa", memories, "-lg:no_auto_tracing"}, [&](Context& ctx) {
      const Graph g = make_graph(ctx);
      const std::vector<std::set<coord_t>> want = nodes_by_color();
      std::vector<std::set<coord_t>> zero(kColors);
      zero[0] = all_of(g.nodes.bounds());
      for (int it = 0; it < 6; ++it) {
        if (it % 2 == 0)
          write_colors(ctx, g, T_COLORS);
        else
          write_colors(ctx, g, T_RECOLOR, Privilege::ReadWrite);
        ctx.begin_trace(5);
        Partition by_color = ctx.partition_by_field(g.nodes, F_COLOR, g.colors);
        Partition rest = ctx.partition_difference(g.blocks, by_color);
        ctx.end_trace(5);
        expect_pieces(ctx, by_color, it % 2 == 0 ? want : zero, T_SIGNATURE, F_VALUE,
                      "by field in a trace");
        EXPECT_EQ(rest.rect(DomainPoint(0)).empty(), it % 2 == 1);  // (all in color 0)
        ctx.destroy(rest);
        ctx.destroy(by_color);
      }
      EXPECT_GE(ctx.trace_stats().replays, 3u);
    });
  }
}

TEST(DependentPartitioning, PartitionsDestroyedBeforeTheyAreComputed) {
  register_all();
  g_gate = false;
  g_writer_timed_out = false;
  reprise::run({"-ll:cpu", "2"}, [&](Context& ctx) {
    const Graph g = make_graph(ctx);
    const Region nodes = g.nodes;
    const IndexSpace cs = g.colors;
    write_colors(ctx, g, T_GATED_COLORS);
    Partition gone = ctx.partition_by_field(nodes, F_COLOR, cs);
    Partition kept = ctx.partition_by_field(nodes, F_COLOR, cs);
    Partition chained = ctx.partition_difference(g.blocks, gone);
    ctx.destroy(gone);
    EXPECT_ERROR((void)gone.disjoint(),
                 "Partition::disjoint: the partition into colors [0..4] was "
                 "destroyed");
    g_gate = true;
    // The difference read the destroyed partition's pieces: it is still right.
    expect_pieces(ctx, chained, blocks_without_their_color(g), T_SIGNATURE, F_VALUE, "difference");
    // A partition never used, its region destroyed with it.
    ctx.destroy(nodes);
    EXPECT_ERROR((void)kept.complete(), "was destroyed");
  });
  EXPECT_FALSE(g_writer_timed_out);
}

TEST(DependentPartitioning, MisuseIsAnError) {
  register_all();
  reprise::run({"-ll:cpu", "2"}, [&](Context& ctx) {
    FieldSpace fs = ctx.create_field_space({{F_COLOR, sizeof(coord_t)},
                                            {F_VALUE, sizeof(double)},
                                            {F_RANGE, sizeof(Rect<1>)},
                                            {5, sizeof(float)}});
    Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {9})), fs);
    Region other = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {9})), fs);
    IndexSpace two = ctx.create_index_space(Rect<1>({0}, {1}));
    EXPECT_ERROR(ctx.partition_by_field(r, F_VALUE + 10, two), "has no field 13");
    EXPECT_ERROR(ctx.partition_by_field(r, F_RANGE, two), "field 2 has 16 bytes");
    Partition pr = ctx.partition_equal(r, two), po = ctx.partition_equal(other, two);
    EXPECT_ERROR(ctx.partition_by_image(other, pr, 5), "partition_by_image: field 5 has 4 bytes");
    // A color or pointer field of the wrong size for the colors' or the target's dimension.
    Region grid = ctx.create_region(ctx.create_index_space(Rect<2>({0, 0}, {3, 3})), fs);
    EXPECT_ERROR(
        ctx.partition_by_field(grid, F_COLOR, ctx.create_index_space(Rect<2>({0, 0}, {1, 1}))),
        "partition_by_field: field 0 has 8 bytes; a color field holds a color of the 2-d color "
        "space");
    EXPECT_ERROR(ctx.partition_by_image(grid, pr, F_COLOR),
                 "partition_by_image: field 0 has 8 bytes; a pointer field into 2-d points");
    EXPECT_ERROR(ctx.partition_union(pr, po), "partition_union: the partitions are of different");
    EXPECT_ERROR(ctx.partition_intersection(
                     pr, ctx.partition_equal(r, ctx.create_index_space(Rect<1>({0}, {2})))),
                 "partition_intersection: the color spaces differ");
    EXPECT_ERROR(ctx.partition_pending(
                     r, two, [&](const DomainPoint&) { return std::vector<Region>{other}; }),
                 "partition_pending: region [0..9] is not in the tree of [0..9]");
    // Inside a trace: made, but its pieces come at end_trace; a pending partition cannot be.
    ctx.begin_trace(3);
    Partition inside = ctx.partition_difference(pr, pr);
    EXPECT_ERROR((void)inside.disjoint(),
                 "partition_difference: the partition was made inside the trace still open and "
                 "is used inside it");
    EXPECT_ERROR(ctx.partition_pending(
                     r, two, [&](const DomainPoint& c) { return std::vector<Region>{pr[c]}; }),
                 "partition_pending inside trace 3");
    ctx.end_trace(3);
    EXPECT_TRUE(inside.disjoint());
    EXPECT_TRUE(inside.rect(DomainPoint(1)).empty());
  });
}

// Dependent partitioning of 2-d and 3-d regions: by field (1-d and 2-d colors), image and
// preimage through Point<2> and Rect<2> pointer fields, set operations and pending partitions.
// Each piece's points, as a task iterates its rectangles, are compared with the set computed
// here from the same data.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <vector>

#include "error_text.h"
#include "piece_signatures.h"

using namespace reprise;

namespace {
enum : TaskID {
  T_COLORS = 10700,
  T_COLORS_2D,
  T_POINTERS,
  T_SIGNATURE_2D,
  T_SIGNATURE_1D,
  T_SIGNATURE_3D
};
enum : FieldID { F_COLOR = 0, F_COLOR_2D = 1, F_PTR = 2, F_RANGE = 3, F_VALUE = 4 };
const Rect<2> kGrid({0, 0}, {11, 9});
constexpr coord_t kColors = 4, kWires = 30;

// Blocks of the grid, with a scattered few moved to another color and some uncolored: pieces
// of several rectangles each.
coord_t color_of(const Point<2>& p) {
  if ((p[0] * 7 + p[1] * 3) % 13 == 0) return 99;  // no color
  const coord_t block = (p[0] / 6) * 2 + p[1] / 5;
  return (p[0] + p[1]) % 9 == 4 ? (block + 1) % kColors : block;
}
Point<2> color_2d_of(const Point<2>& p) {
  return Point<2>({p[0] % 2, (p[1] / 4) % 3});
}
Point<2> pointer_of(coord_t w) {
  return Point<2>({(w * 5) % 12, (w * 7 + 1) % 11});  // row 10 lies outside the grid
}
Rect<2> range_of(coord_t w) {
  const coord_t x = (w * 3) % 10, y = (w * 2) % 8;
  return Rect<2>({x, y}, {x + w % 3, y + (w % 4) - 1});  // empty when w % 4 == 0
}
const Rect<3> kBox({0, 0, 0}, {3, 4, 5});
coord_t cube_color_of(const Point<3>& p) {
  return (p[0] + p[1] * p[2]) % 3;
}
coord_t position(const Point<2>& p) {
  return Domain(kGrid).linearize(DomainPoint(p));
}

void colors(TaskContext& tc) {
  auto c = tc.accessor<coord_t, 2>(0, F_COLOR);
  auto c2 = tc.accessor<Point<2>, 2>(0, F_COLOR_2D);
  for (auto p : Rect<2>(tc.domain(0))) {
    c[p] = color_of(p);
    c2[p] = color_2d_of(p);
  }
}
void pointers(TaskContext& tc) {
  auto ptr = tc.accessor<Point<2>, 1>(0, F_PTR);
  auto range = tc.accessor<Rect<2>, 1>(0, F_RANGE);
  for (auto p : Rect<1>(tc.domain(0))) {
    ptr[p] = pointer_of(p[0]);
    range[p] = range_of(p[0]);
  }
}
// A piece's points as grid positions (piece_signatures.h).
std::int64_t signature_2d(TaskContext& tc) {
  std::int64_t s = 0;
  for (const Domain& d : tc.rects(0))
    for (auto p : Rect<2>(d)) {
      const coord_t i = position(p);
      s += point_signature(i);
    }
  return s;
}
std::int64_t signature_3d(TaskContext& tc) {
  std::int64_t s = 0;
  for (const Domain& d : tc.rects(0))
    for (auto p : Rect<3>(d)) {
      const coord_t i = Domain(kBox).linearize(DomainPoint(p));
      s += point_signature(i);
    }
  return s;
}
void register_all() {
  TaskRegistry::add(T_COLORS, "colors", {cpu(colors)});
  TaskRegistry::add(T_POINTERS, "pointers", {cpu(pointers)});
  TaskRegistry::add(T_SIGNATURE_2D, "signature_2d", {cpu(signature_2d)});
  TaskRegistry::add(T_SIGNATURE_1D, "signature_1d", {cpu(signature_1d)});
  TaskRegistry::add(T_SIGNATURE_3D, "signature_3d", {cpu(signature_3d)});
}

std::set<coord_t> positions_of(const Domain& d) {
  std::set<coord_t> s;
  if (!d.empty())
    for (auto p : Rect<2>(d)) s.insert(position(p));
  return s;
}
}  // namespace

TEST(DependentPartitioning, TwoDimensionalRegionsByFieldImagePreimageAndSetOperations) {
  register_all();
  for (const char* numa : {"1", "2"}) {
    reprise::run({"-ll:cpu", "2", "-ll:numa", numa}, [&](Context& ctx) {
      FieldSpace fs = ctx.create_field_space({{F_COLOR, sizeof(coord_t)},
                                              {F_COLOR_2D, sizeof(Point<2>)},
                                              {F_PTR, sizeof(Point<2>)},
                                              {F_RANGE, sizeof(Rect<2>)},
                                              {F_VALUE, sizeof(double)}});
      Region grid = ctx.create_region(ctx.create_index_space(kGrid), fs);
      Region wires = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {kWires - 1})), fs);
      IndexSpace cs = ctx.create_index_space(Rect<1>({0}, {kColors - 1}));
      Partition quarters =
          ctx.partition_equal(grid, ctx.create_index_space(Rect<2>({0, 0}, {1, 1})));
      IndexLauncher fill_colors(T_COLORS, quarters.color_space());
      fill_colors.add(quarters, Projection::identity(), Privilege::WriteDiscard,
                      {F_COLOR, F_COLOR_2D});
      ctx.execute(fill_colors);
      Partition wire_blocks = ctx.partition_equal(wires, ctx.create_index_space(Rect<1>({0}, {2})));
      IndexLauncher fill_ptrs(T_POINTERS, wire_blocks.color_space());
      fill_ptrs.add(wire_blocks, Projection::identity(), Privilege::WriteDiscard, {F_PTR, F_RANGE});
      ctx.execute(fill_ptrs);

      // By field, 1-d colors: pieces of several rectangles; the uncolored points in none.
      Partition by_color = ctx.partition_by_field(grid, F_COLOR, cs);
      std::vector<std::set<coord_t>> want(kColors);
      for (auto p : kGrid)
        if (color_of(p) < kColors) want[std::size_t(color_of(p))].insert(position(p));
      EXPECT_TRUE(by_color.disjoint());
      EXPECT_FALSE(by_color.complete());
      expect_pieces(ctx, by_color, want, T_SIGNATURE_2D, F_VALUE, "by field");

      // By field, 2-d colors (a Point<2> per element): complete and disjoint.
      IndexSpace cs2 = ctx.create_index_space(Rect<2>({0, 0}, {1, 2}));
      Partition by_color_2d = ctx.partition_by_field(grid, F_COLOR_2D, cs2);
      std::vector<std::set<coord_t>> want_2d(6);
      for (auto p : kGrid)
        want_2d[std::size_t(cs2.bounds().linearize(DomainPoint(color_2d_of(p))))].insert(
            position(p));
      EXPECT_TRUE(by_color_2d.disjoint());
      EXPECT_TRUE(by_color_2d.complete());
      expect_pieces(ctx, by_color_2d, want_2d, T_SIGNATURE_2D, F_VALUE, "by 2-d field");

      // Image of 1-d wire blocks in the 2-d grid, through points and through rectangles.
      Partition image = ctx.partition_by_image(grid, wire_blocks, F_PTR);
      Partition range_image = ctx.partition_by_image(grid, wire_blocks, F_RANGE);
      std::vector<std::set<coord_t>> want_image(3), want_ranges(3);
      for (coord_t c = 0; c < 3; ++c)
        for (auto w : Rect<1>(wire_blocks.rect(DomainPoint(c)))) {
          if (kGrid.contains(pointer_of(w[0])))
            want_image[std::size_t(c)].insert(position(pointer_of(w[0])));
          const Rect<2> r = range_of(w[0]);
          if (!r.empty())
            for (auto p : r)
              if (kGrid.contains(p)) want_ranges[std::size_t(c)].insert(position(p));
        }
      expect_pieces(ctx, image, want_image, T_SIGNATURE_2D, F_VALUE, "image");
      expect_pieces(ctx, range_image, want_ranges, T_SIGNATURE_2D, F_VALUE, "image of rectangles");

      // Preimage: the wires that point into each color's grid points, and whose rectangles meet
      // them.
      Partition pre = ctx.partition_by_preimage(by_color, wires, F_PTR);
      Partition range_pre = ctx.partition_by_preimage(by_color, wires, F_RANGE);
      std::vector<std::set<coord_t>> want_pre(kColors), want_range_pre(kColors);
      for (coord_t w = 0; w < kWires; ++w)
        for (coord_t c = 0; c < kColors; ++c) {
          const auto& in = want[std::size_t(c)];
          if (kGrid.contains(pointer_of(w)) && in.count(position(pointer_of(w))))
            want_pre[std::size_t(c)].insert(w);
          const Rect<2> r = range_of(w);
          if (!r.empty())
            for (auto p : r)
              if (kGrid.contains(p) && in.count(position(p)))
                want_range_pre[std::size_t(c)].insert(w);
        }
      expect_pieces(ctx, pre, want_pre, T_SIGNATURE_1D, F_VALUE, "preimage");
      expect_pieces(ctx, range_pre, want_range_pre, T_SIGNATURE_1D, F_VALUE,
                    "preimage of rectangles");
      EXPECT_TRUE(pre.disjoint());

      // Set operations with 2-d blocks, color by color, and a pending partition.
      Partition blocks = ctx.partition_by_rects(
          grid, cs,
          std::vector<Domain>{Rect<2>({0, 0}, {5, 4}), Rect<2>({2, 3}, {8, 9}),
                              Rect<2>({6, 0}, {11, 4}), Rect<2>({4, 6}, {11, 9})});
      Partition u = ctx.partition_union(by_color, blocks);
      Partition x = ctx.partition_intersection(by_color, blocks);
      Partition d = ctx.partition_difference(blocks, by_color);
      std::vector<std::set<coord_t>> want_u(kColors), want_x(kColors), want_d(kColors),
          want_pending(kColors);
      for (coord_t c = 0; c < kColors; ++c) {
        const auto block = positions_of(blocks.rect(DomainPoint(c)));
        const auto& field = want[std::size_t(c)];
        std::set_union(block.begin(), block.end(), field.begin(), field.end(),
                       std::inserter(want_u[std::size_t(c)], want_u[std::size_t(c)].end()));
        std::set_intersection(block.begin(), block.end(), field.begin(), field.end(),
                              std::inserter(want_x[std::size_t(c)], want_x[std::size_t(c)].end()));
        std::set_difference(block.begin(), block.end(), field.begin(), field.end(),
                            std::inserter(want_d[std::size_t(c)], want_d[std::size_t(c)].end()));
        const auto next = positions_of(blocks.rect(DomainPoint((c + 1) % kColors)));
        std::set_difference(
            want_u[std::size_t(c)].begin(), want_u[std::size_t(c)].end(), next.begin(), next.end(),
            std::inserter(want_pending[std::size_t(c)], want_pending[std::size_t(c)].end()));
      }
      expect_pieces(ctx, u, want_u, T_SIGNATURE_2D, F_VALUE, "union");
      expect_pieces(ctx, x, want_x, T_SIGNATURE_2D, F_VALUE, "intersection");
      expect_pieces(ctx, d, want_d, T_SIGNATURE_2D, F_VALUE, "difference");
      Partition pending = ctx.partition_pending(
          grid, cs,
          [&](const DomainPoint& c) {
            return std::vector<Region>{u[c], blocks[DomainPoint((c[0] + 1) % kColors)]};
          },
          Context::PieceOp::Difference);
      expect_pieces(ctx, pending, want_pending, T_SIGNATURE_2D, F_VALUE, "pending difference");
      Partition none = ctx.partition_difference(blocks, blocks);
      EXPECT_TRUE(none.rect(DomainPoint(0)).empty());
    });
  }
}

TEST(DependentPartitioning, ThreeDimensionalByFieldAndDifference) {
  register_all();
  reprise::run({"-ll:cpu", "2"}, [&](Context& ctx) {
    FieldSpace fs = ctx.create_field_space(
        {{F_COLOR, sizeof(coord_t)}, {F_PTR, sizeof(Point<2>)}, {F_VALUE, sizeof(double)}});
    Region cube = ctx.create_region(ctx.create_index_space(kBox), fs);
    {
      PhysicalRegion pr = ctx.map_region(cube, Privilege::WriteDiscard, {F_COLOR});
      auto c = pr.accessor<coord_t, 3>(F_COLOR);
      for (auto p : kBox) c[p] = cube_color_of(p);
    }
    IndexSpace three = ctx.create_index_space(Rect<1>({0}, {2}));
    Partition by_color = ctx.partition_by_field(cube, F_COLOR, three);
    EXPECT_TRUE(by_color.disjoint());
    EXPECT_TRUE(by_color.complete());
    std::vector<std::set<coord_t>> want(3);
    for (auto p : kBox)
      want[std::size_t(cube_color_of(p))].insert(Domain(kBox).linearize(DomainPoint(p)));
    expect_pieces(ctx, by_color, want, T_SIGNATURE_3D, F_VALUE, "3-d by field");
    // Its complement in a block: a 3-d difference.
    Partition blocks = ctx.partition_by_rects(
        cube, three,
        std::vector<Domain>{Rect<3>({0, 0, 0}, {0, 4, 5}), Rect<3>({1, 0, 0}, {2, 4, 5}),
                            Rect<3>({3, 0, 0}, {3, 4, 5})});
    Partition d = ctx.partition_difference(blocks, by_color);
    std::vector<std::set<coord_t>> want_d(3);
    for (coord_t c = 0; c < 3; ++c)
      for (auto p : Rect<3>(blocks.rect(DomainPoint(c))))
        if (cube_color_of(p) != c)
          want_d[std::size_t(c)].insert(Domain(kBox).linearize(DomainPoint(p)));
    expect_pieces(ctx, d, want_d, T_SIGNATURE_3D, F_VALUE, "3-d difference");
  });
}

#include <gtest/gtest.h>
#include <reprise/reprise.h>

using namespace reprise;

TEST(Geometry, RectIterationIsRowMajor) {
  Rect<2> r({1, 5}, {2, 6});
  std::vector<Point<2>> seen;
  for (auto p : r) seen.push_back(p);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0], (Point<2>{1, 5}));
  EXPECT_EQ(seen[1], (Point<2>{1, 6}));
  EXPECT_EQ(seen[2], (Point<2>{2, 5}));
  EXPECT_EQ(seen[3], (Point<2>{2, 6}));
  EXPECT_EQ(r.volume(), 4);
}

TEST(Geometry, EmptyRectsIterateNothing) {
  Rect<3> r({0, 0, 0}, {-1, 3, 3});
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.volume(), 0);
  int n = 0;
  for (auto p : r) {
    (void)p;
    ++n;
  }
  EXPECT_EQ(n, 0);
}

TEST(Geometry, IntersectionGrowAndContainment) {
  Rect<2> a({0, 0}, {9, 9}), b({5, -3}, {12, 4});
  Rect<2> i = a & b;
  EXPECT_EQ(i, (Rect<2>({5, 0}, {9, 4})));
  EXPECT_TRUE(a.contains(i));
  EXPECT_FALSE(a.contains(b));
  EXPECT_EQ(grow(i, 1), (Rect<2>({4, -1}, {10, 5})));
  Domain d = grow(Domain(a), 2) & Domain(b);
  EXPECT_EQ(d, Domain(Rect<2>({5, -2}, {11, 4})));
}

TEST(Geometry, DomainLinearizeRoundTrips) {
  Domain d = Rect<3>({1, -2, 3}, {4, 0, 7});
  for (coord_t i = 0; i < d.volume(); ++i) EXPECT_EQ(d.linearize(d.delinearize(i)), i);
  EXPECT_EQ(d.linearize(d.lo_point()), 0);
  EXPECT_EQ(d.linearize(d.hi_point()), d.volume() - 1);
  // 1-d (a path of its own): every index of the domain, and one past either end as before.
  const Domain e = Rect<1>({-3}, {5});
  for (coord_t i = 0; i < e.volume(); ++i) {
    EXPECT_EQ(e.delinearize(i), DomainPoint(-3 + i));
    EXPECT_EQ(e.linearize(e.delinearize(i)), i);
  }
  EXPECT_EQ(e.delinearize(e.volume()), DomainPoint(-3));  // (wraps, as the n-d formula does)
  EXPECT_EQ(e.delinearize(-1), DomainPoint(-3 + (-1 % 9)));
}

TEST(Geometry, CheckedConversionsNameTheDimensions) {
  Domain d = Rect<2>({0, 0}, {1, 1});
  EXPECT_NO_THROW((void)d.as<2>());
  try {
    (void)d.as<3>();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dimension 2"), std::string::npos) << e.what();
  }
  DomainPoint p = Point<1>(7);
  EXPECT_THROW((void)p.as<2>(), Error);
}

TEST(Geometry, ProjectionsMapAndBound) {
  Projection id = Projection::identity();
  EXPECT_EQ(id.apply(DomainPoint(Point<2>{3, 4})), DomainPoint(Point<2>{3, 4}));
  Projection t = Projection::translate(Point<2>{1, -1});
  EXPECT_EQ(t.apply(DomainPoint(Point<2>{3, 4})), DomainPoint(Point<2>{4, 3}));
  EXPECT_EQ(t.image(Rect<2>({0, 0}, {2, 2})), Domain(Rect<2>({1, -1}, {3, 1})));
  Projection c = Projection::constant(Point<1>(5));
  EXPECT_EQ(c.apply(Point<1>(9)), DomainPoint(Point<1>(5)));
  EXPECT_FALSE(c.injective_on(Rect<1>({0}, {3})));
  EXPECT_TRUE(c.injective_on(Rect<1>({0}, {0})));
  // Transpose: color (j, i) for point (i, j).
  std::array<std::array<coord_t, kMaxDim>, kMaxDim> m{};
  m[0][1] = 1;
  m[1][0] = 1;
  Projection tr = Projection::affine(2, 2, m, Point<2>{0, 0});
  EXPECT_EQ(tr.apply(DomainPoint(Point<2>{1, 2})), DomainPoint(Point<2>{2, 1}));
  EXPECT_TRUE(tr.injective_on(Rect<2>({0, 0}, {3, 5})));
  // Collapsing a 2-d launch onto 1-d colors by the first coordinate is not injective.
  std::array<std::array<coord_t, kMaxDim>, kMaxDim> row{};
  row[0][0] = 1;
  Projection rows = Projection::affine(1, 2, row, Point<1>(0));
  EXPECT_FALSE(rows.injective_on(Rect<2>({0, 0}, {3, 1})));
}

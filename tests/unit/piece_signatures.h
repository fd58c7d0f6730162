#pragma once
// Checks of partitions computed from data (dependent partitioning tests): a task sums a
// signature over the points of its piece's rectangles, compared with the signature of the set
// the test computed itself. Different sets give different sums with high probability; a point
// listed twice counts twice.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <cstdint>
#include <set>
#include <vector>

inline std::int64_t point_signature(reprise::coord_t i) {
  return i * i * 31 + i + 7;
}

inline std::int64_t signature_of(const std::set<reprise::coord_t>& points) {
  std::int64_t s = 0;
  for (reprise::coord_t p : points) s += point_signature(p);
  return s;
}

// The signature task of 1-d pieces: the points of requirement 0's rectangles.
inline std::int64_t signature_1d(reprise::TaskContext& tc) {
  std::int64_t s = 0;
  for (const reprise::Domain& d : tc.rects(0))
    for (auto p : reprise::Rect<1>(d)) s += point_signature(p[0]);
  return s;
}

// Every piece of p holds exactly the points expected[c] (c row-major in p's color space):
// `signature_task` reads field `value` of its piece and returns its signature.
inline void expect_pieces(reprise::Context& ctx, const reprise::Partition& p,
                          const std::vector<std::set<reprise::coord_t>>& expected,
                          reprise::TaskID signature_task, reprise::FieldID value,
                          const char* what) {
  using namespace reprise;
  IndexLauncher l(signature_task, p.color_space());
  l.add(p, Projection::identity(), Privilege::ReadOnly, {value});
  FutureMap fm = ctx.execute(l);
  const Domain& cs = p.color_space();
  for (std::size_t c = 0; c < expected.size(); ++c)
    EXPECT_EQ(fm.get(cs.delinearize(coord_t(c))).get<std::int64_t>(), signature_of(expected[c]))
        << what << ", color " << cs.delinearize(coord_t(c)).str();
}

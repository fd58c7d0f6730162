#pragma once
// Two tasks on field FX of a 1-d region of kN points (x = 2x + 1 on a piece, and the sum of a
// region), with the region's maker and a launcher of the sum: shared by the tests of inline
// mappings and of attached arrays.
#include <reprise/reprise.h>

#include <atomic>

namespace region_tasks {

using namespace reprise;

enum : TaskID { T_SCALE = 10300, T_SUM };
enum : FieldID { FX = 0, FY = 1 };
constexpr coord_t kN = 40;

inline std::atomic<int> scales_run{0};
// x = 2x + 1 on its piece.
inline void scale(TaskContext& tc) {
  auto x = tc.accessor<double, 1>(0, FX);
  for (auto p : Rect<1>(tc.domain(0))) x[p] = 2 * x[p] + 1;
  ++scales_run;
}
inline double sum(TaskContext& tc) {
  auto x = tc.accessor<const double, 1>(0, FX);
  double s = 0;
  for (auto p : Rect<1>(tc.domain(0))) s += x[p];
  return s;
}
inline void register_tasks() {
  TaskRegistry::add(T_SCALE, "scale", {cpu(scale)});
  TaskRegistry::add(T_SUM, "sum", {cpu(sum)});
}

// kN points, FX double and FY float.
inline Region make_region(Context& ctx) {
  return ctx.create_region(ctx.create_index_space(Rect<1>({0}, {kN - 1})),
                           ctx.create_field_space({{FX, sizeof(double)}, {FY, sizeof(float)}}));
}
inline double run_sum(Context& ctx, Region r) {
  TaskLauncher s(T_SUM);
  s.add(r, Privilege::ReadOnly, {FX});
  return ctx.execute(s).get<double>();
}

}  // namespace region_tasks

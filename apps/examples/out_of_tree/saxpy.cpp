// y = a*x + y over 8 tiles, 5 times under a manual trace, checked against a serial loop: a
// program that only knows the installed headers (<reprise/reprise.h>) and Reprise::reprise.
#include <reprise/reprise.h>

#include <cstdio>
using namespace reprise;

enum : TaskID { SAXPY = 1, CHECK = 2 };
enum : FieldID { FX = 0, FY = 1 };

void saxpy(TaskContext& tc) {
  auto x = tc.accessor<const double, 1>(0, FX);
  auto y = tc.accessor<double, 1>(1, FY);
  const double a = tc.args<double>();
  for (auto p : Rect<1>(tc.domain(1))) y[p] += a * x[p];
}
double max_error(TaskContext& tc) {  // y should be 1 + 5 * 0.5 * 2 = 6 everywhere
  auto y = tc.accessor<const double, 1>(0, FY);
  double e = 0;
  for (auto p : Rect<1>(tc.domain(0))) e = std::max(e, y[p] > 6.0 ? y[p] - 6.0 : 6.0 - y[p]);
  return e;
}

int main(int argc, char** argv) {
  TaskRegistry::add(SAXPY, "saxpy", {cpu(saxpy)});
  TaskRegistry::add(CHECK, "max_error", {cpu(max_error)});
  return start(argc, argv, [](Context& ctx) {
    auto is = ctx.create_index_space(Rect<1>({0}, {4095}));
    Region r = ctx.create_region(is, ctx.create_field_space({{FX, 8}, {FY, 8}}));
    auto tiles = ctx.create_index_space(Rect<1>({0}, {7}));
    Partition p = ctx.partition_equal(r, tiles);
    ctx.fill(r, FX, 2.0);
    ctx.fill(r, FY, 1.0);
    for (int i = 0; i < 5; ++i) {
      ctx.begin_trace(1);
      IndexLauncher l(SAXPY, tiles, TaskArgs{0.5});
      l.add(p, Projection::identity(), Privilege::ReadOnly, {FX});
      l.add(p, Projection::identity(), Privilege::ReadWrite, {FY});
      ctx.execute(l);
      ctx.end_trace(1);
    }
    IndexLauncher c(CHECK, tiles);
    c.add(p, Projection::identity(), Privilege::ReadOnly, {FY});
    const double e = ctx.reduce(ctx.execute(c), ReductionOp::Max).get<double>();
    std::printf("saxpy: max error %g (%s)\n", e, e == 0 ? "ok" : "WRONG");
  });
}

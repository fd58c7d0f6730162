// The README's "write your first app" example, built and run as a test.
#include <reprise/reprise.h>

#include <cstdio>
using namespace reprise;

enum : TaskID { SCALE = 1, SUM = 2 };
enum : FieldID { FID_X = 0 };

void scale(TaskContext& tc) {                 // one tile of the region
  auto x = tc.accessor<double, 1>(0, FID_X);  // requirement 0, field X
  double a = tc.args<double>();
  for (auto p : Rect<1>(tc.domain(0))) x[p] *= a;
}
double sum(TaskContext& tc) {                       // returns a value: a Future
  auto x = tc.accessor<const double, 1>(0, FID_X);  // const T: read-only
  double s = 0;
  for (auto p : Rect<1>(tc.domain(0))) s += x[p];
  return s;
}

int main(int argc, char** argv) {
  TaskRegistry::add(SCALE, "scale", {cpu(scale)});
  TaskRegistry::add(SUM, "sum", {cpu(sum)});
  return start(argc, argv, [](Context& ctx) {
    auto is = ctx.create_index_space(Rect<1>({0}, {999}));
    auto fs = ctx.create_field_space({{FID_X, sizeof(double)}});
    Region r = ctx.create_region(is, fs);
    auto tiles = ctx.create_index_space(Rect<1>({0}, {3}));
    Partition p = ctx.partition_equal(r, tiles);  // 4 disjoint pieces
    ctx.fill(r, FID_X, 1.0);
    IndexLauncher scale(SCALE, tiles, TaskArgs{2.0});  // kept: checked once
    scale.add(p, Projection::identity(), Privilege::ReadWrite, {FID_X});
    for (int i = 0; i < 10; ++i) ctx.execute(scale);  // returns at once; runs behind
    IndexLauncher s(SUM, tiles);
    s.add(p, Projection::identity(), Privilege::ReadOnly, {FID_X});
    double total = ctx.reduce(ctx.execute(s), ReductionOp::Sum).get<double>();  // blocks
    std::printf("sum = %.0f\n", total);                                         // 1000 * 2^10
  });
}

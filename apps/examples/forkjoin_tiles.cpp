// Fork-join inside tasks (docs/forkjoin.md): a 1-d heat equation over tiles, one task per tile
// per step, each task splitting its tile's rows with reprise::parallel_for. Run with
// `-ll:othr 2` for a helper thread per CPU; every step is a manual trace, so from the third
// step on each tile's task starts from the steal tree of its previous replay (retentive
// stealing). Prints the checksum and checks it against a serial run.
#include <reprise/fork_join.h>
#include <reprise/reprise.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace reprise;

enum : TaskID { T_INIT = 1, T_STEP };
enum : FieldID { F_U = 0, F_NEXT = 1 };
constexpr coord_t kCells = 1 << 16;
constexpr int kTiles = 4, kSteps = 20;

// Each tile evolves on its own (insulated ends), with more work on the right: imbalanced.
double evolve(double left, double mid, double right, std::int64_t i) {
  double v = mid;
  for (std::int64_t k = 0; k < 1 + (i % 64) / 8; ++k) v = 0.5 * v + 0.25 * (left + right);
  return v;
}

void init(TaskContext& tc) {
  auto u = tc.accessor<double, 1>(0, F_U);
  for (auto p : Rect<1>(tc.domain(0))) u[p] = double(p[0] % 101);
}

void step(TaskContext& tc) {
  auto u = tc.accessor<double, 1>(0, F_U);
  auto next = tc.accessor<double, 1>(0, F_NEXT);
  const Rect<1> r(tc.domain(0));
  const std::int64_t lo = r.lo[0], hi = r.hi[0];
  tc.parallel_for(r, 512, [&](std::int64_t i) {
    next[i] = evolve(u[i > lo ? i - 1 : i], u[i], u[i < hi ? i + 1 : i], i);
  });
  parallel_for(lo, hi + 1, 2048, [&](std::int64_t i) { u[i] = next[i]; });
}

double serial() {
  std::vector<double> u(kCells), next(kCells);
  for (coord_t i = 0; i < kCells; ++i) u[std::size_t(i)] = double(i % 101);
  const coord_t tile = kCells / kTiles;
  for (int s = 0; s < kSteps; ++s)
    for (coord_t t = 0; t < kTiles; ++t) {
      const std::int64_t lo = t * tile, hi = lo + tile - 1;
      for (std::int64_t i = lo; i <= hi; ++i)
        next[std::size_t(i)] = evolve(u[std::size_t(i > lo ? i - 1 : i)], u[std::size_t(i)],
                                      u[std::size_t(i < hi ? i + 1 : i)], i);
      for (std::int64_t i = lo; i <= hi; ++i) u[std::size_t(i)] = next[std::size_t(i)];
    }
  double sum = 0;
  for (double v : u) sum += v;
  return sum;
}

int main(int argc, char** argv) {
  TaskRegistry::add(T_INIT, "init", {cpu(init)});
  TaskRegistry::add(T_STEP, "step", {cpu(step)});
  double sum = 0;
  const int rc = start(argc, argv, [&](Context& ctx) {
    auto cells = ctx.create_index_space(Rect<1>({0}, {kCells - 1}));
    Region r = ctx.create_region(cells, ctx.create_field_space({{F_U, 8}, {F_NEXT, 8}}));
    auto tiles = ctx.create_index_space(Rect<1>({0}, {kTiles - 1}));
    Partition part = ctx.partition_equal(r, tiles);
    IndexLauncher fill(T_INIT, tiles);
    fill.add(part, Projection::identity(), Privilege::WriteDiscard, {F_U});
    ctx.execute(fill);
    for (int s = 0; s < kSteps; ++s) {
      ctx.begin_trace(1);
      IndexLauncher launch(T_STEP, tiles);
      launch.add(part, Projection::identity(), Privilege::ReadWrite, {F_U, F_NEXT});
      ctx.execute(launch);
      ctx.end_trace(1);
    }
    PhysicalRegion m = ctx.map_region(r, Privilege::ReadOnly, {F_U});
    auto u = m.accessor<const double, 1>(F_U);
    for (coord_t i = 0; i < kCells; ++i) sum += u[i];
    ctx.unmap_region(m);
  });
  if (rc != 0) return rc;
  const double want = serial();
  std::printf("forkjoin_tiles: checksum %.6f, serial %.6f (%s)\n", sum, want,
              sum == want ? "ok" : "MISMATCH");
  return sum == want ? 0 : 1;
}

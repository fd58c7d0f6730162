// The program's own arrays as a region's storage (docs/api.md, "Attaching the program's
// arrays"): the data starts in two std::vectors the program filled, tasks smooth it in place
// through the region (3-point averages, halos through a ghost partition, manual traces), an
// inline mapping peeks at it halfway, and detach hands the vectors back holding the result,
// checked bit for bit against the same loops run serially.
//   attach_arrays [-n N] [-tiles T] [-sweeps S] [runtime flags]
// Under mpirun the arrays of shard 0 (which owns the memory they are attached in) hold it.
#include <reprise/reprise.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace reprise;

namespace {
enum : TaskID { SMOOTH = 1 };
enum : FieldID { FID_U = 0, FID_V = 1 };

struct SweepArgs {
  FieldID from, to;
  coord_t n;
};

// to[i] = (from[i-1] + from[i] + from[i+1]) / 3 on its piece (the ends keep their value).
void smooth(TaskContext& tc) {
  const auto a = tc.args<SweepArgs>();
  auto from = tc.accessor<const double, 1>(0, a.from);
  auto to = tc.accessor<double, 1>(1, a.to);
  for (auto p : Rect<1>(tc.domain(1))) {
    const coord_t i = p[0];
    to[p] = i == 0 || i == a.n - 1 ? from[p]
                                   : (from[Point<1>(i - 1)] + from[p] + from[Point<1>(i + 1)]) / 3;
  }
}

void serial_sweep(const std::vector<double>& from, std::vector<double>& to) {
  const std::size_t n = from.size();
  for (std::size_t i = 0; i < n; ++i)
    to[i] = i == 0 || i == n - 1 ? from[i] : (from[i - 1] + from[i] + from[i + 1]) / 3;
}

coord_t option(int argc, char** argv, const char* name, coord_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoll(argv[i + 1]);
  return fallback;
}
}  // namespace

int main(int argc, char** argv) {
  const coord_t n = option(argc, argv, "-n", 4096), tiles = option(argc, argv, "-tiles", 8);
  const int sweeps = int(option(argc, argv, "-sweeps", 40));  // even: u holds the result
  TaskRegistry::add(SMOOTH, "smooth", {cpu(smooth)});
  std::vector<double> u(static_cast<std::size_t>(n)), v(static_cast<std::size_t>(n), 0.0);
  for (coord_t i = 0; i < n; ++i) u[std::size_t(i)] = double((i * 7919) % 1000);  // "read in"
  std::vector<double> ref_u = u, ref_v = v;
  for (int s = 0; s < sweeps; ++s)
    s % 2 == 0 ? serial_sweep(ref_u, ref_v) : serial_sweep(ref_v, ref_u);

  return reprise::start(argc, argv, [&](Context& ctx) {
    Region r = ctx.create_region(
        ctx.create_index_space(Rect<1>({0}, {n - 1})),
        ctx.create_field_space({{FID_U, sizeof(double)}, {FID_V, sizeof(double)}}));
    Attachment a =
        ctx.attach(AttachLauncher(r).attach_array(FID_U, u.data()).attach_array(FID_V, v.data()));
    const IndexSpace colors = ctx.create_index_space(Rect<1>({0}, {tiles - 1}));
    Partition own = ctx.partition_equal(r, colors);
    Partition ghost = ctx.partition_by_rects(r, colors, [&](const DomainPoint& c) {
      Domain d = own.rect(c);
      d.lo[0] -= 1;
      d.hi[0] += 1;
      return d;  // (clipped to the region)
    });
    auto sweep = [&](FieldID from, FieldID to) {
      IndexLauncher l(SMOOTH, colors, TaskArgs{SweepArgs{from, to, n}});
      l.add(ghost, Projection::identity(), Privilege::ReadOnly, {from});
      l.add(own, Projection::identity(), Privilege::WriteDiscard, {to});
      ctx.execute(l);
    };
    bool peeked = false;
    for (int s = 0; s < sweeps; s += 2) {
      ctx.begin_trace(1);
      sweep(FID_U, FID_V);
      sweep(FID_V, FID_U);
      ctx.end_trace(1);
      if (!peeked && s + 2 >= sweeps / 2) {  // halfway: a look at the middle element
        peeked = true;
        PhysicalRegion pr = ctx.map_region(r, Privilege::ReadOnly, {FID_U});
        const double mid = pr.accessor<const double, 1>(FID_U)[Point<1>(n / 2)];
        ctx.unmap_region(pr);
        if (ctx.shard() == 0)
          std::printf("attach_arrays: after %d sweeps u[%lld] = %.6f\n", s + 2,
                      static_cast<long long>(n / 2), mid);
      }
    }
    ctx.detach(a).wait();  // u and v hold the region's values again
    if (ctx.shard() != 0) return;
    double worst = 0;
    for (std::size_t i = 0; i < u.size(); ++i) worst = std::fmax(worst, std::fabs(u[i] - ref_u[i]));
    std::printf("attach_arrays: %lld points, %d tiles, %d sweeps: max difference %g (%s)\n",
                static_cast<long long>(n), int(tiles), sweeps, worst, worst == 0 ? "ok" : "WRONG");
  });
}

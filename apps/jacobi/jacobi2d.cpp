// Explicit-region 2-d Jacobi (Laplace) with halo partitions: u_new = average of the four
// neighbours on the interior, fixed boundary values. The two fields swap roles every
// iteration (u -> v, then v -> u), so one iteration's op stream differs from the next: the
// only manual trace placement that repeats is around *pairs* of iterations, which is what
// --trace manual does. Verified bit for bit against a serial reference.
#include <reprise/reprise.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "app_support.h"
#include "jacobi2d_kernels.h"

using namespace reprise;
using namespace jacobi2d;

namespace {

struct Params {
  coord_t n = 256;
  coord_t px = 2, py = 2;
  int iters = 100;  // rounded up to an even number (pairs of sweeps)
  int warmup = 0;
  std::string trace = "auto";
};

// The boundary is 1 on the top edge and 0 elsewhere; the interior starts at 0.
double initial(coord_t i, coord_t j, coord_t n) {
  (void)j;
  (void)n;
  return i == 0 ? 1.0 : 0.0;
}

void init_task(TaskContext& tc) {
  auto u = tc.accessor<double, 2>(0, FID_U);
  auto v = tc.accessor<double, 2>(0, FID_V);
  const coord_t n = tc.args<coord_t>();
  for (auto p : Rect<2>(tc.domain(0))) u[p] = v[p] = initial(p[0], p[1], n);
}

// to = Jacobi(from) on this tile's interior points; boundary points keep their values.
void sweep_task(TaskContext& tc) {
  const auto a = tc.args<SweepArgs>();
  auto out = tc.accessor<double, 2>(0, a.to);
  auto in = tc.accessor<const double, 2>(1, a.from);
  Rect<2> r = tc.domain(0);
  for (coord_t i = r.lo[0]; i <= r.hi[0]; ++i)
    for (coord_t j = r.lo[1]; j <= r.hi[1]; ++j) {
      if (i == 0 || j == 0 || i == a.n - 1 || j == a.n - 1) {
        out[{i, j}] = in[{i, j}];
        continue;
      }
      out[{i, j}] = 0.25 * (in[{i - 1, j}] + in[{i + 1, j}] + in[{i, j - 1}] + in[{i, j + 1}]);
    }
}

std::uint64_t checksum_task(TaskContext& tc) {
  auto u = tc.accessor<const double, 2>(0, FID_U);
  std::uint64_t h = 1469598103934665603ull;
  for (auto p : Rect<2>(tc.domain(0))) {
    std::uint64_t bits;
    double x = u[p];
    std::memcpy(&bits, &x, 8);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

std::uint64_t serial_reference(const Params& p, int sweeps) {
  const coord_t n = p.n;
  std::vector<double> u(std::size_t(n * n)), v(u.size());
  for (coord_t i = 0; i < n; ++i)
    for (coord_t j = 0; j < n; ++j)
      u[std::size_t(i * n + j)] = v[std::size_t(i * n + j)] = initial(i, j, n);
  std::vector<double>* from = &u;
  std::vector<double>* to = &v;
  for (int s = 0; s < sweeps; ++s) {
    for (coord_t i = 0; i < n; ++i)
      for (coord_t j = 0; j < n; ++j) {
        const auto& f = *from;
        double& o = (*to)[std::size_t(i * n + j)];
        if (i == 0 || j == 0 || i == n - 1 || j == n - 1)
          o = f[std::size_t(i * n + j)];
        else
          o = 0.25 * (f[std::size_t((i - 1) * n + j)] + f[std::size_t((i + 1) * n + j)] +
                      f[std::size_t(i * n + j - 1)] + f[std::size_t(i * n + j + 1)]);
      }
    std::swap(from, to);
  }
  std::uint64_t h = 1469598103934665603ull;
  for (double x : *from) {
    std::uint64_t bits;
    std::memcpy(&bits, &x, 8);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

constexpr const char* kUsage =
    "usage: jacobi2d [-n N] [-px N] [-py N] [-iters N] [-warmup N]\n"
    "                [--trace none|manual|auto] [runtime flags, see -lg:help]\n"
    "  --trace manual traces pairs of sweeps: the fields swap roles every sweep, so a\n"
    "  single sweep never repeats (the paper's Figure 1 situation).\n";

[[noreturn]] void usage(const std::string& msg) {
  apps::exit_with_usage("jacobi2d", kUsage, msg);
}

Params parse(const std::vector<std::string>& args) {
  Params p;
  apps::ArgReader in(args, usage);
  while (in.next()) {
    const std::string& a = in.flag();
    if (a == "-n")
      p.n = coord_t(in.integer(3));
    else if (a == "-px")
      p.px = coord_t(in.integer(1));
    else if (a == "-py")
      p.py = coord_t(in.integer(1));
    else if (a == "-iters")
      p.iters = int(in.integer(1));
    else if (a == "-warmup")
      p.warmup = int(in.integer(0));
    else if (a == "--trace")
      p.trace = in.value();
    else
      usage("unknown argument " + a);
  }
  if (!apps::valid_trace_mode(p.trace)) usage("--trace must be none, manual or auto");
  if (p.px > p.n || p.py > p.n) usage("more tiles than points");
  p.iters += p.iters % 2;
  p.warmup += p.warmup % 2;
  return p;
}

void top_level(Context& ctx, const Params& p) {
  auto is = ctx.create_index_space(Rect<2>({0, 0}, {p.n - 1, p.n - 1}));
  auto fs = ctx.create_field_space({{FID_U, sizeof(double)}, {FID_V, sizeof(double)}});
  Region grid = ctx.create_region(is, fs);
  auto tiles = ctx.create_index_space(Rect<2>({0, 0}, {p.px - 1, p.py - 1}));
  Partition interior = ctx.partition_equal(grid, tiles);
  Partition halo = ctx.partition_by_rects(
      grid, tiles, [&](const DomainPoint& c) { return grow(interior.rect(c), 1) & grid.bounds(); });
  IndexLauncher init(TID_INIT, tiles, TaskArgs{p.n});
  init.add(interior, Projection::identity(), Privilege::WriteDiscard, {FID_U, FID_V});
  ctx.execute(init);

  auto sweep = [&](FieldID from, FieldID to) {
    IndexLauncher l(TID_SWEEP, tiles, TaskArgs{SweepArgs{p.n, from, to}});
    l.add(interior, Projection::identity(), Privilege::WriteDiscard, {to});
    l.add(halo, Projection::identity(), Privilege::ReadOnly, {from});
    ctx.execute(l);
  };
  const bool manual = p.trace == "manual";
  apps::Timeline timeline(ctx);  // an iteration is a pair of sweeps here
  auto pair = [&] {
    if (manual) ctx.begin_trace(1);
    sweep(FID_U, FID_V);
    sweep(FID_V, FID_U);
    if (manual) ctx.end_trace(1);
    timeline.mark();
  };
  for (int it = 0; it < p.warmup; it += 2) pair();
  const apps::TimedWindow window = apps::timed(ctx, [&] {
    for (int it = 0; it < p.iters; it += 2) pair();
  });

  TaskLauncher sum(TID_CHECKSUM);
  sum.add(grid, Privilege::ReadOnly, {FID_U});
  const std::uint64_t checksum = ctx.execute(sum).get<std::uint64_t>();
  const bool verified = checksum == serial_reference(p, p.warmup + p.iters);
  const double tasks = double(p.iters) * double(p.px * p.py);
  std::printf(
      "jacobi2d: %lldx%lld grid, %lldx%lld tiles, %d sweeps: %s\n", (long long)p.n, (long long)p.n,
      (long long)p.px, (long long)p.py, p.warmup + p.iters,
      verified ? "matches the serial reference bit for bit" : "DIFFERS from the serial reference");
  timeline.report("jacobi2d", p.trace);
  apps::print_result("jacobi2d", p.trace, ctx, p.iters, window, tasks, checksum, verified,
                     "n=" + std::to_string(p.n) + " tiles=" + std::to_string(p.px * p.py));
  if (!verified) throw Error("jacobi2d: verification failed");
}

}  // namespace

int main(int argc, char** argv) {
  Params p = parse(app_args(argc, argv));
  TaskRegistry::add(TID_INIT, "init", {cpu(init_task), gpu(init_gpu)});
  TaskRegistry::add(TID_SWEEP, "sweep", {cpu(sweep_task), gpu(sweep_gpu)});
  TaskRegistry::add(TID_CHECKSUM, "checksum", {cpu(checksum_task)});
  return start(
      argc, argv, [&](Context& ctx) { top_level(ctx, p); }, apps::trace_mode_flags(p.trace));
}

// 2-d channel flow, step 12 of "CFD Python: 12 steps to Navier-Stokes", on the array library:
// periodic in x, no-slip walls at y = 0 and y = 2, a constant body force F driving the flow,
// and a pressure Poisson equation solved with `nit` Jacobi sweeps per time step. The run
// stops when the relative change of the total x-velocity falls below the tolerance, which
// the program reads back every step (a future value: a blocking wait per step).
//
// The equations are the tutorial's; the periodic columns, which the tutorial writes out as
// separate expressions for x = 0 and x = 2, are computed with numpy-style roll() (the east and
// west neighbours with wrap-around) so that one expression covers every column. Verified
// against a serial reference (the same operations per element, in the same order) to 1e-12
// relative error.
//
// There is no --trace manual: a step's op stream depends on nit and on the pool's region
// recycling (temporaries of four shapes rotate through their pools with different periods),
// and the convergence check blocks once per step, so no fragment of the source maps to a
// repeating op sequence a programmer could bracket. --trace auto finds the repeats itself.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app_support.h"
#include "array.h"
#include "cfd_reference.h"

using namespace reprise;
using namespace reprise::array;

namespace {

constexpr const char* kUsage =
    "usage: cfd [-nx N] [-ny N] [-nit N] [-tol X] [-max_steps N] [-tiles N]\n"
    "           [--trace none|auto] [runtime flags, see -lg:help]\n"
    "  Channel flow (CFD Python step 12) until the velocity change < tol.\n"
    "  --trace manual is not offered: no fragment of the program repeats as one op\n"
    "  sequence (temporaries rotate through the array pool with several periods and\n"
    "  every step blocks on the convergence value), so only auto tracing applies.\n";

[[noreturn]] void usage(const std::string& msg) {
  apps::exit_with_usage("cfd", kUsage, msg);
}

cfd::Params parse(const std::vector<std::string>& args) {
  cfd::Params p;
  apps::ArgReader in(args, usage);
  while (in.next()) {
    const std::string& a = in.flag();
    if (a == "-nx")
      p.nx = coord_t(in.integer(4));
    else if (a == "-ny")
      p.ny = coord_t(in.integer(4));
    else if (a == "-nit")
      p.nit = int(in.integer(1));
    else if (a == "-max_steps")
      p.max_steps = int(in.integer(1));
    else if (a == "-tiles")
      p.tiles = std::uint32_t(in.integer(1));
    else if (a == "-tol")
      p.tol = in.positive_real();
    else if (a == "--trace") {
      p.trace = in.value();
      if (p.trace == "manual")
        usage("--trace manual: no manual trace placement exists for this program (see below)");
    } else {
      usage("unknown argument " + a);
    }
  }
  if (p.trace != "none" && p.trace != "auto") usage("--trace must be none or auto");
  return p;
}

// Rows 1..ny-2 of a full field, and the rows above and below them.
Array mid(const Array& a) {
  return a(slice(1, -1), all());
}
Array north(const Array& a) {
  return a(slice(2), all());
}
Array south(const Array& a) {
  return a(slice(0, -2), all());
}

struct Fields {
  Array u, v, p, b;
};

void build_up_b(const cfd::Params& c, Fields& f) {
  const Array& u = f.u;
  const Array& v = f.v;
  const Array uE = mid(roll(u, -1, 1)), uW = mid(roll(u, 1, 1));
  const Array vE = mid(roll(v, -1, 1)), vW = mid(roll(v, 1, 1));
  const double rho = c.rho, dt = c.dt, dx = c.dx(), dy = c.dy();
  f.b(slice(1, -1), all())
      .assign(rho * (1 / dt * ((uE - uW) / (2 * dx) + (north(v) - south(v)) / (2 * dy)) -
                     ((uE - uW) / (2 * dx)) * ((uE - uW) / (2 * dx)) -
                     2 * ((north(u) - south(u)) / (2 * dy) * (vE - vW) / (2 * dx)) -
                     ((north(v) - south(v)) / (2 * dy)) * ((north(v) - south(v)) / (2 * dy))));
}

void pressure_poisson(const cfd::Params& c, Fields& f) {
  const double dx2 = c.dx() * c.dx(), dy2 = c.dy() * c.dy();
  for (int q = 0; q < c.nit; ++q) {
    const Array pn = copy(f.p);
    const Array pE = mid(roll(pn, -1, 1)), pW = mid(roll(pn, 1, 1));
    f.p(slice(1, -1), all())
        .assign(((pE + pW) * dy2 + (north(pn) + south(pn)) * dx2) / (2 * (dx2 + dy2)) -
                dx2 * dy2 / (2 * (dx2 + dy2)) * mid(f.b));
    f.p(slice(-1), all()).assign(f.p(slice(-2, -1), all()));  // dp/dy = 0 at y = 2
    f.p(slice(0, 1), all()).assign(f.p(slice(1, 2), all()));  // dp/dy = 0 at y = 0
  }
}

// One time step; returns the future sums of u before and after.
std::pair<Future, Future> step(const cfd::Params& c, Fields& f) {
  const Array un = copy(f.u), vn = copy(f.v);
  build_up_b(c, f);
  pressure_poisson(c, f);
  const double dt = c.dt, dx = c.dx(), dy = c.dy(), rho = c.rho, nu = c.nu;
  const Array uc = mid(un), vc = mid(vn);
  const Array uE = mid(roll(un, -1, 1)), uW = mid(roll(un, 1, 1));
  const Array vE = mid(roll(vn, -1, 1)), vW = mid(roll(vn, 1, 1));
  const Array pE = mid(roll(f.p, -1, 1)), pW = mid(roll(f.p, 1, 1));
  f.u(slice(1, -1), all())
      .assign(uc - uc * dt / dx * (uc - uW) - vc * dt / dy * (uc - south(un)) -
              dt / (2 * rho * dx) * (pE - pW) +
              nu * (dt / (dx * dx) * (uE - 2 * uc + uW) +
                    dt / (dy * dy) * (north(un) - 2 * uc + south(un))) +
              c.force * dt);
  f.v(slice(1, -1), all())
      .assign(vc - uc * dt / dx * (vc - vW) - vc * dt / dy * (vc - south(vn)) -
              dt / (2 * rho * dy) * (north(f.p) - south(f.p)) +
              nu * (dt / (dx * dx) * (vE - 2 * vc + vW) +
                    dt / (dy * dy) * (north(vn) - 2 * vc + south(vn))));
  // No-slip walls.
  f.u(slice(0, 1), all()).assign(0.0);
  f.u(slice(-1), all()).assign(0.0);
  f.v(slice(0, 1), all()).assign(0.0);
  f.v(slice(-1), all()).assign(0.0);
  return {un.sum(), f.u.sum()};
}

void top_level(Context& ctx, const cfd::Params& p) {
  Engine np(ctx, p.tiles);
  Fields f{np.zeros(p.ny, p.nx), np.zeros(p.ny, p.nx), np.zeros(p.ny, p.nx), np.zeros(p.ny, p.nx)};
  int steps = 0;
  double udiff = 1;
  const std::uint64_t launched_before = ctx.trace_stats().points_launched;
  apps::Timeline timeline(ctx);
  const apps::TimedWindow window = apps::timed(ctx, [&] {
    while (udiff > p.tol && steps < p.max_steps) {
      auto [before, after] = step(p, f);
      const double s_after = after.get<double>();
      udiff = (s_after - before.get<double>()) / s_after;
      ++steps;
      timeline.mark();
    }
  });
  const std::uint64_t launched = ctx.trace_stats().points_launched - launched_before;

  const cfd::Result want = cfd::serial_reference(p, np);
  const std::vector<double> u = f.u.to_vector(), v = f.v.to_vector(), pr = f.p.to_vector();
  const double err = std::max({cfd::relative_error(u, want.u), cfd::relative_error(v, want.v),
                               cfd::relative_error(pr, want.p)});
  const bool verified = steps == want.steps && err <= 1e-12;
  const std::uint64_t checksum = f.u.checksum().get<std::uint64_t>() ^
                                 (f.v.checksum().get<std::uint64_t>() * 31) ^
                                 (f.p.checksum().get<std::uint64_t>() * 131);
  std::printf(
      "cfd: %lldx%lld grid, nit %d, %u tiles: %d steps (reference %d) to |du| < %g, max "
      "relative error %.2e vs the serial reference: %s\n",
      (long long)p.nx, (long long)p.ny, p.nit, np.num_tiles(), steps, want.steps, p.tol, err,
      verified ? "verified" : "FAILED");
  const double tasks = double(launched);
  timeline.report("cfd", p.trace);
  apps::print_result("cfd", p.trace, ctx, steps, window, tasks, checksum, verified,
                     "nx=" + std::to_string(p.nx) + " ny=" + std::to_string(p.ny) +
                         " nit=" + std::to_string(p.nit));
  if (!verified) throw Error("cfd: verification failed");
}

}  // namespace

int main(int argc, char** argv) {
  cfd::Params p = parse(app_args(argc, argv));
  return start(
      argc, argv, [&](Context& ctx) { top_level(ctx, p); }, apps::trace_mode_flags(p.trace));
}

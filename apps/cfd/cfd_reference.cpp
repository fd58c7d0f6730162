#include "cfd_reference.h"

#include <algorithm>
#include <cmath>

namespace cfd {

namespace {

struct Grid {
  coord_t nx, ny;
  std::vector<double> a;
  Grid(coord_t x, coord_t y) : nx(x), ny(y), a(std::size_t(x * y), 0.0) {}
  double& operator()(coord_t i, coord_t j) { return a[std::size_t(i * nx + j)]; }
  double operator()(coord_t i, coord_t j) const { return a[std::size_t(i * nx + j)]; }
  double east(coord_t i, coord_t j) const { return (*this)(i, (j + 1) % nx); }
  double west(coord_t i, coord_t j) const { return (*this)(i, (j + nx - 1) % nx); }
};

double tiled_sum(const Grid& g, const reprise::array::Engine& engine) {
  const reprise::Domain shape(reprise::Rect<2>({0, 0}, {g.ny - 1, g.nx - 1}));
  double total = 0;
  for (coord_t t = 0; t < coord_t(engine.num_tiles()); ++t) {
    const reprise::Domain tile = engine.tile(shape, t);
    double s = 0;
    for (coord_t i = tile.lo[0]; i <= tile.hi[0]; ++i)
      for (coord_t j = 0; j < g.nx; ++j) s += g(i, j);
    total = t == 0 ? s : total + s;
  }
  return total;
}

}  // namespace

Result serial_reference(const Params& c, const reprise::array::Engine& engine) {
  const coord_t nx = c.nx, ny = c.ny;
  Grid u(nx, ny), v(nx, ny), p(nx, ny), b(nx, ny);
  const double rho = c.rho, nu = c.nu, dt = c.dt, dx = c.dx(), dy = c.dy();
  const double dx2 = dx * dx, dy2 = dy * dy;
  Result r;
  double udiff = 1;
  while (udiff > c.tol && r.steps < c.max_steps) {
    const Grid un = u, vn = v;
    for (coord_t i = 1; i < ny - 1; ++i)
      for (coord_t j = 0; j < nx; ++j) {
        const double uE = un.east(i, j), uW = un.west(i, j), vE = vn.east(i, j), vW = vn.west(i, j);
        const double uN = un(i + 1, j), uS = un(i - 1, j), vN = vn(i + 1, j), vS = vn(i - 1, j);
        b(i, j) = rho * (1 / dt * ((uE - uW) / (2 * dx) + (vN - vS) / (2 * dy)) -
                         ((uE - uW) / (2 * dx)) * ((uE - uW) / (2 * dx)) -
                         2 * ((uN - uS) / (2 * dy) * (vE - vW) / (2 * dx)) -
                         ((vN - vS) / (2 * dy)) * ((vN - vS) / (2 * dy)));
      }
    for (int q = 0; q < c.nit; ++q) {
      const Grid pn = p;
      for (coord_t i = 1; i < ny - 1; ++i)
        for (coord_t j = 0; j < nx; ++j)
          p(i, j) = ((pn.east(i, j) + pn.west(i, j)) * dy2 + (pn(i + 1, j) + pn(i - 1, j)) * dx2) /
                        (2 * (dx2 + dy2)) -
                    dx2 * dy2 / (2 * (dx2 + dy2)) * b(i, j);
      for (coord_t j = 0; j < nx; ++j) p(ny - 1, j) = p(ny - 2, j);
      for (coord_t j = 0; j < nx; ++j) p(0, j) = p(1, j);
    }
    for (coord_t i = 1; i < ny - 1; ++i)
      for (coord_t j = 0; j < nx; ++j) {
        const double uc = un(i, j), vc = vn(i, j);
        u(i, j) = uc - uc * dt / dx * (uc - un.west(i, j)) - vc * dt / dy * (uc - un(i - 1, j)) -
                  dt / (2 * rho * dx) * (p.east(i, j) - p.west(i, j)) +
                  nu * (dt / (dx * dx) * (un.east(i, j) - 2 * uc + un.west(i, j)) +
                        dt / (dy * dy) * (un(i + 1, j) - 2 * uc + un(i - 1, j))) +
                  c.force * dt;
        v(i, j) = vc - uc * dt / dx * (vc - vn.west(i, j)) - vc * dt / dy * (vc - vn(i - 1, j)) -
                  dt / (2 * rho * dy) * (p(i + 1, j) - p(i - 1, j)) +
                  nu * (dt / (dx * dx) * (vn.east(i, j) - 2 * vc + vn.west(i, j)) +
                        dt / (dy * dy) * (vn(i + 1, j) - 2 * vc + vn(i - 1, j)));
      }
    for (coord_t j = 0; j < nx; ++j) u(0, j) = u(ny - 1, j) = v(0, j) = v(ny - 1, j) = 0.0;
    const double s_after = tiled_sum(u, engine);
    udiff = (s_after - tiled_sum(un, engine)) / s_after;
    ++r.steps;
  }
  r.u = std::move(u.a);
  r.v = std::move(v.a);
  r.p = std::move(p.a);
  return r;
}

double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0, scale = 1e-300;
  for (std::size_t k = 0; k < a.size(); ++k) {
    diff = std::max(diff, std::fabs(a[k] - b[k]));
    scale = std::max(scale, std::fabs(b[k]));
  }
  return diff / scale;
}

}  // namespace cfd

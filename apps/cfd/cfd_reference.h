#pragma once
// The channel-flow problem's parameters and its serial reference: plain loops doing, per
// element, the same floating-point operations in the same order as the array program.
#include <cstdint>
#include <string>
#include <vector>

#include "array.h"

namespace cfd {

using reprise::coord_t;

struct Params {
  coord_t nx = 41, ny = 41;
  int nit = 50;
  double tol = 1e-3;
  int max_steps = 100000;
  std::uint32_t tiles = 0;
  std::string trace = "auto";
  double rho = 1, nu = 0.1, force = 1, dt = 0.01;
  double dx() const { return 2.0 / double(nx - 1); }
  double dy() const { return 2.0 / double(ny - 1); }
};

struct Result {
  std::vector<double> u, v, p;  // row-major (ny, nx)
  int steps = 0;
};

// `engine` gives the tiling, so that sums fold their tile partial sums in the same order.
Result serial_reference(const Params& p, const reprise::array::Engine& engine);
// max |a - b| / max |b|
double relative_error(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace cfd

#include "reprise/geometry.h"

#include <fmt/core.h>

namespace reprise {

namespace {
std::string join(const std::array<coord_t, kMaxDim>& v, int dim) {
  std::string s;
  for (int i = 0; i < dim; ++i) {
    if (i) s.push_back(',');
    s.append(fmt::format("{}", v[i]));
  }
  return s;
}
}  // namespace

std::string DomainPoint::str() const {
  return fmt::format("({})", join(x, dim));
}

std::string Domain::str() const {
  return fmt::format("[{}..{}]", join(lo, dim), join(hi, dim));
}

Domain Domain::from_points(const DomainPoint& l, const DomainPoint& h) {
  if (l.dim != h.dim) throw Error("Domain::from_points: corners of different dimensions");
  Domain d;
  d.dim = l.dim;
  for (int i = 0; i < l.dim; ++i) {
    d.lo[i] = l.x[i];
    d.hi[i] = h.x[i];
  }
  return d;
}

DomainPoint Domain::lo_point() const {
  DomainPoint p;
  p.dim = dim;
  for (int i = 0; i < dim; ++i) p.x[i] = lo[i];
  return p;
}

DomainPoint Domain::hi_point() const {
  DomainPoint p;
  p.dim = dim;
  for (int i = 0; i < dim; ++i) p.x[i] = hi[i];
  return p;
}

coord_t Domain::linearize(const DomainPoint& p) const {
  coord_t idx = 0;
  for (int i = 0; i < dim; ++i) idx = idx * extent(i) + (p.x[i] - lo[i]);
  return idx;
}

Domain grow(const Domain& r, coord_t by) {
  Domain g = r;
  for (int i = 0; i < r.dim; ++i) {
    g.lo[i] -= by;
    g.hi[i] += by;
  }
  return g;
}

Domain translate(const Domain& r, const DomainPoint& by) {
  if (by.dim != r.dim) throw Error("translate: offset dimension differs from the rectangle's");
  Domain g = r;
  for (int i = 0; i < r.dim; ++i) {
    g.lo[i] += by.x[i];
    g.hi[i] += by.x[i];
  }
  return g;
}

}  // namespace reprise

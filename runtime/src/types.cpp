#include "reprise/types.h"

#include <fmt/core.h>

#include <algorithm>
#include <vector>

#include "reprise/reduction.h"
#include "reprise_rt/hasher.h"

namespace reprise {

std::string_view to_string(Privilege p) {
  switch (p) {
    case Privilege::ReadOnly:
      return "READ_ONLY";
    case Privilege::ReadWrite:
      return "READ_WRITE";
    case Privilege::WriteDiscard:
      return "WRITE_DISCARD";
    case Privilege::Reduce:
      return "REDUCE";
  }
  return "?";
}

std::string_view to_string(ReductionOp op) {
  switch (op) {
    case ReductionOp::None:
      return "none";
    case ReductionOp::Sum:
      return "sum";
    case ReductionOp::Prod:
      return "prod";
    case ReductionOp::Min:
      return "min";
    case ReductionOp::Max:
      return "max";
  }
  if (const detail::CustomReduction* r = detail::custom_reduction(op)) return r->name;
  return "?";
}

Projection Projection::constant(const DomainPoint& c) {
  Projection p(Kind::Constant);
  p.offset_ = c;
  p.dim_out_ = c.dim;
  return p;
}

Projection Projection::translate(const DomainPoint& offset) {
  std::array<std::array<coord_t, kMaxDim>, kMaxDim> m{};
  for (int i = 0; i < offset.dim; ++i) m[i][i] = 1;
  return affine(offset.dim, offset.dim, m, offset);
}

Projection Projection::affine(int dim_out, int dim_in,
                              const std::array<std::array<coord_t, kMaxDim>, kMaxDim>& m,
                              const DomainPoint& offset) {
  if (dim_out < 1 || dim_out > kMaxDim || dim_in < 1 || dim_in > kMaxDim || offset.dim != dim_out)
    throw Error(fmt::format("Projection::affine: bad dimensions (out {}, in {}, offset {})",
                            dim_out, dim_in, offset.dim));
  Projection p(Kind::Affine);
  p.dim_out_ = dim_out;
  p.dim_in_ = dim_in;
  p.m_ = m;
  p.offset_ = offset;
  return p;
}

DomainPoint Projection::apply(const DomainPoint& p) const {
  switch (kind_) {
    case Kind::Identity:
      return p;
    case Kind::Constant:
      return offset_;
    case Kind::Affine: {
      if (p.dim != dim_in_)
        throw Error(fmt::format("projection expects {}-d launch points, got {}", dim_in_, p.str()));
      DomainPoint c;
      c.dim = dim_out_;
      for (int i = 0; i < dim_out_; ++i) {
        coord_t v = offset_.x[i];
        for (int j = 0; j < dim_in_; ++j) v += m_[i][j] * p.x[j];
        c.x[i] = v;
      }
      return c;
    }
  }
  return p;
}

Domain Projection::image(const Domain& launch) const {
  if (kind_ == Kind::Identity) return launch;
  if (kind_ == Kind::Constant) return Domain::from_points(offset_, offset_);
  // An affine map sends the box to a parallelotope whose bounding box its corners span.
  Domain out;
  out.dim = dim_out_;
  bool first = true;
  for (int corner = 0; corner < (1 << launch.dim); ++corner) {
    DomainPoint p;
    p.dim = launch.dim;
    for (int i = 0; i < launch.dim; ++i) p.x[i] = (corner >> i & 1) ? launch.hi[i] : launch.lo[i];
    DomainPoint c = apply(p);
    for (int i = 0; i < dim_out_; ++i) {
      out.lo[i] = first ? c.x[i] : std::min(out.lo[i], c.x[i]);
      out.hi[i] = first ? c.x[i] : std::max(out.hi[i], c.x[i]);
    }
    first = false;
  }
  return out;
}

bool Projection::injective_on(const Domain& launch) const {
  switch (kind_) {
    case Kind::Identity:
      return true;
    case Kind::Constant:
      return launch.volume() <= 1;
    case Kind::Affine: {
      // Injective on the box iff no two of its points share an image: the volume of the image
      // of a unimodular-ish map is checked exactly by enumeration for small domains; for large
      // ones we require a square map whose columns are distinct unit vectors up to sign.
      if (launch.volume() <= 4096) {
        std::vector<DomainPoint> seen;
        seen.reserve(std::size_t(launch.volume()));
        for (coord_t i = 0; i < launch.volume(); ++i) seen.push_back(apply(launch.delinearize(i)));
        std::sort(seen.begin(), seen.end(),
                  [](const DomainPoint& a, const DomainPoint& b) { return a.x < b.x; });
        return std::adjacent_find(seen.begin(), seen.end()) == seen.end();
      }
      if (dim_in_ != dim_out_) return false;
      for (int j = 0; j < dim_in_; ++j) {
        int nonzero = 0;
        for (int i = 0; i < dim_out_; ++i)
          if (m_[i][j] != 0) nonzero += (m_[i][j] == 1 || m_[i][j] == -1) ? 1 : 2;
        if (nonzero != 1) return false;
      }
      return true;
    }
  }
  return false;
}

bool Projection::operator==(const Projection& o) const {
  if (kind_ != o.kind_) return false;
  if (kind_ == Kind::Identity) return true;
  if (kind_ == Kind::Constant) return offset_ == o.offset_;
  return dim_out_ == o.dim_out_ && dim_in_ == o.dim_in_ && m_ == o.m_ && offset_ == o.offset_;
}

std::uint64_t Projection::hash() const {
  detail::Hasher h;
  h.mix(std::uint64_t(kind_));
  if (kind_ == Kind::Identity) return h.h;
  h.mix(std::uint64_t(dim_out_) << 32 | std::uint64_t(dim_in_));
  for (int i = 0; i < kMaxDim; ++i) {
    h.mix(std::uint64_t(offset_.x[i]));
    for (int j = 0; j < kMaxDim; ++j) h.mix(std::uint64_t(m_[i][j]));
  }
  return h.h;
}

}  // namespace reprise

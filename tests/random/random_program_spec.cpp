// The partition and projection specs of a program (random_program.h).
#include "random_program_core.h"

namespace reprise_random {

const Domain& PartSpec::piece(const DomainPoint& c) const {
  if (!colors.contains(c))
    throw std::logic_error("PartSpec::piece: color " + c.str() + " outside " + colors.str());
  return pieces[std::size_t(colors.linearize(c))];
}

DomainPoint ProjSpec::apply(const DomainPoint& p) const {
  switch (kind) {
    case ProjKind::Identity:
      return p;
    case ProjKind::Constant:
      return offset;
    case ProjKind::Translate:
    case ProjKind::Affine: {
      DomainPoint out;
      out.dim = dim_out;
      for (int o = 0; o < dim_out; ++o) {
        coord_t v = offset.x[o];
        for (int j = 0; j < dim_in; ++j) v += m[o][j] * p.x[j];
        out.x[o] = v;
      }
      return out;
    }
  }
  return p;
}

reprise::Projection ProjSpec::make() const {
  switch (kind) {
    case ProjKind::Identity:
      return reprise::Projection::identity();
    case ProjKind::Constant:
      return reprise::Projection::constant(offset);
    case ProjKind::Translate:
      return reprise::Projection::translate(offset);
    case ProjKind::Affine: {
      std::array<std::array<coord_t, reprise::kMaxDim>, reprise::kMaxDim> mm{};
      for (int o = 0; o < 3; ++o)
        for (int j = 0; j < 3; ++j) mm[o][j] = m[o][j];
      return reprise::Projection::affine(dim_out, dim_in, mm, offset);
    }
  }
  return reprise::Projection::identity();
}

}  // namespace reprise_random

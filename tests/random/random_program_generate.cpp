// The generator: random valid programs as plain data, a deterministic function of the seed.
#include "random_program_core.h"

namespace reprise_random {

// ------------------------------------------------------------------------------------------
// The generator.

namespace {

class Generator {
 public:
  Generator(std::uint64_t seed, const GenOptions& o) : rng_(seed), opt_(o) { p_.seed = seed; }

  Program run() {
    const int nregions = rng_.irange(opt_.min_regions, opt_.max_regions);
    for (int i = 0; i < nregions; ++i) p_.regions.push_back(gen_region());
    for (int t = 0; t < nregions; ++t) {
      int n = rng_.irange(1, 3);
      for (int j = 0; j < n; ++j) p_.parts.push_back(gen_partition(t));
    }
    // A few more, possibly nested in earlier ones.
    for (int extra = rng_.irange(0, 2); extra > 0; --extra)
      p_.parts.push_back(gen_partition(rng_.irange(0, nregions - 1)));

    for (int t = 0; t < nregions; ++t) init_region(t);
    for (int k = rng_.irange(1, int(p_.parts.size())); k > 0; --k) create_next_partition();

    const int target = rng_.irange(opt_.min_ops, opt_.max_ops);
    for (int n = 0; n < target;) {
      if (next_part_ < p_.parts.size() && rng_.chance(0.08)) {
        create_next_partition();
        ++n;
        continue;
      }
      if (opt_.loops && rng_.chance(0.3)) {
        n += gen_loop();
        continue;
      }
      const bool have_futures = !p_.future_types.empty();
      const bool have_maps = !typed_maps().empty();
      switch (rng_.weighted(
          {40, 18, 8, 9, have_maps ? 4 : 0, have_maps ? 3 : 0, have_futures ? 5 : 0, 3})) {
        case 0:
          n += gen_index_task();
          break;
        case 1:
          n += gen_task();
          break;
        case 2:
          n += gen_fill();
          break;
        case 3:
          n += gen_copy();
          break;
        case 4:
          n += gen_reduce_futures(rng_.pick(typed_maps()));
          break;
        case 5:
          n += gen_point_future(rng_.pick(typed_maps()));
          break;
        case 6:
          n += gen_get_future();
          break;
        default:
          n += gen_fence();
          break;
      }
    }
    if (opt_.fail_in_trace) fail_one_traced_op();
    return std::move(p_);
  }

 private:
  // ---- regions and partitions

  RegionSpec gen_region() {
    RegionSpec r;
    // Sometimes the same shape as an earlier region, so that copies between trees exist.
    if (!p_.regions.empty() && rng_.chance(0.45)) {
      r.bounds = rng_.pick(p_.regions).bounds;
    } else {
      const int dim = rng_.irange(1, 3);
      std::array<coord_t, 3> ext{1, 1, 1}, lo{0, 0, 0}, hi{0, 0, 0};
      const coord_t vmax = opt_.max_volume;
      if (dim == 1) {
        // log-uniform between 4 and vmax
        double e = std::exp(std::log(4.0) + (std::log(double(vmax)) - std::log(4.0)) *
                                                double(rng_.next() >> 11) * 0x1p-53);
        ext[0] = std::max<coord_t>(4, coord_t(e));
      } else if (dim == 2) {
        ext[0] = rng_.range(2, 40);
        ext[1] = rng_.range(2, std::max<coord_t>(2, std::min<coord_t>(60, vmax / ext[0])));
      } else {
        ext[0] = rng_.range(2, 12);
        ext[1] = rng_.range(2, 12);
        ext[2] =
            rng_.range(2, std::max<coord_t>(2, std::min<coord_t>(14, vmax / (ext[0] * ext[1]))));
      }
      const bool offset = rng_.chance(0.4);
      for (int d = 0; d < dim; ++d) {
        lo[d] = offset ? rng_.range(-4, 4) : 0;
        hi[d] = lo[d] + ext[d] - 1;
      }
      r.bounds = make_domain(dim, lo, hi);
    }
    const int nf = rng_.irange(2, 4);
    std::vector<FieldID> ids;
    while (int(ids.size()) < nf) {
      FieldID id = FieldID(rng_.range(0, 40));
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    for (int i = 0; i < nf; ++i)
      r.fields.push_back(FieldSpec{ids[std::size_t(i)], rng_.chance(0.3)});
    if (std::all_of(r.fields.begin(), r.fields.end(),
                    [](const FieldSpec& f) { return f.is_float; }))
      r.fields[0].is_float = false;  // at least one integer field, for reductions
    return r;
  }

  // A color space of `dim` dimensions with the given extents, at the origin or shifted.
  Domain color_space(int dim, const std::array<coord_t, 3>& ext) {
    std::array<coord_t, 3> lo{0, 0, 0}, hi{0, 0, 0};
    const bool shift = rng_.chance(0.3);
    for (int d = 0; d < dim; ++d) {
      lo[d] = shift ? rng_.range(-2, 3) : 0;
      hi[d] = lo[d] + ext[d] - 1;
    }
    return make_domain(dim, lo, hi);
  }

  // Colors per dimension for a grid over bounds b, at most kMaxColors in all.
  std::array<coord_t, 3> grid_counts(const Domain& b, coord_t max_per_dim, bool allow_empty) {
    std::array<coord_t, 3> k{1, 1, 1};
    for (int d = 0; d < b.dim; ++d) {
      coord_t e = b.extent(d);
      k[d] = rng_.range(1, std::min(max_per_dim, e));
      if (allow_empty && e + 1 <= 5 && rng_.chance(0.1)) k[d] = e + 1;  // empty pieces
    }
    for (;;) {
      coord_t v = 1;
      for (int d = 0; d < b.dim; ++d) v *= k[d];
      if (v <= kMaxColors) break;
      int big = 0;
      for (int d = 1; d < b.dim; ++d)
        if (k[d] > k[big]) big = d;
      --k[big];
    }
    return k;
  }

  // Row-major cells of a grid of k[d] intervals per dimension with random cut points.
  std::vector<Domain> grid_cells(const Domain& b, const std::array<coord_t, 3>& k) {
    std::array<std::vector<coord_t>, 3> cuts;  // interval starts, then hi + 1
    for (int d = 0; d < b.dim; ++d) {
      std::vector<coord_t> c{b.lo[d]};
      std::vector<coord_t> inner;
      for (coord_t x = b.lo[d] + 1; x <= b.hi[d]; ++x) inner.push_back(x);
      rng_.shuffle(inner);
      inner.resize(std::size_t(std::min<coord_t>(k[d] - 1, coord_t(inner.size()))));
      std::sort(inner.begin(), inner.end());
      c.insert(c.end(), inner.begin(), inner.end());
      c.push_back(b.hi[d] + 1);
      cuts[d] = c;
    }
    std::vector<Domain> cells;
    std::array<coord_t, 3> n{1, 1, 1};
    for (int d = 0; d < b.dim; ++d) n[d] = coord_t(cuts[d].size()) - 1;
    for (coord_t i = 0; i < n[0]; ++i)
      for (coord_t j = 0; j < n[1]; ++j)
        for (coord_t l = 0; l < n[2]; ++l) {
          std::array<coord_t, 3> idx{i, j, l}, lo{0, 0, 0}, hi{0, 0, 0};
          for (int d = 0; d < b.dim; ++d) {
            lo[d] = cuts[d][std::size_t(idx[d])];
            hi[d] = cuts[d][std::size_t(idx[d]) + 1] - 1;
          }
          cells.push_back(make_domain(b.dim, lo, hi));
        }
    return cells;
  }

  std::array<coord_t, 3> cell_counts(const std::vector<Domain>& cells, const Domain& b) {
    // Recovers the grid shape from the cells (row-major): count distinct lo per dimension.
    std::array<coord_t, 3> k{1, 1, 1};
    for (int d = 0; d < b.dim; ++d) {
      std::vector<coord_t> los;
      for (const auto& c : cells) los.push_back(c.lo[d]);
      std::sort(los.begin(), los.end());
      k[d] = coord_t(std::unique(los.begin(), los.end()) - los.begin());
    }
    return k;
  }

  // Colors for `n` rects: a 1-d color space, or the grid's own shape when it has one.
  Domain rect_colors(coord_t n, const std::array<coord_t, 3>* grid, int dim) {
    if (grid && rng_.chance(0.6)) return color_space(dim, *grid);
    return color_space(1, {n, 1, 1});
  }

  PartSpec gen_partition(int tree) {
    PartSpec ps;
    ps.parent = RegionRef{tree, -1, {}};
    // Nested: a partition of a piece of an earlier partition of this tree.
    std::vector<RegionRef> nested;
    for (std::size_t i = 0; i < p_.parts.size(); ++i) {
      const PartSpec& q = p_.parts[i];
      if (q.parent.tree != tree) continue;
      for (coord_t c = 0; c < q.colors.volume(); ++c)
        if (q.pieces[std::size_t(c)].volume() >= 4)
          nested.push_back(RegionRef{tree, int(i), q.colors.delinearize(c)});
    }
    if (!nested.empty() && rng_.chance(0.3)) ps.parent = rng_.pick(nested);
    const Domain b = bounds_of(p_, ps.parent);
    ps.parent_bounds = b;
    const int dim = b.dim;

    std::vector<int> same_parent;
    for (std::size_t i = 0; i < p_.parts.size(); ++i)
      if (same_ref(p_.parts[i].parent, ps.parent)) same_parent.push_back(int(i));

    switch (rng_.weighted({30, 15, 20, 15, 12, same_parent.empty() ? 0 : 10})) {
      case 0: {  // equal
        ps.kind = PartKind::Equal;
        ps.colors = color_space(dim, grid_counts(b, 4, true));
        for (coord_t i = 0; i < ps.colors.volume(); ++i) {
          DomainPoint col = ps.colors.delinearize(i);
          Domain r;
          r.dim = dim;
          for (int d = 0; d < dim; ++d) {
            coord_t n = b.extent(d), k = ps.colors.extent(d), j = col.x[d] - ps.colors.lo[d];
            r.lo[d] = b.lo[d] + n * j / k;
            r.hi[d] = b.lo[d] + n * (j + 1) / k - 1;
          }
          ps.pieces.push_back(r);
        }
        ps.note = "equal";
        break;
      }
      case 1: {  // blocks
        ps.kind = PartKind::Blocks;
        ps.block.dim = dim;
        std::array<coord_t, 3> k{1, 1, 1};
        for (;;) {
          coord_t v = 1;
          for (int d = 0; d < dim; ++d) {
            coord_t e = b.extent(d);
            // Two draws in sequence (in one expression their order would be the compiler's).
            const coord_t rounding = rng_.range(1, 4);
            const coord_t divisor = rng_.range(1, 4);
            ps.block.x[d] = std::max<coord_t>(1, (e + rounding - 1) / divisor);
            k[d] = (e + ps.block.x[d] - 1) / ps.block.x[d];
            v *= k[d];
          }
          if (v <= kMaxColors) break;
        }
        ps.colors = make_domain(dim, {0, 0, 0}, {k[0] - 1, k[1] - 1, k[2] - 1});
        for (coord_t i = 0; i < ps.colors.volume(); ++i) {
          DomainPoint col = ps.colors.delinearize(i);
          Domain r;
          r.dim = dim;
          for (int d = 0; d < dim; ++d) {
            r.lo[d] = b.lo[d] + col.x[d] * ps.block.x[d];
            r.hi[d] = std::min(b.hi[d], r.lo[d] + ps.block.x[d] - 1);
          }
          ps.pieces.push_back(r);
        }
        ps.note = "blocks";
        break;
      }
      case 2: {  // disjoint grid with random cuts; maybe shrunk (incomplete) or grown past b
        ps.kind = PartKind::Rects;
        auto cells = grid_cells(b, grid_counts(b, 3, false));
        auto k = cell_counts(cells, b);
        bool shrunk = false, outside = false;
        for (auto& c : cells) {
          if (rng_.chance(0.2)) {
            shrunk = true;
            if (rng_.chance(0.25)) {
              c.hi[0] = c.lo[0] - 1;  // empty
            } else {
              for (int d = 0; d < dim; ++d) {
                coord_t e = c.hi[d] - c.lo[d];
                c.lo[d] += rng_.range(0, e / 2);
                c.hi[d] -= rng_.range(0, (c.hi[d] - c.lo[d]) / 2);
              }
            }
          } else if (rng_.chance(0.2)) {
            // Grow outward where the cell touches the parent's border (clipped back).
            for (int d = 0; d < dim; ++d) {
              if (c.lo[d] == b.lo[d]) c.lo[d] -= rng_.range(1, 3), outside = true;
              if (c.hi[d] == b.hi[d]) c.hi[d] += rng_.range(1, 3), outside = true;
            }
          }
        }
        ps.rects = cells;
        ps.colors = rect_colors(coord_t(cells.size()), &k, dim);
        ps.note = std::string("disjoint grid") + (shrunk ? ", shrunk" : "") +
                  (outside ? ", past the border" : "");
        break;
      }
      case 3: {  // random rects, usually aliased
        ps.kind = PartKind::Rects;
        const coord_t n = rng_.range(2, 6);
        for (coord_t i = 0; i < n; ++i) {
          std::array<coord_t, 3> lo{0, 0, 0}, hi{0, 0, 0};
          for (int d = 0; d < dim; ++d) {
            lo[d] = rng_.range(b.lo[d] - 2, b.hi[d]);
            hi[d] = rng_.range(lo[d] - (rng_.chance(0.05) ? 1 : 0), b.hi[d] + 2);
            if (hi[d] - lo[d] > b.extent(d) / 2 + 1 && rng_.chance(0.5))
              hi[d] = lo[d] + b.extent(d) / 2;
          }
          ps.rects.push_back(make_domain(dim, lo, hi));
        }
        ps.colors = rect_colors(n, nullptr, dim);
        ps.note = "random rects";
        break;
      }
      case 4: {  // halo: an equal grid grown by 1 or 2 (aliased), clipped by the runtime
        ps.kind = PartKind::Rects;
        auto k = grid_counts(b, 3, false);
        auto cells = grid_cells(b, k);
        k = cell_counts(cells, b);
        const coord_t g = rng_.range(1, 2);
        for (auto& c : cells) c = reprise::grow(c, g);
        ps.rects = cells;
        ps.colors = rect_colors(coord_t(cells.size()), &k, dim);
        ps.note = "halo (grid grown by " + std::to_string(g) + ")";
        break;
      }
      default: {  // translation of an earlier partition of the same parent
        ps.kind = PartKind::Translate;
        ps.base = rng_.pick(same_parent);
        const PartSpec& base = p_.parts[std::size_t(ps.base)];
        ps.offset.dim = dim;
        for (int d = 0; d < dim; ++d) ps.offset.x[d] = rng_.range(-3, 3);
        ps.colors = base.colors;
        for (const auto& pc : base.pieces) ps.pieces.push_back(reprise::translate(pc, ps.offset));
        ps.note = "translation of p" + std::to_string(ps.base);
        break;
      }
    }
    if (ps.kind == PartKind::Rects) {
      ps.pieces = ps.rects;
      ps.use_callback = rng_.chance(0.3);
    }
    for (auto& pc : ps.pieces) pc = pc & b;
    compute_pieces_flags(ps);
    return ps;
  }

  void create_next_partition() {
    OpSpec op;
    op.kind = OpKind::CreatePartition;
    op.part = int(next_part_++);
    live_.push_back(op.part);
    p_.ops.push_back(std::move(op));
  }

  // ---- picking regions, fields and privileges

  std::vector<int> live_parts_of(int tree) const {
    std::vector<int> v;
    for (int i : live_)
      if (p_.parts[std::size_t(i)].parent.tree == tree) v.push_back(i);
    return v;
  }

  RegionRef random_ref(int tree) {
    auto parts = live_parts_of(tree);
    if (parts.empty() || rng_.chance(0.3)) return RegionRef{tree, -1, {}};
    int part = rng_.pick(parts);
    const Domain& colors = p_.parts[std::size_t(part)].colors;
    return RegionRef{tree, part, colors.delinearize(rng_.range(0, colors.volume() - 1))};
  }

  int random_tree() { return rng_.irange(0, int(p_.regions.size()) - 1); }

  // A random non-empty subset of the tree's fields (integer fields only when int_only).
  std::vector<int> random_fields(int tree, bool int_only, int max = kMaxFields) {
    std::vector<int> cand;
    const auto& fs = p_.regions[std::size_t(tree)].fields;
    for (int i = 0; i < int(fs.size()); ++i)
      if (!int_only || !fs[std::size_t(i)].is_float) cand.push_back(i);
    rng_.shuffle(cand);
    cand.resize(std::size_t(rng_.irange(1, std::min(int(cand.size()), max))));
    return cand;
  }

  // priv and redop for a requirement; writes only where allowed.
  void choose_priv(ReqSpec& q, bool can_write) {
    switch (rng_.weighted(
        {35, can_write ? 30 : 0, can_write ? 12 : 0, opt_.no_region_reductions ? 0 : 23})) {
      case 0:
        q.priv = Privilege::ReadOnly;
        break;
      case 1:
        q.priv = Privilege::ReadWrite;
        break;
      case 2:
        q.priv = Privilege::WriteDiscard;
        break;
      default: {
        q.priv = Privilege::Reduce;
        static constexpr ReductionOp ops[] = {ReductionOp::Sum, ReductionOp::Max, ReductionOp::Min,
                                              ReductionOp::Prod};
        q.redop = ops[rng_.weighted({45, 25, 15, 15})];
        break;
      }
    }
  }

  // Adds q to reqs when it does not interfere with them (the runtime's rule for one launch).
  bool try_add(std::vector<ReqSpec>& reqs, std::vector<Footprint>& fps, ReqSpec q,
               const Domain& launch) {
    Footprint f = footprint(p_, q, launch);
    for (const auto& g : fps)
      if (interferes(f, g)) return false;
    reqs.push_back(std::move(q));
    fps.push_back(std::move(f));
    return true;
  }

  std::optional<ProjSpec> gen_projection(const Domain& D, const Domain& C) {
    std::vector<ProjSpec> cands;
    std::vector<int> weights;
    if (C.dim == D.dim && C.contains(D)) {
      cands.push_back(ProjSpec{});
      weights.push_back(40);
    }
    if (C.dim == D.dim) {
      bool fits = true;
      for (int d = 0; d < D.dim; ++d) fits = fits && C.extent(d) >= D.extent(d);
      if (fits) {
        ProjSpec t;
        t.kind = ProjKind::Translate;
        t.dim_in = t.dim_out = D.dim;
        t.offset.dim = D.dim;
        for (int d = 0; d < D.dim; ++d) {
          t.m[d][d] = 1;
          t.offset.x[d] = rng_.range(C.lo[d] - D.lo[d], C.hi[d] - D.hi[d]);
        }
        cands.push_back(t);
        weights.push_back(20);
      }
    }
    for (int attempt = 0; attempt < 4; ++attempt) {
      ProjSpec a;
      a.kind = ProjKind::Affine;
      a.dim_in = D.dim;
      a.dim_out = C.dim;
      a.offset.dim = C.dim;
      bool ok = true;
      for (int o = 0; o < C.dim && ok; ++o) {
        coord_t mn = 0, mx = 0;
        switch (rng_.weighted({20, 60, D.dim >= 2 ? 20 : 0})) {
          case 0:
            break;   // constant coordinate
          case 1: {  // +-1 times one launch coordinate
            int j = rng_.irange(0, D.dim - 1);
            coord_t s = rng_.chance(0.7) ? 1 : -1;
            a.m[o][j] = s;
            mn = std::min(s * D.lo[j], s * D.hi[j]);
            mx = std::max(s * D.lo[j], s * D.hi[j]);
            break;
          }
          default: {  // row-major linearization of the launch point
            coord_t stride = 1;
            for (int j = D.dim - 1; j >= 0; --j) {
              a.m[o][j] = stride;
              mn += stride * D.lo[j];
              mx += stride * D.hi[j];
              stride *= D.extent(j);
            }
            break;
          }
        }
        if (C.hi[o] - mx < C.lo[o] - mn) {
          ok = false;
        } else {
          a.offset.x[o] = rng_.range(C.lo[o] - mn, C.hi[o] - mx);
        }
      }
      if (ok) {
        cands.push_back(a);
        weights.push_back(20);
        break;
      }
    }
    {
      ProjSpec c;
      c.kind = ProjKind::Constant;
      c.dim_in = D.dim;
      c.dim_out = C.dim;
      c.offset = C.delinearize(rng_.range(0, C.volume() - 1));
      cands.push_back(c);
      weights.push_back(cands.size() == 1 ? 100 : 15);
    }
    int total = 0;
    for (int w : weights) total += w;
    int r = rng_.irange(0, total - 1);
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (r < weights[i]) return cands[i];
      r -= weights[i];
    }
    return cands.back();
  }

  Domain random_launch_domain() {
    const int dim = rng_.irange(1, 3);
    std::array<coord_t, 3> lo{0, 0, 0}, hi{0, 0, 0};
    coord_t v = 1;
    for (int d = 0; d < dim; ++d) {
      lo[d] = rng_.range(-2, 2);
      hi[d] = lo[d] + rng_.range(0, std::max<coord_t>(0, 4 / v - 1));
      v *= hi[d] - lo[d] + 1;
    }
    return make_domain(dim, lo, hi);
  }

  Domain random_subrect(const Domain& d) {
    Domain s = d;
    for (int i = 0; i < d.dim; ++i) {
      s.lo[i] = rng_.range(d.lo[i], d.hi[i]);
      s.hi[i] = rng_.range(s.lo[i], d.hi[i]);
    }
    return s;
  }

  // ---- ops

  std::vector<int> typed_maps() const {
    std::vector<int> v;
    for (std::size_t i = 0; i < p_.map_types.size(); ++i)
      if (p_.map_types[i] != ValueType::None) v.push_back(int(i));
    return v;
  }

  std::uint64_t salt() { return rng_.next(); }

  void add_futures(OpSpec& op, double p) {
    if (kept_body_ || p_.future_types.empty() || !rng_.chance(p)) return;
    for (int n = rng_.irange(1, 2); n > 0; --n) {
      int f = rng_.irange(0, int(p_.future_types.size()) - 1);
      // Recent futures are more interesting (their producers may still be running).
      if (rng_.chance(0.6)) f = std::max(0, int(p_.future_types.size()) - rng_.irange(1, 3));
      if (std::find(op.futures.begin(), op.futures.end(), f) == op.futures.end())
        op.futures.push_back(f);
    }
  }

  ValueType random_ret(int none_weight) {
    switch (rng_.weighted({none_weight, 30, 15})) {
      case 0:
        return ValueType::None;
      case 1:
        return ValueType::U64;
      default:
        return ValueType::I64;
    }
  }

  int new_future(ValueType t) {
    p_.future_types.push_back(t);
    return int(p_.future_types.size()) - 1;
  }

  // The future-map slot an index launch over `launch` with values of type t writes.
  int new_map(ValueType t, const Domain& launch) {
    p_.map_types.push_back(t);
    p_.map_domains.push_back(launch);
    return int(p_.map_types.size()) - 1;
  }

  void init_region(int t) {
    const RegionSpec& r = p_.regions[std::size_t(t)];
    std::vector<int> all;
    for (int i = 0; i < int(r.fields.size()); ++i) all.push_back(i);
    OpSpec op;
    op.init = true;
    if (rng_.chance(0.6)) {
      op.kind = OpKind::Fill;
      op.dst = RegionRef{t, -1, {}};
      op.dst_fields = all;
      op.value = rng_.next();
    } else {
      op.kind = OpKind::Task;
      op.salt = salt();
      ReqSpec q;
      q.region = RegionRef{t, -1, {}};
      q.priv = Privilege::WriteDiscard;
      q.fields = all;
      op.reqs.push_back(q);
      op.ret = ValueType::None;
      op.result = new_future(op.ret);
    }
    p_.ops.push_back(std::move(op));
  }

  int gen_index_task() {
    OpSpec op;
    op.kind = OpKind::IndexTask;
    op.salt = salt();
    std::vector<Footprint> fps;
    int extra;
    if (!live_.empty() && rng_.chance(0.85)) {
      const int part = rng_.pick(live_);
      const PartSpec& ps = p_.parts[std::size_t(part)];
      op.launch = rng_.chance(0.25) ? random_subrect(ps.colors) : ps.colors;
      ReqSpec q;
      q.part = part;
      const int tree = ps.parent.tree;
      choose_priv(q, ps.disjoint || op.launch.volume() == 1);
      q.fields = random_fields(tree, q.priv == Privilege::Reduce);
      try_add(op.reqs, fps, q, op.launch);
      extra = rng_.irange(0, 2);
    } else {
      op.launch = random_launch_domain();
      extra = rng_.irange(1, 3);
    }
    for (int i = 0; i < extra; ++i) {
      for (int attempt = 0; attempt < 6; ++attempt) {
        ReqSpec q;
        int tree;
        bool can_write;
        if (!live_.empty() && rng_.chance(0.7)) {
          q.part = rng_.pick(live_);
          const PartSpec& ps = p_.parts[std::size_t(q.part)];
          auto proj = gen_projection(op.launch, ps.colors);
          if (!proj) continue;
          q.proj = *proj;
          tree = ps.parent.tree;
          can_write = op.launch.volume() == 1 || (ps.disjoint && injective(q.proj, op.launch));
        } else {
          tree = random_tree();
          q.region = random_ref(tree);
          can_write = op.launch.volume() == 1;
        }
        choose_priv(q, can_write);
        q.fields = random_fields(tree, q.priv == Privilege::Reduce);
        if (try_add(op.reqs, fps, q, op.launch)) break;
      }
    }
    op.ret = random_ret(55);
    add_futures(op, 0.3);
    op.result = new_map(op.ret, op.launch);
    const int map = op.result;
    const ValueType ret = op.ret;
    p_.ops.push_back(std::move(op));
    int n = 1;
    if (ret != ValueType::None) {
      if (rng_.chance(0.55)) n += gen_reduce_futures(map);
      if (rng_.chance(0.15)) n += gen_point_future(map);
    }
    return n;
  }

  int gen_task() {
    OpSpec op;
    op.kind = OpKind::Task;
    op.salt = salt();
    std::vector<Footprint> fps;
    const Domain one = single_point_domain();
    for (int i = rng_.irange(1, 3); i > 0; --i) {
      for (int attempt = 0; attempt < 6; ++attempt) {
        ReqSpec q;
        const int tree = random_tree();
        q.region = random_ref(tree);
        choose_priv(q, true);
        q.fields = random_fields(tree, q.priv == Privilege::Reduce);
        if (try_add(op.reqs, fps, q, one)) break;
      }
    }
    op.ret = random_ret(50);
    add_futures(op, 0.35);
    op.result = new_future(op.ret);
    p_.ops.push_back(std::move(op));
    return 1;
  }

  int gen_fill() {
    OpSpec op;
    op.kind = OpKind::Fill;
    const int tree = random_tree();
    op.dst = random_ref(tree);
    op.dst_fields = random_fields(tree, false);
    op.value = rng_.chance(0.5) ? rng_.next()
                                : std::bit_cast<std::uint64_t>(double(rng_.range(-1000, 1000)) / 8);
    p_.ops.push_back(std::move(op));
    return 1;
  }

  int gen_copy() {
    OpSpec op;
    op.kind = OpKind::Copy;
    const int ta = random_tree();
    op.src = random_ref(ta);
    const Domain sb = bounds_of(p_, op.src);
    // Destinations that contain the source's bounds: in another tree (any fields) or in the
    // same tree (other fields).
    std::vector<RegionRef> cross, same;
    for (int t = 0; t < int(p_.regions.size()); ++t) {
      std::vector<RegionRef> cands{RegionRef{t, -1, {}}};
      for (int part : live_parts_of(t)) {
        const PartSpec& ps = p_.parts[std::size_t(part)];
        for (coord_t c = 0; c < ps.colors.volume(); ++c)
          cands.push_back(RegionRef{t, part, ps.colors.delinearize(c)});
      }
      for (const auto& r : cands) {
        Domain db = bounds_of(p_, r);
        if (db.dim != sb.dim || !db.contains(sb)) continue;
        (t == ta ? same : cross).push_back(r);
      }
    }
    const auto& fa = p_.regions[std::size_t(ta)].fields;
    const bool can_same = !same.empty() && fa.size() >= 2;
    if (!cross.empty() && (!can_same || rng_.chance(0.5))) {
      op.dst = rng_.pick(cross);
      const auto& fb = p_.regions[std::size_t(op.dst.tree)].fields;
      const int k = rng_.irange(1, int(std::min(fa.size(), fb.size())));
      op.src_fields = random_fields(ta, false);
      op.src_fields.resize(std::min(op.src_fields.size(), std::size_t(k)));
      std::vector<int> d;
      for (int i = 0; i < int(fb.size()); ++i) d.push_back(i);
      rng_.shuffle(d);
      d.resize(op.src_fields.size());
      op.dst_fields = d;
    } else if (can_same) {
      op.dst = rng_.pick(same);
      std::vector<int> f;
      for (int i = 0; i < int(fa.size()); ++i) f.push_back(i);
      rng_.shuffle(f);
      const int k = rng_.irange(1, int(f.size()) / 2);
      op.src_fields.assign(f.begin(), f.begin() + k);
      op.dst_fields.assign(f.begin() + k, f.begin() + 2 * k);
    } else {
      return gen_fill();
    }
    p_.ops.push_back(std::move(op));
    return 1;
  }

  int gen_reduce_futures(int map) {
    OpSpec op;
    op.kind = OpKind::ReduceFutures;
    op.source = map;
    const ValueType t = p_.map_types[std::size_t(map)];
    if (t == ValueType::I64) {
      op.redop = rng_.chance(0.5) ? ReductionOp::Max : ReductionOp::Min;
    } else {
      static constexpr ReductionOp ops[] = {ReductionOp::Sum, ReductionOp::Max, ReductionOp::Min,
                                            ReductionOp::Prod};
      op.redop = ops[rng_.weighted({50, 20, 15, 15})];
    }
    op.result = new_future(t);
    p_.ops.push_back(std::move(op));
    return 1;
  }

  int gen_point_future(int map) {
    OpSpec op;
    op.kind = OpKind::PointFuture;
    op.source = map;
    const Domain& d = p_.map_domains[std::size_t(map)];
    op.point = d.delinearize(rng_.range(0, d.volume() - 1));
    op.result = new_future(p_.map_types[std::size_t(map)]);
    p_.ops.push_back(std::move(op));
    return 1;
  }

  // A wait on one of the first `limit` future slots (all when negative).
  int gen_get_future(int limit = -1) {
    OpSpec op;
    op.kind = OpKind::GetFuture;
    const int n = limit < 0 ? int(p_.future_types.size()) : limit;
    op.source = rng_.chance(0.6) ? n - 1 : rng_.irange(0, n - 1);
    p_.ops.push_back(std::move(op));
    return 1;
  }

  int gen_fence() {
    OpSpec op;
    op.kind = OpKind::Fence;
    op.wait = rng_.chance(0.3);
    p_.ops.push_back(std::move(op));
    return 1;
  }

  // ---- loops and traces

  // The shape that keeps one piece valid in several memories at once: an index launch whose
  // points (spread over memories by the mapper) all read one piece through a constant
  // projection, and update or reduce into their own piece of a disjoint partition.
  int gen_broadcast_read() {
    std::vector<int> disjoint;
    for (int part : live_)
      if (p_.parts[std::size_t(part)].disjoint) disjoint.push_back(part);
    if (disjoint.empty()) return gen_index_task();
    OpSpec op;
    op.kind = OpKind::IndexTask;
    op.salt = salt();
    const int own = rng_.pick(disjoint);
    const PartSpec& ps = p_.parts[std::size_t(own)];
    op.launch = ps.colors;
    std::vector<Footprint> fps;
    const int src = rng_.pick(live_);
    const PartSpec& ss = p_.parts[std::size_t(src)];
    ReqSpec read;
    read.part = src;
    read.proj.kind = ProjKind::Constant;
    read.proj.dim_in = op.launch.dim;
    read.proj.dim_out = ss.colors.dim;
    read.proj.offset = ss.colors.delinearize(rng_.range(0, ss.colors.volume() - 1));
    read.priv = Privilege::ReadOnly;
    read.fields = random_fields(ss.parent.tree, false);
    try_add(op.reqs, fps, read, op.launch);
    ReqSpec mine;
    mine.part = own;
    choose_priv(mine, true);
    if (mine.priv == Privilege::ReadOnly) choose_priv(mine, true);
    mine.fields = random_fields(ps.parent.tree, mine.priv == Privilege::Reduce);
    try_add(op.reqs, fps, mine, op.launch);
    op.ret = random_ret(60);
    op.result = new_map(op.ret, op.launch);
    p_.ops.push_back(std::move(op));
    return 1;
  }

  // An op that may stand inside a trace (no partition, blocking wait or fence).
  int gen_traceable_op() {
    const bool have_maps = !typed_maps().empty();
    switch (rng_.weighted({35, 20, 8, 9, have_maps ? 4 : 0, have_maps ? 3 : 0, 15})) {
      case 0:
        return gen_index_task();
      case 1:
        return gen_task();
      case 2:
        return gen_fill();
      case 3:
        return gen_copy();
      case 4:
        return gen_reduce_futures(rng_.pick(typed_maps()));
      case 5:
        return gen_point_future(rng_.pick(typed_maps()));
      default:
        return gen_broadcast_read();
    }
  }

  void mark(OpKind kind, int trace) {
    OpSpec op;
    op.kind = kind;
    op.trace = trace;
    p_.ops.push_back(std::move(op));
  }

  // A loop: a body issued `iters` times, each iteration one manual trace. Now and then an
  // iteration's body changes (one op more or less: the trace mismatches and is recorded anew),
  // a loop reuses an earlier loop's trace id, or a blocking wait follows an iteration.
  // A third of the loops alternate two bodies (double buffering: the data's place alternates
  // too), under one trace id or two.
  int gen_loop() {
    const std::size_t start = p_.ops.size();
    std::vector<OpSpec> bodies[2];
    const int nbodies = rng_.chance(0.33) ? 2 : 1;
    int first_futures = -1;  // the future slots assigned once the first body has run
    for (auto& body : std::span(bodies, std::size_t(nbodies))) {
      const std::size_t from = p_.ops.size();
      // (GenOptions::kept_loops: launches without futures only.)
      kept_body_ = opt_.kept_loops;
      for (int k = rng_.irange(1, opt_.max_body); k > 0; --k) {
        if (!kept_body_)
          gen_traceable_op();
        else if (rng_.chance(0.2))
          gen_broadcast_read();
        else if (rng_.chance(0.7))
          gen_index_task();
        else
          gen_task();
      }
      kept_body_ = false;
      body.assign(p_.ops.begin() + std::ptrdiff_t(from), p_.ops.end());
      if (first_futures < 0) first_futures = int(p_.future_types.size());
    }
    p_.ops.resize(start);
    const int trace =
        next_trace_ > 1 && rng_.chance(0.2) ? rng_.irange(1, next_trace_ - 1) : next_trace_++;
    const int trace2 = nbodies == 2 && rng_.chance(0.5) ? next_trace_++ : trace;
    int n = 0;
    const int iters = rng_.irange(std::min(3, opt_.max_iters), opt_.max_iters) * nbodies;
    for (int it = 0; it < iters; ++it) {
      const std::vector<OpSpec>& body = bodies[it % nbodies];
      mark(OpKind::BeginTrace, it % nbodies ? trace2 : trace);
      p_.ops.insert(p_.ops.end(), body.begin(), body.end());
      if (it >= nbodies && rng_.chance(0.15)) {  // each body ran whole once
        // The last op's result is used by no op of the body after it: it can go.
        if (body.size() > 1 && rng_.chance(0.5))
          p_.ops.pop_back();
        else
          p_.ops.push_back(body[std::size_t(rng_.irange(0, int(body.size()) - 1))]);
      }
      mark(OpKind::EndTrace, it % nbodies ? trace2 : trace);
      n += int(p_.ops.size() - start) - n;
      const int assigned = it == 0 ? first_futures : int(p_.future_types.size());
      if (assigned > 0 && rng_.chance(0.12)) n += gen_get_future(assigned);
    }
    return n;
  }

  // Marks one task op inside a trace (in a later iteration when there is one) to fail.
  void fail_one_traced_op() {
    std::vector<std::size_t> traced;
    bool inside = false;
    for (std::size_t i = 0; i < p_.ops.size(); ++i) {
      const OpKind k = p_.ops[i].kind;
      if (k == OpKind::BeginTrace || k == OpKind::EndTrace) inside = k == OpKind::BeginTrace;
      if (inside && (k == OpKind::Task || k == OpKind::IndexTask)) traced.push_back(i);
    }
    if (traced.empty()) return;
    const std::size_t from = rng_.chance(0.7) ? traced.size() / 2 : 0;
    p_.ops[traced[std::size_t(rng_.irange(int(from), int(traced.size()) - 1))]].fail = true;
  }

  Rng rng_;
  GenOptions opt_;
  bool kept_body_ = false;  // generating a GenOptions::kept_loops body
  Program p_;
  std::size_t next_part_ = 0;
  std::vector<int> live_;
  int next_trace_ = 1;
};

}  // namespace

Program generate(std::uint64_t seed, const GenOptions& options) {
  return Generator(seed, options).run();
}

}  // namespace reprise_random

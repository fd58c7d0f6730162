// The reference model: a program's sequential semantics on host arrays, without the runtime.
#include "random_program_core.h"

namespace reprise_random {

namespace {

// ---- the reference model

struct RefStore {
  const Program& p;
  Outcome& out;
  const OpSpec& op;
  std::vector<Domain> rects;  // per requirement, for this point

  Domain domain(int r) const { return rects[std::size_t(r)]; }
  std::uint64_t& at(int r, FieldID fid, const DomainPoint& pt) const {
    const ReqSpec& q = op.reqs[std::size_t(r)];
    const int tree = tree_of(p, q);
    const RegionSpec& rs = p.regions[std::size_t(tree)];
    int fi = -1;
    for (int k : q.fields)
      if (rs.fields[std::size_t(k)].id == fid) fi = k;
    if (fi < 0 || !rects[std::size_t(r)].contains(pt))
      throw std::logic_error("reference: access outside requirement " + std::to_string(r));
    return out.data[std::size_t(tree)][std::size_t(fi)][std::size_t(rs.bounds.linearize(pt))];
  }
  template <int N>
  auto reader(int r, FieldID f) const {
    return [this, r, f](const Point<N>& pt) -> std::uint64_t { return at(r, f, pt); };
  }
  template <int N>
  auto writer(int r, FieldID f) const {
    return [this, r, f](const Point<N>& pt) -> std::uint64_t& { return at(r, f, pt); };
  }
  template <int N>
  auto reducer(int r, FieldID f) const {
    const ReductionOp op_ = op.reqs[std::size_t(r)].redop;
    return [this, r, f, op_](const Point<N>& pt, std::uint64_t v) { fold(at(r, f, pt), v, op_); };
  }
};

}  // namespace

Outcome run_reference(const Program& p) {
  Outcome out;
  init_outcome(p, out);
  std::vector<char> fut_set(p.future_types.size(), 0), map_set(p.map_types.size(), 0);
  std::uint64_t host = initial_host_mix(p);
  try {
    for (std::size_t index = 0; index < p.ops.size(); ++index) {
      const OpSpec& op = p.ops[index];
      switch (op.kind) {
        case OpKind::CreatePartition:
        case OpKind::Fence:
        case OpKind::BeginTrace:
        case OpKind::EndTrace:
          break;
        case OpKind::Task:
        case OpKind::IndexTask: {
          if (op.fail) {
            out.error = failure_text(std::uint32_t(index));
            return out;
          }
          const BodyArgs a = body_args(p, op, host, out, index);
          std::uint64_t futs[kMaxFutures] = {};
          for (std::size_t i = 0; i < op.futures.size(); ++i)
            futs[i] = out.futures[std::size_t(op.futures[i])];
          const Domain launch = op.kind == OpKind::Task ? single_point_domain() : op.launch;
          std::vector<std::uint64_t> results;
          for (const auto& pt : points_of(launch)) {
            RefStore s{p, out, op, {}};
            for (const auto& q : op.reqs)
              s.rects.push_back(q.part < 0 ? bounds_of(p, q.region)
                                           : p.parts[std::size_t(q.part)].piece(q.proj.apply(pt)));
            const std::uint64_t v = run_body(a, pt, futs, s);
            observe(a, launch, pt, v);
            results.push_back(op.ret == ValueType::None ? 0 : v);
          }
          if (op.kind == OpKind::Task) {
            out.futures[std::size_t(op.result)] = results[0];
            fut_set[std::size_t(op.result)] = 1;
          } else {
            out.maps[std::size_t(op.result)] = results;
            map_set[std::size_t(op.result)] = 1;
          }
          break;
        }
        case OpKind::Fill: {
          const int t = op.dst.tree;
          const Domain& rb = p.regions[std::size_t(t)].bounds;
          for (const auto& pt : points_of(bounds_of(p, op.dst)))
            for (int f : op.dst_fields)
              out.data[std::size_t(t)][std::size_t(f)][std::size_t(rb.linearize(pt))] = op.value;
          break;
        }
        case OpKind::Copy: {
          const Domain& sb = p.regions[std::size_t(op.src.tree)].bounds;
          const Domain& db = p.regions[std::size_t(op.dst.tree)].bounds;
          for (const auto& pt : points_of(bounds_of(p, op.src)))
            for (std::size_t k = 0; k < op.src_fields.size(); ++k)
              out.data[std::size_t(op.dst.tree)][std::size_t(op.dst_fields[k])]
                      [std::size_t(db.linearize(pt))] =
                  out.data[std::size_t(op.src.tree)][std::size_t(op.src_fields[k])]
                          [std::size_t(sb.linearize(pt))];
          break;
        }
        case OpKind::ReduceFutures: {
          const auto& vals = out.maps[std::size_t(op.source)];
          const ValueType t = p.map_types[std::size_t(op.source)];
          std::uint64_t acc = vals.at(0);
          for (std::size_t i = 1; i < vals.size(); ++i)
            acc = fold_future(acc, vals[i], t, op.redop);
          out.futures[std::size_t(op.result)] = acc;
          fut_set[std::size_t(op.result)] = 1;
          break;
        }
        case OpKind::PointFuture: {
          const Domain& d = p.map_domains[std::size_t(op.source)];
          out.futures[std::size_t(op.result)] =
              out.maps[std::size_t(op.source)].at(std::size_t(d.linearize(op.point)));
          fut_set[std::size_t(op.result)] = 1;
          break;
        }
        case OpKind::GetFuture: {
          const std::uint64_t v = out.futures[std::size_t(op.source)];
          out.gets.push_back(v);
          host = mix(host, v);
          break;
        }
      }
    }
  } catch (const std::exception& e) {
    out.error = std::string("reference model: ") + e.what();
  }
  for (std::size_t i = 0; i < map_set.size(); ++i)
    if (map_set[i] && p.map_types[i] == ValueType::None)
      std::fill(out.maps[i].begin(), out.maps[i].end(), 0);
  return out;
}

}  // namespace reprise_random

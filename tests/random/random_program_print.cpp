// Printing programs (dump, summary) and flags.
#include "random_program_core.h"

// GCC 12 at -O3 reports a false -Wrestrict inside std::string concatenation (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace reprise_random {

// ------------------------------------------------------------------------------------------
// Printing.

namespace {

const char* priv_name(Privilege p) {
  switch (p) {
    case Privilege::ReadOnly:
      return "RO";
    case Privilege::ReadWrite:
      return "RW";
    case Privilege::WriteDiscard:
      return "WD";
    case Privilege::Reduce:
      return "REDUCE";
  }
  return "?";
}

std::string ref_str(const Program& p, const RegionRef& r) {
  if (r.part < 0) return "r" + std::to_string(r.tree);
  return "p" + std::to_string(r.part) + "[" + r.color.str() + "] " + bounds_of(p, r).str();
}

std::string fields_str(const Program& p, int tree, const std::vector<int>& fields) {
  std::string s = "{";
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const FieldSpec& f = p.regions[std::size_t(tree)].fields[std::size_t(fields[i])];
    if (i) s += ",";
    s += std::to_string(f.id);
    if (f.is_float) s += "f";
  }
  return s + "}";
}

std::string proj_str(const ProjSpec& q) {
  switch (q.kind) {
    case ProjKind::Identity:
      return "identity";
    case ProjKind::Constant:
      return "constant" + q.offset.str();
    case ProjKind::Translate:
      return "translate" + q.offset.str();
    case ProjKind::Affine: {
      std::string s = "affine[";
      for (int o = 0; o < q.dim_out; ++o) {
        s += o ? "; " : "";
        for (int j = 0; j < q.dim_in; ++j) {
          if (j) s += " ";
          s += std::to_string(q.m[o][j]);
        }
      }
      return s + "]+" + q.offset.str();
    }
  }
  return "?";
}

std::string req_str(const Program& p, const ReqSpec& q) {
  std::string s;
  if (q.part >= 0)
    s = "p" + std::to_string(q.part) + " " + proj_str(q.proj);
  else
    s = ref_str(p, q.region);
  s += std::string(" ") + priv_name(q.priv);
  if (q.priv == Privilege::Reduce) s += "(" + std::string(to_string(q.redop)) + ")";
  return s + " " + fields_str(p, tree_of(p, q), q.fields);
}

std::string part_str(const Program& p, int i) {
  const PartSpec& ps = p.parts[std::size_t(i)];
  std::ostringstream o;
  o << "p" << i << " = ";
  switch (ps.kind) {
    case PartKind::Equal:
      o << "partition_equal(" << ref_str(p, ps.parent) << ", colors " << ps.colors.str() << ")";
      break;
    case PartKind::Blocks:
      o << "partition_by_blocks(" << ref_str(p, ps.parent) << ", block " << ps.block.str() << ")";
      break;
    case PartKind::Rects:
      o << "partition_by_rects(" << ref_str(p, ps.parent) << ", colors " << ps.colors.str()
        << (ps.use_callback ? ", function" : ", vector") << ") [" << ps.note << "]";
      break;
    case PartKind::Translate:
      o << "partition_by_translation(p" << ps.base << ", " << ps.offset.str() << ")";
      break;
  }
  o << (ps.disjoint ? " disjoint" : " aliased") << (ps.complete ? " complete" : " incomplete")
    << "\n        pieces:";
  for (coord_t c = 0; c < ps.colors.volume(); ++c)
    o << " " << ps.colors.delinearize(c).str() << "=" << ps.pieces[std::size_t(c)].str();
  return o.str();
}

}  // namespace

std::string dump(const Program& p) {
  std::ostringstream o;
  o << "program of seed " << p.seed << ": " << summary(p) << "\n";
  for (std::size_t t = 0; t < p.regions.size(); ++t) {
    const RegionSpec& r = p.regions[t];
    o << "  r" << t << ": " << r.bounds.dim << "-d " << r.bounds.str() << " (" << r.bounds.volume()
      << " points), fields";
    for (const auto& f : r.fields) o << " " << f.id << (f.is_float ? "(double)" : "(uint64)");
    o << "\n";
  }
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const OpSpec& op = p.ops[i];
    o << "  #" << i << " ";
    switch (op.kind) {
      case OpKind::CreatePartition:
        o << "create " << part_str(p, op.part);
        break;
      case OpKind::Task:
      case OpKind::IndexTask:
        if (op.kind == OpKind::Task)
          o << "task " << type_name(op.ret) << " -> f" << op.result;
        else
          o << "index task over " << op.launch.str() << " " << type_name(op.ret) << " -> m"
            << op.result;
        o << " salt " << hex(op.salt);
        for (int f : op.futures) o << " +future f" << f;
        for (std::size_t r = 0; r < op.reqs.size(); ++r)
          o << "\n        req" << r << ": " << req_str(p, op.reqs[r]);
        break;
      case OpKind::Fill:
        o << "fill " << ref_str(p, op.dst) << " " << fields_str(p, op.dst.tree, op.dst_fields)
          << " = " << hex(op.value);
        break;
      case OpKind::Copy:
        o << "copy " << ref_str(p, op.src) << " " << fields_str(p, op.src.tree, op.src_fields)
          << " -> " << ref_str(p, op.dst) << " " << fields_str(p, op.dst.tree, op.dst_fields);
        break;
      case OpKind::ReduceFutures:
        o << "reduce m" << op.source << " " << to_string(op.redop) << " -> f" << op.result;
        break;
      case OpKind::PointFuture:
        o << "f" << op.result << " = m" << op.source << ".get(" << op.point.str() << ")";
        break;
      case OpKind::GetFuture:
        o << "get f" << op.source << " (blocks; mixed into later salts)";
        break;
      case OpKind::Fence:
        o << "fence" << (op.wait ? " (waited for)" : "");
        break;
      case OpKind::BeginTrace:
        o << "begin_trace " << op.trace;
        break;
      case OpKind::EndTrace:
        o << "end_trace " << op.trace;
        break;
    }
    if (op.init) o << "  [init]";
    if (op.fail) o << "  [fails]";
    o << "\n";
  }
  return o.str();
}

std::size_t count_ops(const Program& p, OpKind kind) {
  return std::size_t(
      std::count_if(p.ops.begin(), p.ops.end(), [&](const OpSpec& op) { return op.kind == kind; }));
}

std::string summary(const Program& p) {
  std::ostringstream o;
  o << p.regions.size() << " regions (";
  for (std::size_t t = 0; t < p.regions.size(); ++t)
    o << (t ? ", " : "") << p.regions[t].bounds.dim << "-d " << p.regions[t].bounds.volume();
  o << " points), " << count_ops(p, OpKind::CreatePartition) << " partitions, " << p.ops.size()
    << " ops: " << count_ops(p, OpKind::IndexTask) << " index, " << count_ops(p, OpKind::Task)
    << " single, " << count_ops(p, OpKind::Fill) << " fill, " << count_ops(p, OpKind::Copy)
    << " copy, " << count_ops(p, OpKind::ReduceFutures) << " reduce, "
    << count_ops(p, OpKind::GetFuture) << " get, " << count_ops(p, OpKind::Fence) << " fence";
  if (const std::size_t traces = count_ops(p, OpKind::BeginTrace)) o << ", " << traces << " traced";
  return o.str();
}

std::string join_flags(const std::vector<std::string>& flags) {
  std::string s;
  for (const auto& f : flags) {
    if (!s.empty()) s += " ";
    s += f;
  }
  return s.empty() ? "(no flags)" : s;
}

}  // namespace reprise_random

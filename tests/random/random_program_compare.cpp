// Comparing outcomes: where a run first differs from the expected one.
#include "random_program_core.h"

namespace reprise_random {

// ------------------------------------------------------------------------------------------
// Comparing outcomes.

std::string compare_final(const Program& p, const Outcome& expected, const Outcome& got);

std::string compare(const Program& p, const Outcome& expected, const Outcome& got) {
  std::ostringstream o;
  if (!expected.error.empty() || !got.error.empty()) {
    if (expected.error == got.error) return "";  // (the same failure on both sides)
    if (is_deliberate_failure(expected.error) && got.error.empty())
      return "the program should have ended with '" + expected.error + "' but succeeded";
    o << "errors differ:\n    expected: " << (expected.error.empty() ? "(none)" : expected.error)
      << "\n    got:      " << (got.error.empty() ? "(none)" : got.error);
    return o.str();
  }
  // The first op (in program order) whose points saw different inputs: where it went wrong.
  for (std::size_t i = 0; i < expected.observed.size() && i < got.observed.size(); ++i) {
    const auto& e = expected.observed[i];
    const auto& g = got.observed[i];
    if (e == g) continue;
    const Domain launch =
        p.ops[i].kind == OpKind::IndexTask ? p.ops[i].launch : single_point_domain();
    std::size_t k = 0, n = 0;
    for (std::size_t j = 0; j < e.size() && j < g.size(); ++j)
      if (e[j] != g[j] && n++ == 0) k = j;
    o << "op #" << i << " is the first op that saw different data (" << n << " of " << e.size()
      << " points, first " << launch.delinearize(coord_t(k)).str()
      << "): one of its requirements or futures held other values than in program order";
    std::string rest = compare_final(p, expected, got);
    if (!rest.empty()) o << ";\n    and " << rest;
    return o.str();
  }
  return compare_final(p, expected, got);
}

std::string compare_final(const Program& p, const Outcome& expected, const Outcome& got) {
  std::ostringstream o;
  std::string first;
  std::vector<std::string> differing;
  for (std::size_t t = 0; t < p.regions.size(); ++t) {
    const RegionSpec& rs = p.regions[t];
    for (std::size_t k = 0; k < rs.fields.size(); ++k) {
      const auto& e = expected.data[t][k];
      const auto& g = got.data[t][k];
      std::size_t n = 0, at = 0;
      for (std::size_t i = 0; i < e.size(); ++i)
        if (e[i] != g[i] && n++ == 0) at = i;
      if (n == 0) continue;
      std::ostringstream name;
      name << "r" << t << " field " << rs.fields[k].id;
      std::ostringstream d;
      d << name.str() << " (" << n << " of " << e.size() << " points)";
      differing.push_back(d.str());
      if (first.empty()) {
        std::ostringstream f;
        f << name.str() << (rs.fields[k].is_float ? " (double)" : " (uint64)") << " point "
          << rs.bounds.delinearize(coord_t(at)).str() << ": expected " << hex(e[at]) << ", got "
          << hex(g[at]);
        first = f.str();
      }
    }
  }
  if (!first.empty()) {
    o << "region contents differ; first at " << first << "\n    differing:";
    for (const auto& d : differing) o << " " << d << ";";
    return o.str();
  }
  for (std::size_t i = 0; i < expected.gets.size() || i < got.gets.size(); ++i) {
    if (i >= expected.gets.size() || i >= got.gets.size() || expected.gets[i] != got.gets[i]) {
      o << "mid-program get #" << i << " differs: expected "
        << (i < expected.gets.size() ? hex(expected.gets[i]) : "(none)") << ", got "
        << (i < got.gets.size() ? hex(got.gets[i]) : "(none)");
      return o.str();
    }
  }
  for (std::size_t i = 0; i < expected.futures.size(); ++i)
    if (expected.futures[i] != got.futures[i]) {
      o << "future f" << i << " (" << type_name(p.future_types[i]) << ") differs: expected "
        << hex(expected.futures[i]) << ", got " << hex(got.futures[i]);
      return o.str();
    }
  for (std::size_t i = 0; i < expected.maps.size(); ++i)
    if (expected.maps[i] != got.maps[i]) {
      std::size_t k = 0;
      while (k < expected.maps[i].size() && k < got.maps[i].size() &&
             expected.maps[i][k] == got.maps[i][k])
        ++k;
      o << "future map m" << i << " differs at point "
        << (k < expected.maps[i].size() ? p.map_domains[i].delinearize(coord_t(k)).str() : "?")
        << ": expected " << (k < expected.maps[i].size() ? hex(expected.maps[i][k]) : "(none)")
        << ", got " << (k < got.maps[i].size() ? hex(got.maps[i][k]) : "(none)");
      return o.str();
    }
  return "";
}

}  // namespace reprise_random

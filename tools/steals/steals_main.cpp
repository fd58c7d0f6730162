// reprise-steals FILE: prints the steal trees a -lg:steal_trace file holds (docs/forkjoin.md):
// per region its working phases as a tree (who took what from whom, and where), and the size
// of the trees per thread.
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "reprise/error.h"
#include "reprise_rt/steal_tree.h"

using reprise::detail::StealPhase;
using reprise::detail::StealTraceFile;
using reprise::detail::StealTree;

namespace {

// The phases taken from (worker, phase), in the order of their place in it.
std::vector<std::pair<int, std::uint32_t>> taken_from(const StealTree& t, int worker,
                                                      std::uint32_t phase) {
  std::vector<std::pair<int, std::uint32_t>> out;
  for (std::size_t w = 0; w < t.phases.size(); ++w)
    for (std::size_t p = 0; p < t.phases[w].size(); ++p) {
      const StealPhase& ph = t.phases[w][p];
      if (ph.victim == worker && ph.victim_phase == phase) out.emplace_back(int(w), p);
    }
  std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
    return t.phases[std::size_t(a.first)][a.second].path <
           t.phases[std::size_t(b.first)][b.second].path;
  });
  return out;
}

// The paper's view of one phase: per level, the steps of the jobs taken from it.
std::string per_level(const StealTree& t, int worker, std::uint32_t phase) {
  std::map<std::size_t, std::vector<std::uint32_t>> levels;
  for (const auto& [w, p] : taken_from(t, worker, phase)) {
    const StealPhase& ph = t.phases[std::size_t(w)][p];
    levels[ph.path.size()].push_back(ph.path.back());
  }
  std::string s;
  for (const auto& [level, steps] : levels) {
    s += fmt::format("{}level {}: {} taken (step", s.empty() ? "" : "; ", level, steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i)
      s += fmt::format("{}{}", i ? "," : " ", steps[i]);
    s += ")";
  }
  return s.empty() ? "nothing taken" : s;
}

void print_phase(const StealTree& t, int worker, std::uint32_t phase, int depth) {
  fmt::print("{:{}}[{}]\n", "", 2 * depth + 6, per_level(t, worker, phase));
  for (const auto& [w, p] : taken_from(t, worker, phase)) {
    const StealPhase& ph = t.phases[std::size_t(w)][p];
    fmt::print("{:{}}at {:<12} -> worker {} phase {} ({} {})\n", "", 2 * depth + 4, ph.path_text(),
               w, p, ph.continuation ? "continuation" : "task",
               ph.delivered ? "handed over" : "stolen");
    if (depth < 64) print_phase(t, w, p, depth + 1);
  }
}

int usage() {
  fmt::print(stderr,
             "usage: reprise-steals FILE [--regions N]\n"
             "  prints the steal trees of a -lg:steal_trace file: the first N regions in full "
             "(default 4), then per-label totals and the size per thread\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  std::size_t show = 4;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--regions" && i + 1 < argc) {
      show = std::size_t(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "-h" || a == "--help") {
      return usage();
    } else if (file.empty() && a[0] != '-') {
      file = a;
    } else {
      fmt::print(stderr, "reprise-steals: unknown argument '{}'\n", a);
      return usage();
    }
  }
  if (file.empty()) return usage();
  try {
    const StealTraceFile f = StealTraceFile::read(file);
    std::size_t phases = 0, bytes = 0, max_bytes = 0;
    std::uint64_t steals = 0, deliveries = 0;
    int threads = 1;
    for (std::size_t i = 0; i < f.regions.size(); ++i) {
      const StealTree& t = f.regions[i].tree;
      threads = std::max(threads, t.threads);
      phases += t.num_phases();
      bytes += t.bytes();
      max_bytes = std::max(max_bytes, t.bytes());
      steals += t.steals();
      deliveries += t.deliveries();
      if (i >= show) continue;
      fmt::print("region {}: {} ({} threads, {}): {} phases, {} stolen, {} handed over, {} bytes\n",
                 i, f.regions[i].label, t.threads, reprise::to_string(t.policy), t.num_phases(),
                 t.steals(), t.deliveries(), t.bytes());
      fmt::print("    worker 0 phase 0 (root)\n");
      print_phase(t, 0, 0, 0);
    }
    if (f.regions.size() > show) fmt::print("({} more regions)\n", f.regions.size() - show);
    fmt::print(
        "total: {} regions, {} phases, {} stolen, {} handed over; {} bytes ({:.3f} KB per "
        "thread over {} threads; largest region {} bytes)\n",
        f.regions.size(), phases, steals, deliveries, bytes, double(bytes) / 1024.0 / threads,
        threads, max_bytes);
  } catch (const reprise::Error& e) {
    fmt::print(stderr, "reprise-steals: {}\n", e.what());
    return 1;
  }
  return 0;
}

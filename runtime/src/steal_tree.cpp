#include "reprise_rt/steal_tree.h"

#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "reprise/error.h"

namespace reprise::detail {

std::string StealPhase::path_text() const {
  std::string s;
  for (std::size_t i = 0; i < path.size(); ++i) s += fmt::format("{}{}", i ? "." : "", path[i]);
  return s;
}

const StealTrie::Entry* StealTrie::find(std::uint32_t step) const {
  for (const Entry& e : entries)
    if (e.step == step) return &e;
  return nullptr;
}

StealTrie::Entry& StealTrie::at(std::uint32_t step) {
  auto it = std::lower_bound(entries.begin(), entries.end(), step,
                             [](const Entry& e, std::uint32_t s) { return e.step < s; });
  if (it == entries.end() || it->step != step) {
    it = entries.insert(it, Entry{});
    it->step = step;
  }
  return *it;
}

std::size_t StealTrie::size() const {
  std::size_t n = entries.size();
  for (const Entry& e : entries)
    if (e.below) n += e.below->size();
  return n;
}

void StealTree::index() {
  tries.clear();
  tries.resize(phases.size());
  for (std::size_t w = 0; w < phases.size(); ++w) tries[w].resize(phases[w].size());
  for (std::size_t w = 0; w < phases.size(); ++w)
    for (std::size_t p = 0; p < phases[w].size(); ++p) {
      const StealPhase& ph = phases[w][p];
      if (ph.victim < 0) continue;  // the root
      if (std::size_t(ph.victim) >= phases.size() ||
          ph.victim_phase >= phases[std::size_t(ph.victim)].size() || ph.path.empty())
        throw Error(
            fmt::format("steal tree: phase {} of worker {} names victim {}/{}, which is "
                        "not in the tree",
                        p, w, ph.victim, ph.victim_phase));
      StealTrie* node = &tries[std::size_t(ph.victim)][ph.victim_phase];
      for (std::size_t l = 0; l + 1 < ph.path.size(); ++l) {
        StealTrie::Entry& e = node->at(ph.path[l]);
        if (!e.below) e.below = std::make_unique<StealTrie>();
        node = e.below.get();
      }
      StealTrie::Entry& leaf = node->at(ph.path.back());
      if (leaf.thief >= 0)
        throw Error(
            fmt::format("steal tree: two phases took the job at one place of worker "
                        "{}'s phase {}",
                        ph.victim, ph.victim_phase));
      leaf.thief = std::int32_t(w);
      leaf.thief_phase = std::uint32_t(p);
    }
}

const StealTrie* StealTree::trie(std::int32_t worker, std::uint32_t phase) const {
  if (worker < 0 || std::size_t(worker) >= tries.size()) return nullptr;
  const auto& t = tries[std::size_t(worker)];
  return phase < t.size() ? &t[phase] : nullptr;
}

std::size_t StealTree::num_phases() const {
  std::size_t n = 0;
  for (const auto& w : phases) n += w.size();
  return n;
}

std::uint64_t StealTree::steals() const {
  std::uint64_t n = 0;
  for (const auto& w : phases)
    for (const StealPhase& p : w) n += p.victim >= 0 && !p.delivered;
  return n;
}

std::uint64_t StealTree::deliveries() const {
  std::uint64_t n = 0;
  for (const auto& w : phases)
    for (const StealPhase& p : w) n += p.delivered;
  return n;
}

std::size_t StealTree::bytes() const {
  std::size_t entries = 0;
  for (const auto& w : tries)
    for (const StealTrie& t : w) entries += t.size();
  return 8 * num_phases() + 8 * entries;
}

namespace {

[[noreturn]] void bad_line(const std::string& line, const char* why) {
  throw Error(fmt::format("steal trace: {} in line '{}'", why, line));
}

std::uint32_t to_u32(const std::string& line, const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 9)
    bad_line(line, "a number is malformed");
  return std::uint32_t(std::stoul(s));
}

}  // namespace

std::string StealTree::text(std::string_view label) const {
  std::string out = fmt::format("region threads={} policy={} phases={} balanced={} label={}\n",
                                threads, to_string(policy), num_phases(), balanced ? 1 : 0, label);
  for (std::size_t w = 0; w < phases.size(); ++w)
    for (std::size_t p = 0; p < phases[w].size(); ++p) {
      const StealPhase& ph = phases[w][p];
      if (ph.victim < 0) {
        out += fmt::format("phase {} {} root\n", w, p);
        continue;
      }
      out += fmt::format("phase {} {} victim={}/{} {} {} path={}\n", w, p, ph.victim,
                         ph.victim_phase, ph.continuation ? "cont" : "child",
                         ph.delivered ? "delivered" : "stolen", ph.path_text());
    }
  return out;
}

StealTree StealTree::parse_region(const std::vector<std::string>& lines, std::string& label) {
  StealTree t;
  if (lines.empty()) throw Error("steal trace: an empty region");
  {
    const std::string& h = lines[0];
    int threads = 0;
    char policy[32] = {};
    if (std::sscanf(h.c_str(), "region threads=%d policy=%31s", &threads, policy) != 2 ||
        threads < 1 || threads > 4096)
      bad_line(h, "the region header is malformed");
    t.threads = threads;
    const std::string pol = policy;
    if (pol == "work-first")
      t.policy = StealPolicy::WorkFirst;
    else if (pol == "help-first")
      t.policy = StealPolicy::HelpFirst;
    else
      bad_line(h, "the policy is unknown");
    t.balanced = h.find(" balanced=0") == std::string::npos;
    const std::size_t at = h.find(" label=");
    label = at == std::string::npos ? std::string() : h.substr(at + 7);
    t.phases.resize(std::size_t(threads));
  }
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    std::istringstream in(line);
    std::string word, w_s, p_s;
    in >> word >> w_s >> p_s;
    if (word != "phase") bad_line(line, "expected 'phase'");
    const std::uint32_t w = to_u32(line, w_s), p = to_u32(line, p_s);
    if (w >= t.phases.size()) bad_line(line, "the worker is beyond the region's threads");
    if (p != t.phases[w].size()) bad_line(line, "phases are out of order");
    StealPhase ph;
    std::string victim;
    in >> victim;
    if (victim == "root") {
      t.phases[w].push_back(std::move(ph));
      continue;
    }
    std::string kind, how, path;
    in >> kind >> how >> path;
    const std::size_t slash = victim.find('/');
    if (victim.rfind("victim=", 0) != 0 || slash == std::string::npos)
      bad_line(line, "the victim is malformed");
    ph.victim = std::int32_t(to_u32(line, victim.substr(7, slash - 7)));
    ph.victim_phase = to_u32(line, victim.substr(slash + 1));
    if (kind != "cont" && kind != "child") bad_line(line, "the kind is neither cont nor child");
    ph.continuation = kind == "cont";
    if (how != "stolen" && how != "delivered") bad_line(line, "expected stolen or delivered");
    ph.delivered = how == "delivered";
    if (path.rfind("path=", 0) != 0 || path.size() == 5) bad_line(line, "the path is missing");
    std::size_t from = 5;
    while (from <= path.size()) {
      const std::size_t dot = std::min(path.find('.', from), path.size());
      ph.path.push_back(to_u32(line, path.substr(from, dot - from)));
      from = dot + 1;
    }
    t.phases[w].push_back(std::move(ph));
  }
  t.index();
  return t;
}

StealTraceFile StealTraceFile::read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("steal trace: cannot open '{}'", path));
  StealTraceFile f;
  std::vector<std::string> region;
  auto flush = [&] {
    if (region.empty()) return;
    Region r;
    r.tree = StealTree::parse_region(region, r.label);
    f.regions.push_back(std::move(r));
    region.clear();
  };
  std::string line;
  bool header = false;
  while (std::getline(in, line)) {
    if (!header) {
      if (line.rfind("# reprise steal trace", 0) != 0)
        throw Error(fmt::format("steal trace: '{}' is not a steal trace (no header line)", path));
      header = true;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("region ", 0) == 0)
      flush();
    else if (region.empty())
      bad_line(line, "a phase before any region");
    region.push_back(line);
  }
  if (!header) throw Error(fmt::format("steal trace: '{}' is empty", path));
  flush();
  return f;
}

}  // namespace reprise::detail

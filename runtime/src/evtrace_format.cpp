#include "reprise_rt/evtrace_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <sstream>

#include "reprise/error.h"

namespace reprise::detail::evtrace {

// ---------------------------------------------------------------------------------------
// Stat

std::uint16_t Stat::bin_of(std::uint64_t v) {
  // Half octaves: the position of the leading bit and the bit after it.
  if (v < 2) return std::uint16_t(v);
  const int lead = 63 - std::countl_zero(v);
  const std::uint64_t half = (v >> (lead - 1)) & 1;
  return std::uint16_t(2 * lead + half);
}

namespace {
// The smallest value of bin b (inverse of bin_of).
double bin_low(std::uint16_t b) {
  if (b < 2) return double(b);
  return std::ldexp(1.0 + double(b % 2) / 2.0, b / 2);
}
}  // namespace

void Stat::add(std::uint64_t v) {
  ++n;
  sum += double(v);
  min = std::min(min, v);
  max = std::max(max, v);
  ++bins[bin_of(v)];
}

void Stat::merge(const Stat& o) {
  if (o.n == 0) return;
  n += o.n;
  sum += o.sum;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
  for (const auto& [b, c] : o.bins) bins[b] += c;
}

double Stat::sample(std::mt19937_64& rng) const {
  if (n == 0) return 0.0;
  if (min == max) return double(min);
  std::uint64_t pick = std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng);
  for (const auto& [b, c] : bins) {
    if (pick >= c) {
      pick -= c;
      continue;
    }
    const double lo = std::max(bin_low(b), double(min));
    const double hi = std::min(bin_low(std::uint16_t(b + 1)), double(max) + 1);
    if (hi <= lo) return lo;
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  }
  return mean();
}

// ---------------------------------------------------------------------------------------
// Rank lists

std::string ranks_text(const RankList& r) {
  std::string out;
  for (std::size_t i = 0; i < r.size();) {
    std::size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", r[i]) : fmt::format("{}-{}", r[i], r[j]);
    i = j + 1;
  }
  return out;
}

RankList parse_ranks(std::string_view text) {
  RankList out;
  std::string s(text);
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    const auto dash = part.find('-');
    const std::uint32_t lo = std::uint32_t(std::stoul(part.substr(0, dash)));
    const std::uint32_t hi =
        dash == std::string::npos ? lo : std::uint32_t(std::stoul(part.substr(dash + 1)));
    for (std::uint32_t r = lo; r <= hi; ++r) out.push_back(r);
  }
  return out;
}

namespace {
RankList joined(const RankList& a, const RankList& b) {
  RankList out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

bool same_offsets(const std::vector<Peer>& a, const std::vector<Peer>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const Peer& x, const Peer& y) { return x.offset == y.offset; });
}

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  return (h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2))) * 0xff51afd7ed558ccdull;
}
}  // namespace

// ---------------------------------------------------------------------------------------
// Variants and nodes

bool Variant::same_shape(const Variant& o) const {
  return points == o.points && copies == o.copies && same_offsets(sends, o.sends) &&
         same_offsets(recvs, o.recvs) && same_offsets(asks, o.asks);
}

void Variant::merge_values(const Variant& o) {
  for (std::size_t i = 0; i < sends.size(); ++i) sends[i].bytes.merge(o.sends[i].bytes);
  for (std::size_t i = 0; i < recvs.size(); ++i) recvs[i].bytes.merge(o.recvs[i].bytes);
  for (std::size_t i = 0; i < asks.size(); ++i) asks[i].bytes.merge(o.asks[i].bytes);
}

void Element::merge_times(const Element& o) {
  issue_ns.merge(o.issue_ns);
  util.merge(o.util);
  point_ns.merge(o.point_ns);
  copy_ns.merge(o.copy_ns);
}

std::uint64_t shape_hash(const Node& n, bool variants_too) {
  std::uint64_t h = mix(0, n.count);
  if (n.is_loop()) {
    for (const Node& b : n.body) h = mix(h, shape_hash(b, variants_too));
    return h;
  }
  h = mix(h, std::hash<std::string>{}(n.element.kind));
  h = mix(h, std::hash<std::string>{}(n.element.task));
  h = mix(h, n.element.trace);
  h = mix(h, n.element.then_waits);
  if (variants_too)
    for (const Variant& v : n.element.variants) {
      h = mix(h, v.points);
      h = mix(h, v.copies);
      for (const Peer& p : v.sends) h = mix(h, std::uint64_t(std::int64_t(p.offset)) * 2 + 1);
      for (const Peer& p : v.recvs) h = mix(h, std::uint64_t(std::int64_t(p.offset)) * 2);
      for (const Peer& p : v.asks) h = mix(h, std::uint64_t(std::int64_t(p.offset)) * 3);
    }
  return h;
}

bool Node::same_shape(const Node& o, bool variants_too) const {
  if (count != o.count) return false;
  if (is_loop()) {
    if (body.size() != o.body.size()) return false;
    for (std::size_t i = 0; i < body.size(); ++i)
      if (!body[i].same_shape(o.body[i], variants_too)) return false;
    return true;
  }
  const Element &a = element, &b = o.element;
  if (a.kind != b.kind || a.task != b.task || a.trace != b.trace || a.then_waits != b.then_waits)
    return false;
  if (!variants_too) return true;
  if (a.variants.size() != b.variants.size()) return false;
  for (std::size_t i = 0; i < a.variants.size(); ++i)
    if (!a.variants[i].same_shape(b.variants[i])) return false;
  return true;
}

void Node::merge_values(const Node& o) {
  if (is_loop()) {
    for (std::size_t i = 0; i < body.size(); ++i) body[i].merge_values(o.body[i]);
    return;
  }
  element.merge_times(o.element);
  for (std::size_t i = 0; i < element.variants.size(); ++i)
    element.variants[i].merge_values(o.element.variants[i]);
}

void Node::merge_ranks(const Node& o) {
  if (is_loop()) {
    for (std::size_t i = 0; i < body.size(); ++i) body[i].merge_ranks(o.body[i]);
    return;
  }
  element.merge_times(o.element);
  for (const Variant& v : o.element.variants) {
    auto it = std::find_if(element.variants.begin(), element.variants.end(),
                           [&](const Variant& mine) { return mine.same_shape(v); });
    if (it == element.variants.end()) {
      element.variants.push_back(v);
    } else {
      it->ranks = joined(it->ranks, v.ranks);
      it->merge_values(v);
    }
  }
}

std::uint64_t Node::ops() const {
  if (!is_loop()) return 1;
  std::uint64_t per = 0;
  for (const Node& b : body) per += b.ops();
  return per * count;
}

std::uint64_t Group::ops() const {
  std::uint64_t n = 0;
  for (const Node& node : seq) n += node.ops();
  return n;
}

std::size_t Node::size() const {
  std::size_t s = 1;
  for (const Node& b : body) s += b.size();
  return s;
}

// ---------------------------------------------------------------------------------------
// Online loop compression

void Compressor::append(Node leaf) {
  leaf.hash = shape_hash(leaf, true);
  seq_.push_back(std::move(leaf));
  while (fold_tail()) {
  }
}

bool Compressor::fold_tail() {
  const std::size_t n = seq_.size();
  // A loop followed by one more iteration of its body: count it.
  for (std::size_t len = 1; len <= window_ && len + 1 <= n; ++len) {
    Node& loop = seq_[n - len - 1];
    if (!loop.is_loop() || loop.body.size() != len) continue;
    bool same = true;
    for (std::size_t i = 0; i < len && same; ++i)
      same = loop.body[i].hash == seq_[n - len + i].hash &&
             loop.body[i].same_shape(seq_[n - len + i], true);
    if (!same) continue;
    for (std::size_t i = 0; i < len; ++i) loop.body[i].merge_values(seq_[n - len + i]);
    ++loop.count;
    loop.hash = shape_hash(loop, true);
    seq_.resize(n - len);
    return true;
  }
  // The last len nodes repeat the len before them: a new loop of two.
  for (std::size_t len = 1; len <= window_ && 2 * len <= n; ++len) {
    if (seq_[n - 1].hash != seq_[n - 1 - len].hash) continue;
    bool same = true;
    for (std::size_t i = 0; i < len && same; ++i)
      same = seq_[n - 2 * len + i].hash == seq_[n - len + i].hash &&
             seq_[n - 2 * len + i].same_shape(seq_[n - len + i], true);
    if (!same) continue;
    Node loop;
    loop.count = 2;
    loop.body.assign(std::make_move_iterator(seq_.begin() + std::ptrdiff_t(n - 2 * len)),
                     std::make_move_iterator(seq_.begin() + std::ptrdiff_t(n - len)));
    for (std::size_t i = 0; i < len; ++i) loop.body[i].merge_values(seq_[n - len + i]);
    loop.hash = shape_hash(loop, true);
    seq_.resize(n - 2 * len);
    seq_.push_back(std::move(loop));
    return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------
// Merging shards

void merge(Trace& a, Trace b) {
  a.shards = std::max(a.shards, b.shards);
  for (auto& [channel, stat] : b.messages) a.messages[channel].merge(stat);
  a.waits_ns.merge(b.waits_ns);
  a.late_records += b.late_records;
  for (Group& gb : b.groups) {
    auto same = [&](const Group& ga) {
      if (ga.seq.size() != gb.seq.size()) return false;
      for (std::size_t i = 0; i < ga.seq.size(); ++i)
        if (!ga.seq[i].same_shape(gb.seq[i], false)) return false;
      return true;
    };
    auto it = std::find_if(a.groups.begin(), a.groups.end(), same);
    if (it == a.groups.end()) {
      a.groups.push_back(std::move(gb));
      continue;
    }
    it->ranks = joined(it->ranks, gb.ranks);
    for (std::size_t i = 0; i < it->seq.size(); ++i) it->seq[i].merge_ranks(gb.seq[i]);
  }
  std::sort(a.groups.begin(), a.groups.end(),
            [](const Group& x, const Group& y) { return x.ranks < y.ranks; });
}

// ---------------------------------------------------------------------------------------
// Text

namespace {
// A histogram is written in at most kMaxRanges ranges of bins: neighbours with the fewest
// values are joined first, so where most values lie keeps its half-octave resolution and the
// file does not grow with the spread of rare values (1,000 iterations record more outliers
// than 100).
constexpr std::size_t kMaxRanges = 6;
struct BinRange {
  std::uint16_t first, last;
  std::uint64_t count;
};
std::vector<BinRange> coarse_bins(const Stat& s) {
  std::vector<BinRange> r;
  for (const auto& [b, c] : s.bins) r.push_back(BinRange{b, b, c});
  while (r.size() > kMaxRanges) {
    std::size_t at = 0;
    for (std::size_t i = 1; i + 1 < r.size(); ++i)
      if (r[i].count + r[i + 1].count < r[at].count + r[at + 1].count) at = i;
    r[at].last = r[at + 1].last;
    r[at].count += r[at + 1].count;
    r.erase(r.begin() + std::ptrdiff_t(at) + 1);
  }
  return r;
}

// bins: with the histogram (values replayed are drawn from it), else a summary.
std::string stat_text(const Stat& s, bool bins = true) {
  if (s.n == 0) return "0";
  if (s.min == s.max) return fmt::format("{}*{}", s.n, s.min);  // one value throughout
  std::string out = fmt::format("{},{:.6g},{},{}", s.n, s.sum, s.min, s.max);
  if (bins && s.min != s.max)
    for (const BinRange& r : coarse_bins(s)) {
      if (r.first == r.last)
        out += fmt::format(",{}:{}", r.first, r.count);
      else
        out += fmt::format(",{}-{}:{}", r.first, r.last, r.count);
    }
  return out;
}

Stat parse_stat(const std::string& text) {
  Stat s;
  if (text == "0") return s;
  if (const auto star = text.find('*'); star != std::string::npos) {
    const std::uint64_t n = std::stoull(text.substr(0, star)),
                        v = std::stoull(text.substr(star + 1));
    if (n == 0) throw Error(fmt::format("evtrace: bad value '{}'", text));
    s.n = n;
    s.min = s.max = v;
    s.sum = double(v) * double(n);
    s.bins[Stat::bin_of(v)] = n;
    return s;
  }
  std::stringstream in(text);
  std::string part;
  std::vector<std::string> parts;
  while (std::getline(in, part, ',')) parts.push_back(part);
  if (parts.size() < 4) throw Error(fmt::format("evtrace: bad value '{}'", text));
  s.n = std::stoull(parts[0]);
  s.sum = std::stod(parts[1]);
  s.min = std::stoull(parts[2]);
  s.max = std::stoull(parts[3]);
  for (std::size_t i = 4; i < parts.size(); ++i) {
    // "bin:count", or "first-last:count" spread evenly over those bins.
    const auto colon = parts[i].find(':');
    if (colon == std::string::npos) throw Error(fmt::format("evtrace: bad bin '{}'", parts[i]));
    const std::string range = parts[i].substr(0, colon);
    const auto dash = range.find('-');
    const auto first = std::uint16_t(std::stoul(range.substr(0, dash)));
    const auto last =
        dash == std::string::npos ? first : std::uint16_t(std::stoul(range.substr(dash + 1)));
    if (last < first) throw Error(fmt::format("evtrace: bad bin '{}'", parts[i]));
    const std::uint64_t count = std::stoull(parts[i].substr(colon + 1)), width = last - first + 1u;
    for (std::uint16_t b = first; b <= last; ++b)
      if (const std::uint64_t c =
              count / width + (std::uint64_t(b - first) < count % width ? 1 : 0);
          c)
        s.bins[b] += c;
  }
  return s;
}

std::string peers_text(const std::vector<Peer>& peers) {
  std::string out;
  for (const Peer& p : peers) {
    if (!out.empty()) out += ';';
    out += fmt::format("{:+}/{}", p.offset, stat_text(p.bytes));
  }
  return out;
}

std::vector<Peer> parse_peers(const std::string& text) {
  std::vector<Peer> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ';')) {
    const auto slash = part.find('/');
    if (slash == std::string::npos) throw Error(fmt::format("evtrace: bad peer '{}'", part));
    Peer p;
    p.offset = std::stoi(part.substr(0, slash));
    p.bytes = parse_stat(part.substr(slash + 1));
    out.push_back(std::move(p));
  }
  return out;
}

// all: the group's shards (a variant of them all is written `*`, and not at all when the op did
// nothing there but its analysis).
void write_nodes(fmt::memory_buffer& out, const std::vector<Node>& nodes, int depth,
                 const RankList& all) {
  const std::string pad(std::size_t(depth) * 2, ' ');
  for (const Node& n : nodes) {
    if (n.is_loop()) {
      fmt::format_to(std::back_inserter(out), "{}loop {}\n", pad, n.count);
      write_nodes(out, n.body, depth + 1, all);
      fmt::format_to(std::back_inserter(out), "{}end\n", pad);
      continue;
    }
    const Element& e = n.element;
    fmt::format_to(std::back_inserter(out), "{}op {} \"{}\" util={}", pad, e.kind, e.task,
                   stat_text(e.util));
    if (e.issue_ns.n) fmt::format_to(std::back_inserter(out), " app={}", stat_text(e.issue_ns));
    if (e.trace) fmt::format_to(std::back_inserter(out), " trace={}", e.trace);
    if (e.then_waits) fmt::format_to(std::back_inserter(out), " waits=1");
    if (e.point_ns.n) fmt::format_to(std::back_inserter(out), " point={}", stat_text(e.point_ns));
    if (e.copy_ns.n) fmt::format_to(std::back_inserter(out), " copy={}", stat_text(e.copy_ns));
    out.push_back('\n');
    for (const Variant& v : e.variants) {
      const bool everywhere = v.ranks == all;
      if (everywhere && !v.points && !v.copies && v.sends.empty() && v.recvs.empty() &&
          v.asks.empty())
        continue;
      fmt::format_to(std::back_inserter(out), "{}  v {}", pad,
                     everywhere ? std::string("*") : ranks_text(v.ranks));
      if (v.points) fmt::format_to(std::back_inserter(out), " pts={}", v.points);
      if (v.copies) fmt::format_to(std::back_inserter(out), " copies={}", v.copies);
      if (!v.sends.empty())
        fmt::format_to(std::back_inserter(out), " send={}", peers_text(v.sends));
      if (!v.recvs.empty())
        fmt::format_to(std::back_inserter(out), " recv={}", peers_text(v.recvs));
      if (!v.asks.empty()) fmt::format_to(std::back_inserter(out), " ask={}", peers_text(v.asks));
      out.push_back('\n');
    }
  }
}
}  // namespace

std::string write(const Trace& t) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "reprise-evtrace 1\nshards {} cpus {} utils {} gpus {}\n",
                 t.shards, t.cpus, t.utils, t.gpus);
  fmt::format_to(std::back_inserter(out), "program {}\n", t.program.empty() ? "-" : t.program);
  for (const auto& [channel, stat] : t.messages)
    fmt::format_to(std::back_inserter(out), "messages {} {}\n", channel, stat_text(stat, false));
  fmt::format_to(std::back_inserter(out), "waits {}\nlate {}\n", stat_text(t.waits_ns, false),
                 t.late_records);
  for (const Group& g : t.groups) {
    fmt::format_to(std::back_inserter(out), "group {}\n", ranks_text(g.ranks));
    write_nodes(out, g.seq, 1, g.ranks);
    fmt::format_to(std::back_inserter(out), "end\n");
  }
  return fmt::to_string(out);
}

namespace {
// An op written without variants did nothing but its analysis on every shard of its group.
void give_variants(std::vector<Node>& nodes, const RankList& all) {
  for (Node& n : nodes) {
    if (n.is_loop())
      give_variants(n.body, all);
    else if (n.element.variants.empty())
      n.element.variants.push_back(Variant{all, 0, 0, {}, {}, {}});
  }
}
}  // namespace

Trace parse(std::string_view text) {
  Trace t;
  std::string s(text);
  std::stringstream in(s);
  std::string line;
  std::size_t line_no = 0;
  std::vector<std::vector<Node>*> stack;  // open sequences: the group's, then loops' bodies
  auto fail = [&](const std::string& why) {
    throw Error(fmt::format("evtrace: line {}: {}: '{}'", line_no, why, line));
  };
  while (std::getline(in, line)) {
    ++line_no;
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    std::stringstream words(line.substr(first));
    std::string word;
    words >> word;
    try {
      if (line_no == 1) {
        if (word != "reprise-evtrace") fail("not an event trace");
        continue;
      }
      if (word == "shards") {
        std::string w;
        words >> t.shards >> w >> t.cpus >> w >> t.utils >> w >> t.gpus;
      } else if (word == "program") {
        words >> t.program;
      } else if (word == "messages") {
        std::string channel, stat;
        words >> channel >> stat;
        t.messages[channel] = parse_stat(stat);
      } else if (word == "waits") {
        std::string stat;
        words >> stat;
        t.waits_ns = parse_stat(stat);
      } else if (word == "late") {
        words >> t.late_records;
      } else if (word == "group") {
        if (!stack.empty()) fail("group inside a group");
        std::string ranks;
        words >> ranks;
        t.groups.push_back(Group{parse_ranks(ranks), {}});
        stack.push_back(&t.groups.back().seq);
      } else if (word == "loop") {
        if (stack.empty()) fail("loop outside a group");
        Node loop;
        words >> loop.count;
        if (loop.count == 0) fail("a loop of no iterations");
        stack.back()->push_back(std::move(loop));
        stack.push_back(&stack.back()->back().body);
      } else if (word == "end") {
        if (stack.empty()) fail("end without a group or loop");
        stack.pop_back();
      } else if (word == "op") {
        if (stack.empty()) fail("op outside a group");
        Node leaf;
        words >> leaf.element.kind;
        const auto q1 = line.find('"'), q2 = line.rfind('"');
        if (q1 == std::string::npos || q2 == q1) fail("no task name");
        leaf.element.task = line.substr(q1 + 1, q2 - q1 - 1);
        std::stringstream rest(line.substr(q2 + 1));
        for (std::string kv; rest >> kv;) {
          const auto eq = kv.find('=');
          if (eq == std::string::npos) fail("expected key=value");
          const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
          if (key == "trace")
            leaf.element.trace = std::uint32_t(std::stoul(value));
          else if (key == "app")
            leaf.element.issue_ns = parse_stat(value);
          else if (key == "waits")
            leaf.element.then_waits = value == "1";
          else if (key == "util")
            leaf.element.util = parse_stat(value);
          else if (key == "point")
            leaf.element.point_ns = parse_stat(value);
          else if (key == "copy")
            leaf.element.copy_ns = parse_stat(value);
          else
            fail("unknown key " + key);
        }
        stack.back()->push_back(std::move(leaf));
      } else if (word == "v") {
        if (stack.empty() || stack.back()->empty() || stack.back()->back().is_loop())
          fail("a variant without its op");
        Variant v;
        std::string ranks;
        words >> ranks;
        v.ranks = ranks == "*" ? t.groups.back().ranks : parse_ranks(ranks);
        for (std::string kv; words >> kv;) {
          const auto eq = kv.find('=');
          if (eq == std::string::npos) fail("expected key=value");
          const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
          if (key == "pts")
            v.points = std::uint32_t(std::stoul(value));
          else if (key == "copies")
            v.copies = std::uint32_t(std::stoul(value));
          else if (key == "send")
            v.sends = parse_peers(value);
          else if (key == "recv")
            v.recvs = parse_peers(value);
          else if (key == "ask")
            v.asks = parse_peers(value);
          else
            fail("unknown key " + key);
        }
        stack.back()->back().element.variants.push_back(std::move(v));
      } else {
        fail("unknown record");
      }
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }
  if (!stack.empty()) throw Error("evtrace: the file ends inside a group or loop");
  for (Group& g : t.groups) give_variants(g.seq, g.ranks);
  return t;
}

Trace read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("evtrace: cannot read '{}'", path));
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str());
}

}  // namespace reprise::detail::evtrace

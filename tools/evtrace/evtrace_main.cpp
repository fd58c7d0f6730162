// reprise-evtrace show FILE: a compressed event trace (-lg:evtrace), readably — the loops of
// the op stream with their iteration counts and, per op, what each set of shards did (points
// and their mean duration, the utility thread's time, data to and from other shards).
// reprise-evtrace size FILE: records, ops they stand for, bytes.
// reprise-evtrace totals FILE: per shard, over the whole run: ops, points, copies, bytes sent
// and received, completions asked (compare a -lg:simulate_shards trace with an mpirun one).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "reprise/error.h"
#include "reprise_rt/evtrace_format.h"

namespace ev = reprise::detail::evtrace;

namespace {

std::string micros(double ns) {
  return ns >= 1e6 ? fmt::format("{:.2f} ms", ns / 1e6) : fmt::format("{:.1f} us", ns / 1e3);
}

std::string peers(const std::vector<ev::Peer>& list) {
  std::string out;
  for (const ev::Peer& p : list)
    out += fmt::format("{}{:+} ({:.0f} B)", out.empty() ? "" : ", ", p.offset, p.bytes.mean());
  return out;
}

std::string asks(const std::vector<ev::Peer>& list) {
  std::string out;
  for (const ev::Peer& p : list)
    out += fmt::format("{}{:+} for {:.1f} completions", out.empty() ? "" : ", ", p.offset,
                       p.bytes.mean());
  return out;
}

void show(const std::vector<ev::Node>& nodes, int depth) {
  const std::string pad(std::size_t(depth) * 2, ' ');
  for (const ev::Node& n : nodes) {
    if (n.is_loop()) {
      fmt::print("{}loop x{} ({} ops per iteration)\n", pad, n.count, n.ops() / n.count);
      show(n.body, depth + 1);
      continue;
    }
    const ev::Element& e = n.element;
    fmt::print("{}{}{}{}: utility {}{}{}\n", pad, e.kind, e.task.empty() ? "" : " '" + e.task + "'",
               e.trace ? fmt::format(" [trace {}]", e.trace) : "", micros(e.util.mean()),
               e.point_ns.n ? ", points of " + micros(e.point_ns.mean()) : "",
               e.copy_ns.n ? ", copies of " + micros(e.copy_ns.mean()) : "");
    for (const ev::Variant& v : e.variants) {
      std::vector<std::string> parts;
      if (v.points) parts.push_back(fmt::format("{} points", v.points));
      if (v.copies) parts.push_back(fmt::format("{} copies", v.copies));
      if (!v.sends.empty()) parts.push_back("sends to " + peers(v.sends));
      if (!v.recvs.empty()) parts.push_back("receives from " + peers(v.recvs));
      if (!v.asks.empty()) parts.push_back("asks " + asks(v.asks));
      std::string line =
          fmt::format("{}  shards {}: {}", pad, ev::ranks_text(v.ranks),
                      parts.empty() ? "analysis only" : fmt::format("{}", fmt::join(parts, ", ")));
      fmt::print("{}\n", line);
    }
  }
}

// Records (nodes, loops included) a group's loops hold.
std::uint64_t record_count(const std::vector<ev::Node>& nodes) {
  std::uint64_t n = 0;
  for (const ev::Node& x : nodes) n += x.size();
  return n;
}

struct Totals {
  std::uint64_t ops = 0, points = 0, copies = 0;
  double sent = 0, received = 0, asks = 0;
};

// Adds what nodes stand for, `times` over, to each shard's totals. Counts in the shape
// (points, copies) are per op; values (bytes, asks) are histograms over every iteration and
// shard already, spread evenly over the variant's shards.
void add_totals(const std::vector<ev::Node>& nodes, std::uint64_t times,
                std::map<std::uint32_t, Totals>& out) {
  for (const ev::Node& n : nodes) {
    if (n.is_loop()) {
      add_totals(n.body, times * n.count, out);
      continue;
    }
    for (const ev::Variant& v : n.element.variants) {
      const double share = 1.0 / double(v.ranks.size());
      auto sum = [&](const std::vector<ev::Peer>& list) {
        double total = 0;
        for (const ev::Peer& p : list) total += p.bytes.sum;
        return total * share;
      };
      for (std::uint32_t r : v.ranks) {
        Totals& t = out[r];
        t.ops += times;
        t.points += times * v.points;
        t.copies += times * v.copies;
        t.sent += sum(v.sends);
        t.received += sum(v.recvs);
        t.asks += sum(v.asks);
      }
    }
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: reprise-evtrace show FILE   the trace's loops and ops, readably\n"
               "       reprise-evtrace size FILE   its records, the ops they stand for, bytes\n"
               "       reprise-evtrace totals FILE per shard: ops, points, copies, bytes sent and\n"
               "                                   received, completions asked\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return usage();
  const std::string cmd = argv[1], path = argv[2];
  try {
    const ev::Trace t = ev::read_file(path);
    if (cmd == "size") {
      std::uint64_t records = 0, ops = 0;
      for (const ev::Group& g : t.groups) {
        records += record_count(g.seq);
        ops += g.ops();
      }
      const std::string text = ev::write(t);
      fmt::print("shards={} groups={} records={} ops={} bytes={}\n", t.shards, t.groups.size(),
                 records, ops, text.size());
      return 0;
    }
    if (cmd == "totals") {
      std::map<std::uint32_t, Totals> totals;
      for (const ev::Group& g : t.groups) add_totals(g.seq, 1, totals);
      for (const auto& [rank, x] : totals)
        fmt::print(
            "shard={} ops={} points={} copies={} sent_bytes={:.0f} received_bytes={:.0f} "
            "asks={:.0f}\n",
            rank, x.ops, x.points, x.copies, x.sent, x.received, x.asks);
      return 0;
    }
    if (cmd != "show") return usage();
    fmt::print("{}: {} shard(s) of {} CPU(s), {} utility thread(s), {} GPU(s)\n", t.program,
               t.shards, t.cpus, t.utils, t.gpus);
    for (const auto& [channel, s] : t.messages)
      fmt::print("messages '{}': {:.0f} per shard on average (min {}, max {})\n", channel, s.mean(),
                 s.min, s.max);
    if (t.waits_ns.n)
      fmt::print("application waits: {} of {} on average\n", t.waits_ns.n,
                 micros(t.waits_ns.mean()));
    for (const ev::Group& g : t.groups) {
      fmt::print("shards {}: {} ops in {} records\n", ev::ranks_text(g.ranks), g.ops(),
                 record_count(g.seq));
      show(g.seq, 1);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reprise-evtrace: %s\n", e.what());
    return 1;
  }
}

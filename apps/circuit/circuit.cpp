// Legion's circuit example on Reprise's public API (our own code): a random circuit of nodes
// and wires cut into pieces. Each iteration
//   calc_new_currents  (per piece: wire currents and inner voltages from the end voltages),
//   distribute_charge  (per piece: every wire adds charge to its end nodes — a Sum reduction
//                       into the piece's private, shared and ghost nodes),
//   update_voltages    (per piece: its own nodes take their charge and leak).
// Nodes are private (only their piece's wires touch them) or shared (another piece's wire
// does); a piece's ghost nodes are the shared nodes of other pieces its wires reach.
//
// Reprise has no sparse index spaces or dependent partitioning yet (issue 24): the nodes are
// renumbered on the host so that each piece's private and shared nodes are contiguous (all
// private nodes first, by piece, then all shared nodes, by piece), and a ghost piece is the
// bounding box of the shared nodes it needs — more nodes than needed; the app reports both.
// Verified bit for bit against a serial reference that folds each piece's charge
// contributions in piece order, as the runtime folds reduction instances in launch order.
//
// Flags (Legion's): -l loops  -p pieces  -npp nodes per piece  -wpp wires per piece
//                   -pct percent of wires within their piece  -s seed;  --trace none|manual|auto
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "app_support.h"

using namespace reprise;

namespace {

enum : TaskID { T_INIT_NODES = 1, T_INIT_WIRES, T_CURRENTS, T_CHARGE, T_VOLTAGES, T_CHECKSUM };
// Node fields.
enum : FieldID { N_CAP = 0, N_LEAK, N_CHARGE, N_VOLT };
// Wire fields: end nodes, parameters, current per segment, voltage of the inner points.
enum : FieldID { W_IN = 0, W_OUT, W_L, W_R, W_C, W_I0, W_I1, W_I2, W_V0, W_V1 };
constexpr int kSegments = 3;
constexpr int kSteps = 4;  // sub-steps of calc_new_currents
constexpr double kDt = 1e-6;

struct Params {
  int loops = 10;
  int pieces = 4;
  int npp = 100;
  int wpp = 400;
  int pct = 95;
  std::uint64_t seed = 12345;
  std::string trace = "auto";
};

// The generated circuit (the same on every rank: same seed). Node ids are the renumbered
// ones: privates of piece 0, 1, … then shareds of piece 0, 1, ….
struct Circuit {
  std::vector<std::int64_t> in, out;                          // per wire
  std::vector<Domain> private_rect, shared_rect, ghost_rect;  // per piece
  std::int64_t nodes = 0;
  std::int64_t ghost_needed = 0, ghost_covered = 0;  // summed over pieces
};
const Circuit* g_circuit = nullptr;  // read by init_wires (every rank builds its own)

Domain range(std::int64_t lo, std::int64_t n) {
  return Domain(Rect<1>({lo}, {lo + n - 1}));
}

Circuit generate(const Params& p) {
  std::mt19937_64 rng(p.seed);
  const std::int64_t npp = p.npp, total = std::int64_t(p.pieces) * npp;
  std::vector<std::int64_t> in, out;  // original ids: piece * npp + k
  for (int piece = 0; piece < p.pieces; ++piece)
    for (int w = 0; w < p.wpp; ++w) {
      in.push_back(piece * npp + std::int64_t(rng() % std::uint64_t(npp)));
      int to = piece;
      if (p.pieces > 1 && int(rng() % 100) >= p.pct)
        to = int((piece + 1 + rng() % std::uint64_t(p.pieces - 1)) % std::uint64_t(p.pieces));
      out.push_back(to * npp + std::int64_t(rng() % std::uint64_t(npp)));
    }
  // A node is shared when a wire of another piece reaches it.
  std::vector<bool> shared(static_cast<std::size_t>(total), false);
  for (std::size_t w = 0; w < out.size(); ++w)
    if (out[w] / npp != std::int64_t(w) / p.wpp) shared[std::size_t(out[w])] = true;
  Circuit c;
  std::vector<std::int64_t> renamed(static_cast<std::size_t>(total));
  std::int64_t next = 0;
  for (int piece = 0; piece < p.pieces; ++piece) {
    const std::int64_t first = next;
    for (std::int64_t k = piece * npp; k < (piece + 1) * npp; ++k)
      if (!shared[std::size_t(k)]) renamed[std::size_t(k)] = next++;
    c.private_rect.push_back(range(first, next - first));
  }
  for (int piece = 0; piece < p.pieces; ++piece) {
    const std::int64_t first = next;
    for (std::int64_t k = piece * npp; k < (piece + 1) * npp; ++k)
      if (shared[std::size_t(k)]) renamed[std::size_t(k)] = next++;
    c.shared_rect.push_back(range(first, next - first));
  }
  c.nodes = next;
  for (std::size_t w = 0; w < in.size(); ++w) {
    c.in.push_back(renamed[std::size_t(in[w])]);
    c.out.push_back(renamed[std::size_t(out[w])]);
  }
  for (int piece = 0; piece < p.pieces; ++piece) {
    std::vector<std::int64_t> needed;
    for (int w = 0; w < p.wpp; ++w) {
      const std::size_t at = std::size_t(piece) * std::size_t(p.wpp) + std::size_t(w);
      if (out[at] / npp != piece) needed.push_back(c.out[at]);
    }
    std::sort(needed.begin(), needed.end());
    needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
    if (needed.empty()) {
      c.ghost_rect.push_back(Domain(Rect<1>({1}, {0})));
      continue;
    }
    c.ghost_rect.push_back(Domain(Rect<1>({needed.front()}, {needed.back()})));
    c.ghost_needed += std::int64_t(needed.size());
    c.ghost_covered += needed.back() - needed.front() + 1;
  }
  return c;
}

double node_cap(std::int64_t n) {
  return 1.0 + double((n * 7919) % 97) / 97.0;
}
double node_leak(std::int64_t n) {
  return 0.001 * double((n * 104729) % 13);
}
double wire_param(std::int64_t w, int which) {
  return 0.5 + double((w * 31 + which * 17) % 29) / 29.0;
}

// The voltage of node n, from whichever of a piece's node requirements holds it (the first).
struct NodeView {
  Accessor<const double, 1> v[3];
  Domain rect[3];
  double operator()(std::int64_t n) const {
    for (int k = 0; k < 3; ++k)
      if (rect[k].contains(DomainPoint(n))) return v[k][Point<1>(n)];
    return 0.0;  // (not reached: a wire's nodes are the piece's private, shared or ghost ones)
  }
};

// One wire's update: the arithmetic the serial reference repeats.
void wire_step(double v_in, double v_out, double l, double r, double c, double cur[kSegments],
               double volt[kSegments - 1]) {
  for (int s = 0; s < kSteps; ++s) {
    for (int i = 0; i < kSegments; ++i) {
      const double a = i == 0 ? v_in : volt[i - 1];
      const double b = i == kSegments - 1 ? v_out : volt[i];
      cur[i] += kDt / l * ((a - b) - r * cur[i]);
    }
    for (int i = 0; i < kSegments - 1; ++i) volt[i] += kDt / c * (cur[i] - cur[i + 1]);
  }
}

// Every field of a node requirement (init_nodes and update_voltages use them all).
struct NodeFields {
  NodeFields(TaskContext& tc, int req)
      : cap(tc.accessor<double, 1>(req, N_CAP)),
        leak(tc.accessor<double, 1>(req, N_LEAK)),
        charge(tc.accessor<double, 1>(req, N_CHARGE)),
        volt(tc.accessor<double, 1>(req, N_VOLT)),
        rect(tc.domain(req)) {}
  Accessor<double, 1> cap, leak, charge, volt;
  Rect<1> rect;
};

void init_nodes(TaskContext& tc) {
  for (int req = 0; req < 2; ++req) {
    NodeFields f(tc, req);
    for (auto n : f.rect) {
      f.cap[n] = node_cap(n[0]);
      f.leak[n] = node_leak(n[0]);
      f.charge[n] = 0.0;
      f.volt[n] = double(n[0] % 11) - 5.0;
    }
  }
}

void init_wires(TaskContext& tc) {
  const Circuit& c = *g_circuit;
  auto in = tc.accessor<std::int64_t, 1>(0, W_IN);
  auto out = tc.accessor<std::int64_t, 1>(0, W_OUT);
  FieldID params[] = {W_L, W_R, W_C, W_I0, W_I1, W_I2, W_V0, W_V1};
  for (auto w : Rect<1>(tc.domain(0))) {
    in[w] = c.in[std::size_t(w[0])];
    out[w] = c.out[std::size_t(w[0])];
    for (int k = 0; k < 3; ++k) tc.accessor<double, 1>(0, params[k])[w] = wire_param(w[0], k);
    for (int k = 3; k < 8; ++k) tc.accessor<double, 1>(0, params[k])[w] = 0.0;
  }
}

// req 0: wires (in, out, L, R, C) RO; req 1: wires (currents, inner voltages) RW;
// reqs 2-4: private, shared, ghost nodes' voltages RO.
void calc_new_currents(TaskContext& tc) {
  auto in = tc.accessor<const std::int64_t, 1>(0, W_IN);
  auto out = tc.accessor<const std::int64_t, 1>(0, W_OUT);
  auto l = tc.accessor<const double, 1>(0, W_L);
  auto r = tc.accessor<const double, 1>(0, W_R);
  auto c = tc.accessor<const double, 1>(0, W_C);
  Accessor<double, 1> cur[kSegments] = {tc.accessor<double, 1>(1, W_I0),
                                        tc.accessor<double, 1>(1, W_I1),
                                        tc.accessor<double, 1>(1, W_I2)};
  Accessor<double, 1> inner[kSegments - 1] = {tc.accessor<double, 1>(1, W_V0),
                                              tc.accessor<double, 1>(1, W_V1)};
  NodeView v;
  for (int k = 0; k < 3; ++k) {
    v.v[k] = tc.accessor<const double, 1>(2 + k, N_VOLT);
    v.rect[k] = tc.domain(2 + k);
  }
  for (auto w : Rect<1>(tc.domain(0))) {
    double i_[kSegments], v_[kSegments - 1];
    for (int k = 0; k < kSegments; ++k) i_[k] = cur[k][w];
    for (int k = 0; k < kSegments - 1; ++k) v_[k] = inner[k][w];
    wire_step(v(in[w]), v(out[w]), l[w], r[w], c[w], i_, v_);
    for (int k = 0; k < kSegments; ++k) cur[k][w] = i_[k];
    for (int k = 0; k < kSegments - 1; ++k) inner[k][w] = v_[k];
  }
}

// req 0: wires (in, out, first and last current) RO; reqs 1-3: private, shared, ghost
// nodes' charge, Sum reductions.
void distribute_charge(TaskContext& tc) {
  auto in = tc.accessor<const std::int64_t, 1>(0, W_IN);
  auto out = tc.accessor<const std::int64_t, 1>(0, W_OUT);
  auto first = tc.accessor<const double, 1>(0, W_I0);
  auto last = tc.accessor<const double, 1>(0, W_I2);
  Reducer<double, 1> red[3] = {tc.reducer<double, 1>(1, N_CHARGE),
                               tc.reducer<double, 1>(2, N_CHARGE),
                               tc.reducer<double, 1>(3, N_CHARGE)};
  Domain rect[3] = {tc.domain(1), tc.domain(2), tc.domain(3)};
  auto add = [&](std::int64_t n, double q) {
    for (int k = 0; k < 3; ++k)
      if (rect[k].contains(DomainPoint(n))) return red[k].reduce(Point<1>(n), q);
  };
  for (auto w : Rect<1>(tc.domain(0))) {
    add(in[w], -kDt * first[w]);
    add(out[w], kDt * last[w]);
  }
}

// reqs 0-1: private and shared nodes, RW.
void update_voltages(TaskContext& tc) {
  for (int req = 0; req < 2; ++req) {
    NodeFields f(tc, req);
    for (auto n : f.rect) {
      f.volt[n] = (f.volt[n] + f.charge[n] / f.cap[n]) * (1.0 - f.leak[n]);
      f.charge[n] = 0.0;
    }
  }
}

std::uint64_t mix(std::uint64_t h, double x) {
  std::uint64_t bits;
  std::memcpy(&bits, &x, 8);
  return (h ^ bits) * 1099511628211ull;
}

std::uint64_t checksum(TaskContext& tc) {
  auto volt = tc.accessor<const double, 1>(0, N_VOLT);
  std::uint64_t h = 1469598103934665603ull;
  for (auto n : Rect<1>(tc.domain(0))) h = mix(h, volt[n]);
  return h;
}

// The same computation, piece by piece; charge contributions are summed per piece first
// (each piece's reduction instance starts at 0) and then added to the node in piece order.
std::uint64_t serial_reference(const Params& p, const Circuit& c) {
  const std::size_t nodes = std::size_t(c.nodes), wires = c.in.size();
  std::vector<double> cap(nodes), leak(nodes), charge(nodes, 0.0), volt(nodes);
  for (std::size_t n = 0; n < nodes; ++n) {
    cap[n] = node_cap(std::int64_t(n));
    leak[n] = node_leak(std::int64_t(n));
    volt[n] = double(std::int64_t(n) % 11) - 5.0;
  }
  std::vector<std::array<double, kSegments>> cur(wires);
  std::vector<std::array<double, kSegments - 1>> inner(wires);
  for (auto& a : cur) a.fill(0.0);
  for (auto& a : inner) a.fill(0.0);
  std::vector<double> partial(nodes);
  std::vector<bool> touched(nodes);
  for (int it = 0; it < p.loops; ++it) {
    for (std::size_t w = 0; w < wires; ++w)
      wire_step(volt[std::size_t(c.in[w])], volt[std::size_t(c.out[w])],
                wire_param(std::int64_t(w), 0), wire_param(std::int64_t(w), 1),
                wire_param(std::int64_t(w), 2), cur[w].data(), inner[w].data());
    for (int piece = 0; piece < p.pieces; ++piece) {
      std::fill(partial.begin(), partial.end(), 0.0);
      std::fill(touched.begin(), touched.end(), false);
      for (int k = 0; k < p.wpp; ++k) {
        const std::size_t w = std::size_t(piece) * std::size_t(p.wpp) + std::size_t(k);
        const std::size_t a = std::size_t(c.in[w]), b = std::size_t(c.out[w]);
        partial[a] += -kDt * cur[w][0];
        touched[a] = true;
        partial[b] += kDt * cur[w][kSegments - 1];
        touched[b] = true;
      }
      for (std::size_t n = 0; n < nodes; ++n)
        if (touched[n]) charge[n] += partial[n];
    }
    for (std::size_t n = 0; n < nodes; ++n) {
      volt[n] = (volt[n] + charge[n] / cap[n]) * (1.0 - leak[n]);
      charge[n] = 0.0;
    }
  }
  std::uint64_t h = 1469598103934665603ull;
  for (double v : volt) h = mix(h, v);
  return h;
}

const char* kUsage =
    "usage: circuit [-l loops] [-p pieces] [-npp nodes] [-wpp wires] [-pct percent] [-s seed]\n"
    "               [--trace none|manual|auto] [runtime flags, see -lg:help]\n"
    "  Legion's circuit example: a random circuit in pieces; -pct is the percentage of a\n"
    "  piece's wires whose both ends are its own nodes. Verified against a serial reference.\n";

[[noreturn]] void usage(const std::string& message) {
  apps::exit_with_usage("circuit", kUsage, message);
}

Params parse(const std::vector<std::string>& args) {
  Params p;
  apps::ArgReader in(args, usage);
  while (in.next()) {
    const std::string& a = in.flag();
    if (a == "-l")
      p.loops = int(in.integer(1));
    else if (a == "-p")
      p.pieces = int(in.integer(1));
    else if (a == "-npp")
      p.npp = int(in.integer(1));
    else if (a == "-wpp")
      p.wpp = int(in.integer(1));
    else if (a == "-pct")
      p.pct = int(in.integer(0));
    else if (a == "-s")
      p.seed = std::uint64_t(in.integer(0));
    else if (a == "--trace")
      p.trace = in.value();
    else
      usage("unknown argument " + a);
  }
  if (p.pct > 100) usage("-pct is a percentage (0..100)");
  if (!apps::valid_trace_mode(p.trace)) usage("--trace must be none, manual or auto");
  return p;
}

void top_level(Context& ctx, const Params& p, const Circuit& c) {
  Region nodes = ctx.create_region(
      ctx.create_index_space(range(0, c.nodes)),
      ctx.create_field_space({{N_CAP, 8}, {N_LEAK, 8}, {N_CHARGE, 8}, {N_VOLT, 8}}));
  const std::int64_t nwires = std::int64_t(c.in.size());
  Region wires = ctx.create_region(ctx.create_index_space(range(0, nwires)),
                                   ctx.create_field_space({{W_IN, 8},
                                                           {W_OUT, 8},
                                                           {W_L, 8},
                                                           {W_R, 8},
                                                           {W_C, 8},
                                                           {W_I0, 8},
                                                           {W_I1, 8},
                                                           {W_I2, 8},
                                                           {W_V0, 8},
                                                           {W_V1, 8}}));
  auto pieces = ctx.create_index_space(Rect<1>({0}, {p.pieces - 1}));
  auto by_piece = [&](const std::vector<Domain>& rects) {
    return [&rects](const DomainPoint& color) { return rects[std::size_t(color[0])]; };
  };
  Partition private_nodes = ctx.partition_by_rects(nodes, pieces, by_piece(c.private_rect));
  Partition shared_nodes = ctx.partition_by_rects(nodes, pieces, by_piece(c.shared_rect));
  Partition ghost_nodes = ctx.partition_by_rects(nodes, pieces, by_piece(c.ghost_rect));
  Partition wire_pieces = ctx.partition_equal(wires, pieces);
  const auto id = Projection::identity();

  IndexLauncher init_n(T_INIT_NODES, pieces);
  init_n.add(private_nodes, id, Privilege::WriteDiscard, {N_CAP, N_LEAK, N_CHARGE, N_VOLT});
  init_n.add(shared_nodes, id, Privilege::WriteDiscard, {N_CAP, N_LEAK, N_CHARGE, N_VOLT});
  ctx.execute(init_n);
  IndexLauncher init_w(T_INIT_WIRES, pieces);
  init_w.add(wire_pieces, id, Privilege::WriteDiscard,
             {W_IN, W_OUT, W_L, W_R, W_C, W_I0, W_I1, W_I2, W_V0, W_V1});
  ctx.execute(init_w);

  IndexLauncher currents(T_CURRENTS, pieces);
  currents.add(wire_pieces, id, Privilege::ReadOnly, {W_IN, W_OUT, W_L, W_R, W_C});
  currents.add(wire_pieces, id, Privilege::ReadWrite, {W_I0, W_I1, W_I2, W_V0, W_V1});
  for (const Partition* part : {&private_nodes, &shared_nodes, &ghost_nodes})
    currents.add(*part, id, Privilege::ReadOnly, {N_VOLT});
  IndexLauncher charge(T_CHARGE, pieces);
  charge.add(wire_pieces, id, Privilege::ReadOnly, {W_IN, W_OUT, W_I0, W_I2});
  for (const Partition* part : {&private_nodes, &shared_nodes, &ghost_nodes})
    charge.add_reduction(*part, id, ReductionOp::Sum, {N_CHARGE});
  IndexLauncher voltages(T_VOLTAGES, pieces);
  for (const Partition* part : {&private_nodes, &shared_nodes})
    voltages.add(*part, id, Privilege::ReadWrite, {N_CAP, N_LEAK, N_CHARGE, N_VOLT});

  const bool manual = p.trace == "manual";
  const apps::TimedWindow window = apps::timed(ctx, [&] {
    for (int it = 0; it < p.loops; ++it) {
      if (manual) ctx.begin_trace(1);
      ctx.execute(currents);
      ctx.execute(charge);
      ctx.execute(voltages);
      if (manual) ctx.end_trace(1);
    }
  });
  TaskLauncher sum(T_CHECKSUM);
  sum.add(nodes, Privilege::ReadOnly, {N_VOLT});
  const std::uint64_t got = ctx.execute(sum).get<std::uint64_t>();
  const bool verified = got == serial_reference(p, c);
  if (ctx.shard() == 0)
    std::printf(
        "circuit: %d pieces, %lld nodes, %zu wires, %d loops: %s; ghost pieces cover %lld "
        "nodes for %lld needed (bounding boxes: no sparse index spaces yet)\n",
        p.pieces, (long long)c.nodes, c.in.size(), p.loops,
        verified ? "matches the serial reference bit for bit" : "DIFFERS from the serial reference",
        (long long)c.ghost_covered, (long long)c.ghost_needed);
  apps::print_result(
      "circuit", p.trace, ctx, p.loops, window, double(p.loops) * 3 * p.pieces, got, verified,
      "pieces=" + std::to_string(p.pieces) + " nodes=" + std::to_string(c.nodes) +
          " wires=" + std::to_string(nwires) + " ghost_nodes=" + std::to_string(c.ghost_covered) +
          " ghost_needed=" + std::to_string(c.ghost_needed));
  if (!verified) throw Error("circuit: verification failed");
}

}  // namespace

int main(int argc, char** argv) {
  const Params p = parse(app_args(argc, argv));
  const Circuit c = generate(p);
  g_circuit = &c;
  TaskRegistry::add(T_INIT_NODES, "init_nodes", {cpu(init_nodes)});
  TaskRegistry::add(T_INIT_WIRES, "init_wires", {cpu(init_wires)});
  TaskRegistry::add(T_CURRENTS, "calc_new_currents", {cpu(calc_new_currents)});
  TaskRegistry::add(T_CHARGE, "distribute_charge", {cpu(distribute_charge)});
  TaskRegistry::add(T_VOLTAGES, "update_voltages", {cpu(update_voltages)});
  TaskRegistry::add(T_CHECKSUM, "checksum", {cpu(checksum)});
  return start(
      argc, argv, [&](Context& ctx) { top_level(ctx, p, c); }, apps::trace_mode_flags(p.trace));
}

// Legion's circuit example on Reprise's public API (our own code): a random circuit of nodes
// and wires cut into pieces. Each iteration
//   calc_new_currents  (per piece: wire currents and inner voltages from the end voltages),
//   distribute_charge  (per piece: every wire adds charge to its end nodes — a Sum reduction
//                       into the piece's private, shared and ghost nodes),
//   update_voltages    (per piece: its own nodes take their charge and leak).
// Nodes are numbered piece by piece (node n belongs to piece n / npp) and partitioned from
// the data, as Legion's circuit does, with dependent partitioning (issue 24):
//   owned  = partition_by_field(nodes, N_PIECE)           (each node's piece, written by a task)
//   wires  = partition_by_preimage(owned, wires, W_IN)    (a wire goes with its in node)
//   ghost  = image(wires, W_IN) ∪ image(wires, W_OUT) − owned   (sparse: exactly the other
//            pieces' nodes that a piece's wires reach)
// A piece's tasks take its owned nodes and its ghost nodes; the runtime moves exactly those.
// Verified bit for bit against a serial reference that folds each piece's charge
// contributions in piece order, as the runtime folds reduction instances in launch order.
//
// Flags (Legion's): -l loops  -p pieces  -npp nodes per piece  -wpp wires per piece
//                   -pct percent of wires within their piece  -s seed;  --trace none|manual|auto
//                   (ours: -window W, the pieces a wire may leave to, W either side on a ring)
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "app_support.h"

using namespace reprise;

namespace {

enum : TaskID {
  T_INIT_NODES = 1,
  T_INIT_WIRES,
  T_CURRENTS,
  T_CHARGE,
  T_VOLTAGES,
  T_CHECKSUM,
  T_COUNT
};
// Node fields (N_PIECE: the piece a node belongs to, which partition_by_field reads).
enum : FieldID { N_CAP = 0, N_LEAK, N_CHARGE, N_VOLT, N_PIECE };
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
  int window = 0;  // -window W: a wire leaving its piece reaches one of the W pieces either side
  std::uint64_t seed = 12345;
  std::string trace = "auto";
  bool bounding_ghosts = false;  // -ghosts bounding: each ghost piece's bounding box instead
};

// The generated circuit (the same on every rank: same seed). Node n belongs to piece n / npp;
// wire w to piece w / wpp, and its in node is one of that piece's.
struct Circuit {
  std::vector<std::int64_t> in, out;  // per wire
  std::int64_t nodes = 0, npp = 0;
  std::int64_t ghost_needed = 0;  // other pieces' nodes the pieces' wires reach, summed
};
const Circuit* g_circuit = nullptr;  // read by init_wires (every rank builds its own)

Domain range(std::int64_t lo, std::int64_t n) {
  return Domain(Rect<1>({lo}, {lo + n - 1}));
}

Circuit generate(const Params& p) {
  std::mt19937_64 rng(p.seed);
  Circuit c;
  c.npp = p.npp;
  c.nodes = std::int64_t(p.pieces) * c.npp;
  for (int piece = 0; piece < p.pieces; ++piece)
    for (int w = 0; w < p.wpp; ++w) {
      c.in.push_back(piece * c.npp + std::int64_t(rng() % std::uint64_t(c.npp)));
      int to = piece;
      if (p.pieces > 1 && int(rng() % 100) >= p.pct) {
        if (p.window > 0 && 2 * std::int64_t(p.window) < p.pieces - 1) {
          // (A piece's neighbours on a ring: a circuit laid out with locality, whose pieces
          // each meet a fixed number of others however many there are — for weak scaling.)
          const int k = 1 + int(rng() % std::uint64_t(2 * p.window));
          const int offset = k <= p.window ? k : p.window - k;  // 1 .. W, then -1 .. -W
          to = (piece + offset + p.pieces) % p.pieces;
        } else {
          to = int((piece + 1 + rng() % std::uint64_t(p.pieces - 1)) % std::uint64_t(p.pieces));
        }
      }
      c.out.push_back(to * c.npp + std::int64_t(rng() % std::uint64_t(c.npp)));
    }
  for (int piece = 0; piece < p.pieces; ++piece) {
    std::vector<std::int64_t> needed;
    for (int w = 0; w < p.wpp; ++w) {
      const std::size_t at = std::size_t(piece) * std::size_t(p.wpp) + std::size_t(w);
      if (c.out[at] / c.npp != piece) needed.push_back(c.out[at]);
    }
    std::sort(needed.begin(), needed.end());
    c.ghost_needed += std::unique(needed.begin(), needed.end()) - needed.begin();
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

// The voltage of node n: the piece's own nodes (one range) or its ghost nodes (the rest of
// what its wires reach).
struct NodeView {
  Accessor<const double, 1> own, ghost;
  Domain own_rect;
  double operator()(std::int64_t n) const {
    return own_rect.contains(DomainPoint(n)) ? own[Point<1>(n)] : ghost[Point<1>(n)];
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
  NodeFields f(tc, 0);
  auto piece = tc.accessor<std::int64_t, 1>(0, N_PIECE);
  for (auto n : f.rect) {
    f.cap[n] = node_cap(n[0]);
    f.leak[n] = node_leak(n[0]);
    f.charge[n] = 0.0;
    f.volt[n] = double(n[0] % 11) - 5.0;
    piece[n] = n[0] / g_circuit->npp;
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
// reqs 2-3: owned and ghost nodes' voltages RO.
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
  const NodeView v{tc.accessor<const double, 1>(2, N_VOLT), tc.accessor<const double, 1>(3, N_VOLT),
                   tc.domain(2)};
  for (auto w : Rect<1>(tc.domain(0))) {
    double i_[kSegments], v_[kSegments - 1];
    for (int k = 0; k < kSegments; ++k) i_[k] = cur[k][w];
    for (int k = 0; k < kSegments - 1; ++k) v_[k] = inner[k][w];
    wire_step(v(in[w]), v(out[w]), l[w], r[w], c[w], i_, v_);
    for (int k = 0; k < kSegments; ++k) cur[k][w] = i_[k];
    for (int k = 0; k < kSegments - 1; ++k) inner[k][w] = v_[k];
  }
}

// req 0: wires (in, out, first and last current) RO; reqs 1-2: owned and ghost nodes'
// charge, Sum reductions.
void distribute_charge(TaskContext& tc) {
  auto in = tc.accessor<const std::int64_t, 1>(0, W_IN);
  auto out = tc.accessor<const std::int64_t, 1>(0, W_OUT);
  auto first = tc.accessor<const double, 1>(0, W_I0);
  auto last = tc.accessor<const double, 1>(0, W_I2);
  const Reducer<double, 1> own = tc.reducer<double, 1>(1, N_CHARGE);
  const Reducer<double, 1> ghost = tc.reducer<double, 1>(2, N_CHARGE);
  const Domain own_rect = tc.domain(1);
  auto add = [&](std::int64_t n, double q) {
    (own_rect.contains(DomainPoint(n)) ? own : ghost).reduce(Point<1>(n), q);
  };
  for (auto w : Rect<1>(tc.domain(0))) {
    add(in[w], -kDt * first[w]);
    add(out[w], kDt * last[w]);
  }
}

// req 0: owned nodes, RW.
void update_voltages(TaskContext& tc) {
  NodeFields f(tc, 0);
  for (auto n : f.rect) {
    f.volt[n] = (f.volt[n] + f.charge[n] / f.cap[n]) * (1.0 - f.leak[n]);
    f.charge[n] = 0.0;
  }
}

// How many nodes a piece holds (the points of its rectangles).
std::int64_t count_nodes(TaskContext& tc) {
  std::int64_t n = 0;
  for (const Domain& d : tc.rects(0)) n += d.volume();
  return n;
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
    "               [-window W] [--trace none|manual|auto] [-ghosts exact|bounding]\n"
    "               [runtime flags, see -lg:help]\n"
    "  Legion's circuit example: a random circuit in pieces; -pct is the percentage of a\n"
    "  piece's wires whose both ends are its own nodes; the others reach any other piece, or\n"
    "  with -window W one of the W pieces either side (on a ring: a fixed number of neighbours\n"
    "  per piece, for weak scaling). Verified against a serial reference.\n"
    "  -ghosts bounding: ghost pieces are the bounding boxes of the exact (sparse) ones, the\n"
    "  workaround before sparse pieces, kept for comparison.\n";

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
    else if (a == "-window")
      p.window = int(in.integer(0));
    else if (a == "-s")
      p.seed = std::uint64_t(in.integer(0));
    else if (a == "--trace")
      p.trace = in.value();
    else if (a == "-ghosts") {
      const std::string g = in.value();
      if (g != "exact" && g != "bounding") usage("-ghosts must be exact or bounding");
      p.bounding_ghosts = g == "bounding";
    } else
      usage("unknown argument " + a);
  }
  if (p.pct > 100) usage("-pct is a percentage (0..100)");
  if (!apps::valid_trace_mode(p.trace)) usage("--trace must be none, manual or auto");
  return p;
}

void top_level(Context& ctx, const Params& p, const Circuit& c) {
  Region nodes = ctx.create_region(
      ctx.create_index_space(range(0, c.nodes)),
      ctx.create_field_space({{N_CAP, 8}, {N_LEAK, 8}, {N_CHARGE, 8}, {N_VOLT, 8}, {N_PIECE, 8}}));
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
  const auto id = Projection::identity();
  // The generator's data enters through blocks of the regions; the pieces come from the data.
  IndexLauncher init_n(T_INIT_NODES, pieces);
  init_n.add(ctx.partition_equal(nodes, pieces), id, Privilege::WriteDiscard,
             {N_CAP, N_LEAK, N_CHARGE, N_VOLT, N_PIECE});
  ctx.execute(init_n);
  IndexLauncher init_w(T_INIT_WIRES, pieces);
  init_w.add(ctx.partition_equal(wires, pieces), id, Privilege::WriteDiscard,
             {W_IN, W_OUT, W_L, W_R, W_C, W_I0, W_I1, W_I2, W_V0, W_V1});
  ctx.execute(init_w);
  // (Timed: the calls are ops in the stream and return at once; the first use waits.)
  const auto started = std::chrono::steady_clock::now();
  Partition owned = ctx.partition_by_field(nodes, N_PIECE, pieces);
  Partition wire_pieces = ctx.partition_by_preimage(owned, wires, W_IN);
  Partition reached = ctx.partition_union(ctx.partition_by_image(nodes, wire_pieces, W_IN),
                                          ctx.partition_by_image(nodes, wire_pieces, W_OUT));
  Partition ghost = ctx.partition_difference(reached, owned);
  const auto issued = std::chrono::steady_clock::now();
  (void)ghost.disjoint();  // the pieces (and, through them, those of every call above)
  const auto computed = std::chrono::steady_clock::now();
  if (p.bounding_ghosts)
    ghost = ctx.partition_by_rects(nodes, pieces,
                                   [&](const DomainPoint& color) { return ghost.rect(color); });
  IndexLauncher count(T_COUNT, pieces);
  count.add(ghost, id, Privilege::ReadOnly, {N_VOLT});
  const FutureMap ghost_counts = ctx.execute(count);
  std::int64_t ghost_covered = 0;
  for (coord_t piece = 0; piece < p.pieces; ++piece)
    ghost_covered += ghost_counts.get(DomainPoint(piece)).get<std::int64_t>();

  IndexLauncher currents(T_CURRENTS, pieces);
  currents.add(wire_pieces, id, Privilege::ReadOnly, {W_IN, W_OUT, W_L, W_R, W_C});
  currents.add(wire_pieces, id, Privilege::ReadWrite, {W_I0, W_I1, W_I2, W_V0, W_V1});
  for (const Partition* part : {&owned, &ghost})
    currents.add(*part, id, Privilege::ReadOnly, {N_VOLT});
  IndexLauncher charge(T_CHARGE, pieces);
  charge.add(wire_pieces, id, Privilege::ReadOnly, {W_IN, W_OUT, W_I0, W_I2});
  for (const Partition* part : {&owned, &ghost})
    charge.add_reduction(*part, id, ReductionOp::Sum, {N_CHARGE});
  IndexLauncher voltages(T_VOLTAGES, pieces);
  voltages.add(owned, id, Privilege::ReadWrite, {N_CAP, N_LEAK, N_CHARGE, N_VOLT});

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
        "circuit: %d pieces, %lld nodes, %zu wires, %d loops: %s; ghost pieces hold %lld nodes, "
        "%lld needed (%s)\n",
        p.pieces, (long long)c.nodes, c.in.size(), p.loops,
        verified ? "matches the serial reference bit for bit" : "DIFFERS from the serial reference",
        (long long)ghost_covered, (long long)c.ghost_needed,
        p.bounding_ghosts ? "bounding boxes of the sparse pieces" : "sparse pieces");
  if (ctx.shard() == 0) {
    const auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    std::printf(
        "circuit: dependent partitioning: the six calls returned in %.3f ms; the ghost pieces "
        "were ready %.3f ms after the first call\n",
        ms(issued - started), ms(computed - started));
  }
  apps::print_result(
      "circuit", p.trace, ctx, p.loops, window, double(p.loops) * 3 * p.pieces, got, verified,
      "pieces=" + std::to_string(p.pieces) + " nodes=" + std::to_string(c.nodes) +
          " wires=" + std::to_string(nwires) + " ghost_nodes=" + std::to_string(ghost_covered) +
          " ghost_needed=" + std::to_string(c.ghost_needed));
  if (!verified) throw Error("circuit: verification failed");
  if (!p.bounding_ghosts && ghost_covered != c.ghost_needed)
    throw Error("circuit: the ghost pieces are not exact");
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
  TaskRegistry::add(T_COUNT, "count_nodes", {cpu(count_nodes)});
  return start(
      argc, argv, [&](Context& ctx) { top_level(ctx, p, c); }, apps::trace_mode_flags(p.trace));
}

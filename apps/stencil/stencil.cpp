// PRK-style 2-d star stencil (radius R) over an nx × ny grid tiled px × py, with an interior
// (disjoint) and a halo (aliased) partition. Each iteration: out += stencil(in) on the
// interior points of every tile, then in += 1 everywhere. Verified by the PRK closed form:
// the mean |out| over active points is (iterations) × (cx + cy).
#include <reprise/reprise.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "app_support.h"
#include "stencil_kernels.h"

using namespace reprise;
using namespace stencil;

namespace {

struct Params {
  coord_t nx = 1024, ny = 1024;
  coord_t px = 2, py = 2;
  int iters = 100;
  int warmup = 0;  // untimed iterations before the timed ones (lets auto tracing settle)
  int radius = 2;
  std::string trace = "auto";
  bool zero_copy = false;  // -zc: every instance in the shard's zero-copy memory
};

void init_task(TaskContext& tc) {
  auto in = tc.accessor<double, 2>(0, FID_IN);
  auto out = tc.accessor<double, 2>(0, FID_OUT);
  Rect<2> r = tc.domain(0);
  for (coord_t i = r.lo[0]; i <= r.hi[0]; ++i)
    for (coord_t j = r.lo[1]; j <= r.hi[1]; ++j) {
      in[{i, j}] = kCoefX * double(i) + kCoefY * double(j);
      out[{i, j}] = 0.0;
    }
}

void stencil_task(TaskContext& tc) {
  const auto a = tc.args<StencilArgs>();
  auto out = tc.accessor<double, 2>(0, FID_OUT);
  auto in = tc.accessor<const double, 2>(1, FID_IN);
  Rect<2> r = tc.domain(0);
  const int R = a.radius;
  // Only points at least R from the grid edge are updated.
  coord_t ilo = std::max<coord_t>(r.lo[0], R), ihi = std::min<coord_t>(r.hi[0], a.nx - 1 - R);
  coord_t jlo = std::max<coord_t>(r.lo[1], R), jhi = std::min<coord_t>(r.hi[1], a.ny - 1 - R);
  if (ilo > ihi || jlo > jhi) return;
  const coord_t in_row = in.strides()[0], out_row = out.strides()[0];
  double w[9];
  for (int k = 1; k <= R; ++k) w[k] = 1.0 / (2.0 * k * R);
  for (coord_t i = ilo; i <= ihi; ++i) {
    const double* src = in.ptr({i, jlo});
    double* dst = out.ptr({i, jlo});
    for (coord_t j = 0; j <= jhi - jlo; ++j) {
      double s = 0.0;
      for (int k = 1; k <= R; ++k) {
        s += w[k] * (src[j + k] - src[j - k]);
        s += w[k] * (src[j + k * in_row] - src[j - k * in_row]);
      }
      dst[j] += s;
    }
    (void)out_row;
  }
}

void increment_task(TaskContext& tc) {
  auto in = tc.accessor<double, 2>(0, FID_IN);
  Rect<2> r = tc.domain(0);
  for (coord_t i = r.lo[0]; i <= r.hi[0]; ++i) {
    double* row = in.ptr({i, r.lo[1]});
    for (coord_t j = 0; j <= r.hi[1] - r.lo[1]; ++j) row[j] += 1.0;
  }
}

double norm_task(TaskContext& tc) {
  const auto a = tc.args<StencilArgs>();
  auto out = tc.accessor<const double, 2>(0, FID_OUT);
  Rect<2> r = tc.domain(0);
  double s = 0.0;
  for (coord_t i = std::max<coord_t>(r.lo[0], a.radius);
       i <= std::min<coord_t>(r.hi[0], a.nx - 1 - a.radius); ++i)
    for (coord_t j = std::max<coord_t>(r.lo[1], a.radius);
         j <= std::min<coord_t>(r.hi[1], a.ny - 1 - a.radius); ++j)
      s += std::fabs(out[{i, j}]);
  return s;
}

// FNV-1a over the bytes of both fields in row-major order: equal across tilings and modes.
std::uint64_t checksum_task(TaskContext& tc) {
  std::uint64_t h = 1469598103934665603ull;
  Rect<2> r = tc.domain(0);
  for (FieldID f : {FID_IN, FID_OUT}) {
    auto acc = tc.accessor<const double, 2>(0, f);
    for (coord_t i = r.lo[0]; i <= r.hi[0]; ++i) {
      const auto* bytes = reinterpret_cast<const unsigned char*>(acc.ptr({i, r.lo[1]}));
      for (std::size_t k = 0; k < std::size_t(r.hi[1] - r.lo[1] + 1) * sizeof(double); ++k)
        h = (h ^ bytes[k]) * 1099511628211ull;
    }
  }
  return h;
}

constexpr const char* kUsage =
    "usage: stencil [-nx N] [-ny N] [-px N] [-py N] [-iters N] [-warmup N] [-radius R]\n"
    "               [--trace none|manual|auto] [-zc] [runtime flags, see -lg:help]\n"
    "  --trace: none: every iteration is analysed; manual: a trace around each\n"
    "           iteration (the field roles do not alternate), recorded once and\n"
    "           replayed; auto (default): the runtime finds the traces itself\n"
    "  -zc: every instance in the shard's zero-copy memory, shared by its CPUs and\n"
    "       GPUs (needs -ll:gpu N -ll:zsize MiB)\n";

[[noreturn]] void usage(const std::string& msg) {
  apps::exit_with_usage("stencil", kUsage, msg);
}

Params parse(const std::vector<std::string>& args) {
  Params p;
  apps::ArgReader in(args, usage);
  while (in.next()) {
    const std::string& a = in.flag();
    if (a == "-nx")
      p.nx = coord_t(in.integer(1));
    else if (a == "-ny")
      p.ny = coord_t(in.integer(1));
    else if (a == "-px")
      p.px = coord_t(in.integer(1));
    else if (a == "-py")
      p.py = coord_t(in.integer(1));
    else if (a == "-iters")
      p.iters = int(in.integer(1));
    else if (a == "-warmup")
      p.warmup = int(in.integer(0));
    else if (a == "-radius")
      p.radius = int(in.integer(1));
    else if (a == "--trace")
      p.trace = in.value();
    else if (a == "-zc")
      p.zero_copy = true;
    else
      usage("unknown argument " + a);
  }
  if (!apps::valid_trace_mode(p.trace)) usage("--trace " + p.trace + ": use none, manual or auto");
  if (p.radius > 8) usage("radius must be at most 8");
  if (p.px > p.nx || p.py > p.ny) usage("more tiles than grid points");
  if (p.nx <= 2 * p.radius || p.ny <= 2 * p.radius) usage("grid too small for the radius");
  return p;
}

void top_level(Context& ctx, const Params& p) {
  auto grid_is = ctx.create_index_space(Rect<2>({0, 0}, {p.nx - 1, p.ny - 1}));
  auto fs = ctx.create_field_space({{FID_IN, sizeof(double)}, {FID_OUT, sizeof(double)}});
  Region grid = ctx.create_region(grid_is, fs);
  auto tiles = ctx.create_index_space(Rect<2>({0, 0}, {p.px - 1, p.py - 1}));
  Partition interior = ctx.partition_equal(grid, tiles);
  Partition halo = ctx.partition_by_rects(grid, tiles, [&](const DomainPoint& c) {
    return grow(interior.rect(c), p.radius) & grid.bounds();
  });
  const StencilArgs args{p.nx, p.ny, p.radius};

  IndexLauncher init(TID_INIT, tiles);
  init.add(interior, Projection::identity(), Privilege::WriteDiscard, {FID_IN, FID_OUT});
  ctx.execute(init);

  const bool traced = p.trace == "manual";
  auto iteration = [&] {
    if (traced) ctx.begin_trace(1);
    IndexLauncher st(TID_STENCIL, tiles, TaskArgs{args});
    st.add(interior, Projection::identity(), Privilege::ReadWrite, {FID_OUT});
    st.add(halo, Projection::identity(), Privilege::ReadOnly, {FID_IN});
    ctx.execute(st);
    IndexLauncher inc(TID_INCREMENT, tiles);
    inc.add(interior, Projection::identity(), Privilege::ReadWrite, {FID_IN});
    ctx.execute(inc);
    if (traced) ctx.end_trace(1);
  };
  apps::Timeline timeline(ctx);
  iteration();  // PRK's untimed first iteration
  timeline.mark();
  for (int it = 0; it < p.warmup; ++it) {
    iteration();
    timeline.mark();
  }
  ctx.fence().wait();  // the copies of the iterations before are all issued
  const std::uint64_t bytes_before = ctx.trace_stats().shard_bytes;
  const apps::TimedWindow window = apps::timed(ctx, [&] {
    for (int it = 0; it < p.iters; ++it) {
      iteration();
      timeline.mark();
    }
  });
  const double shard_bytes =
      double(ctx.trace_stats().shard_bytes - bytes_before) / double(std::max(p.iters, 1));
  // What the halos need at the least per iteration, into this shard: the cells of its tiles'
  // halos that other shards' tiles own (the default mapper's blocks of tiles per shard),
  // counted once (tiles of one shard share its instance), one field. Skipped (-1) for grids
  // above 64 M cells.
  const coord_t ntiles = p.px * p.py;
  auto shard_of_tile = [&](coord_t t) { return coord_t(ctx.num_shards()) * t / ntiles; };
  double halo_min = ctx.num_shards() == 1 ? 0 : -1;  // one shard: nothing crosses
  if (ctx.num_shards() > 1 && p.nx * p.ny <= (coord_t(1) << 26)) {
    halo_min = 0;
    std::vector<std::uint8_t> needed(std::size_t(p.nx * p.ny));
    const coord_t s = coord_t(ctx.shard());
    for (coord_t a = 0; a < ntiles; ++a) {
      if (shard_of_tile(a) != s) continue;
      for (coord_t b = 0; b < ntiles; ++b) {
        if (shard_of_tile(b) == s) continue;
        const DomainPoint ca = Point<2>{a / p.py, a % p.py}, cb = Point<2>{b / p.py, b % p.py};
        const Domain part = halo.rect(ca) & interior.rect(cb);
        if (part.empty()) continue;
        for (coord_t i = part.lo[0]; i <= part.hi[0]; ++i)
          for (coord_t j = part.lo[1]; j <= part.hi[1]; ++j) needed[std::size_t(i * p.ny + j)] = 1;
      }
    }
    for (std::uint8_t n : needed) halo_min += n * double(sizeof(double));
  }

  IndexLauncher norm(TID_NORM, tiles, TaskArgs{args});
  norm.add(interior, Projection::identity(), Privilege::ReadOnly, {FID_OUT});
  double total = ctx.reduce(ctx.execute(norm), ReductionOp::Sum).get<double>();
  TaskLauncher sum(TID_CHECKSUM);
  sum.add(grid, Privilege::ReadOnly, {FID_IN, FID_OUT});
  std::uint64_t checksum = ctx.execute(sum).get<std::uint64_t>();

  double active = double(p.nx - 2 * p.radius) * double(p.ny - 2 * p.radius);
  double norm_value = total / active;
  double reference = double(p.iters + p.warmup + 1) * (kCoefX + kCoefY);
  bool verified = std::fabs(norm_value - reference) <= 1e-8 * std::fabs(reference);
  double tasks = double(p.iters) * 2.0 * double(p.px * p.py);
  std::printf(
      "stencil: %lldx%lld grid, %lldx%lld tiles, radius %d, %d iterations: norm %.12f "
      "(reference %.12f) %s\n",
      (long long)p.nx, (long long)p.ny, (long long)p.px, (long long)p.py, p.radius, p.iters,
      norm_value, reference, verified ? "verified" : "WRONG");
  timeline.report("stencil", p.trace);
  apps::print_result("stencil", p.trace, ctx, p.iters, window, tasks, checksum, verified,
                     "nx=" + std::to_string(p.nx) + " ny=" + std::to_string(p.ny) +
                         " tiles=" + std::to_string(p.px * p.py) +
                         " shard_bytes_per_iter=" + std::to_string(std::llround(shard_bytes)) +
                         " halo_min_bytes_per_iter=" + std::to_string(std::llround(halo_min)));
  if (!verified) throw Error("stencil: verification failed");
}

// -zc: the default mapper's processors, every instance in the shard's zero-copy memory (host
// memory that its CPUs and GPUs both use in place: no copies between memory kinds).
class ZeroCopyMapper : public DefaultMapper {
 public:
  MemoryID select_memory(const MapperTaskInfo&, Processor proc, std::size_t,
                         const MachineInfo& m) override {
    if (m.num_zero_copy == 0)
      throw Error(
          "stencil -zc: this machine has no zero-copy memory (run with -ll:gpu N -ll:zsize MiB)");
    return m.zero_copy(proc.shard);
  }
};

}  // namespace

int main(int argc, char** argv) {
  Params p = parse(app_args(argc, argv));
  TaskRegistry::add(TID_INIT, "init", {cpu(init_task), gpu(init_gpu)});
  TaskRegistry::add(TID_STENCIL, "stencil", {cpu(stencil_task), gpu(stencil_gpu)});
  TaskRegistry::add(TID_INCREMENT, "increment", {cpu(increment_task), gpu(increment_gpu)});
  TaskRegistry::add(TID_NORM, "norm", {cpu(norm_task)});
  TaskRegistry::add(TID_CHECKSUM, "checksum", {cpu(checksum_task)});
  return start(
      argc, argv, [&](Context& ctx) { top_level(ctx, p); }, apps::trace_mode_flags(p.trace),
      p.zero_copy ? std::make_unique<ZeroCopyMapper>() : nullptr);
}

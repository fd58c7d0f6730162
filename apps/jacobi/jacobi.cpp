// The Apophenia paper's Figure 1 on the array library: Jacobi iteration for a random,
// diagonally dominant system,
//     A = random(n, n) + n * eye(n);  b = random(n);  x = zeros(n)
//     d = diag(A);  R = A - diag(d)
//     for i in range(iters): x = (b - dot(R, x)) / d
// verified bit for bit against a serial reference doing the same floating-point operations
// in the same order.
//
// Why --trace manual traces *pairs* of iterations: every op returns a fresh array from the
// library's pool (most recently freed region of that shape first). Within one iteration the
// temporaries of dot and the subtraction come back to the same regions, but the new x cannot
// take the region the old x still occupies while it is being computed, so x alternates between
// two regions: iteration i reads x1 and writes x2, iteration i+1 reads x2 and writes x1. The op
// stream of one iteration therefore differs from the next (other regions), and a trace around
// one iteration would mismatch every time; the stream repeats with period two. The first
// iteration also creates the temporaries' regions and partitions, which cannot happen inside a
// trace, so it always runs untraced. --trace auto finds the period-two repeat by itself.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "app_support.h"
#include "array.h"
#include "array_tasks.h"

using namespace reprise;
using namespace reprise::array;

namespace {

struct Params {
  coord_t n = 512;
  int iters = 100;  // timed; rounded up to an even number (pairs)
  int warmup = 1;   // untraced iterations first (at least 1)
  std::uint32_t tiles = 0;
  std::string trace = "auto";
};

std::uint64_t hash_values(const std::vector<double>& v) {
  std::uint64_t h = 1469598103934665603ull;
  for (double x : v) {
    std::uint64_t bits;
    std::memcpy(&bits, &x, 8);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

// The same computation with plain loops, operation for operation.
std::vector<double> serial_reference(const Params& p) {
  const coord_t n = p.n;
  const auto at = [n](coord_t i, coord_t j) { return std::size_t(i * n + j); };
  const auto un = static_cast<std::size_t>(n);
  std::vector<double> a(un * un), r(un * un), b(un), x(un, 0.0), d(un);
  for (coord_t i = 0; i < n; ++i)
    for (coord_t j = 0; j < n; ++j)
      a[at(i, j)] =
          tasks::random_value(1, std::uint64_t(at(i, j))) + (i == j ? 1.0 : 0.0) * double(n);
  for (coord_t i = 0; i < n; ++i) {
    b[std::size_t(i)] = tasks::random_value(2, std::uint64_t(i));
    d[std::size_t(i)] = a[at(i, i)];
  }
  for (coord_t i = 0; i < n; ++i)
    for (coord_t j = 0; j < n; ++j) r[at(i, j)] = a[at(i, j)] - (i == j ? d[std::size_t(i)] : 0.0);
  std::vector<double> t(un);
  for (int it = 0; it < p.warmup + p.iters; ++it) {
    for (coord_t i = 0; i < n; ++i) {
      double s = 0;
      for (coord_t j = 0; j < n; ++j) s += r[at(i, j)] * x[std::size_t(j)];
      t[std::size_t(i)] = s;
    }
    for (coord_t i = 0; i < n; ++i)
      x[std::size_t(i)] = (b[std::size_t(i)] - t[std::size_t(i)]) / d[std::size_t(i)];
  }
  return x;
}

constexpr const char* kUsage =
    "usage: jacobi [-n N] [-iters N] [-warmup N] [-tiles N]\n"
    "              [--trace none|manual|auto] [runtime flags, see -lg:help]\n"
    "  The paper's Figure 1: x = (b - dot(R, x)) / d on the array library.\n"
    "  --trace manual traces pairs of iterations after one untraced iteration: x\n"
    "  alternates between two pooled regions, so one iteration never repeats.\n";

[[noreturn]] void usage(const std::string& msg) {
  apps::exit_with_usage("jacobi", kUsage, msg);
}

Params parse(const std::vector<std::string>& args) {
  Params p;
  apps::ArgReader in(args, usage);
  while (in.next()) {
    const std::string& a = in.flag();
    if (a == "-n")
      p.n = coord_t(in.integer(1));
    else if (a == "-iters")
      p.iters = int(in.integer(2));
    else if (a == "-warmup")
      p.warmup = int(in.integer(1));
    else if (a == "-tiles")
      p.tiles = std::uint32_t(in.integer(1));
    else if (a == "--trace")
      p.trace = in.value();
    else
      usage("unknown argument " + a);
  }
  if (!apps::valid_trace_mode(p.trace)) usage("--trace must be none, manual or auto");
  p.iters += p.iters % 2;
  return p;
}

void top_level(Context& ctx, const Params& p) {
  Engine np(ctx, p.tiles);
  const coord_t n = p.n;
  Array a = np.random(n, n, 1) + np.eye(n) * double(n);
  Array b = np.random(n, 2);
  Array x = np.zeros(n);
  Array d = diag(a);
  Array r = a - diag_matrix(d);

  apps::Timeline timeline(ctx);
  auto iteration = [&] {
    x = (b - dot(r, x)) / d;
    timeline.mark();
  };
  for (int it = 0; it < p.warmup; ++it) iteration();
  const bool manual = p.trace == "manual";
  const apps::TimedWindow window = apps::timed(ctx, [&] {
    for (int it = 0; it < p.iters; it += 2) {
      if (manual) ctx.begin_trace(1);
      iteration();
      iteration();
      if (manual) ctx.end_trace(1);
    }
  });

  const std::uint64_t checksum = x.checksum().get<std::uint64_t>();
  const double residual = (b - dot(a, x)).norm().get<double>();
  const std::vector<double> want = serial_reference(p);
  const bool verified = checksum == hash_values(want);
  const Engine::Stats st = np.stats();
  std::printf(
      "jacobi: n=%lld, %u tiles, %d iterations: residual |b - A x| = %.3e, %s; %llu regions "
      "created, %llu reused\n",
      (long long)n, np.num_tiles(), p.warmup + p.iters, residual,
      verified ? "matches the serial reference bit for bit" : "DIFFERS from the serial reference",
      (unsigned long long)st.regions_created, (unsigned long long)st.reused);
  const double tasks = double(p.iters) * 3.0 * double(np.num_tiles());
  timeline.report("jacobi", p.trace);
  apps::print_result("jacobi", p.trace, ctx, p.iters, window, tasks, checksum, verified,
                     "n=" + std::to_string(n) + " tiles=" + std::to_string(np.num_tiles()));
  if (!verified) throw Error("jacobi: verification failed");
}

}  // namespace

int main(int argc, char** argv) {
  Params p = parse(app_args(argc, argv));
  return start(
      argc, argv, [&](Context& ctx) { top_level(ctx, p); }, apps::trace_mode_flags(p.trace));
}

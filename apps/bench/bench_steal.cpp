// Fork-join inside tasks on the work-stealing scheduler (docs/forkjoin.md), the Steal Tree
// paper's measurements on our runtime:
//   1. Tracing overhead: fib, nqueens, a heat tile and a blocked matmul inside a task, plus the
//      imbalanced iterative kernel, each timed with and without -lg:steal_trace in alternating
//      runs (the paper's method: ratio of means, and the 99% confidence interval of the
//      difference of means by Student's t), and the trees' size per thread.
//   2. Retentive stealing: the imbalanced kernel, one task per iteration inside a manual trace,
//      replayed with -lg:retentive 0 (plain stealing) and 1 (each replay starts from the last
//      one's schedule): steals per iteration in steady state (median of the second half) and
//      time per iteration. The same with a StealPool outside the runtime.
// The last line: RESULT bench=steal overhead_ratio=… kb_per_thread=… steals_plain=…
// steals_retentive=… (the imbalanced kernel: traced/untraced time, steal-tree KB per thread
// per iteration, steals per iteration in steady state).
#include <reprise/fork_join.h>
#include <reprise/reprise.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "reprise_rt/steal_tree.h"

using namespace reprise;

namespace {

enum : TaskID { T_KERNEL = 4100 };

struct Options {
  int reps = 10;     // samples per variant (alternating)
  int launches = 4;  // kernel launches per sample
  int iters = 40;    // iterations of the retentive comparison
  int threads = 2;   // -ll:othr
  double scale = 1;  // problem size factor
  std::string policy = "work-first";
  std::string only;  // one kernel
};

// ---- kernels (each returns a checksum; the caller checks it against the first run) ----

std::uint64_t fib_serial(int n) {
  return n < 2 ? std::uint64_t(n) : fib_serial(n - 1) + fib_serial(n - 2);
}

std::uint64_t fib(int n) {
  if (n < 18) return fib_serial(n);  // sequential cutoff
  std::uint64_t x = 0, y = 0;
  fork([&] { x = fib(n - 1); }, [&] { y = fib(n - 2); });
  return x + y;
}

std::uint64_t queens(int n, int row, std::uint32_t cols, std::uint32_t d1, std::uint32_t d2) {
  if (row == n) return 1;
  std::uint64_t counts[32] = {};
  auto place = [&](int c) {
    const std::uint32_t bit = 1u << c;
    if ((cols & bit) || (d1 & (1u << (row + c))) || (d2 & (1u << (row - c + n)))) return;
    counts[c] = queens(n, row + 1, cols | bit, d1 | (1u << (row + c)), d2 | (1u << (row - c + n)));
  };
  if (row < 3) {  // parallel near the root, sequential below
    parallel_for(0, n, 1, [&](std::int64_t c) { place(int(c)); });
  } else {
    for (int c = 0; c < n; ++c) place(c);
  }
  return std::accumulate(counts, counts + n, std::uint64_t(0));
}

std::uint64_t heat(int n, int steps) {
  std::vector<double> a(std::size_t(n * n)), b(a.size());
  for (int i = 0; i < n * n; ++i) a[std::size_t(i)] = double((i * 7) % 13);
  for (int s = 0; s < steps; ++s) {
    parallel_for(1, n - 1, 8, [&](std::int64_t i) {
      for (int j = 1; j < n - 1; ++j) {
        const std::size_t k = std::size_t(i * n + j);
        b[k] = a[k] + 0.1 * (a[k - 1] + a[k + 1] + a[k - std::size_t(n)] + a[k + std::size_t(n)] -
                             4 * a[k]);
      }
    });
    std::swap(a, b);
  }
  double sum = 0;
  for (double v : a) sum += v;
  return std::uint64_t(sum * 1000);
}

std::uint64_t matmul(int n, int block) {
  std::vector<double> a(std::size_t(n * n)), b(a.size()), c(a.size(), 0.0);
  for (int i = 0; i < n * n; ++i) {
    a[std::size_t(i)] = double(i % 7);
    b[std::size_t(i)] = double(i % 5);
  }
  const int nb = n / block;
  parallel_for(0, std::int64_t(nb) * nb, 1, [&](std::int64_t blk) {
    const int bi = int(blk / nb) * block, bj = int(blk % nb) * block;
    for (int k0 = 0; k0 < n; k0 += block)
      for (int i = bi; i < bi + block; ++i)
        for (int k = k0; k < k0 + block; ++k) {
          const double aik = a[std::size_t(i * n + k)];
          for (int j = bj; j < bj + block; ++j)
            c[std::size_t(i * n + j)] += aik * b[std::size_t(k * n + j)];
        }
  });
  double sum = 0;
  for (double v : c) sum += v;
  return std::uint64_t(sum);
}

// Imbalanced: item i costs 1 unit, the first eighth 24 units, one item per piece.
std::uint64_t imbalanced(int items, int unit) {
  std::vector<std::uint64_t> out(static_cast<std::size_t>(items));
  parallel_for(0, items, 1, [&](std::int64_t i) {
    const int work = (i < items / 8 ? 24 : 1) * unit;
    std::uint64_t x = std::uint64_t(i);
    for (int k = 0; k < work; ++k) x = x * 6364136223846793005ull + 1442695040888963407ull;
    out[std::size_t(i)] = x;
  });
  return std::accumulate(out.begin(), out.end(), std::uint64_t(0));
}

struct Kernel {
  const char* name;
  std::uint64_t (*run)(double scale);
};

const Kernel kKernels[] = {
    {"fib", [](double s) { return fib(30 + int(std::floor(std::log2(s)))); }},
    {"nqueens", [](double s) { return queens(s >= 4     ? 12
                                             : s >= 0.5 ? 11
                                                        : 9,
                                             0, 0, 0, 0); }},
    {"heat", [](double s) { return heat(int(1024 * std::sqrt(s)), 8); }},
    {"matmul",
     [](double s) { return matmul(std::max(32, int(320 * std::cbrt(s)) / 32 * 32), 32); }},
    {"imbalanced", [](double s) { return imbalanced(512, std::max(1, int(6000 * s))); }},
};

const Kernel* g_kernel = nullptr;
double g_scale = 1;
std::atomic<std::uint64_t> g_checksum{0};

std::uint64_t kernel_task(TaskContext&) {
  const std::uint64_t c = g_kernel->run(g_scale);
  g_checksum.store(c);
  return c;
}

// One runtime run: `launches` kernel tasks (inside a manual trace when traced), each waited
// for; returns the seconds per launch after the first.
double run_kernel(const Options& o, const Kernel& k, const std::vector<std::string>& extra,
                  int launches, bool traced, std::uint64_t& checksum) {
  g_kernel = &k;
  g_scale = o.scale;
  std::vector<std::string> flags = {
      "-ll:cpu",          "1",      "-ll:othr",           std::to_string(o.threads),
      "-lg:steal_policy", o.policy, "-lg:no_auto_tracing"};
  flags.insert(flags.end(), extra.begin(), extra.end());
  double seconds = 0;
  reprise::run(flags, [&](Context& ctx) {
    std::chrono::steady_clock::time_point t0;
    for (int i = 0; i < launches + 1; ++i) {
      if (i == 1) t0 = std::chrono::steady_clock::now();
      if (traced) ctx.begin_trace(1);
      Future f = ctx.execute(TaskLauncher(T_KERNEL));
      if (traced) ctx.end_trace(1);
      checksum = f.get<std::uint64_t>();
    }
    seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / launches;
  });
  return seconds;
}

struct Sample {
  double mean = 0, sd = 0;
};
Sample stats(const std::vector<double>& v) {
  Sample s;
  for (double x : v) s.mean += x;
  s.mean /= double(v.size());
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = v.size() > 1 ? std::sqrt(s.sd / double(v.size() - 1)) : 0;
  return s;
}

// Two-sided 99% Student's t for df degrees of freedom (table; df >= 30 uses the normal's).
double t99(int df) {
  static const double t[] = {0,     63.66, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250,
                             3.169, 3.106, 3.055, 3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861,
                             2.845, 2.831, 2.819, 2.807, 2.797, 2.787, 2.779, 2.771, 2.763, 2.756};
  return df < 30 ? t[std::max(df, 1)] : 2.576;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Overhead {
  double ratio = 1, err = 0, kb_per_thread = 0;
};

Overhead measure_overhead(const Options& o, const Kernel& k) {
  const std::string file = "/tmp/bench_steal_" + std::to_string(::getpid()) + ".txt";
  std::vector<double> plain, traced;
  std::uint64_t want = 0, got = 0;
  double kb = 0;
  for (int r = 0; r < o.reps; ++r) {
    plain.push_back(run_kernel(o, k, {}, o.launches, false, got));
    if (r == 0) want = got;
    if (got != want) {
      std::fprintf(stderr, "bench_steal: %s gave %llu then %llu\n", k.name,
                   (unsigned long long)want, (unsigned long long)got);
      std::exit(1);
    }
    traced.push_back(run_kernel(o, k, {"-lg:steal_trace", file}, o.launches, false, got));
    if (got != want) {
      std::fprintf(stderr, "bench_steal: %s traced gave %llu, untraced %llu\n", k.name,
                   (unsigned long long)got, (unsigned long long)want);
      std::exit(1);
    }
    const auto f = detail::StealTraceFile::read(file);
    std::size_t bytes = 0;
    for (const auto& reg : f.regions) bytes += reg.tree.bytes();
    // Per thread and per launch (the kernel's regions in one task).
    kb += double(bytes) / 1024.0 / o.threads / (o.launches + 1);
  }
  std::remove(file.c_str());
  const Sample p = stats(plain), t = stats(traced);
  Overhead out;
  out.ratio = t.mean / p.mean;
  const double se = std::sqrt(p.sd * p.sd / o.reps + t.sd * t.sd / o.reps);
  out.err = t99(2 * o.reps - 2) * se / p.mean;
  out.kb_per_thread = kb / o.reps;
  std::printf(
      "overhead kernel=%-10s untraced_ms=%8.3f traced_ms=%8.3f ratio=%.3f +- %.3f (99%%) %s "
      "kb_per_thread=%.3f\n",
      k.name, p.mean * 1e3, t.mean * 1e3, out.ratio, out.err,
      std::fabs(out.ratio - 1) <= out.err ? "within-noise" : "beyond-noise", out.kb_per_thread);
  std::fflush(stdout);
  return out;
}

struct Retention {
  double steals = 0, ms = 0, delivered = 0;
};

// The imbalanced kernel, one task per iteration in a manual trace (replays from the second).
Retention measure_retention(const Options& o, const Kernel& k, bool retentive) {
  const std::string file = "/tmp/bench_steal_r" + std::to_string(::getpid()) + ".txt";
  std::uint64_t got = 0;
  const double s = run_kernel(
      o, k, {"-lg:steal_trace", file, "-lg:retentive", retentive ? "1" : "0"}, o.iters, true, got);
  const auto f = detail::StealTraceFile::read(file);
  std::remove(file.c_str());
  std::vector<double> steals, delivered;
  for (std::size_t i = f.regions.size() / 2; i < f.regions.size(); ++i) {
    steals.push_back(double(f.regions[i].tree.steals()));
    delivered.push_back(double(f.regions[i].tree.deliveries()));
  }
  return {median(steals), s * 1e3, median(delivered)};
}

// The same outside the runtime: a StealPool running the kernel `iters` times.
Retention pool_retention(const Options& o, const Kernel& k, bool retentive) {
  StealPool pool(o.threads,
                 o.policy == "help-first" ? StealPolicy::HelpFirst : StealPolicy::WorkFirst);
  StealSchedule schedule;
  std::vector<double> steals;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i) {
    const StealStats before = pool.stats();
    pool.run([&] { k.run(o.scale); }, retentive ? &schedule : nullptr);
    if (i >= o.iters / 2) steals.push_back(double(pool.stats().steals - before.steals));
  }
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / o.iters;
  return {median(steals), s * 1e3, 0};
}

int usage() {
  std::fprintf(stderr,
               "usage: bench_steal [-reps N] [-launches N] [-iters N] [-threads T] [-scale S]\n"
               "                   [-policy work-first|help-first] [-kernel NAME]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    const char* v = argv[++i];
    if (a == "-reps")
      o.reps = std::max(2, std::atoi(v));
    else if (a == "-launches")
      o.launches = std::max(1, std::atoi(v));
    else if (a == "-iters")
      o.iters = std::max(4, std::atoi(v));
    else if (a == "-threads")
      o.threads = std::max(2, std::atoi(v));
    else if (a == "-scale")
      o.scale = std::max(0.01, std::atof(v));
    else if (a == "-policy")
      o.policy = v;
    else if (a == "-kernel")
      o.only = v;
    else
      return usage();
  }
  TaskRegistry::add(T_KERNEL, "kernel", {cpu(kernel_task)});
  std::printf(
      "bench_steal: threads=%d (-ll:cpu 1 -ll:othr %d) policy=%s reps=%d launches=%d "
      "iters=%d scale=%g\n",
      o.threads, o.threads, o.policy.c_str(), o.reps, o.launches, o.iters, o.scale);
  Overhead imb;
  const Kernel* imbalanced_kernel = &kKernels[4];
  for (const Kernel& k : kKernels) {
    if (!o.only.empty() && o.only != k.name) continue;
    const Overhead r = measure_overhead(o, k);
    if (&k == imbalanced_kernel) imb = r;
  }
  const Retention plain = measure_retention(o, *imbalanced_kernel, false);
  const Retention kept = measure_retention(o, *imbalanced_kernel, true);
  std::printf("retention in-trace plain:     steals_per_iter=%.1f ms_per_iter=%.3f\n", plain.steals,
              plain.ms);
  std::printf(
      "retention in-trace retentive: steals_per_iter=%.1f handed_over_per_iter=%.1f "
      "ms_per_iter=%.3f\n",
      kept.steals, kept.delivered, kept.ms);
  const Retention pool_plain = pool_retention(o, *imbalanced_kernel, false);
  const Retention pool_kept = pool_retention(o, *imbalanced_kernel, true);
  std::printf("retention StealPool plain:     steals_per_iter=%.1f ms_per_iter=%.3f\n",
              pool_plain.steals, pool_plain.ms);
  std::printf("retention StealPool retentive: steals_per_iter=%.1f ms_per_iter=%.3f\n",
              pool_kept.steals, pool_kept.ms);
  std::printf(
      "RESULT bench=steal overhead_ratio=%.3f kb_per_thread=%.3f steals_plain=%.1f "
      "steals_retentive=%.1f ms_plain=%.3f ms_retentive=%.3f\n",
      imb.ratio, imb.kb_per_thread, plain.steals, kept.steals, plain.ms, kept.ms);
  return 0;
}

#include "graph.h"

#include <algorithm>
#include <cmath>

namespace taskbench {

namespace {
template <class E>
struct Named {
  const char* name;
  E value;
};
constexpr Named<Pattern> kPatterns[] = {{"trivial", Pattern::Trivial},
                                        {"no_comm", Pattern::NoComm},
                                        {"stencil_1d", Pattern::Stencil1D},
                                        {"stencil_1d_periodic", Pattern::Stencil1DPeriodic},
                                        {"dom", Pattern::Dom},
                                        {"tree", Pattern::Tree},
                                        {"fft", Pattern::Fft},
                                        {"all_to_all", Pattern::AllToAll},
                                        {"nearest", Pattern::Nearest},
                                        {"spread", Pattern::Spread},
                                        {"random_nearest", Pattern::RandomNearest}};
constexpr Named<KernelKind> kKernels[] = {{"empty", KernelKind::Empty},
                                          {"busy_wait", KernelKind::BusyWait},
                                          {"memory_bound", KernelKind::MemoryBound},
                                          {"compute_bound", KernelKind::ComputeBound},
                                          {"load_imbalance", KernelKind::LoadImbalance}};

template <class E, std::size_t N>
const char* name_in(const Named<E> (&table)[N], E value) {
  for (const Named<E>& n : table)
    if (n.value == value) return n.name;
  return "?";
}
template <class E, std::size_t N>
bool value_in(const Named<E> (&table)[N], const std::string& name, E& out) {
  for (const Named<E>& n : table)
    if (name == n.name) {
      out = n.value;
      return true;
    }
  return false;
}

// fft: ceil(log2(width)) butterfly stages.
long log2_ceil(long w) {
  long k = 0;
  while ((1L << k) < w) ++k;
  return k;
}
}  // namespace

const char* name_of(Pattern p) {
  return name_in(kPatterns, p);
}
const char* name_of(KernelKind k) {
  return name_in(kKernels, k);
}
bool pattern_named(const std::string& name, Pattern& out) {
  return value_in(kPatterns, name, out);
}
bool kernel_named(const std::string& name, KernelKind& out) {
  return value_in(kKernels, name, out);
}

double uniform(std::initializer_list<long> key) {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  for (long k : key) {
    h ^= std::uint64_t(k) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    // splitmix64's finaliser
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
  }
  return double(h >> 11) * 0x1.0p-53;
}

long Graph::offset_at(long t) const {
  if (t < 0) return 0;
  // dom: the band of points slides right in the last `width` timesteps.
  if (pattern == Pattern::Dom) return std::max(0L, t + width - steps);
  return 0;
}

long Graph::width_at(long t) const {
  if (t < 0) return 0;
  switch (pattern) {
    case Pattern::Dom:
      return std::min(width, std::min(t + 1, steps - t));
    case Pattern::Tree:
      return std::min(width, 1L << std::min(t, 62L));
    default:
      return width;
  }
}

long Graph::dependence_sets() const {
  switch (pattern) {
    case Pattern::Fft:
      return std::max(1L, log2_ceil(width));
    case Pattern::Spread:
    case Pattern::RandomNearest:
      return std::max(1L, period);
    default:
      return 1;
  }
}

long Graph::dependence_set_at(long t) const {
  const long n = dependence_sets();
  // fft's first stage reads its neighbours at distance 2^(n-1)... in the order Task Bench uses.
  if (pattern == Pattern::Fft) return (t + n - 1) % n;
  return t % n;
}

void Graph::dependencies(long dset, long p, std::vector<Interval>& out) const {
  out.clear();
  auto single = [&](long q) { out.emplace_back(q, q); };
  switch (pattern) {
    case Pattern::Trivial:
      break;
    case Pattern::NoComm:
      single(p);
      break;
    case Pattern::Stencil1D:
      out.emplace_back(std::max(0L, p - 1), std::min(p + 1, width - 1));
      break;
    case Pattern::Stencil1DPeriodic: {
      const long lo = std::max(0L, p - 1), hi = std::min(p + 1, width - 1);
      // The wrapped neighbours, unless the interval has them already (tiny widths).
      if (p - 1 < 0 && width - 1 > hi) single(width - 1);
      out.emplace_back(lo, hi);
      if (p + 1 >= width && 0 < lo) out.insert(out.begin(), Interval(0, 0));
      std::sort(out.begin(), out.end());
      break;
    }
    case Pattern::Dom:
      out.emplace_back(std::max(0L, p - 1), p);
      break;
    case Pattern::Tree:
      single(p / 2);
      break;
    case Pattern::Fft: {
      const long d = 1L << dset;
      if (p - d >= 0) single(p - d);
      single(p);
      if (p + d < width) single(p + d);
      break;
    }
    case Pattern::AllToAll:
      out.emplace_back(0, width - 1);
      break;
    case Pattern::Nearest:
      if (radix > 0)
        out.emplace_back(std::max(0L, p - radix / 2), std::min(p + (radix - 1) / 2, width - 1));
      break;
    case Pattern::Spread: {
      for (long i = 0; i < radix; ++i) single((p + i * width / radix + (i > 0 ? dset : 0)) % width);
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
      break;
    }
    case Pattern::RandomNearest: {
      // Each neighbour within the radix is read with probability fraction_connected (the
      // point itself always): runs of chosen neighbours are intervals.
      long run = -1;
      const long lo = std::max(0L, p - radix / 2), hi = std::min(p + (radix - 1) / 2, width - 1);
      for (long q = lo; q <= hi + 1; ++q) {
        const bool take =
            q <= hi && (q == p || uniform({index, radix, dset, q, p}) < fraction_connected);
        if (take && run < 0) run = q;
        if (!take && run >= 0) {
          out.emplace_back(run, q - 1);
          run = -1;
        }
      }
      break;
    }
  }
}

std::vector<Interval> Graph::inputs(long t, long p) const {
  std::vector<Interval> out;
  inputs(t, p, out);
  return out;
}

void Graph::inputs(long t, long p, std::vector<Interval>& out) const {
  out.clear();
  if (t == 0) return;
  dependencies(dependence_set_at(t), p, out);
  const long first = offset_at(t - 1), last = first + width_at(t - 1) - 1;
  std::size_t kept = 0;
  for (auto [a, b] : out) {
    a = std::max(a, first);
    b = std::min(b, last);
    if (a <= b) out[kept++] = Interval(a, b);
  }
  out.resize(kept);
}

long Graph::max_intervals() const {
  std::size_t most = 0;
  for (long t = 1; t < std::min(steps, 2 * dependence_sets() + 2 * width + 2); ++t)
    for (long p = offset_at(t); p < offset_at(t) + width_at(t); ++p)
      most = std::max(most, inputs(t, p).size());
  return long(most);
}

long Graph::kernel_iterations(long t, long p) const {
  if (kernel.kind != KernelKind::LoadImbalance) return kernel.iterations;
  const double u = uniform({index, t, p, 17});
  return std::max(0L, std::lround((1 + (u - 0.5) * kernel.imbalance) * double(kernel.iterations)));
}

long long Graph::flops_per_task(long t, long p) const {
  switch (kernel.kind) {
    case KernelKind::ComputeBound:
    case KernelKind::LoadImbalance:
      // 64 lanes, a multiply and an add per lane and iteration, and the final product.
      return 2LL * 64 * kernel_iterations(t, p) + 64;
    default:
      return 0;
  }
}

long long Graph::bytes_per_task() const {
  if (kernel.kind != KernelKind::MemoryBound || kernel.samples <= 0) return 0;
  return (long long)scratch_bytes * kernel.iterations / kernel.samples;
}

}  // namespace taskbench

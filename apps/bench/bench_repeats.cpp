// The repeat finder's cost per token for n = 10^3 .. 10^6, on a task-stream-like string (a
// loop body of 24 tokens with occasional noise) and on random tokens. Per size: the median of
// several runs, ns per token, and ns per token divided by log2(n): flat when the finder grows
// like n log n.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "reprise_tracing/repeats.h"

using namespace reprise::tracing;

namespace {
std::vector<std::uint64_t> loop_stream(std::size_t n, std::mt19937_64& rng) {
  std::vector<std::uint64_t> s;
  s.reserve(n);
  while (s.size() < n) {
    for (std::uint64_t t = 0; t < 24 && s.size() < n; ++t) s.push_back(1000 + t);
    if (rng() % 8 == 0 && s.size() < n) s.push_back(rng());  // noise between iterations
  }
  return s;
}
std::vector<std::uint64_t> random_stream(std::size_t n, std::mt19937_64& rng) {
  std::vector<std::uint64_t> s(n);
  for (auto& x : s) x = rng() % 64;
  return s;
}
double median_ms(const std::vector<std::uint64_t>& s, int reps) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    auto groups = find_repeats(s, RepeatOptions{5, 1u << 30, 2});
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (groups.size() == 12345678) std::puts("");  // keep the result alive
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
}  // namespace

int main() {
  std::mt19937_64 rng(42);
  std::printf("%-8s %9s %10s %10s %16s\n", "stream", "n", "ms", "ns/token", "ns/token/log2n");
  for (const char* kind : {"loop", "random"})
    for (std::size_t n : {1000u, 10000u, 100000u, 1000000u}) {
      auto s = std::string(kind) == "loop" ? loop_stream(n, rng) : random_stream(n, rng);
      int reps = n >= 1000000 ? 3 : 7;
      double ms = median_ms(s, reps);
      double per = ms * 1e6 / double(n);
      std::printf("%-8s %9zu %10.3f %10.1f %16.2f\n", kind, n, ms, per, per / std::log2(double(n)));
    }
  return 0;
}

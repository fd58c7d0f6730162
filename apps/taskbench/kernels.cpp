#include "kernels.h"

#include <cstring>
#include <vector>

namespace taskbench {

namespace {
// 64 lanes as 16 vectors of 4 (GCC vector extensions), kept in registers: a multiply and an
// add per lane and iteration, 16 independent chains so that the FMA units stay busy. Inlined
// into each instruction-set variant below.
[[gnu::always_inline]] inline double compute_lanes(long iterations) {
  using v4 = double __attribute__((vector_size(32)));
  v4 a[16];
  for (v4& x : a) x = v4{1.0, 2.0, 3.0, 4.0};
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) a[i] = a[i] * a[i] + a[i];
  }
  double product = 1.0;
  for (const v4& x : a)
    for (int k = 0; k < 4; ++k) product *= x[k];
  return product;
}

// Built for AVX2 with fused multiply-adds where the CPU has them, like Task Bench's own
// builds (-mavx2 -mfma), so that peak FLOP/s compare between the two.
__attribute__((target("avx2,fma"))) double compute_avx2(long iterations) {
  return compute_lanes(iterations);
}
double compute_portable(long iterations) {
  return compute_lanes(iterations);
}
double compute(long iterations) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return avx2 ? compute_avx2(iterations) : compute_portable(iterations);
}

long long busy_wait(long iterations) {
  long long acc = 113;
  for (long it = 0; it < iterations; ++it) acc = acc * 139 % 2147483647;
  return acc;
}

// Each iteration copies one sample of the first half of the scratch buffer into the second.
double memory(long iterations, int samples, long timestep, std::vector<char>& scratch) {
  if (scratch.empty() || samples <= 0) return 0;
  const std::size_t half = scratch.size() / 2, sample = half / std::size_t(samples);
  if (sample == 0) return 0;
  for (long it = 0; it < iterations; ++it) {
    const std::size_t k = std::size_t((timestep * iterations + it) % samples);
    std::memcpy(scratch.data() + half + k * sample, scratch.data() + k * sample, sample);
  }
  return double(scratch[half]);
}
}  // namespace

double run_kernel(const Kernel& k, long iterations, long timestep, long scratch_bytes) {
  switch (k.kind) {
    case KernelKind::Empty:
      return 0;
    case KernelKind::BusyWait:
      return double(busy_wait(iterations));
    case KernelKind::ComputeBound:
    case KernelKind::LoadImbalance:
      return compute(iterations);
    case KernelKind::MemoryBound: {
      // One scratch buffer per worker thread, reused by every task it runs.
      thread_local std::vector<char> scratch;
      if (scratch.size() != std::size_t(scratch_bytes))
        scratch.assign(std::size_t(scratch_bytes), 1);
      return memory(iterations, k.samples, timestep, scratch);
    }
  }
  return 0;
}

}  // namespace taskbench

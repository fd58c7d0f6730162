#pragma once
// The tasks behind the array ops and their arguments.
#include <reprise/reprise.h>

#include <cstdint>

namespace reprise::array::tasks {

enum : TaskID {
  kSet = 7000,  // out = value
  kRandom,      // out = hash(seed, row-major index)
  kBinary,      // out = a (op) b
  kScalar,      // out = a (op) s, or s (op) a
  kCopy,        // out = a
  kDot,         // out[i] = sum_j m[i][j] * v[j]
  kDiag,        // out[i] = a[i][i]
  kDiagMatrix,  // out[i][j] = i == j ? v[i] : 0
  kSum,         // per tile: sum of a
  kMax,         // per tile: max of a
  kSumSquares,  // per tile: sum of a^2
  kSqrt,        // sqrt(future 0)
  kChecksum,    // hash of a view, row-major
  kRead,        // copies a view into host memory (single process)
};

enum class Op : std::uint8_t { Add, Sub, Mul, Div, Neg };

struct SetArgs {
  double value;
};
struct RandomArgs {
  std::uint64_t seed;
  coord_t cols;  // of the whole array (row-major index = i * cols + j)
};
struct BinaryArgs {
  Op op;
};
struct ScalarArgs {
  Op op;
  bool scalar_left;
  double s;
};
struct DotArgs {
  coord_t v_offset;  // the vector view's first index in its region
};
struct ViewArgs {
  Domain view;          // the view in its region
  std::uintptr_t dest;  // kRead: where to write
};

// Registers every task once per process.
void register_all();
// The value of element k of random array `seed` (on CPUs and in GPU kernels alike).
REPRISE_HOST_DEVICE inline double random_value(std::uint64_t seed, std::uint64_t k) {
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ull + k + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53;
}
REPRISE_HOST_DEVICE inline double apply(Op op, double a, double b) {
  switch (op) {
    case Op::Add:
      return a + b;
    case Op::Sub:
      return a - b;
    case Op::Mul:
      return a * b;
    case Op::Div:
      return a / b;
    case Op::Neg:
      return -a;
  }
  return 0;
}

// The element-wise tasks (array_kernels.cu), each registered as its CPU and its GPU variant.
// The host compiler's copy (host_kernels) is the CPU variant everywhere; in CUDA builds nvcc's
// (nvcc_kernels) is the GPU variant: an extended __host__ __device__ lambda called from host
// code goes through nvcc's wrapper, an indirect call per element, which made the cfd app's
// CPU runs of a CUDA build take three to four times as long. Without CUDA the host copy is
// the GPU variant too (the host device backend).
#define REPRISE_ARRAY_ELEMENTWISE_TASKS \
  void set_task(TaskContext& tc);       \
  void random_task(TaskContext& tc);    \
  void binary_task(TaskContext& tc);    \
  void scalar_task(TaskContext& tc);    \
  void copy_task(TaskContext& tc);      \
  void dot_task(TaskContext& tc);       \
  void diag_task(TaskContext& tc);      \
  void diag_matrix_task(TaskContext& tc);
namespace host_kernels {
REPRISE_ARRAY_ELEMENTWISE_TASKS
}
namespace nvcc_kernels {
REPRISE_ARRAY_ELEMENTWISE_TASKS
}
#undef REPRISE_ARRAY_ELEMENTWISE_TASKS

}  // namespace reprise::array::tasks

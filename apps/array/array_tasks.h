#pragma once
// The tasks behind the array ops (CPU variants) and their arguments.
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
// The value of element k of random array `seed`.
double random_value(std::uint64_t seed, std::uint64_t k);
double apply(Op op, double a, double b);

}  // namespace reprise::array::tasks

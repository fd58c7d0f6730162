#pragma once
// User-defined reduction operators (Legion's register_reduction_op). An operator is a type
//   struct Op {
//     using value_type = T;                  // any trivially-copyable type
//     static T identity();                   // x ⊕ identity() == x
//     static void fold(T& acc, const T& v);  // acc = acc ⊕ v
//   };
// registered under an id from 16 to 255 on every rank, before start():
//   const ReductionOp kAbsMax = register_reduction<AbsMax>(16, "absmax");
// and used wherever a built-in operator is: add_reduction(…, kAbsMax, …), reducer<T, N>
// (T must be value_type, or have its size), Context::reduce over a future map whose task
// returns a value_type. Folds keep the built-in operators' guarantee: contributions are folded
// in launch order, so results are bit-identical across runs, trace modes and rank counts.
// (On the CUDA backend a GPU variant cannot call a user operator yet: it is host code.)
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "reprise/types.h"

namespace reprise {

// Ids below this are the built-in operators' (and reserved).
constexpr std::uint8_t kFirstCustomReduction = 16;

namespace detail {
using FoldArrayFn = void (*)(std::byte* acc, const std::byte* values, std::size_t count);

struct CustomReduction {
  std::string name;
  std::size_t size = 0;  // of one value
  std::vector<std::byte> identity;
  FoldArrayFn fold = nullptr;
};

inline bool is_custom(ReductionOp op) {
  return std::uint8_t(op) >= kFirstCustomReduction;
}
// The registered operator `op`, or nullptr (a built-in operator, or an id not registered).
const CustomReduction* custom_reduction(ReductionOp op);
// Throws reprise::Error for a reserved id, or an id registered with another operator.
void register_custom_reduction(std::uint8_t id, CustomReduction r);

template <class Op>
void fold_array(std::byte* acc, const std::byte* values, std::size_t count) {
  using T = typename Op::value_type;
  // memcpy: message buffers and instance rows need not be aligned for T.
  for (std::size_t i = 0; i < count; ++i) {
    T a, v;
    std::memcpy(&a, acc + i * sizeof(T), sizeof(T));
    std::memcpy(&v, values + i * sizeof(T), sizeof(T));
    Op::fold(a, v);
    std::memcpy(acc + i * sizeof(T), &a, sizeof(T));
  }
}
}  // namespace detail

template <class Op>
ReductionOp register_reduction(std::uint8_t id, std::string name) {
  using T = typename Op::value_type;
  static_assert(std::is_trivially_copyable_v<T>,
                "a reduction operator's value_type must be trivially copyable");
  detail::CustomReduction r;
  r.name = std::move(name);
  r.size = sizeof(T);
  const T identity = Op::identity();
  r.identity.resize(sizeof(T));
  std::memcpy(r.identity.data(), &identity, sizeof(T));
  r.fold = &detail::fold_array<Op>;
  detail::register_custom_reduction(id, std::move(r));
  return ReductionOp(id);
}

}  // namespace reprise

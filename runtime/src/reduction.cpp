// Reduction arithmetic on untyped arrays: identities for initialising reduction instances and
// the element-wise fold of a reduction instance into its destination.
#include "reprise/reduction.h"

#include <fmt/core.h>

#include <cstring>
#include <limits>

#include "reprise/error.h"
#include "reprise_rt/instance.h"

namespace reprise::detail {

namespace {
template <typename T>
T identity(ReductionOp op) {
  switch (op) {
    case ReductionOp::Prod:
      return T(1);
    case ReductionOp::Min:
      return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::max();
    case ReductionOp::Max:
      return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
    case ReductionOp::Sum:
    case ReductionOp::None:
      break;
  }
  return T(0);
}

template <typename T>
void fill_typed(ReductionOp op, std::byte* dst, std::size_t count) {
  const T v = identity<T>(op);
  for (std::size_t i = 0; i < count; ++i) std::memcpy(dst + i * sizeof(T), &v, sizeof(T));
}

template <typename T>
void fold_typed(ReductionOp op, std::byte* dst, const std::byte* src, std::size_t count) {
  // memcpy: the rows of an instance need not be aligned for T in a message buffer.
  for (std::size_t i = 0; i < count; ++i) {
    T a, b;
    std::memcpy(&a, dst + i * sizeof(T), sizeof(T));
    std::memcpy(&b, src + i * sizeof(T), sizeof(T));
    a = fold_values(a, b, op);
    std::memcpy(dst + i * sizeof(T), &a, sizeof(T));
  }
}

// Calls f(T{}) for the C++ type of `type`.
template <typename F>
void with_type(ScalarType type, F&& f) {
  switch (type) {
    case ScalarType::I8:
      return f(std::int8_t{});
    case ScalarType::I16:
      return f(std::int16_t{});
    case ScalarType::I32:
      return f(std::int32_t{});
    case ScalarType::I64:
      return f(std::int64_t{});
    case ScalarType::U8:
      return f(std::uint8_t{});
    case ScalarType::U16:
      return f(std::uint16_t{});
    case ScalarType::U32:
      return f(std::uint32_t{});
    case ScalarType::U64:
      return f(std::uint64_t{});
    case ScalarType::F32:
      return f(float{});
    case ScalarType::F64:
      return f(double{});
    case ScalarType::None:
      break;
  }
  throw Error("internal: a reduction without an element type");
}
// A user-defined operator is named by its id alone (the element type is its value_type).
const CustomReduction& registered(ReductionOp op) {
  const CustomReduction* r = custom_reduction(op);
  if (!r)
    throw Error(fmt::format("reduction operator {} is not registered (on this rank)",
                            unsigned(std::uint8_t(op))));
  return *r;
}
}  // namespace

void fill_identity(ScalarType type, ReductionOp op, std::byte* dst, std::size_t count) {
  if (is_custom(op)) {
    const CustomReduction& r = registered(op);
    for (std::size_t i = 0; i < count; ++i)
      std::memcpy(dst + i * r.size, r.identity.data(), r.size);
    return;
  }
  with_type(type, [&](auto v) { fill_typed<decltype(v)>(op, dst, count); });
}

void fold_elements(ScalarType type, ReductionOp op, std::byte* dst, const std::byte* src,
                   std::size_t count) {
  if (is_custom(op)) return registered(op).fold(dst, src, count);
  with_type(type, [&](auto v) { fold_typed<decltype(v)>(op, dst, src, count); });
}

void fold_instance(const Instance& src, Instance& dst, const Domain& rect,
                   std::span<const int> fields) {
  for (int fi : fields) {
    const ReductionField& rf = src.reduction_field(fi);
    if (!rf.touched) continue;  // the reducer did not use this field
    const std::size_t size = src.field_size(fi);
    const std::byte* sb = src.field_data(fi);
    std::byte* db = dst.field_data(fi);
    Instance::for_each_row(rect, size, [&](const DomainPoint& row, std::size_t bytes) {
      fold_elements(rf.type, rf.op, db + dst.offset_of(row, size), sb + src.offset_of(row, size),
                    bytes / size);
    });
  }
}

}  // namespace reprise::detail

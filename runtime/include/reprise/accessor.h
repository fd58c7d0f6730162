#pragma once
// Typed views of a task's region instances. Accessor<const T, N> reads; Accessor<T, N> reads
// and writes (asking for it on a READ_ONLY requirement is an error); Reducer<T, N> folds values
// into the point's reduction instance with the requirement's reduction operator; the runtime
// folds the reduction instances into the region, in launch order, before the data is next used.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "reprise/geometry.h"
#include "reprise/reduction.h"
#include "reprise/types.h"

namespace reprise {

namespace detail {
struct PointTask;
// Where an accessor came from, for error messages.
struct AccessSite {
  const PointTask* task = nullptr;
  int requirement = 0;
  FieldID field = 0;
};
[[noreturn]] void throw_out_of_bounds(const AccessSite& site, const DomainPoint& p,
                                      const Domain& bounds);

// Untyped view: base is the address of point 0 (which may lie outside the allocation).
struct RawAccess {
  std::uintptr_t base = 0;
  std::array<coord_t, kMaxDim> strides{};  // in bytes
  Domain bounds;
  bool check = false;
  AccessSite site;
};
}  // namespace detail

template <typename T, int N>
class Accessor {
 public:
  Accessor() = default;
  explicit Accessor(const detail::RawAccess& raw)
      : base_(raw.base), bounds_(raw.bounds.as<N>()), site_(raw.site) {
    for (int i = 0; i < N; ++i) strides_[i] = raw.strides[i];
#ifndef NDEBUG
    check_ = true;
#else
    check_ = raw.check;
#endif
  }
  REPRISE_HOST_DEVICE T& operator[](const Point<N>& p) const {
#if !defined(__CUDA_ARCH__)  // (a kernel on a CUDA GPU cannot throw: no check there)
    if (check_ && !bounds_.contains(p)) detail::throw_out_of_bounds(site_, p, bounds_);
#endif
    return *reinterpret_cast<T*>(address(p));
  }
  REPRISE_HOST_DEVICE T* ptr(const Point<N>& p) const {
    return reinterpret_cast<T*>(address(p));
  }
  // Strides in elements, per dimension.
  std::array<coord_t, N> strides() const {
    std::array<coord_t, N> s;
    for (int i = 0; i < N; ++i) s[i] = strides_[i] / coord_t(sizeof(T));
    return s;
  }
  const Rect<N>& bounds() const {
    return bounds_;
  }
  const detail::AccessSite& site() const {
    return site_;
  }

 private:
  REPRISE_HOST_DEVICE std::uintptr_t address(const Point<N>& p) const {
    std::uintptr_t a = base_;
    for (int i = 0; i < N; ++i) a += std::uintptr_t(p[i] * strides_[i]);
    return a;
  }
  std::uintptr_t base_ = 0;
  std::array<coord_t, N> strides_{};
  Rect<N> bounds_;
  detail::AccessSite site_;
  bool check_ = false;
};

namespace detail {
// The element types a reduction can fold (the runtime folds reduction instances into their
// destination without knowing the task's types, so the reducer names it).
enum class ScalarType : std::uint8_t { None, I8, I16, I32, I64, U8, U16, U32, U64, F32, F64 };

template <typename T>
constexpr ScalarType scalar_type_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) return ScalarType::F32;
  if constexpr (std::is_same_v<U, double>) return ScalarType::F64;
  if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 1)
    return ScalarType::I8;
  if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 2)
    return ScalarType::I16;
  if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 4)
    return ScalarType::I32;
  if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 8)
    return ScalarType::I64;
  if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 1)
    return ScalarType::U8;
  if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 2)
    return ScalarType::U16;
  if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 4)
    return ScalarType::U32;
  if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 8)
    return ScalarType::U64;
  return ScalarType::None;
}

template <typename T>
constexpr T fold_values(T cur, T v, ReductionOp op) {
  switch (op) {
    case ReductionOp::Sum:
      return T(cur + v);
    case ReductionOp::Prod:
      return T(cur * v);
    case ReductionOp::Min:
      return v < cur ? v : cur;
    case ReductionOp::Max:
      return v > cur ? v : cur;
    case ReductionOp::None:
      break;
  }
  return v;
}
}  // namespace detail

template <typename T, int N>
class Reducer {
 public:
  Reducer() = default;
  Reducer(const detail::RawAccess& raw, ReductionOp op)
      : acc_(raw),
        op_(op),
        custom_(detail::is_custom(op) ? detail::custom_reduction(op)->fold : nullptr) {}
  // A piece of a sparse partition: one reduction instance per rectangle (sorted, disjoint);
  // bounds() is then the first rectangle's.
  Reducer(std::span<const detail::RawAccess> runs, ReductionOp op) : Reducer(runs.front(), op) {
    if (runs.size() < 2) return;
    auto all = std::make_shared<std::vector<Accessor<T, N>>>();
    all->reserve(runs.size());
    for (const auto& r : runs) all->emplace_back(r);
    runs_ = std::move(all);
  }
  // The point's own reduction instance: no other task folds into it concurrently.
  void reduce(const Point<N>& p, T v) const {
    T& cur = (runs_ ? run_of(p) : acc_)[p];
    if constexpr (detail::scalar_type_of<T>() != detail::ScalarType::None) {
      if (!custom_) {
        cur = detail::fold_values(cur, v, op_);
        return;
      }
    }
    // A user-defined operator (raw_reduce checked that it exists and folds values of T's size).
    custom_(reinterpret_cast<std::byte*>(&cur), reinterpret_cast<const std::byte*>(&v), 1);
  }
  const Rect<N>& bounds() const { return acc_.bounds(); }

 private:
  // The rectangle that holds p (a point outside them all is an error, checked or not: there
  // is no instance to fold it into).
  const Accessor<T, N>& run_of(const Point<N>& p) const {
    const auto& all = *runs_;
    if constexpr (N == 1) {
      auto it = std::partition_point(
          all.begin(), all.end(), [&](const Accessor<T, N>& a) { return a.bounds().hi[0] < p[0]; });
      if (it != all.end() && it->bounds().contains(p)) return *it;
    } else {
      for (const auto& a : all)
        if (a.bounds().contains(p)) return a;
    }
    Rect<N> box = all.front().bounds();
    for (const auto& a : all)
      for (int i = 0; i < N; ++i) {
        box.lo[i] = std::min(box.lo[i], a.bounds().lo[i]);
        box.hi[i] = std::max(box.hi[i], a.bounds().hi[i]);
      }
    detail::throw_out_of_bounds(acc_.site(), p, box);
  }
  Accessor<T, N> acc_;
  std::shared_ptr<const std::vector<Accessor<T, N>>> runs_;  // sparse pieces only
  ReductionOp op_ = ReductionOp::Sum;
  detail::FoldArrayFn custom_ = nullptr;
};

}  // namespace reprise

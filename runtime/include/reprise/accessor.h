#pragma once
// Typed views of a task's region instances. Accessor<const T, N> reads; Accessor<T, N> reads
// and writes (asking for it on a READ_ONLY requirement is an error); Reducer<T, N> folds values
// in with the requirement's reduction operator (atomically: reducers of one operator commute).
#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "reprise/geometry.h"
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
  T& operator[](const Point<N>& p) const {
    if (check_ && !bounds_.contains(p)) detail::throw_out_of_bounds(site_, p, bounds_);
    return *reinterpret_cast<T*>(address(p));
  }
  T* ptr(const Point<N>& p) const {
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

 private:
  std::uintptr_t address(const Point<N>& p) const {
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
template <typename T>
void atomic_fold(T& target, T v, ReductionOp op) {
  std::atomic_ref<T> ref(target);
  T cur = ref.load(std::memory_order_relaxed);
  for (;;) {
    T next = cur;
    switch (op) {
      case ReductionOp::Sum:
        next = T(cur + v);
        break;
      case ReductionOp::Prod:
        next = T(cur * v);
        break;
      case ReductionOp::Min:
        next = v < cur ? v : cur;
        break;
      case ReductionOp::Max:
        next = v > cur ? v : cur;
        break;
      case ReductionOp::None:
        next = v;
        break;
    }
    if (ref.compare_exchange_weak(cur, next, std::memory_order_relaxed)) return;
  }
}
}  // namespace detail

template <typename T, int N>
class Reducer {
 public:
  Reducer() = default;
  Reducer(const detail::RawAccess& raw, ReductionOp op) : acc_(raw), op_(op) {}
  void reduce(const Point<N>& p, T v) const { detail::atomic_fold(acc_[p], v, op_); }
  const Rect<N>& bounds() const { return acc_.bounds(); }

 private:
  Accessor<T, N> acc_;
  ReductionOp op_ = ReductionOp::Sum;
};

}  // namespace reprise

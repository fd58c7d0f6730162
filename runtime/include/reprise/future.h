#pragma once
// Futures: values that tasks will produce. get() blocks the calling (application) thread only.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "reprise/error.h"
#include "reprise/geometry.h"

namespace reprise {

// The kind of value a future holds, so that future maps can be reduced.
enum class ValueKind : std::uint8_t { None, I32, I64, U32, U64, F32, F64, Bytes };

template <typename T>
constexpr ValueKind value_kind_of() {
  if constexpr (std::is_void_v<T>)
    return ValueKind::None;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return ValueKind::I32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return ValueKind::I64;
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return ValueKind::U32;
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return ValueKind::U64;
  else if constexpr (std::is_same_v<T, float>)
    return ValueKind::F32;
  else if constexpr (std::is_same_v<T, double>)
    return ValueKind::F64;
  else
    return ValueKind::Bytes;
}

namespace detail {
struct FutureState;
struct FutureMapState;
}  // namespace detail

class Future {
 public:
  Future() = default;
  explicit Future(std::shared_ptr<detail::FutureState> s) : state_(std::move(s)) {}

  bool valid() const { return state_ != nullptr; }
  // Blocks until the value is ready; rethrows the producing op's error, if any.
  void wait() const;
  bool ready() const;
  template <typename T>
  T get() const {
    static_assert(std::is_trivially_copyable_v<T>, "future values are trivially copyable");
    T v;
    copy_value(&v, sizeof(T), value_kind_of<T>());
    return v;
  }
  ValueKind kind() const;
  const std::shared_ptr<detail::FutureState>& state() const { return state_; }

 private:
  void copy_value(void* dst, std::size_t size, ValueKind kind) const;
  std::shared_ptr<detail::FutureState> state_;
};

// One future per point of an index launch.
class FutureMap {
 public:
  FutureMap() = default;
  explicit FutureMap(std::shared_ptr<detail::FutureMapState> s) : state_(std::move(s)) {}

  bool valid() const { return state_ != nullptr; }
  void wait() const;
  Future get(const DomainPoint& p) const;
  const Domain& domain() const;
  const std::shared_ptr<detail::FutureMapState>& state() const { return state_; }

 private:
  std::shared_ptr<detail::FutureMapState> state_;
};

}  // namespace reprise

#pragma once
// A vector of trivially copyable values that keeps its first N elements inside itself and
// goes to the pool only beyond them. An op is made on the application thread and usually dies
// on a worker: each heap vector inside it cost an allocation there and a cross-thread free
// here (~250 instructions a pair, a dozen pairs per launch). The field lists, arguments and
// per-point tables of a typical launch fit inline.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <type_traits>
#include <utility>

#include "reprise_rt/pool.h"

namespace reprise::detail {

template <typename T, std::size_t N>
class InlineVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "InlineVector moves its elements with memcpy");
  static_assert(N > 0, "an InlineVector keeps at least one element inline");

 public:
  using value_type = T;
  using size_type = std::size_t;
  using iterator = T*;
  using const_iterator = const T*;
  using reference = T&;
  using const_reference = const T&;

  InlineVector() = default;
  InlineVector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  InlineVector(const InlineVector& o) { assign(o.begin(), o.end()); }
  InlineVector(InlineVector&& o) noexcept { take(o); }
  InlineVector& operator=(const InlineVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  InlineVector& operator=(InlineVector&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~InlineVector() { release(); }

  T* data() { return heap_ ? heap_ : local(); }
  const T* data() const { return heap_ ? heap_ : local(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::size_t capacity() const { return capacity_; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void reserve(std::size_t n) {
    if (n > capacity_) grow(n);
  }
  void clear() { size_ = 0; }
  void push_back(const T& value) {
    const T copy = value;  // (value may live in this vector, which may move)
    if (size_ == capacity_) grow(capacity_ * 2);
    data()[size_++] = copy;
  }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    push_back(T(std::forward<Args>(args)...));
    return back();
  }
  void pop_back() { --size_; }
  void resize(std::size_t n, const T& value = T{}) {
    reserve(n);
    if (n > size_) {
      // (A zero value — no event, no instance — is a memset: per-point tables of a replay
      // under control replication have every shard's points.)
      // (A few are stored one by one: a call to memset costs more than a one-point launch's.)
      static constexpr unsigned char zero[sizeof(T)] = {};
      if (n - size_ <= 4)
        std::fill(data() + size_, data() + n, value);
      else if (std::memcmp(&value, zero, sizeof(T)) == 0)
        std::memset(static_cast<void*>(data() + size_), 0, (n - size_) * sizeof(T));
      else
        std::fill(data() + size_, data() + n, value);
    }
    size_ = std::uint32_t(n);
  }
  template <typename It, typename = std::enable_if_t<!std::is_integral_v<It>>>
  void assign(It first, It last) {
    const auto n = std::size_t(std::distance(first, last));
    size_ = 0;
    reserve(n);
    std::copy(first, last, data());
    size_ = std::uint32_t(n);
  }
  void assign(std::size_t n, const T& value) {
    size_ = 0;
    resize(n, value);
  }
  void assign(std::initializer_list<T> values) { assign(values.begin(), values.end()); }

  friend bool operator==(const InlineVector& a, const InlineVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  T* local() { return std::launder(reinterpret_cast<T*>(inline_)); }
  const T* local() const { return std::launder(reinterpret_cast<const T*>(inline_)); }
  void grow(std::size_t n) {
    n = std::max<std::size_t>(n, std::size_t(capacity_) * 2);
    auto* bigger = static_cast<T*>(pool_malloc(n * sizeof(T)));
    if (!bigger) throw std::bad_alloc();
    if (size_) std::memcpy(static_cast<void*>(bigger), data(), size_ * sizeof(T));
    if (heap_) pool_free(heap_);
    heap_ = bigger;
    capacity_ = std::uint32_t(n);
  }
  void release() {
    if (heap_) pool_free(heap_);
    heap_ = nullptr;
    capacity_ = N;
    size_ = 0;
  }
  void take(InlineVector& o) {
    size_ = o.size_;
    if (o.heap_) {
      heap_ = o.heap_;
      capacity_ = o.capacity_;
      o.heap_ = nullptr;
      o.capacity_ = N;
    } else if (size_) {
      std::memcpy(static_cast<void*>(local()), o.local(), size_ * sizeof(T));
    }
    o.size_ = 0;
  }

  T* heap_ = nullptr;
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = N;
  alignas(T) unsigned char inline_[N * sizeof(T)];
};

}  // namespace reprise::detail

#pragma once
// The last 2^Bits values of an append-only sequence of words, so that per-op bookkeeping stays
// bounded however long a program runs. One thread appends; others ask for a value by its
// index and are told when it has been overwritten (or not written yet).
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

namespace reprise::detail {

template <std::size_t Bits>
class HistoryRing {
 public:
  static constexpr std::uint64_t kCapacity = std::uint64_t(1) << Bits;

  HistoryRing() : slots_(std::make_unique<std::atomic<std::uint64_t>[]>(kCapacity)) {}

  // Appending thread only.
  void push_back(std::uint64_t v) {
    const std::uint64_t i = size_.load(std::memory_order_relaxed);
    // Release: a reader that sees this value also sees the size that made its old one stale.
    slots_[i & (kCapacity - 1)].store(v, std::memory_order_release);
    size_.store(i + 1, std::memory_order_release);
  }
  std::uint64_t size() const { return size_.load(std::memory_order_acquire); }
  // Whether index i is still held: the last kCapacity - 1 values are (the slot of the oldest
  // of kCapacity is the one the writer fills next, so it may be changing under a reader).
  bool holds(std::uint64_t i) const {
    const std::uint64_t n = size();
    return i < n && n - i < kCapacity;
  }
  // The value at index i, if it is still held.
  std::optional<std::uint64_t> at(std::uint64_t i) const {
    if (!holds(i)) return std::nullopt;
    const std::uint64_t v = slots_[i & (kCapacity - 1)].load(std::memory_order_acquire);
    // Overwritten meanwhile? Index i + kCapacity goes into this slot once the size has reached
    // it (a reader that saw that value sees at least that size).
    if (size() - i >= kCapacity) return std::nullopt;
    return v;
  }

 private:
  std::unique_ptr<std::atomic<std::uint64_t>[]> slots_;
  std::atomic<std::uint64_t> size_{0};
};

}  // namespace reprise::detail

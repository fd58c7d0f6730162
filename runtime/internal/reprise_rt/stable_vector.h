#pragma once
// An append-only vector whose elements never move: one thread appends while others read
// elements published to them earlier (through a queue or a lock).
#include <fmt/core.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

#include "reprise/error.h"

namespace reprise::detail {

template <typename T, std::size_t ChunkBits = 10, std::size_t MaxChunks = 4096>
class StableVector {
  static constexpr std::size_t kChunk = std::size_t(1) << ChunkBits;

 public:
  StableVector() = default;
  StableVector(const StableVector&) = delete;
  StableVector& operator=(const StableVector&) = delete;

  static constexpr std::size_t kCapacity = kChunk * MaxChunks;

  // Appends a value; returns its index. `what` names the contents for the error when full.
  std::size_t push_back(T v, const char* what = "a runtime table") {
    std::lock_guard<std::mutex> g(append_);
    std::size_t i = size_.load(std::memory_order_relaxed);
    if (i >= kCapacity)
      throw Error(
          fmt::format("{} is full ({} entries): the program creates more than the "
                      "runtime can track",
                      what, kCapacity));
    T* chunk = chunks_[i >> ChunkBits].load(std::memory_order_relaxed);
    if (!chunk) {
      owned_[i >> ChunkBits] = std::make_unique<T[]>(kChunk);
      chunk = owned_[i >> ChunkBits].get();
      chunks_[i >> ChunkBits].store(chunk, std::memory_order_release);
    }
    chunk[i & (kChunk - 1)] = std::move(v);
    size_.store(i + 1, std::memory_order_release);
    return i;
  }
  T& operator[](std::size_t i) {
    return chunks_[i >> ChunkBits].load(std::memory_order_acquire)[i & (kChunk - 1)];
  }
  const T& operator[](std::size_t i) const {
    return chunks_[i >> ChunkBits].load(std::memory_order_acquire)[i & (kChunk - 1)];
  }
  std::size_t size() const { return size_.load(std::memory_order_acquire); }

 private:
  std::array<std::atomic<T*>, MaxChunks> chunks_{};  // what readers see
  std::array<std::unique_ptr<T[]>, MaxChunks> owned_{};
  std::atomic<std::size_t> size_{0};
  std::mutex append_;
};

}  // namespace reprise::detail

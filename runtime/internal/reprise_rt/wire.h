#pragma once
// Plain values into and out of a message's bytes (control replication's messages).
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "reprise/error.h"
#include "reprise/registry.h"

namespace reprise::detail::wire {

template <typename T>
void put(std::vector<std::byte>& b, const T& v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  b.insert(b.end(), p, p + sizeof(T));
}
inline void put_text(std::vector<std::byte>& b, const std::string& text) {
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  b.insert(b.end(), p, p + text.size());
}
template <typename T>
T get(const std::vector<std::byte>& b, std::size_t& at) {
  T v;
  if (at + sizeof(T) > b.size()) throw Error("control replication: a truncated message");
  std::memcpy(&v, b.data() + at, sizeof(T));
  at += sizeof(T);
  return v;
}
// The rest of the message from `at`, as text.
inline std::string rest_text(const std::vector<std::byte>& b, std::size_t at) {
  return at >= b.size() ? std::string()
                        : std::string(reinterpret_cast<const char*>(b.data() + at), b.size() - at);
}

// A task's value: its size, then its bytes.
inline void put_value(std::vector<std::byte>& b, const TaskResult& v) {
  put(b, std::uint64_t(v.size));
  b.insert(b.end(), v.data(), v.data() + v.size);
}
inline TaskResult get_value(const std::vector<std::byte>& b, std::size_t& at) {
  const auto size = std::size_t(get<std::uint64_t>(b, at));
  if (size > b.size() - at) throw Error("control replication: a truncated message");
  TaskResult v;
  v.assign(b.data() + at, size);
  at += size;
  return v;
}

}  // namespace reprise::detail::wire

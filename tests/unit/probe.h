#pragma once
// Probe tasks for ordering tests: each logs when it starts and ends, may set a flag, and may
// wait (bounded) for another probe's flag. A probe that must wait for a later one proves two
// ops ran concurrently; a timeout means the runtime serialised them.
#include <reprise/reprise.h>

#include <array>
#include <atomic>
#include <chrono>
#include <thread>

namespace probe {

inline constexpr reprise::TaskID kTask = 9000;
inline constexpr int kMax = 64;

struct Args {
  int id = 0;
  int wait_for = -1;  // another probe's id, or -1
};

struct Log {
  std::array<std::atomic<long>, kMax> start{}, end{};
  std::array<std::atomic<bool>, kMax> flag{};
  std::array<std::atomic<bool>, kMax> timed_out{};
  std::atomic<long> clock{0};
  void reset() {
    for (int i = 0; i < kMax; ++i) {
      start[i] = end[i] = -1;
      flag[i] = false;
      timed_out[i] = false;
    }
    clock = 0;
  }
};

inline Log& log() {
  static Log l;
  return l;
}

inline void body(reprise::TaskContext& tc) {
  auto a = tc.args<Args>();
  // Index-launch points get distinct ids: id + point index.
  int id = a.id + int(tc.launch_domain().linearize(tc.point()));
  Log& l = log();
  l.start[id] = ++l.clock;
  l.flag[id] = true;
  if (a.wait_for >= 0) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!l.flag[a.wait_for] && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (!l.flag[a.wait_for]) l.timed_out[id] = true;
  }
  l.end[id] = ++l.clock;
}

inline void register_task() {
  reprise::TaskRegistry::add(kTask, "probe", {reprise::cpu(body)});
}

// b started only after a ended.
inline bool ordered(int a, int b) {
  return log().end[a] >= 0 && log().start[b] > log().end[a];
}

}  // namespace probe

// reprise-core-roundtrip: how long a cache line takes to go from one core to another and back,
// now. Two threads pinned to two cores bounce a counter; prints the median of some rounds. Cores
// are numbered as the runtime's -ll:pin numbers them (hwloc's cores).
//
//   reprise-core-roundtrip [-cores A,B] [-rounds N]   ->   roundtrip_ns=88
//
// Why: on the shared virtual machines this project measures on, the round trip between the two
// vCPUs is ~80-95 ns most of the time and 430-870 ns for spells of seconds (the host's doing),
// and a chain of fine-grained tasks slows by ~2x during them (MPI's by less: it passes fewer
// lines per timestep). tools/experiments/metg.py --gate runs this before each run and holds the
// sweep until the machine is calm again, so that a spell does not land on one system's runs.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "reprise_rt/spin_lock.h"
#include "reprise_rt/topology.h"

namespace {

using reprise::detail::cpu_relax;
using reprise::detail::pin_current_thread;

// The ball: even values are the first thread's to hit, odd ones the second's.
struct alignas(64) Ball {
  std::atomic<long> value{0};
};

// Hits the ball on every value of this parity in [from, to).
void play(Ball& ball, long parity, long from, long to) {
  for (long i = from + parity; i < to; i += 2) {
    while (ball.value.load(std::memory_order_acquire) != i) cpu_relax();
    ball.value.store(i + 1, std::memory_order_release);
  }
}

int usage(const char* why) {
  std::fprintf(stderr,
               "reprise-core-roundtrip: %s\nusage: reprise-core-roundtrip [-cores A,B] "
               "[-rounds N]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int first = 0, second = 1;
  long rounds = 9, hits = 4000;  // ~0.4 ms a round when calm
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "-cores") == 0 && has_value) {
      if (std::sscanf(argv[++i], "%d,%d", &first, &second) != 2 || first < 0 || second < 0 ||
          first == second)
        return usage("-cores takes two different core numbers, as 0,1");
    } else if (std::strcmp(argv[i], "-rounds") == 0 && has_value) {
      rounds = std::atol(argv[++i]);
      if (rounds < 1) return usage("-rounds takes a positive count");
    } else {
      return usage((std::string("unknown argument ") + argv[i]).c_str());
    }
  }
  if (!pin_current_thread(first))
    return usage("cannot run on the first core (is it online and allowed?)");
  Ball ball;
  // The other thread says whether it is pinned before the rally: unpinned, both threads might
  // share a core, and every hit would wait for the scheduler.
  std::atomic<int> other_pinned{-1};
  std::thread other([&] {
    other_pinned.store(pin_current_thread(second) ? 1 : 0);
    if (other_pinned.load() == 1) play(ball, 1, 0, 2 * hits * (rounds + 1));
  });
  while (other_pinned.load() < 0) std::this_thread::yield();
  if (other_pinned.load() == 0) {
    other.join();
    return usage("cannot run on the second core (is it online and allowed?)");
  }
  // One rally of rounds + 1 rounds; the first, a warm-up, is not timed.
  play(ball, 0, 0, 2 * hits);
  std::vector<double> ns;
  for (long r = 1; r <= rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    play(ball, 0, 2 * hits * r, 2 * hits * (r + 1));
    const auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / double(hits));
  }
  other.join();
  std::nth_element(ns.begin(), ns.begin() + long(ns.size() / 2), ns.end());
  std::printf("roundtrip_ns=%.0f\n", ns[ns.size() / 2]);
  return 0;
}

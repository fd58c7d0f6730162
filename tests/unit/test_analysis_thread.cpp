// Which thread runs the analysis: -lg:inline_analysis auto puts it on the application thread
// where a utility thread would make the runtime's busy threads outnumber the cores.
#include <dirent.h>
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "reprise_rt/topology.h"

using namespace reprise;

namespace {
// The names of this process's threads.
std::vector<std::string> thread_names() {
  std::vector<std::string> names;
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return names;
  while (const dirent* e = readdir(tasks)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name)) names.push_back(name);
  }
  closedir(tasks);
  return names;
}

// Whether a thread named rp-util exists while the top-level task runs. (Each runtime thread
// names itself as it starts: wait, a bounded time, until every thread but this one has.)
bool runs_a_utility_thread(const std::vector<std::string>& flags) {
  bool found = false;
  reprise::run(flags, [&](Context&) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      const std::vector<std::string> names = thread_names();
      const auto named = std::count_if(names.begin(), names.end(),
                                       [](const std::string& n) { return n.rfind("rp-", 0) == 0; });
      found = std::find(names.begin(), names.end(), "rp-util") != names.end();
      if (std::size_t(named) + 1 >= names.size() || std::chrono::steady_clock::now() > give_up)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  return found;
}

// The cores this process's threads share (its binding where it has one).
int usable_cores() {
  const int bound = detail::bound_cores(), all = detail::machine_cores();
  return bound > 0 && bound < all ? bound : all;
}
}  // namespace

TEST(AnalysisThread, OnTheApplicationThreadWhereThreadsWouldOutnumberTheCores) {
  if (std::getenv("REPRISE_ARGS")) GTEST_SKIP() << "REPRISE_ARGS may choose the thread";
  const int cores = usable_cores();
  if (cores <= 0) GTEST_SKIP() << "hwloc does not know the cores";
  // As many workers as cores: with the application's thread and a utility thread, two more.
  const std::string cpus = std::to_string(cores);
  EXPECT_FALSE(runs_a_utility_thread({"-ll:cpu", cpus}));
  EXPECT_TRUE(runs_a_utility_thread({"-ll:cpu", cpus, "-lg:no_inline_analysis"}));
}

TEST(AnalysisThread, OnAUtilityThreadWhereTheCoresSuffice) {
  if (std::getenv("REPRISE_ARGS")) GTEST_SKIP() << "REPRISE_ARGS may choose the thread";
  if (usable_cores() < 3) GTEST_SKIP() << "needs 3 cores: application, utility, one worker";
  EXPECT_TRUE(runs_a_utility_thread({"-ll:cpu", "1"}));
  EXPECT_FALSE(runs_a_utility_thread({"-ll:cpu", "1", "-lg:inline_analysis"}));
}

// Which thread runs the analysis: -lg:inline_analysis auto puts it on the application thread
// where a utility thread would make the runtime's busy threads outnumber the cores.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime_threads.h"

using namespace reprise;

namespace {
// Whether a thread named rp-util exists while the top-level task runs.
bool runs_a_utility_thread(const std::vector<std::string>& flags) {
  const std::vector<std::string> names = runtime_thread_names(flags);
  return std::find(names.begin(), names.end(), "rp-util") != names.end();
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

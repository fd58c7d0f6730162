#pragma once
// Which threads a runtime starts, as the system names them (each runtime thread names itself
// rp-… as it starts): for the tests of where the analysis runs and which CPUs have workers.
#include <dirent.h>
#include <reprise/reprise.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "reprise_rt/topology.h"

// The names of this process's threads.
inline std::vector<std::string> thread_names() {
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

// The names of the process's threads while a runtime started with `flags` runs its top-level
// task, once every thread but the application's has named itself (a bounded wait: 10 s).
inline std::vector<std::string> runtime_thread_names(const std::vector<std::string>& flags) {
  std::vector<std::string> names;
  reprise::run(flags, [&](reprise::Context&) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      names = thread_names();
      std::size_t named = 0;
      for (const std::string& n : names) named += n.rfind("rp-", 0) == 0 ? 1 : 0;
      if (named + 1 >= names.size() || std::chrono::steady_clock::now() > give_up) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  return names;
}

// The cores this process's threads share (its binding where it has one).
inline int usable_cores() {
  const int bound = reprise::detail::bound_cores(), all = reprise::detail::machine_cores();
  return bound > 0 && bound < all ? bound : all;
}

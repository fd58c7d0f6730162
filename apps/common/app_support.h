#pragma once
// What every Reprise app shares: the --trace mode's runtime flags, a timed window that also
// measures trace coverage, and the RESULT line of DESIGN.md §10. Public API only.
#include <reprise/reprise.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace reprise::apps {

// --trace none and manual turn automatic tracing off; auto (the default) leaves it on.
inline std::vector<std::string> trace_mode_flags(const std::string& mode) {
  if (mode == "auto") return {};
  return {"-lg:no_auto_tracing"};
}

inline bool valid_trace_mode(const std::string& mode) {
  return mode == "none" || mode == "manual" || mode == "auto";
}

struct TimedWindow {
  double seconds = 0;
  double coverage = 0;  // fraction of the points launched in the window that were replayed
};

// Runs body between two fences and measures it.
template <typename Body>
TimedWindow timed(Context& ctx, Body&& body) {
  ctx.fence().wait();
  const auto before = ctx.trace_stats();
  const auto t0 = std::chrono::steady_clock::now();
  body();
  ctx.fence().wait();
  TimedWindow w;
  w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto after = ctx.trace_stats();
  const double launched = double(after.points_launched - before.points_launched);
  w.coverage =
      launched > 0 ? double(after.points_replayed - before.points_replayed) / launched : 0.0;
  return w;
}

// RESULT app=… mode=… ranks=… iters=… time_s=… iter_per_s=… tasks=… us_per_task=… coverage=…
// checksum=… verified=… copies=… (generated copies between memories, whole run) followed by
// the app's own keys.
inline void print_result(const char* app, const std::string& mode, const Context& ctx, int iters,
                         const TimedWindow& w, double tasks, std::uint64_t checksum, bool verified,
                         const std::string& extra_keys) {
  std::printf(
      "RESULT app=%s mode=%s ranks=%u iters=%d time_s=%.6f iter_per_s=%.2f tasks=%.0f "
      "us_per_task=%.3f coverage=%.2f checksum=%016llx verified=%d copies=%llu %s\n",
      app, mode.c_str(), ctx.num_shards(), iters, w.seconds, iters / w.seconds, tasks,
      w.seconds * 1e6 / tasks, w.coverage, (unsigned long long)checksum, verified ? 1 : 0,
      (unsigned long long)ctx.trace_stats().copies, extra_keys.c_str());
}

}  // namespace reprise::apps

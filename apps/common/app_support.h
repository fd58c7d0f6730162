#pragma once
// What every Reprise app shares: the --trace mode's runtime flags, a timed window that also
// measures trace coverage, and the RESULT line of DESIGN.md §10. Public API only.
#include <reprise/reprise.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

// An app's usage text: with no message (-h, --help) on stdout and exit 0; otherwise
// "<app>: <message>" and the text on stderr, exit 2.
[[noreturn]] inline void exit_with_usage(const char* app, const char* text,
                                         const std::string& message) {
  if (message.empty()) {
    std::fputs(text, stdout);
    std::exit(0);
  }
  std::fprintf(stderr, "%s: %s\n%s", app, message.c_str(), text);
  std::exit(2);
}

// Reads an app's own arguments flag by flag (runtime flags are already removed); a missing or
// malformed value calls fail(message), which must not return (apps print usage and exit);
// -h and --help call fail("").
class ArgReader {
 public:
  using Fail = void (*)(const std::string& message);
  ArgReader(const std::vector<std::string>& args, Fail fail) : args_(args), fail_(fail) {}
  // Moves to the next flag; false at the end.
  bool next() {
    if (++i_ >= args_.size()) return false;
    if (args_[i_] == "-h" || args_[i_] == "--help") fail_("");
    return true;
  }
  const std::string& flag() const { return args_[i_]; }
  std::string value() {
    if (i_ + 1 >= args_.size()) fail_("missing value for " + flag());
    return args_[++i_];
  }
  long long integer(long long lo) {
    const std::string& f = flag();
    const std::string v = value();
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end || x < lo) fail_("bad value for " + f + ": " + v);
    return x;
  }
  double positive_real() {
    const std::string& f = flag();
    const std::string v = value();
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !(x > 0)) fail_("bad value for " + f + ": " + v);
    return x;
  }

 private:
  const std::vector<std::string>& args_;
  Fail fail_;
  std::size_t i_ = 0;  // args_[0] is the program
};

struct TimedWindow {
  double seconds = 0;
  double coverage = 0;  // fraction of the points launched in the window that were replayed
  // This shard's cost in the window: messages sent to other shards, utility-thread busy time.
  std::uint64_t messages = 0;
  double util_busy_us = 0;
};

// Runs body between two fences and measures it. (Never inlined: tools find the window by its
// name — tools/experiments/window-instructions.sh counts the instructions inside it.)
template <typename Body>
[[gnu::noinline]] TimedWindow timed(Context& ctx, Body&& body) {
  ctx.fence().wait();
  ctx.start_profiling_range();  // (reprise-prof --range window: the same counts)
  const auto before = ctx.trace_stats();
  const auto t0 = std::chrono::steady_clock::now();
  body();
  ctx.fence().wait();
  ctx.stop_profiling_range("window");
  TimedWindow w;
  w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto after = ctx.trace_stats();
  const double launched = double(after.points_launched - before.points_launched);
  w.coverage =
      launched > 0 ? double(after.points_replayed - before.points_replayed) / launched : 0.0;
  w.messages = after.messages_sent - before.messages_sent;
  w.util_busy_us = double(after.utility_busy_ns - before.utility_busy_ns) * 1e-3;
  return w;
}

// RESULT app=… mode=… ranks=… iters=… time_s=… iter_per_s=… tasks=… us_per_task=… coverage=…
// checksum=… verified=… copies=… (generated copies between memories, whole run)
// msgs_per_iter=… util_busy_us_per_iter=… (shard 0's messages to other shards and its
// utility thread's busy time, per timed iteration) peers_heard=… (how many other shards
// shard 0 heard from) gpu_kernels=… gpu_graph_launches=… (kernels on GPU processors'
// streams and captured graphs launched, whole run; -ll:gpu) gpu_copies=… (copies and fills
// into, out of or between framebuffers, staged sends included) points_deferred=… (other
// shards' points shard 0 did not analyse, -lg:defer_writes) gpu_link_copies=… (shard 0's
// halves of copies between shards' framebuffers over NCCL, -ll:nccl) points_inline=… (points
// shard 0 ran at once on the application thread, -lg:eager) points_inline_alone=… (of which
// run while no other thread of its runtime could touch what they change, -lg:alone) followed
// by the app's own keys.
inline void print_result(const char* app, const std::string& mode, const Context& ctx, int iters,
                         const TimedWindow& w, double tasks, std::uint64_t checksum, bool verified,
                         const std::string& extra_keys) {
  if (ctx.shard() != 0) return;  // control replication: one line per run, from shard 0
  std::printf(
      "RESULT app=%s mode=%s ranks=%u iters=%d time_s=%.6f iter_per_s=%.2f tasks=%.0f "
      "us_per_task=%.3f coverage=%.2f checksum=%016llx verified=%d copies=%llu "
      "msgs_per_iter=%.1f util_busy_us_per_iter=%.1f peers_heard=%u gpu_kernels=%llu "
      "gpu_graph_launches=%llu gpu_copies=%llu points_deferred=%llu gpu_link_copies=%llu "
      "points_inline=%llu points_inline_alone=%llu %s\n",
      app, mode.c_str(), ctx.num_shards(), iters, w.seconds, iters / w.seconds, tasks,
      w.seconds * 1e6 / tasks, w.coverage, (unsigned long long)checksum, verified ? 1 : 0,
      (unsigned long long)ctx.trace_stats().copies, double(w.messages) / iters,
      w.util_busy_us / iters, ctx.trace_stats().peers_heard,
      (unsigned long long)ctx.trace_stats().gpu_kernels,
      (unsigned long long)ctx.trace_stats().gpu_graph_launches,
      (unsigned long long)(ctx.trace_stats().copies_to_gpu + ctx.trace_stats().copies_from_gpu +
                           ctx.trace_stats().copies_gpu_to_gpu),
      (unsigned long long)ctx.trace_stats().points_deferred,
      (unsigned long long)ctx.trace_stats().gpu_link_copies,
      (unsigned long long)ctx.trace_stats().points_inline,
      (unsigned long long)ctx.trace_stats().points_inline_alone, extra_keys.c_str());
}

// Per-iteration trace coverage (paper Fig. 9/10), when the run has -lg:coverage_log: call
// mark() after every iteration (warm-up included) and report() once at the end. report()
// prints one `COVERAGE app=… mode=… iter=i points=… replayed=…` line per iteration and
// `WARMUP app=… mode=… iterations=k level=c`: c is the mean coverage of the second half of
// the iterations, k where coverage first stays near it (-1: never). Without the flag it does
// nothing.
class Timeline {
 public:
  explicit Timeline(Context& ctx) : ctx_(ctx), on_(ctx.coverage_log_enabled()) {
    if (on_) marks_.push_back(ctx.ops_issued());
  }
  void mark() {
    if (on_) marks_.push_back(ctx_.ops_issued());
  }
  int report(const char* app, const std::string& mode) {
    if (!on_ || marks_.size() < 2) return -1;
    ctx_.fence().wait();
    if (ctx_.shard() != 0) return -1;
    const std::size_t iters = marks_.size() - 1;
    std::vector<std::uint64_t> points(iters, 0), replayed(iters, 0);
    for (const CoverageSample& s : ctx_.coverage_log()) {
      if (s.op_seq < marks_.front() || s.op_seq >= marks_.back()) continue;
      auto it = std::upper_bound(marks_.begin(), marks_.end(), s.op_seq);
      const std::size_t i = std::size_t(it - marks_.begin()) - 1;
      points[i] += s.points;
      if (s.replayed) replayed[i] += s.points;
    }
    // Steady state: the first run of 10 iterations (or up to the end) that each reach 90% of
    // the coverage level of the run's second half (at least 50%). Programs that block every
    // iteration never replay the ops just before the wait, so their level is below 100%; and
    // the last iterations may run unreplayed (a trace still being confirmed is flushed).
    auto frac = [&](std::size_t i) {
      return points[i] ? double(replayed[i]) / double(points[i]) : 0.0;
    };
    double level = 0;
    for (std::size_t i = iters / 2; i < iters; ++i) level += frac(i) / double(iters - iters / 2);
    const double threshold = 0.9 * level;
    int steady = -1;
    std::size_t run = 0;
    for (std::size_t i = 0; i < iters && steady < 0 && level >= 0.5; ++i) {
      const bool covered = frac(i) >= threshold;
      run = covered ? run + 1 : 0;
      if (run >= 10 || (covered && i + 1 == iters)) steady = int(i + 1 - run);
    }
    for (std::size_t i = 0; i < iters; ++i)
      std::printf("COVERAGE app=%s mode=%s iter=%zu points=%llu replayed=%llu\n", app, mode.c_str(),
                  i, (unsigned long long)points[i], (unsigned long long)replayed[i]);
    std::printf("WARMUP app=%s mode=%s iterations=%d level=%.2f\n", app, mode.c_str(), steady,
                level);
    return steady;
  }

 private:
  Context& ctx_;
  bool on_;
  std::vector<std::uint64_t> marks_;
};

}  // namespace reprise::apps

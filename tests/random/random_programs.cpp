// random_programs: runs random programs (tests/random/random_program.h) and compares each run
// with the given runtime flags against the sequential oracle (-lg:inorder) and the host
// reference model; one line per seed and a summary. For reproducing and reducing failures of
// test_random_equivalence by hand:
//
//   random_programs --seeds 1:300 -ll:cpu 2 -ll:util 2
//   random_programs --seeds 17:17 --dump --repeat 20 -ll:cpu 2
//   random_programs --seeds 17:17 --minimize --repeat 10 -ll:cpu 2
//   random_programs --loops --mapper scatter --seeds 1:200 -ll:numa 3 -ll:cpu 2
//
// With --loops the programs repeat bodies of ops, each iteration a manual trace (--traces
// auto ignores the marks and leaves the loops to automatic tracing); --fail-in-trace makes
// one traced task fail, and the run must end with that error (not hang, not succeed).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "random_program.h"
#include "reprise_rt/config.h"

namespace rr = reprise_random;
namespace rd = reprise::detail;

namespace {

struct Options {
  std::uint64_t first = 1, last = 100;
  rr::GenOptions gen;
  int repeat = 1;
  bool dump = false, reference = true, inorder = true, minimize = false, quiet = false;
  double timeout = 60;
  std::vector<std::string> flags;
  rr::RunOptions run;
};

[[noreturn]] void usage(const std::string& msg) {
  std::fprintf(
      stderr,
      "random_programs: %s\n"
      "usage: random_programs [--seeds A:B] [--ops MIN:MAX] [--volume N] [--repeat K]\n"
      "                       [--dump] [--no-reference] [--no-inorder] [--minimize]\n"
      "                       [--timeout S] [--quiet] [runtime flags (default -ll:cpu 2)]\n"
      "  --seeds A:B     seeds to run (default 1:100)\n"
      "  --ops MIN:MAX   ops per program after the initial writes (default 20:80)\n"
      "  --volume N      at most N points per region (default 2000)\n"
      "  --repeat K      runs per seed with the flags (default 1)\n"
      "  --dump          print every program (failing ones are always printed)\n"
      "  --no-reference  do not compare against the host reference model\n"
      "  --no-inorder    do not run the -lg:inorder oracle (compare with the model only)\n"
      "  --minimize      reduce each failing program by deleting ops while it fails\n"
      "  --timeout S     abort when one run takes longer (a hang; default 60)\n"
      "  --loops         programs with loops, each iteration a manual trace\n"
      "  --iters N       loops of 3..N iterations (default 10; implies --loops)\n"
      "  --traces M      manual (issue the marks; default) or auto (ignore them)\n"
      "  --mapper M      default, or scatter (points and instances spread over every\n"
      "                  shard, CPU and memory by a hash)\n"
      "  --fail-in-trace one traced task fails: the run must end with its error\n"
      "  --keep-launchers launches alike but for their arguments share a launcher\n"
      "  --kept-loops    loops of launches only, without futures (implies --loops and\n"
      "                  --keep-launchers)\n"
      "  --no-reductions no requirement reduces (futures still do): with one memory, launches\n"
      "                  run eagerly wherever nothing is in flight (-lg:eager)\n",
      msg.c_str());
  std::exit(2);
}

std::pair<long long, long long> parse_range(const std::string& flag, const std::string& v) {
  auto colon = v.find(':');
  char* end = nullptr;
  long long a = std::strtoll(v.c_str(), &end, 10);
  long long b = a;
  if (colon != std::string::npos) b = std::strtoll(v.c_str() + colon + 1, &end, 10);
  if (end == v.c_str() || *end || a > b || a < 0) usage("bad value for " + flag + ": " + v);
  return {a, b};
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value for " + a);
      return argv[++i];
    };
    if (a == "--seeds") {
      auto [x, y] = parse_range(a, value());
      o.first = std::uint64_t(x);
      o.last = std::uint64_t(y);
    } else if (a == "--ops") {
      auto [x, y] = parse_range(a, value());
      o.gen.min_ops = int(x);
      o.gen.max_ops = int(y);
    } else if (a == "--volume") {
      o.gen.max_volume = parse_range(a, value()).first;
      if (o.gen.max_volume < 8) usage("--volume must be at least 8");
    } else if (a == "--repeat") {
      o.repeat = int(parse_range(a, value()).first);
    } else if (a == "--timeout") {
      o.timeout = double(parse_range(a, value()).first);
    } else if (a == "--iters") {
      o.gen.loops = true;
      o.gen.max_iters = int(parse_range(a, value()).first);
      if (o.gen.max_iters < 1) usage("--iters must be at least 1");
    } else if (a == "--loops") {
      o.gen.loops = true;
    } else if (a == "--fail-in-trace") {
      o.gen.loops = o.gen.fail_in_trace = true;
    } else if (a == "--traces") {
      const std::string v = value();
      if (v != "manual" && v != "auto") usage("--traces takes manual or auto, not " + v);
      o.run.manual_traces = v == "manual";
    } else if (a == "--mapper") {
      const std::string v = value();
      if (v != "default" && v != "scatter") usage("--mapper takes default or scatter, not " + v);
      o.run.mapper = v == "scatter" ? rr::MapperKind::Scatter : rr::MapperKind::Default;
    } else if (a == "--keep-launchers") {
      o.run.keep_launchers = true;
    } else if (a == "--kept-loops") {
      o.gen.loops = o.gen.kept_loops = true;
      o.run.keep_launchers = true;
    } else if (a == "--no-reductions") {
      o.gen.no_region_reductions = true;
    } else if (a == "--dump") {
      o.dump = true;
    } else if (a == "--no-reference") {
      o.reference = false;
    } else if (a == "--no-inorder") {
      o.inorder = false;
    } else if (a == "--minimize") {
      o.minimize = true;
    } else if (a == "--quiet") {
      o.quiet = true;
    } else if (a == "-h" || a == "--help") {
      usage("help");
    } else if (a.rfind("-ll:", 0) == 0 || a.rfind("-lg:", 0) == 0 || a == "-level") {
      o.flags.push_back(a);
      // (Its value, if it takes one, as the runtime reads flags.)
      if (i + 1 < argc && rd::runtime_flag_takes(a, argv[i + 1])) o.flags.push_back(argv[++i]);
    } else {
      usage("unknown argument " + a);
    }
  }
  if (o.flags.empty()) o.flags = {"-ll:cpu", "2"};
  if (!o.reference && !o.inorder) usage("nothing to compare against");
  o.run.timeout_s = o.timeout;
  return o;
}

// What the runs with the flags did, summed over the seeds.
struct Totals {
  std::uint64_t templates = 0, replays = 0, copies = 0, failures_expected = 0, recorded_far = 0,
                recorded_deferred = 0, points_launched = 0, points_inline = 0,
                points_inline_alone = 0;
};

// The first problem with p: against the model, the oracle, or between runs with the flags.
std::string check(const Options& o, const rr::Program& p, int repeat, Totals* totals = nullptr) {
  rr::Outcome ref;
  if (o.reference) ref = rr::run_reference(p);
  if (o.inorder) {
    // The oracle: program order, untraced, the default mapper.
    rr::RunOptions sequential;
    sequential.manual_traces = false;
    sequential.timeout_s = o.timeout;
    rr::Outcome ino = rr::run_runtime(p, {"-lg:inorder", "-lg:no_auto_tracing"}, sequential);
    if (o.reference) {
      std::string d = rr::compare(p, ref, ino);
      if (!d.empty()) return "-lg:inorder vs the reference model: " + d;
    }
    ref = std::move(ino);
  }
  for (int k = 0; k < repeat; ++k) {
    rr::Outcome got = rr::run_runtime(p, o.flags, o.run);
    if (totals) {
      totals->templates += got.templates;
      totals->replays += got.replays;
      totals->copies += got.copies;
      totals->recorded_far += got.recorded_far;
      totals->recorded_deferred += got.recorded_deferred;
      totals->points_launched += got.points_launched;
      totals->points_inline += got.points_inline;
      totals->points_inline_alone += got.points_inline_alone;
      totals->failures_expected += ref.error.empty() ? 0 : 1;
    }
    std::string d = rr::compare(p, ref, got);
    if (!d.empty()) {
      std::string s = "'";
      s += rr::join_flags(o.flags);
      s += "' vs ";
      s += o.inorder ? "-lg:inorder" : "the model";
      s += " (run " + std::to_string(k + 1) + " of " + std::to_string(repeat) + "): ";
      return s + d;
    }
  }
  return "";
}

rr::Program minimize(const Options& o, rr::Program p) {
  std::fprintf(stdout, "  minimizing (%zu ops)...\n", p.ops.size());
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t i = p.ops.size(); i-- > 0;) {
      if (p.ops[i].init) continue;
      rr::Program q = rr::without_op(p, i);
      if (q.ops.size() == p.ops.size()) continue;
      if (!check(o, q, o.repeat).empty()) {
        p = std::move(q);
        progress = true;
        std::fprintf(stdout, "  ... %zu ops\n", p.ops.size());
        std::fflush(stdout);
        if (i > p.ops.size()) i = p.ops.size();
      }
    }
    // Two ops at once (a pair of like ops whose count's parity matters, say), the nearer
    // first, when no single deletion keeps the failure.
    for (std::size_t i = p.ops.size(); !progress && i-- > 0;)
      for (std::size_t j = i; !progress && j-- > 0;) {
        if (p.ops[i].init || p.ops[j].init) continue;
        rr::Program q = rr::without_op(rr::without_op(p, i), j);
        if (q.ops.size() + 2 > p.ops.size()) continue;
        if (!check(o, q, o.repeat).empty()) {
          p = std::move(q);
          progress = true;
          std::fprintf(stdout, "  ... %zu ops (two deleted)\n", p.ops.size());
          std::fflush(stdout);
        }
      }
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::printf("random_programs: seeds %llu..%llu, flags '%s', %d run(s) per seed, against %s\n",
              (unsigned long long)o.first, (unsigned long long)o.last,
              rr::join_flags(o.flags).c_str(), o.repeat,
              o.inorder ? (o.reference ? "-lg:inorder and the reference model" : "-lg:inorder")
                        : "the reference model");
  std::vector<std::uint64_t> failed;
  std::size_t ops = 0;
  Totals totals;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t seed = o.first; seed <= o.last; ++seed) {
    const auto t1 = std::chrono::steady_clock::now();
    rr::Program p = rr::generate(seed, o.gen);
    ops += p.ops.size();
    if (o.dump) std::printf("%s", rr::dump(p).c_str());
    std::string d = check(o, p, o.repeat, &totals);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    if (d.empty()) {
      if (!o.quiet)
        std::printf("seed %llu: ok (%.0f ms) %s\n", (unsigned long long)seed, ms,
                    rr::summary(p).c_str());
    } else {
      failed.push_back(seed);
      std::printf("seed %llu: FAILED (%.0f ms): %s\n", (unsigned long long)seed, ms, d.c_str());
      if (!o.dump) std::printf("%s", rr::dump(p).c_str());
      if (o.minimize) {
        rr::Program m = minimize(o, p);
        std::printf("  minimal program (%zu ops), failing with: %s\n%s", m.ops.size(),
                    check(o, m, o.repeat).c_str(), rr::dump(m).c_str());
      }
    }
    std::fflush(stdout);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "random_programs: %llu seeds, %zu ops, %zu failed, %.1f s (with the flags: %llu traces "
      "recorded, %llu replays, %llu copies, %llu runs ended by a deliberate failure, %llu "
      "far points recorded for their writes only, %llu of them deferred, %llu of %llu points run "
      "at once on the application thread, %llu of them with the runtime alone)",
      (unsigned long long)(o.last - o.first + 1), ops, failed.size(), secs,
      (unsigned long long)totals.templates, (unsigned long long)totals.replays,
      (unsigned long long)totals.copies, (unsigned long long)totals.failures_expected,
      (unsigned long long)totals.recorded_far, (unsigned long long)totals.recorded_deferred,
      (unsigned long long)totals.points_inline, (unsigned long long)totals.points_launched,
      (unsigned long long)totals.points_inline_alone);
  if (!failed.empty()) {
    std::printf("; failing seeds:");
    for (auto s : failed) std::printf(" %llu", (unsigned long long)s);
  }
  std::printf("\n");
  return failed.empty() ? 0 : 1;
}

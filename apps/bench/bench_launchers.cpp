// What the application thread pays per index launch for a launcher kept across launches, by how
// its launch domain changes: always the same (`same`), alternating between two (`alt`), in
// turn among three (`three`), and a new launcher made for every launch (`fresh`: nothing
// kept). A kept launcher reuses what an earlier launch over the same domain made of its
// requirements (ResolvedLaunch; one per domain for the last two domains launched twice).
// Empty tasks over 2 of 4 pieces, automatic tracing off.
//
//   bench_launchers [-n LAUNCHES] [-mode same|alt|three|fresh|all]
//
// Prints per mode the application thread's CPU time per launch; callgrind gives the stable
// figure (docs/results.md: the difference of -n 3000 and -n 1000, thread 1, over 2,000).
#include <reprise/reprise.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace reprise;

namespace {

enum : TaskID { T_NOTHING = 1 };
enum : FieldID { FV = 0 };

void nothing(TaskContext&) {}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "bench_launchers: %s\nusage: bench_launchers [-n LAUNCHES] "
               "[-mode same|alt|three|fresh|all] [runtime flags]\n",
               why);
  std::exit(2);
}

// The application thread's CPU seconds for n launches in `mode`.
double run_mode(Context& ctx, const std::string& mode, int n, const Partition& p) {
  const Domain domains[3] = {Domain(Rect<1>({0}, {1})), Domain(Rect<1>({2}, {3})),
                             Domain(Rect<1>({1}, {2}))};
  IndexLauncher kept(T_NOTHING, domains[0]);
  kept.add(p, Projection::identity(), Privilege::ReadWrite, {FV});
  ctx.fence().wait();
  const double start = thread_cpu_seconds();
  for (int i = 0; i < n; ++i) {
    if (mode == "fresh") {
      IndexLauncher l(T_NOTHING, domains[i % 2]);
      l.add(p, Projection::identity(), Privilege::ReadWrite, {FV});
      ctx.execute(l);
      continue;
    }
    kept.set_domain(domains[mode == "same" ? 0 : mode == "alt" ? i % 2 : i % 3]);
    ctx.execute(kept);
  }
  const double spent = thread_cpu_seconds() - start;
  ctx.fence().wait();
  return spent;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 20000;
  std::string mode = "all";
  std::vector<char*> runtime_args{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-n" && i + 1 < argc) {
      n = std::atoi(argv[++i]);
      if (n < 1) usage("-n must be at least 1");
    } else if (a == "-mode" && i + 1 < argc) {
      mode = argv[++i];
      if (mode != "same" && mode != "alt" && mode != "three" && mode != "fresh" && mode != "all")
        usage("unknown -mode");
    } else {
      runtime_args.push_back(argv[i]);
    }
  }
  static char no_auto[] = "-lg:no_auto_tracing";
  runtime_args.push_back(no_auto);
  TaskRegistry::add(T_NOTHING, "nothing", {cpu(nothing)});
  return start(int(runtime_args.size()), runtime_args.data(), [&](Context& ctx) {
    auto fs = ctx.create_field_space({{FV, sizeof(std::int64_t)}});
    Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {99})), fs);
    const Partition p = ctx.partition_by_blocks(r, Point<1>{25});
    const std::vector<std::string> modes =
        mode == "all" ? std::vector<std::string>{"same", "alt", "three", "fresh"}
                      : std::vector<std::string>{mode};
    std::string result = "RESULT bench=launchers launches=" + std::to_string(n);
    for (const std::string& m : modes) {
      const double us = run_mode(ctx, m, n, p) * 1e6 / n;
      std::printf("mode=%-5s app_us_per_launch=%.3f\n", m.c_str(), us);
      char field[64];
      std::snprintf(field, sizeof field, " %s_us=%.3f", m.c_str(), us);
      result += field;
    }
    std::printf("%s\n", result.c_str());
  });
}

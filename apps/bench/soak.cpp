// The soak: a long run of small ops whose memory must stay flat (issue 16). Every iteration
// launches an index task over 4 pieces (read-write), a single task reading a piece, and every
// 64th iteration a fill; the top-level task waits for a result every 1,000 iterations (so that
// the window, not memory, bounds what is in flight). Each shard prints its resident set size
// at fixed op counts:
//
//   soak -ops 100000000 -every 10000000        (also under mpirun -np 2)
//
// With -churn K, every K-th iteration also creates a region of its own (and its index space
// and field space), partitions it, launches on it and destroys the partition and the region:
// the runtime's tables must not grow with the number of regions ever made.
//
// Lines: "soak: shard S ops N rss_mib M elapsed_s T"; the last is "RESULT ops=N rss_first_mib=A
// rss_last_mib=B growth_mib=C" with A taken after the first report.
#include <reprise/reprise.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace reprise;

namespace {

enum : TaskID { T_STEP = 1, T_READ = 2 };
enum : FieldID { FX = 0 };

void step(TaskContext& tc) {
  auto x = tc.accessor<std::int64_t, 1>(0, FX);
  for (auto p : Rect<1>(tc.domain(0))) x[p] += 1;
}
std::int64_t read_piece(TaskContext& tc) {
  auto x = tc.accessor<const std::int64_t, 1>(0, FX);
  std::int64_t s = 0;
  for (auto p : Rect<1>(tc.domain(0))) s += x[p];
  return s;
}

double rss_mib() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return double(resident) * 4096.0 / (1 << 20);
}

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr, "soak: %s\nusage: soak [-ops N] [-every N] [-churn K] [runtime flags]\n",
               msg);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  TaskRegistry::add(T_STEP, "step", {cpu(step)});
  TaskRegistry::add(T_READ, "read", {cpu(read_piece)});
  std::uint64_t total = 10'000'000, every = 1'000'000, churn = 0;
  const auto args = app_args(argc, argv);
  for (std::size_t i = 1; i < args.size(); ++i) {
    auto value = [&] {
      if (i + 1 >= args.size()) usage("a flag needs a value");
      return std::strtoull(args[++i].c_str(), nullptr, 10);
    };
    if (args[i] == "-ops")
      total = value();
    else if (args[i] == "-every")
      every = value();
    else if (args[i] == "-churn")
      churn = value();
    else if (args[i] == "-h" || args[i] == "--help")
      usage("help");
    else
      usage(("unknown argument " + args[i]).c_str());
  }
  if (every == 0) usage("-every must be positive");
  return start(argc, argv, [&](Context& ctx) {
    Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {255})),
                                 ctx.create_field_space({{FX, sizeof(std::int64_t)}}));
    auto colors = ctx.create_index_space(Rect<1>({0}, {3}));
    Partition p = ctx.partition_equal(r, colors);
    ctx.fill(r, FX, std::int64_t(0));
    const auto t0 = std::chrono::steady_clock::now();
    double first = -1, last = 0;
    std::uint64_t next_report = every;
    Future f;
    for (std::uint64_t ops = 0, it = 0; ops < total; ++it) {
      IndexLauncher l(T_STEP, colors);
      l.add(p, Projection::identity(), Privilege::ReadWrite, {FX});
      ctx.execute(l);
      TaskLauncher t(T_READ);
      t.add(p[Point<1>(coord_t(it % 4))], Privilege::ReadOnly, {FX});
      f = ctx.execute(t);
      ops += 2;
      if (it % 64 == 63) {
        ctx.fill(p[Point<1>(coord_t(it % 4))], FX, std::int64_t(it));
        ++ops;
      }
      if (churn && it % churn == 0) {
        // A short-lived region of a size that changes: created, used, destroyed.
        Region tmp =
            ctx.create_region(ctx.create_index_space(Rect<1>({0}, {coord_t(64 + it % 32)})),
                              ctx.create_field_space({{FX, sizeof(std::int64_t)}}));
        Partition tp = ctx.partition_equal(tmp, colors);
        ctx.fill(tmp, FX, std::int64_t(1));
        IndexLauncher u(T_STEP, colors);
        u.add(tp, Projection::identity(), Privilege::ReadWrite, {FX});
        ctx.execute(u);
        ctx.destroy(tp);
        ctx.destroy(tmp);
        ops += 4;
      }
      if (it % 1000 == 999) f.wait();
      if (ops >= next_report) {
        last = rss_mib();
        if (first < 0) first = last;
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("soak: shard %u ops %llu rss_mib %.1f elapsed_s %.1f\n", ctx.shard(),
                    (unsigned long long)ops, last, s);
        std::fflush(stdout);
        next_report += every;
      }
    }
    f.wait();
    std::printf("RESULT ops=%llu rss_first_mib=%.1f rss_last_mib=%.1f growth_mib=%.1f\n",
                (unsigned long long)total, first, last, last - first);
  });
}

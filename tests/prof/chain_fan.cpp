// A chain of 8 dependent tasks of 2 ms each beside a fan of 20 independent tasks of 0.2 ms:
// the critical path the profiler finds (-lg:prof with -lg:prof:deps, then reprise-prof) is
// the chain. With --traced each link (20 ms) is a manual trace of its own: links 2..8 are
// back-to-back replays, which count each other down without events, and the path is still the
// chain.
#include <reprise/reprise.h>

#include <chrono>
#include <cstdio>
#include <string>

using namespace reprise;

namespace {
enum : TaskID { T_LINK = 1, T_LEAF = 2 };
enum : FieldID { FV = 0 };

void busy(std::chrono::microseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}
std::chrono::microseconds link_time(2000);
void chain_link(TaskContext& tc) {
  auto a = tc.accessor<std::int64_t, 1>(0, FV);
  a[Point<1>(0)] += 1;
  busy(link_time);
}
void leaf(TaskContext& tc) {
  auto b = tc.accessor<std::int64_t, 1>(0, FV);
  for (auto p : Rect<1>(tc.domain(0))) b[p] += 1;
  busy(std::chrono::microseconds(200));
}
}  // namespace

int main(int argc, char** argv) {
  TaskRegistry::add(T_LINK, "link", {cpu(chain_link)});
  TaskRegistry::add(T_LEAF, "leaf", {cpu(leaf)});
  bool traced = false;
  for (int i = 1; i < argc; ++i) traced = traced || std::string(argv[i]) == "--traced";
  // Traced, a link lasts 20 ms: the first replay is made while the recorded link still runs
  // even when a busy box delays the utility thread by a few ms.
  if (traced) link_time = std::chrono::microseconds(20000);
  return start(argc, argv, [&](Context& ctx) {
    auto fs = ctx.create_field_space({{FV, 8}});
    Region a = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {0})), fs);
    Region b = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {19})), fs);
    auto fan = ctx.create_index_space(Rect<1>({0}, {19}));
    Partition pb = ctx.partition_equal(b, fan);
    IndexLauncher leaves(T_LEAF, fan);
    leaves.add(pb, Projection::identity(), Privilege::ReadWrite, {FV});
    // (Traced, the fan comes after the chain: the first replay's entry fence stands for every
    // op before it, so a leaf issued earlier that a busy box delays past the first link would
    // rightly join the path.)
    if (!traced) ctx.execute(leaves);
    for (int i = 0; i < 8; ++i) {
      if (traced) ctx.begin_trace(1);
      TaskLauncher l(T_LINK);
      l.add(a, Privilege::ReadWrite, {FV});
      ctx.execute(l);
      if (traced) ctx.end_trace(1);
    }
    if (traced) ctx.execute(leaves);
    ctx.fence().wait();
    std::printf("chain_fan done\n");
  });
}

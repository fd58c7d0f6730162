// A small program for the control-replication tests under mpirun:
//   ctrlrepl_program ok       a halo loop; prints the checksum (the same on 1, 2 and 4 ranks)
//   ctrlrepl_program diverge  rank 1 issues one launch more than the others: every rank must
//                             stop with an error naming the first differing op, not hang
//   ctrlrepl_program diverge_quiet  rank 1 issues two extra fences: found by the op-stream
//                             comparison (at exit; within 1024 ops with -lg:safe_ctrlrepl)
//   ctrlrepl_program throw    a task throws on the last point (on the last rank): every rank
//                             must stop with that error
//   ctrlrepl_program neighbours  the halo loop over two tiles per shard: prints, per shard,
//                             how many other shards it heard from (its two neighbours at most:
//                             completions are not broadcast) and the completions it asked for
//   ctrlrepl_program slow     the last tile's task takes 2.5 s before the checksum: with
//                             -lg:stall_report 1 the other shards report what they wait for
//   ctrlrepl_program residual the neighbours loop with a residual every iteration: a launch
//                             returning a double per tile, reduced (Sum), one point picked
//                             and then every point read (value_rounds: 2 per iteration);
//                             prints their bits (the same on any number of ranks) and, per
//                             shard, how many shards it heard from (a tree, not everyone)
//   ctrlrepl_program singles  a chain of 40 single tasks, all on shard 0 (its mapper), whose
//                             values every shard reads: prints each shard's messages sent
//                             (shard 0's completions go down a tree: two messages each, not
//                             one per other shard)
#include <reprise/reprise.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

using namespace reprise;

namespace {

enum : TaskID { T_STEP = 9700, T_THROW, T_SUM, T_SLOW, T_NORM, T_LINK };
enum : FieldID { FV = 0 };

void step(TaskContext& tc) {  // v[p] = mix of the halo around p
  auto halo = tc.accessor<const std::int64_t, 1>(0, FV);
  auto out = tc.accessor<std::int64_t, 1>(1, FV);
  const Rect<1> h = tc.domain(0);
  for (auto p : Rect<1>(tc.domain(1))) {
    std::int64_t s = p[0];
    for (coord_t q = std::max(h.lo[0], p[0] - 1); q <= std::min(h.hi[0], p[0] + 1); ++q)
      s = s * 31 + halo[Point<1>(q)] % 1000003;
    out[p] = s % 1000003;
  }
}
void thrower(TaskContext& tc) {
  if (tc.point()[0] == tc.launch_domain().hi[0])
    throw Error("boom: task 'thrower' failed on its last point");
}
void slow(TaskContext& tc) {  // v += 1 on its tile; the last tile takes 2.5 s
  auto v = tc.accessor<std::int64_t, 1>(0, FV);
  for (auto p : Rect<1>(tc.domain(0))) v[p] += 1;
  if (tc.point()[0] == tc.launch_domain().hi[0])
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
}
std::uint64_t sum(TaskContext& tc) {
  auto v = tc.accessor<const std::int64_t, 1>(0, FV);
  std::uint64_t h = 0;
  for (auto p : Rect<1>(tc.domain(0))) h = h * 1099511628211ull + std::uint64_t(v[p]);
  return h;
}

double norm(TaskContext& tc) {  // sums that round differently in another order
  auto v = tc.accessor<const std::int64_t, 1>(0, FV);
  double s = 0;
  for (auto p : Rect<1>(tc.domain(0))) s += double(v[p]) / double(3 * p[0] + 7);
  return s * 1e-3 + 1.0 / double(tc.point()[0] + 3);
}
std::uint64_t chain_link(TaskContext& tc) {  // one link of a chain: v[0] += 1, ~1 ms
  auto v = tc.accessor<std::int64_t, 1>(0, FV);
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return std::uint64_t(v[Point<1>(0)] += 1);
}

// Single tasks on shard 0; index launches as the default mapper places them.
class SinglesOnShardZero : public DefaultMapper {
 public:
  Processor select_processor(const MapperTaskInfo& task, const MachineInfo& machine) override {
    if (task.launch_domain.volume() <= 1) return Processor{ProcessorKind::CPU, 0, 0};
    return DefaultMapper::select_processor(task, machine);
  }
};

std::uint64_t bits_of(double d) {
  std::uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "ok";
  TaskRegistry::add(T_STEP, "step", {cpu(step)});
  TaskRegistry::add(T_THROW, "thrower", {cpu(thrower)});
  TaskRegistry::add(T_SUM, "sum", {cpu(sum)});
  TaskRegistry::add(T_SLOW, "slow", {cpu(slow)});
  TaskRegistry::add(T_NORM, "norm", {cpu(norm)});
  TaskRegistry::add(T_LINK, "chain_link", {cpu(chain_link)});
  if (mode == "singles")
    return start(
        argc, argv,
        [](Context& ctx) {
          auto is = ctx.create_index_space(Rect<1>({0}, {9}));
          Region a = ctx.create_region(is, ctx.create_field_space({{FV, 8}}));
          ctx.fill(a, FV, std::int64_t(0));
          constexpr int kLinks = 40;
          std::vector<Future> values;
          for (int i = 0; i < kLinks; ++i) {
            TaskLauncher l(T_LINK);
            l.add(a, Privilege::ReadWrite, {FV});
            values.push_back(ctx.execute(l));
          }
          std::uint64_t sum = 0;
          for (const Future& f : values) sum += f.get<std::uint64_t>();  // on every shard
          ctx.fence().wait();
          std::printf("shard %u singles=%d sum=%llu messages=%llu\n", ctx.shard(), kLinks,
                      (unsigned long long)sum, (unsigned long long)ctx.trace_stats().messages_sent);
        },
        {"-lg:no_auto_tracing"}, std::make_unique<SinglesOnShardZero>());
  return start(argc, argv, [&](Context& ctx) {
    auto is = ctx.create_index_space(Rect<1>({0}, {99}));
    auto fs = ctx.create_field_space({{FV, 8}});
    Region a = ctx.create_region(is, fs), b = ctx.create_region(is, fs);
    const bool residual = mode == "residual";
    const bool neighbours = mode == "neighbours" || mode == "neighbours_traced" || residual;
    const coord_t ntiles = residual ? 16 : neighbours ? 2 * coord_t(ctx.num_shards()) : 4;
    auto tiles = ctx.create_index_space(Rect<1>({0}, {ntiles - 1}));
    Partition pa = ctx.partition_equal(a, tiles), pb = ctx.partition_equal(b, tiles);
    auto halo_of = [&](Region r, Partition p) {
      return ctx.partition_by_rects(
          r, tiles, [&](const DomainPoint& c) { return grow(p.rect(c), 1) & r.bounds(); });
    };
    Partition ha = halo_of(a, pa), hb = halo_of(b, pb);
    // diverge_quiet: rank 1 issues two extra fences, so its later ops are numbered two higher
    // and pair up with ops of the same shape one iteration earlier elsewhere: no completion
    // message betrays it; only comparing the op streams (at exit, or every 1024 ops with
    // -lg:safe_ctrlrepl) does.
    const int iters = mode == "diverge_quiet" ? 800 : 10;
    std::uint64_t residual_bits = 0;
    for (int it = 0; it < iters; ++it) {
      if (mode == "diverge_quiet" && it == 4 && ctx.shard() == 1) {
        ctx.fence();
        ctx.fence();
      }
      if (mode == "neighbours_traced") ctx.begin_trace(1);
      IndexLauncher l1(T_STEP, tiles);
      l1.add(ha, Projection::identity(), Privilege::ReadOnly, {FV});
      l1.add(pb, Projection::identity(), Privilege::WriteDiscard, {FV});
      ctx.execute(l1);
      if (mode == "diverge" && it == 4 && ctx.shard() == 1) ctx.execute(l1);  // one more
      IndexLauncher l2(T_STEP, tiles);
      l2.add(hb, Projection::identity(), Privilege::ReadOnly, {FV});
      l2.add(pa, Projection::identity(), Privilege::WriteDiscard, {FV});
      ctx.execute(l2);
      if (mode == "neighbours_traced") ctx.end_trace(1);
      if (residual) {
        IndexLauncher n(T_NORM, tiles);
        n.add(pa, Projection::identity(), Privilege::ReadOnly, {FV});
        const FutureMap fm = ctx.execute(n);
        residual_bits = residual_bits * 1099511628211ull +
                        bits_of(ctx.reduce(fm, ReductionOp::Sum).get<double>());
        const DomainPoint picked(coord_t(it * 5) % ntiles);
        residual_bits = residual_bits * 31 + bits_of(fm.get(picked).get<double>());
        // Every point, in a changing order: read where the first get gathered them.
        for (coord_t c = 0; c < ntiles; ++c)
          residual_bits =
              residual_bits * 7 + bits_of(fm.get(DomainPoint((c + it) % ntiles)).get<double>());
      }
    }
    if (residual && ctx.shard() == 0)
      std::printf("residual=%016llx\n", (unsigned long long)residual_bits);
    if (mode == "throw") ctx.execute(IndexLauncher(T_THROW, tiles)).wait();
    if (neighbours) {
      ctx.fence().wait();  // every point of this shard has run: it heard what it needed
      const Context::TraceStats st = ctx.trace_stats();
      std::printf(
          "shard %u heard_from=%u requests=%llu proxies=%llu replays=%llu "
          "replay_instructions=%llu here=%llu points_replayed=%llu value_rounds=%llu "
          "recorded_far=%llu recorded_deferred=%llu\n",
          ctx.shard(), st.peers_heard, (unsigned long long)st.requests_sent,
          (unsigned long long)st.remote_proxies, (unsigned long long)st.replays,
          (unsigned long long)st.replay_instructions,
          (unsigned long long)st.replay_instructions_here, (unsigned long long)st.points_replayed,
          (unsigned long long)st.value_rounds, (unsigned long long)st.points_recorded_far,
          (unsigned long long)st.points_recorded_deferred);
      return;  // (the checksum below is a single task whose value every shard hears of)
    }
    if (mode == "slow") {
      IndexLauncher l(T_SLOW, tiles);
      l.add(pa, Projection::identity(), Privilege::ReadWrite, {FV});
      ctx.execute(l);
    }
    TaskLauncher s(T_SUM);
    s.add(a, Privilege::ReadOnly, {FV});
    const std::uint64_t h = ctx.execute(s).get<std::uint64_t>();
    if (ctx.shard() == 0)
      std::printf("checksum=%016llx shards=%u\n", (unsigned long long)h, ctx.num_shards());
    std::printf("shard %u reached the end\n", ctx.shard());
  });
}

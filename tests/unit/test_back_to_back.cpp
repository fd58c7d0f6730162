// Many runs of the runtime, one after the other in one process. Under mpirun a rank that has
// finished a run may start the next, and send, before another rank has left the previous
// one; each run's messages must reach that run only (a message taken by the previous run's
// progress thread was lost, and the job hung: issue 16). In a single process the test checks
// the results only.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "reprise_transport/bootstrap.h"
#include "reprise_transport/mpi_network.h"

using namespace reprise;

namespace {

enum : TaskID { T_WRITE = 9900, T_SUM };
enum : FieldID { FV = 0 };
constexpr coord_t kN = 32;
constexpr int kPieces = 8;

void write_values(TaskContext& tc) {
  auto a = tc.accessor<std::int64_t, 1>(0, FV);
  const std::int64_t run = tc.args<std::int64_t>();
  for (auto p : Rect<1>(tc.domain(0))) a[p] = run * 1000 + p[0];
}
std::int64_t sum_values(TaskContext& tc) {
  auto a = tc.accessor<const std::int64_t, 1>(0, FV);
  std::int64_t s = 0;
  for (auto p : Rect<1>(tc.domain(0))) s += a[p];
  return s;
}

}  // namespace

TEST(BackToBack, EveryRunHearsOnlyItsOwnMessages) {
  TaskRegistry::add(T_WRITE, "write_values", {cpu(write_values)});
  TaskRegistry::add(T_SUM, "sum_values", {cpu(sum_values)});
  for (std::int64_t run = 0; run < 60; ++run) {
    std::int64_t got = -1;
    reprise::run({"-ll:cpu", "1"}, [&](Context& ctx) {
      auto is = ctx.create_index_space(Rect<1>({0}, {kN - 1}));
      Region r = ctx.create_region(is, ctx.create_field_space({{FV, 8}}));
      auto pieces = ctx.create_index_space(Rect<1>({0}, {kPieces - 1}));
      Partition part = ctx.partition_equal(r, pieces);
      // Every shard writes its pieces, then one task reads them all: data crosses shards
      // as soon as the run starts, and its value reaches every shard as it ends.
      IndexLauncher write(T_WRITE, pieces, TaskArgs(run));
      write.add(part, Projection::identity(), Privilege::WriteDiscard, {FV});
      ctx.execute(write);
      TaskLauncher sum(T_SUM);
      sum.add(r, Privilege::ReadOnly, {FV});
      got = ctx.execute(sum).get<std::int64_t>();
    });
    EXPECT_EQ(got, run * 1000 * kN + kN * (kN - 1) / 2) << "run " << run;
  }
}

// The same at the transport, where the window is easy to hit: every rank sends to every
// other as soon as its network starts, and rank 0 leaves each network last (its progress
// thread still receives while the others have started the next one).
TEST(BackToBack, SuccessiveNetworksKeepTheirMessagesApart) {
  transport::ensure_mpi();
  for (std::uint64_t round = 0; round < 300; ++round) {
    auto net = transport::make_mpi_network();
    if (!net) GTEST_SKIP() << "not under mpirun with several ranks";
    std::mutex m;
    std::condition_variable cv;
    std::uint32_t heard = 0, foreign = 0;
    net->on(detail::Channel::Check, [&](std::uint32_t, std::vector<std::byte>&& b) {
      std::uint64_t r = 0;
      std::memcpy(&r, b.data(), sizeof r);
      std::lock_guard<std::mutex> g(m);
      (r == round ? heard : foreign) += 1;
      cv.notify_all();
    });
    net->start(detail::SpinPolicy{});
    std::vector<std::byte> b(sizeof round);
    std::memcpy(b.data(), &round, sizeof round);
    for (std::uint32_t to = 0; to < net->size(); ++to)
      if (to != net->rank()) net->send(to, detail::Channel::Check, b);
    {
      std::unique_lock<std::mutex> g(m);
      ASSERT_TRUE(
          cv.wait_for(g, std::chrono::seconds(30), [&] { return heard == net->size() - 1; }))
          << "round " << round << ": heard " << heard << " of " << net->size() - 1 << " (and "
          << foreign << " of another round)";
      ASSERT_EQ(foreign, 0u) << "round " << round;
    }
    if (net->rank() == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    net->stop();
  }
}

// The launch path's small pieces: inline vectors inside ops, the spin policy, launchers kept
// and launched again, void future maps, and the local hand-off of successors on a worker.
#include <gtest/gtest.h>
#include <pthread.h>
#include <reprise/reprise.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "error_text.h"
#include "reprise_rt/alone.h"
#include "reprise_rt/inline_vector.h"
#include "reprise_rt/op.h"
#include "reprise_rt/op_token.h"
#include "reprise_rt/point_instances.h"
#include "reprise_rt/ready_queue.h"
#include "reprise_rt/recycler.h"
#include "reprise_rt/resolution_cache.h"
#include "reprise_rt/spin_policy.h"

using namespace reprise;
using reprise::detail::InlineVector;

namespace {
enum : TaskID { T_ADD_ARG = 9300, T_VOID_POINT, T_CHAIN_STEP, T_SUM, T_THREAD_NAME };
enum : FieldID { FV = 0 };

struct AddArgs {
  std::int64_t add;
  std::int64_t pad[12];  // larger than nothing, smaller than the inline buffer: stays inline
};

void add_arg(TaskContext& tc) {
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  const AddArgs a = tc.args<AddArgs>();
  for (auto p : Rect<1>(tc.domain(0))) acc[p] += a.add;
}
void void_point(TaskContext&) {}
// One link of a chain: x[i] = 2 * x[i] + 1 over its piece.
void chain_step(TaskContext& tc) {
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  for (auto p : Rect<1>(tc.domain(0))) acc[p] = 2 * acc[p] + 1;
}

std::int64_t sum_task(TaskContext& tc) {
  auto acc = tc.accessor<const std::int64_t, 1>(0, FV);
  std::int64_t s = 0;
  for (auto p : Rect<1>(tc.domain(0))) s += acc[p];
  return s;
}

// The system's name of the thread a task runs on.
struct ThreadName {
  char text[16];
};
ThreadName thread_name(TaskContext&) {
  ThreadName n{};
  pthread_getname_np(pthread_self(), n.text, sizeof n.text);
  return n;
}

void register_all() {
  TaskRegistry::add(T_THREAD_NAME, "thread_name", {cpu(thread_name)});
  TaskRegistry::add(T_SUM, "sum", {cpu(sum_task)});
  TaskRegistry::add(T_ADD_ARG, "add_arg", {cpu(add_arg)});
  TaskRegistry::add(T_VOID_POINT, "void_point", {cpu(void_point)});
  TaskRegistry::add(T_CHAIN_STEP, "chain_step", {cpu(chain_step)});
}

std::int64_t sum_of(Context& ctx, Region r) {
  TaskLauncher sum(T_SUM);
  sum.add(r, Privilege::ReadOnly, {FV});
  return ctx.execute(sum).get<std::int64_t>();
}
}  // namespace

TEST(InlineVector, StaysInlineThenGrowsAndKeepsOrder) {
  InlineVector<int, 4> v;
  EXPECT_TRUE(v.empty());
  for (int i = 0; i < 4; ++i) v.push_back(i);
  EXPECT_EQ(v.capacity(), 4u);
  for (int i = 4; i < 100; ++i) v.push_back(i);
  ASSERT_EQ(v.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(v[std::size_t(i)], i);
  // Pushing an element of the vector itself while it grows.
  InlineVector<int, 2> w{7, 8};
  w.push_back(w[0]);
  EXPECT_EQ(w, (InlineVector<int, 2>{7, 8, 7}));
}

TEST(InlineVector, CopiesMovesAndAssigns) {
  InlineVector<std::int64_t, 3> small{1, 2}, big;
  big.assign(10, 5);
  InlineVector<std::int64_t, 3> a = small, b = big;
  EXPECT_EQ(a, small);
  EXPECT_EQ(b, big);
  InlineVector<std::int64_t, 3> c = std::move(b);  // takes the heap block
  EXPECT_EQ(c.size(), 10u);
  EXPECT_TRUE(b.empty());
  InlineVector<std::int64_t, 3> d = std::move(a);  // copies the inline elements
  EXPECT_EQ(d, small);
  d = c;
  EXPECT_EQ(d, c);
  c = std::move(d);
  EXPECT_EQ(c.size(), 10u);
  c.resize(2);
  c.resize(4, 9);
  EXPECT_EQ(c, (InlineVector<std::int64_t, 3>{5, 5, 9, 9}));
  std::vector<std::int64_t> from{3, 4, 5, 6, 7};
  c.assign(from.begin(), from.end());
  EXPECT_EQ(c.size(), 5u);
  EXPECT_EQ(c.back(), 7);
}

TEST(InlineVector, ResizesWithZeroAndOtherValues) {
  InlineVector<std::int64_t, 2> v{1};
  v.resize(40);  // (zero: a memset)
  v.resize(44, -1);
  ASSERT_EQ(v.size(), 44u);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(std::count(v.begin(), v.end(), 0), 39);
  EXPECT_EQ(std::count(v.begin(), v.end(), -1), 4);
}

// A replayed op shares its template's instance table when it is large (under control
// replication it has every shard's points), copies a small one, and a write never reaches the
// template's.
TEST(PointInstances, ShareLargeTablesCopySmallOnesAndWriteToTheirOwn) {
  using reprise::detail::Instance;
  using reprise::detail::PointInstances;
  std::vector<Instance*> fake(20);
  for (std::size_t i = 0; i < fake.size(); ++i)
    fake[i] = reinterpret_cast<Instance*>(std::uintptr_t(8 * (i + 1)));
  auto large = std::make_shared<const PointInstances::Table>(fake.begin(), fake.end());
  auto small = std::make_shared<const PointInstances::Table>(fake.begin(), fake.begin() + 3);
  PointInstances a;
  a.share(large);
  EXPECT_EQ(a.data(), large->data());
  EXPECT_EQ(a.size(), 20u);
  const PointInstances copy = a;  // (a generated copy's table, copied from its prototype)
  EXPECT_EQ(copy.data(), large->data());
  a.set(5, nullptr);
  EXPECT_NE(a.data(), large->data());
  EXPECT_EQ(a[5], nullptr);
  EXPECT_EQ(a[6], fake[6]);
  EXPECT_EQ((*large)[5], fake[5]);
  PointInstances b;
  b.share(small);
  EXPECT_NE(b.data(), small->data());
  EXPECT_TRUE(std::equal(b.begin(), b.end(), small->begin(), small->end()));
  b.assign(a.begin(), a.end());
  EXPECT_EQ(b.size(), 20u);
  EXPECT_EQ(b[5], nullptr);
}

TEST(ReqList, CopiesShareUntilOneChanges) {
  using reprise::detail::ReqInfo;
  using reprise::detail::ReqList;
  ReqList a;
  a.emplace_back().uid = 1;
  a.emplace_back().uid = 2;
  EXPECT_FALSE(a.shared());
  ReqList b = a;  // a reference, not a copy
  EXPECT_TRUE(a.shared());
  EXPECT_EQ(&a[0], &b[0]);
  b.edit(1).uid = 7;  // b copies first: a keeps what it had
  EXPECT_FALSE(a.shared());
  EXPECT_FALSE(b.shared());
  EXPECT_NE(&a[0], &b[0]);
  EXPECT_EQ(a[1].uid, 2u);
  EXPECT_EQ(b[1].uid, 7u);
  EXPECT_EQ(b[0].uid, 1u);
  // Setting what a requirement has already changes nothing: the lists stay shared.
  ReqList c = a;
  auto pieces = std::make_shared<const std::vector<Domain>>(1, Domain(Rect<1>({0}, {3})));
  c.set_pieces(0, nullptr);
  c.set_bbox(0, a[0].bbox);
  EXPECT_TRUE(c.shared());
  c.set_pieces(0, pieces);
  EXPECT_FALSE(c.shared());
  EXPECT_EQ(c[0].pieces, pieces);
  EXPECT_EQ(a[0].pieces, nullptr);
  // Growing past the first block, removing, clearing.
  for (std::uint64_t i = 3; i <= 20; ++i) c.push_back(ReqInfo{.uid = i});
  ASSERT_EQ(c.size(), 20u);
  for (std::size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i].uid, i + 1);
  EXPECT_EQ(c[0].pieces, pieces);
  c.pop_back();
  EXPECT_EQ(c.back().uid, 19u);
  std::uint64_t sum = 0;
  for (const ReqInfo& q : c) sum += q.uid;
  EXPECT_EQ(sum, 19u * 20u / 2u);
  ReqList d = std::move(c);
  EXPECT_TRUE(c.empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty
  EXPECT_EQ(d.size(), 19u);
  d.clear();
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(a.size(), 2u);
}

// The runtime's own holders (share_inside: ops, memos) count apart from the outer ones (a
// launcher's resolution) and hold one outer reference together: sharing, copy-on-write and the
// last holder's release work whichever lets go first (the sanitizer builds check the frees).
TEST(ReqList, InsideReferencesCountApartFromOuterOnes) {
  using reprise::detail::ReqList;
  ReqList launcher;
  launcher.emplace_back().uid = 1;
  ReqList op1, op2;
  op1.share_inside(launcher);
  op2.share_inside(launcher);
  op1.share_inside(launcher);  // the same again: nothing changes
  EXPECT_EQ(op1.identity(), launcher.identity());
  EXPECT_TRUE(launcher.shared());
  EXPECT_TRUE(op1.shared());
  ReqList copy = op1;  // a copy of an inside one is an outer one
  EXPECT_EQ(copy.identity(), launcher.identity());
  launcher = ReqList();  // the launcher lets go first
  copy = ReqList();
  EXPECT_TRUE(op1.shared());  // op2 holds it too
  op2.edit(0).uid = 5;        // op2 copies first
  EXPECT_NE(op2.identity(), op1.identity());
  EXPECT_EQ(op1[0].uid, 1u);
  EXPECT_EQ(op2[0].uid, 5u);
  EXPECT_FALSE(op1.shared());  // the last holder of the first block
  const void* before = op1.identity();
  op1.edit(0).uid = 9;  // in place
  EXPECT_EQ(op1.identity(), before);
  ReqList moved = std::move(op1);
  EXPECT_TRUE(op1.empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty
  EXPECT_EQ(moved[0].uid, 9u);
  // The inside ones let go first, the outer one last.
  ReqList kept;
  kept.emplace_back().uid = 3;
  {
    ReqList a, b;
    a.share_inside(kept);
    b.share_inside(a);
    EXPECT_TRUE(kept.shared());
  }
  EXPECT_FALSE(kept.shared());
  kept.clear();
  EXPECT_TRUE(kept.empty());
}

namespace {
struct Recycled {
  explicit Recycled(std::int64_t v) : value(v) { ++alive; }
  ~Recycled() { --alive; }
  std::int64_t value;
  std::int64_t pad[7] = {};
  static inline std::atomic<int> alive{0};
};
}  // namespace

TEST(Recycler, ObjectsDestroyedElsewhereAreMadeAgainHere) {
  using reprise::detail::Recycler;
  // Made here, destroyed on two other threads at once, made again here: every object is
  // constructed and destroyed exactly once, and none shares memory with a live one.
  for (int round = 0; round < 3; ++round) {
    std::vector<Recycled*> made;
    for (int i = 0; i < 1000; ++i) made.push_back(Recycler<Recycled>::make(i));
    EXPECT_EQ(Recycled::alive.load(), 1000);
    std::thread a([&] {
      for (std::size_t i = 0; i < made.size(); i += 2) Recycler<Recycled>::destroy(made[i]);
    });
    std::thread b([&] {
      for (std::size_t i = 1; i < made.size(); i += 2) Recycler<Recycled>::destroy(made[i]);
    });
    a.join();
    b.join();
    EXPECT_EQ(Recycled::alive.load(), 0);
    std::vector<Recycled*> again;
    for (int i = 0; i < 1500; ++i) again.push_back(Recycler<Recycled>::make(-i));
    std::vector<Recycled*> sorted = again;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
    for (int i = 0; i < 1500; ++i) EXPECT_EQ(again[std::size_t(i)]->value, -i);
    for (Recycled* r : again) Recycler<Recycled>::destroy(r);
    EXPECT_EQ(Recycled::alive.load(), 0);
  }
}

TEST(LaunchDomain, KeepsItsNumberOfPointsWhenAssigned) {
  reprise::detail::LaunchDomain d;
  EXPECT_EQ(d.points(), 0u);
  d = Domain(Rect<2>({0, 0}, {3, 4}));
  EXPECT_EQ(d.points(), 20u);
  EXPECT_EQ(d, Domain(Rect<2>({0, 0}, {3, 4})));
  reprise::detail::LaunchDomain e = d;
  EXPECT_EQ(e.points(), 20u);
  e = Domain(Rect<1>({5}, {4}));  // empty
  EXPECT_EQ(e.points(), 0u);
  EXPECT_EQ(d.points(), 20u);
}

TEST(SpinPolicy, YieldsOnlyWhenThreadsOutnumberCores) {
  using reprise::detail::oversubscribed;
  EXPECT_FALSE(oversubscribed(4, 1, 4));
  EXPECT_TRUE(oversubscribed(4, 1, 2));
  EXPECT_TRUE(oversubscribed(3, 2, 4));    // two ranks on one node
  EXPECT_FALSE(oversubscribed(64, 1, 0));  // unknown core count: never
  reprise::detail::SpinPolicy s;
  s.yield = true;
  s.pause(0);               // pauses in place (first microseconds)
  s.pause(s.pause_ns + 1);  // yields (must not block)
}

TEST(SpinPolicy, FlagParsesAndRunsEitherWay) {
  register_all();
  for (const char* v : {"0", "1", "auto"}) {
    reprise::run({"-ll:cpu", "2", "-ll:spin_yield", v}, [](Context& ctx) {
      Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {63})),
                                   ctx.create_field_space({{FV, sizeof(std::int64_t)}}));
      ctx.fill(FillLauncher::of(r, {FV}, std::int64_t(0)));
      Partition p = ctx.partition_by_blocks(r, Point<1>{16});
      for (int i = 0; i < 20; ++i) {
        IndexLauncher l(T_CHAIN_STEP, p.color_space());
        l.add(p, Projection::identity(), Privilege::ReadWrite, {FV});
        ctx.execute(l);
      }
      EXPECT_EQ(sum_of(ctx, r), 64 * ((std::int64_t(1) << 20) - 1));
    });
  }
  EXPECT_THROW(reprise::run({"-ll:spin_yield", "2"}, [](Context&) {}), Error);
}

TEST(LaunchPath, ALauncherKeptAndLaunchedAgainWithOtherArguments) {
  register_all();
  for (const char* trace : {"none", "manual"}) {
    reprise::run({"-ll:cpu", "2", "-lg:no_auto_tracing"}, [&](Context& ctx) {
      Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {99})),
                                   ctx.create_field_space({{FV, sizeof(std::int64_t)}}));
      ctx.fill(FillLauncher::of(r, {FV}, std::int64_t(0)));
      Partition p = ctx.partition_by_blocks(r, Point<1>{25});
      IndexLauncher l(T_ADD_ARG, p.color_space());
      l.add(p, Projection::identity(), Privilege::ReadWrite, {FV});
      std::int64_t expect = 0;
      for (std::int64_t i = 1; i <= 30; ++i) {
        if (std::string(trace) == "manual") ctx.begin_trace(TraceID(1 + i % 2));
        // Alternate between all four pieces and the first two only.
        l.set_domain(i % 2 ? Domain(Rect<1>({0}, {3})) : Domain(Rect<1>({0}, {1})));
        l.set_args(TaskArgs{AddArgs{i, {}}});
        ctx.execute(l);
        if (std::string(trace) == "manual") ctx.end_trace(TraceID(1 + i % 2));
        expect += i * (i % 2 ? 100 : 50);
      }
      EXPECT_EQ(sum_of(ctx, r), expect);
    });
  }
}

// 100 zeros in four blocks of 25, and a launcher that adds 1 to each block (kept by the test).
struct KeptBlocks {
  FieldSpace fs;
  Region r;
  Partition p;
  IndexLauncher l;
};
KeptBlocks kept_blocks(Context& ctx) {
  auto fs = ctx.create_field_space({{FV, sizeof(std::int64_t)}});
  Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {99})), fs);
  ctx.fill(FillLauncher::of(r, {FV}, std::int64_t(0)));
  Partition p = ctx.partition_by_blocks(r, Point<1>{25});
  IndexLauncher l(T_ADD_ARG, p.color_space(), TaskArgs{AddArgs{1, {}}});
  l.add(p, Projection::identity(), Privilege::ReadWrite, {FV});
  return KeptBlocks{fs, r, p, std::move(l)};
}

// A kept launcher's requirements are resolved once (ResolvedLaunch), and checked again when a
// destruction, another requirement or another domain could change the answer.
TEST(LaunchPath, AKeptLauncherIsCheckedAgainWhenItsAnswerMayHaveChanged) {
  register_all();
  reprise::run({"-ll:cpu", "1", "-lg:no_auto_tracing"}, [&](Context& ctx) {
    auto [fs, r, p, l] = kept_blocks(ctx);
    ctx.execute(l);
    ctx.execute(l);
    // Another partition destroyed: the kept resolution is checked again, and still holds.
    ctx.destroy(ctx.partition_by_blocks(r, Point<1>{10}));
    const IndexLauncher copy = l;
    ctx.execute(copy);
    EXPECT_EQ(sum_of(ctx, r), 300);
    // Its own partition destroyed: an error, not a launch on a stale resolution.
    Partition q = ctx.partition_by_blocks(r, Point<1>{50});
    IndexLauncher m(T_ADD_ARG, q.color_space(), TaskArgs{AddArgs{1, {}}});
    m.add(q, Projection::identity(), Privilege::ReadWrite, {FV});
    ctx.execute(m);
    ctx.destroy(q);
    EXPECT_ERROR(ctx.execute(m), "was destroyed");
    // A domain its partition does not cover, and a requirement added that interferes.
    l.set_domain(Domain(Rect<1>({0}, {4})));
    EXPECT_ERROR(ctx.execute(l), "does not match the color space");
    l.set_domain(p.color_space());
    ctx.execute(l);
    l.add(p, Projection::identity(), Privilege::ReadWrite, {FV});
    EXPECT_ERROR(ctx.execute(l), "interfere");
    EXPECT_EQ(sum_of(ctx, r), 500);
    // A single task's launcher: the same.
    Region s = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {9})), fs);
    ctx.fill(FillLauncher::of(s, {FV}, std::int64_t(3)));
    TaskLauncher sum(T_SUM);
    sum.add(s, Privilege::ReadOnly, {FV});
    EXPECT_EQ(ctx.execute(sum).get<std::int64_t>(), 30);
    EXPECT_EQ(ctx.execute(sum).get<std::int64_t>(), 30);
    ctx.destroy(s);
    EXPECT_ERROR(ctx.execute(sum), "was destroyed");
  });
}

// A launcher alternating between launch domains keeps a resolution for each of the last two
// (KeptLaunches), and every one of them is checked again after a destruction.
TEST(LaunchPath, ALauncherAlternatingBetweenDomainsGetsTheSerialResult) {
  register_all();
  reprise::run({"-ll:cpu", "1", "-lg:no_auto_tracing"}, [&](Context& ctx) {
    auto [fs, r, p, l] = kept_blocks(ctx);
    // (Of different sizes: a launch over the wrong one would change the sum.)
    const Domain low(Rect<1>({0}, {0})), high(Rect<1>({2}, {3})), middle(Rect<1>({1}, {3}));
    std::int64_t expect = 0;
    auto launch = [&](const Domain& d, std::int64_t add) {
      l.set_domain(d);
      l.set_args(TaskArgs{AddArgs{add, {}}});
      ctx.execute(l);
      expect += 25 * (d.hi[0] - d.lo[0] + 1) * add;  // pieces of 25
    };
    for (int i = 0; i < 6; ++i) launch(i % 2 ? high : low, i + 1);
    // A third domain in turn with the two (each evicts the least recently used).
    for (int i = 0; i < 6; ++i) launch(i % 3 == 0 ? low : i % 3 == 1 ? high : middle, 10);
    EXPECT_EQ(sum_of(ctx, r), expect);
    // In traces (a launch's token, which names its domain, comes with its resolution: one for
    // another domain would replay the wrong points).
    for (int i = 0; i < 6; ++i) {
      ctx.begin_trace(7);
      launch(low, 1000);
      launch(i % 2 ? high : middle, 1000);
      ctx.end_trace(7);
    }
    EXPECT_EQ(sum_of(ctx, r), expect);
    // Another partition destroyed: both kept resolutions are checked again and still hold.
    ctx.destroy(ctx.partition_by_blocks(r, Point<1>{10}));
    for (int i = 0; i < 4; ++i) launch(i % 2 ? high : low, 100);
    EXPECT_EQ(sum_of(ctx, r), expect);
    // Its own partition destroyed: an error for either domain, not a stale launch.
    ctx.destroy(p);
    l.set_domain(low);
    EXPECT_ERROR(ctx.execute(l), "was destroyed");
    l.set_domain(high);
    EXPECT_ERROR(ctx.execute(l), "was destroyed");
  });
}

// Launchers made afresh for every launch (the apps' habit) find the resolution of an earlier
// launch of the same content (ResolutionCache): the same task, requirements and domain. A
// launch of another task with the same requirements, or over another domain, is not taken for
// it (in a trace its token would replay the wrong task or points), and a destruction is seen.
TEST(LaunchPath, LaunchersMadeAfreshFindTheResolutionOfTheirContent) {
  register_all();
  for (const char* trace : {"none", "manual"}) {
    reprise::run(
        {"-ll:cpu", "2", "-lg:no_auto_tracing", "-lg:dependence_memo", "2"}, [&](Context& ctx) {
          auto [fs, r, p, unused] = kept_blocks(ctx);  // (its launcher is not launched)
          const bool traced = std::string(trace) == "manual";
          std::vector<std::int64_t> model(100, 0);
          auto launch = [&](TaskID task, Partition part, const Domain& d, std::int64_t add) {
            IndexLauncher l(task, d, TaskArgs{AddArgs{add, {}}});
            l.add(part, Projection::identity(), Privilege::ReadWrite, {FV});
            ctx.execute(l);
            const std::int64_t block = part.rect(Point<1>{0}).volume();
            for (coord_t c = d.lo[0]; c <= d.hi[0]; ++c)
              for (std::int64_t i = c * block; i < (c + 1) * block; ++i)
                model[std::size_t(i)] =
                    task == T_ADD_ARG ? model[std::size_t(i)] + add : 2 * model[std::size_t(i)] + 1;
          };
          const Domain low(Rect<1>({0}, {1})), all(Rect<1>({0}, {3}));
          for (int i = 0; i < 12; ++i) {
            if (traced) ctx.begin_trace(TraceID(1 + i % 2));
            launch(T_ADD_ARG, p, i % 2 ? all : low, i + 1);
            launch(T_CHAIN_STEP, p, i % 2 ? all : low, 0);  // same requirements
            if (traced) ctx.end_trace(TraceID(1 + i % 2));
          }
          std::int64_t expect = 0;
          for (std::int64_t v : model) expect += v;
          EXPECT_EQ(sum_of(ctx, r), expect) << trace;
          // Its partition destroyed: an error, not a launch on a stale resolution;
          // a new partition of other blocks is resolved anew.
          ctx.destroy(p);
          IndexLauncher stale(T_ADD_ARG, all, TaskArgs{AddArgs{1, {}}});
          stale.add(p, Projection::identity(), Privilege::ReadWrite, {FV});
          EXPECT_ERROR(ctx.execute(stale), "was destroyed");
          Partition q = ctx.partition_by_blocks(r, Point<1>{50});
          for (int i = 0; i < 4; ++i) launch(T_ADD_ARG, q, Domain(Rect<1>({0}, {1})), 7);
          expect = 0;
          for (std::int64_t v : model) expect += v;
          EXPECT_EQ(sum_of(ctx, r), expect) << trace;
        });
  }
}

// The cache's key: another task, kind of launch, domain, region, projection, privilege or
// field is other content (a shared resolution carries the launch's token: trace matching's
// key, and the mapping a replay repeats).
TEST(ResolutionCache, OnlyTheSameContentFindsAResolution) {
  using reprise::detail::ResolutionCache;
  using reprise::detail::ResolvedLaunch;
  reprise::detail::RegionForest forest;
  const FieldSpace fs = forest.create_field_space({{FV, 8}, {FV + 1, 8}});
  const Region r = forest.create_region(forest.create_index_space(Rect<1>({0}, {9})), fs);
  const Domain d(Rect<1>({0}, {0})), e(Rect<1>({0}, {1}));
  RegionRequirement q;
  q.region = r;
  q.privilege = Privilege::ReadWrite;
  q.fields = {FV};
  const std::vector<RegionRequirement> reqs{q};
  ResolutionCache cache;
  auto resolved = std::make_shared<ResolvedLaunch>();
  resolved->forest = forest.serial();
  resolved->retirements = forest.retirements();
  resolved->domain = d;
  const auto key = ResolutionCache::key_of(T_ADD_ARG, false, d, reqs);
  EXPECT_FALSE(cache.missed_before(key));
  EXPECT_TRUE(cache.missed_before(key));
  cache.keep(key, resolved);
  EXPECT_EQ(cache.find(key, forest, d), resolved);
  EXPECT_EQ(cache.find(ResolutionCache::key_of(T_ADD_ARG, false, d, reqs), forest, d), resolved);
  EXPECT_EQ(cache.find(ResolutionCache::key_of(T_SUM, false, d, reqs), forest, d), nullptr);
  EXPECT_EQ(cache.find(ResolutionCache::key_of(T_ADD_ARG, true, d, reqs), forest, d), nullptr);
  EXPECT_EQ(cache.find(ResolutionCache::key_of(T_ADD_ARG, false, e, reqs), forest, e), nullptr);
  auto changed = [&](auto change) {
    std::vector<RegionRequirement> other = reqs;
    change(other[0]);
    return cache.find(ResolutionCache::key_of(T_ADD_ARG, false, d, other), forest, d);
  };
  EXPECT_EQ(changed([](RegionRequirement& x) { x.privilege = Privilege::ReadOnly; }), nullptr);
  EXPECT_EQ(changed([](RegionRequirement& x) { x.fields = {FV + 1}; }), nullptr);
  EXPECT_EQ(changed([](RegionRequirement& x) { x.fields = {FV, FV + 1}; }), nullptr);
  EXPECT_EQ(changed([](RegionRequirement& x) { x.projection = Projection::constant(Point<1>{0}); }),
            nullptr);
  const Region other = forest.create_region(forest.create_index_space(Rect<1>({0}, {9})), fs);
  EXPECT_EQ(changed([&](RegionRequirement& x) { x.region = other; }), nullptr);
  // A destruction anywhere: no longer valid.
  forest.retire_tree(other.tree(), reprise::detail::Event{});
  EXPECT_EQ(cache.find(key, forest, d), nullptr);
}

TEST(LaunchPath, VoidFutureMapsWaitAndRefuseValues) {
  register_all();
  reprise::run({"-ll:cpu", "2"}, [](Context& ctx) {
    FutureMap fm = ctx.execute(IndexLauncher(T_VOID_POINT, Domain(Rect<1>({0}, {7}))));
    fm.wait();
    EXPECT_THROW(fm.get(Point<1>{3}).get<std::int64_t>(), Error);
    EXPECT_THROW(ctx.reduce(fm, ReductionOp::Sum), Error);
  });
}

// A launch without a future map (IndexLauncher::set_future_map(false)) returns an empty map
// and is ordered by its regions and fences alone — untraced, replayed from a manual trace and
// traced automatically: a doubling and an addition alternate (they do not commute), a fence
// now and then, and the reads between fences wait for the replays by their data. On two CPUs
// with a utility thread, and on one shared with the application thread, which analyses (and
// hands a manual trace's ops straight to the memoizer).
TEST(LaunchPath, LaunchesWithoutAFutureMapAreOrderedByTheirRegionsAndFences) {
  register_all();
  const std::vector<std::vector<std::string>> layouts{
      {"-ll:cpu", "2", "-lg:no_inline_analysis"},
      {"-ll:cpu", "1", "-ll:app_cpu", "1", "-lg:inline_analysis"}};
  for (const auto& layout : layouts)
    for (const std::string mode : {"none", "manual", "auto"}) {
      std::vector<std::string> flags = layout;
      if (mode != "auto") flags.push_back("-lg:no_auto_tracing");
      reprise::run(flags, [&](Context& ctx) {
        Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {99})),
                                     ctx.create_field_space({{FV, sizeof(std::int64_t)}}));
        ctx.fill(FillLauncher::of(r, {FV}, std::int64_t(0)));
        Partition p = ctx.partition_by_blocks(r, Point<1>{25});
        IndexLauncher twice(T_CHAIN_STEP, p.color_space());
        twice.set_future_map(false).add(p, Projection::identity(), Privilege::ReadWrite, {FV});
        IndexLauncher add(T_ADD_ARG, p.color_space());
        add.set_future_map(false).add(p, Projection::identity(), Privilege::ReadWrite, {FV});
        std::int64_t x = 0;  // every element's value
        for (std::int64_t i = 1; i <= 40; ++i) {
          if (mode == "manual") ctx.begin_trace(1);
          EXPECT_FALSE(ctx.execute(twice).valid());
          add.set_args(TaskArgs{AddArgs{i % 3, {}}});
          EXPECT_FALSE(ctx.execute(add).valid());
          if (mode == "manual") ctx.end_trace(1);
          x = 2 * x + 1 + i % 3;
          if (i % 10 == 4) ctx.fence().wait();
          if (i % 10 == 7) {
            EXPECT_EQ(sum_of(ctx, r), 100 * x) << mode << ", step " << i;
          }
        }
        EXPECT_EQ(sum_of(ctx, r), 100 * x) << mode;
      });
    }
}

// Shared counters change without locked instructions only where the runtime has no thread but
// the application's (reprise_rt/alone.h): the one-core layout, and nothing that adds a thread.
TEST(LaunchPath, TheRuntimeRunsAloneOnlyWhereNoOtherThreadExists) {
  register_all();
  const std::vector<std::string> one_core{"-ll:cpu", "1", "-ll:app_cpu", "1",
                                          "-lg:inline_analysis"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> flags = one_core;
    flags.insert(flags.end(), more.begin(), more.end());
    return flags;
  };
  const std::vector<std::pair<std::vector<std::string>, bool>> cases{
      {one_core, true},
      {with({"-lg:no_auto_tracing"}), true},
      {with({"-lg:alone", "0"}), false},
      {with({"-lg:auto_trace:mine_inline", "0"}), false},  // mining on oneTBB's threads
      {with({"-ll:util", "2"}), false},                    // a thread for fills and copies
      {{"-ll:cpu", "1", "-ll:app_cpu", "0", "-lg:inline_analysis"}, false},  // a worker
      {{"-ll:cpu", "2", "-lg:no_inline_analysis"}, false}};
  for (const auto& [flags, alone] : cases) {
    reprise::run(flags, [&](Context& ctx) {
      EXPECT_EQ(reprise::detail::runtime_alone(), alone) << ::testing::PrintToString(flags);
      // A chain that replays, so that the counters are used either way.
      Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {9})),
                                   ctx.create_field_space({{FV, sizeof(std::int64_t)}}));
      ctx.fill(FillLauncher::of(r, {FV}, std::int64_t(0)));
      IndexLauncher l(T_CHAIN_STEP, Domain(Rect<1>({0}, {0})));
      l.add(r, Privilege::ReadWrite, {FV});
      for (int i = 0; i < 6; ++i) {
        ctx.begin_trace(7);
        ctx.execute(l);
        ctx.end_trace(7);
      }
      EXPECT_EQ(sum_of(ctx, r), 10 * 63);
    });
    EXPECT_FALSE(reprise::detail::runtime_alone()) << "still set after the run";
  }
}

TEST(LaunchPath, TheRuntimesThreadsAreNamedForTheSystem) {
  // (top -H, gdb and perf show which thread is a worker; the program's own thread keeps its
  // name. Every CPU with a worker of its own: with -ll:app_cpu the application's thread runs
  // the last CPU's points.)
  register_all();
  char before[16] = {};
  pthread_getname_np(pthread_self(), before, sizeof before);
  reprise::run({"-ll:cpu", "2", "-ll:app_cpu", "0"}, [&](Context& ctx) {
    const std::string worker = ctx.execute(TaskLauncher(T_THREAD_NAME)).get<ThreadName>().text;
    EXPECT_TRUE(worker == "rp-cpu0" || worker == "rp-cpu1") << worker;
    char now[16] = {};
    pthread_getname_np(pthread_self(), now, sizeof now);
    EXPECT_STREQ(now, before);
  });
}

namespace {
// An index launch of task 7 over 4 points with one read-write requirement on fields 1, 2, 3.
reprise::detail::OpRef token_base() {
  using namespace reprise::detail;
  OpRef o = make_op();
  o->kind = OpKind::IndexTask;
  o->task = 7;
  o->domain = Domain(Rect<1>({0}, {3}));
  o->payload = TaskPayload{};
  ReqInfo q;
  q.uid = 11;
  q.privilege = Privilege::ReadWrite;
  q.fields = {1, 2, 3};
  q.mask = 0b1110;
  o->reqs.push_back(q);
  return o;
}
}  // namespace

TEST(LaunchPath, OpTokensTellApartWhatTheAnalysisSees) {
  // Trace matching compares tokens only: ops that differ in anything the analysis uses must
  // differ in their tokens; scalar arguments and future values must not matter.
  using namespace reprise::detail;
  const std::uint64_t base = op_token(*token_base());
  EXPECT_EQ(op_token(*token_base()), base);
  std::vector<void (*)(Op&)> changes = {
      [](Op& o) { o.task = 8; },
      [](Op& o) { o.kind = OpKind::Task; },
      [](Op& o) { o.domain = Domain(Rect<1>({0}, {4})); },
      [](Op& o) { o.domain = Domain(Rect<1>({1}, {3})); },
      [](Op& o) {
        o.domain = Domain(Rect<2>({0, 0}, {3, 0}));
      },
      [](Op& o) { o.reqs.edit(0).uid = 12; },
      [](Op& o) { o.reqs.edit(0).privilege = Privilege::ReadOnly; },
      [](Op& o) {
        o.reqs.edit(0).privilege = Privilege::Reduce;
        o.reqs.edit(0).redop = ReductionOp::Sum;
      },
      [](Op& o) { o.reqs.edit(0).projection = Projection::translate(Point<1>{1}); },
      [](Op& o) {
        o.reqs.edit(0).fields = {1, 3, 2};
      },  // accessor positions differ
      [](Op& o) {
        o.reqs.edit(0).fields = {1, 2};
      },
      [](Op& o) {
        o.reqs.edit(0).fields = {1, 2, 3, 0};
      },
      [](Op& o) { o.reqs.push_back(o.reqs[0]); },
      [](Op& o) { o.task_payload().futures.resize(1); },
      [](Op& o) { o.task_payload().pinned_memory = 2; },
  };
  std::vector<std::uint64_t> seen = {base};
  for (auto change : changes) {
    OpRef o = token_base();
    change(*o);
    const std::uint64_t t = op_token(*o);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), t), 0) << "change " << seen.size();
    seen.push_back(t);
  }
  OpRef args = token_base();
  const int value = 42;
  args->task_payload().args.assign(reinterpret_cast<const std::byte*>(&value),
                                   reinterpret_cast<const std::byte*>(&value) + sizeof value);
  EXPECT_EQ(op_token(*args), base);
}

// A worker's ready queue: pushes racing from several threads, a consumer that spins and then
// sleeps, each point taken exactly once and in the order its producer pushed it, and stop()
// waking a consumer that sleeps on an empty queue.
TEST(ReadyQueue, EveryPushIsTakenOnceInItsProducersOrderAndWakesASleepingConsumer) {
  using reprise::detail::PointTask;
  using reprise::detail::ReadyQueue;
  using reprise::detail::SpinPolicy;
  constexpr int kProducers = 3, kEach = 20000;
  std::vector<std::vector<PointTask>> points(kProducers);
  for (int p = 0; p < kProducers; ++p) {
    points[std::size_t(p)] = std::vector<PointTask>(kEach);
    for (int i = 0; i < kEach; ++i)
      points[std::size_t(p)][std::size_t(i)].point_index = std::uint32_t(i);
  }
  ReadyQueue q;
  SpinPolicy spin;
  spin.spin_ns = 0;  // sleeps at once when empty: every push may have to wake it
  std::vector<int> next(kProducers, 0);
  std::atomic<int> taken{0};
  bool in_order = true;
  std::thread consumer([&] {
    while (PointTask* list = q.pop_all(spin)) {
      for (; list; list = list->next) {
        const auto p = std::size_t(
            std::find_if(points.begin(), points.end(),
                         [&](auto& v) { return list >= v.data() && list < v.data() + kEach; }) -
            points.begin());
        in_order = in_order && int(list->point_index) == next[p];
        ++next[p];
        taken.fetch_add(1);
      }
    }
  });
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p)
    producers.emplace_back([&, p] {
      for (int i = 0; i < kEach; ++i) {
        q.push(&points[std::size_t(p)][std::size_t(i)]);
        if (i % 1000 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  for (auto& t : producers) t.join();
  while (taken.load() < kProducers * kEach) std::this_thread::yield();
  // The consumer sleeps now (nothing queued, no spinning): stop() must wake it.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  q.stop();
  consumer.join();
  EXPECT_TRUE(in_order);
  for (int p = 0; p < kProducers; ++p) EXPECT_EQ(next[std::size_t(p)], kEach);
}

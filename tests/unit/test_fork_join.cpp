// Fork-join inside tasks (reprise/fork_join.h): the deque, results against sequential code for
// both policies, errors, steal-tree recording, exact replay and retentive stealing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "error_text.h"
#include "reprise/error.h"
#include "reprise/fork_join.h"
#include "reprise_rt/steal_deque.h"
#include "reprise_rt/steal_tree.h"

using namespace reprise;

namespace {

// The message of whatever f() throws (an exception from a forked child, not only Error).
template <class F>
std::string what_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

TEST(StealDeque, OwnerIsLifoThievesFifo) {
  detail::StealDeque<int> d;
  int v[4] = {0, 1, 2, 3};
  for (int& x : v) ASSERT_TRUE(d.push(&x));
  EXPECT_EQ(d.steal(), &v[0]);
  EXPECT_EQ(d.pop(), &v[3]);
  EXPECT_EQ(d.pop(), &v[2]);
  EXPECT_EQ(d.steal(), &v[1]);
  EXPECT_EQ(d.pop(), nullptr);
  EXPECT_EQ(d.steal(), nullptr);
}

TEST(StealDeque, RefusesPushWhenFull) {
  detail::StealDeque<int> d;
  int x = 0;
  for (std::int64_t i = 0; i < detail::StealDeque<int>::kCapacity; ++i) ASSERT_TRUE(d.push(&x));
  EXPECT_FALSE(d.push(&x));
  EXPECT_EQ(d.steal(), &x);
  EXPECT_TRUE(d.push(&x));
}

TEST(StealDeque, EveryEntryTakenExactlyOnceUnderContention) {
  constexpr int kItems = 200000;
  detail::StealDeque<int> d;
  std::vector<int> items(kItems);
  std::vector<std::atomic<int>> taken(kItems);
  std::atomic<bool> done{false};
  auto take = [&](int* p) { taken[std::size_t(p - items.data())].fetch_add(1); };
  std::vector<std::thread> thieves;
  for (int t = 0; t < 2; ++t)
    thieves.emplace_back([&] {
      while (!done.load())
        if (int* p = d.steal()) take(p);
    });
  for (int i = 0; i < kItems; ++i) {
    while (!d.push(&items[std::size_t(i)]))
      if (int* p = d.pop()) take(p);
    if (i % 3 == 0)
      if (int* p = d.pop()) take(p);
  }
  while (int* p = d.pop()) take(p);
  done = true;
  for (auto& t : thieves) t.join();
  while (int* p = d.steal()) take(p);
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(taken[std::size_t(i)].load(), 1) << "item " << i;
}

std::uint64_t fib(int n) {
  if (n < 2) return std::uint64_t(n);
  std::uint64_t a = 0, b = 0;
  fork([&] { a = fib(n - 1); }, [&] { b = fib(n - 2); });
  return a + b;
}

class Policies : public ::testing::TestWithParam<std::tuple<StealPolicy, int>> {};

TEST_P(Policies, FibMatchesSequential) {
  const auto [policy, threads] = GetParam();
  StealPool pool(threads, policy);
  std::uint64_t r = 0;
  pool.run([&] { r = fib(22); });
  EXPECT_EQ(r, 17711u);
  EXPECT_EQ(fib(15), 610u);  // no pool on this thread: sequential
}

// A random spawn tree: each node's value mixes its id with its children's values in order;
// its children run through fork, parallel_for or a FinishScope, chosen per node.
struct Node {
  std::uint32_t id = 0;
  int construct = 0;
  std::vector<Node> kids;
};

Node make_tree(std::mt19937& rng, std::uint32_t& next_id, int depth) {
  Node n;
  n.id = next_id++;
  n.construct = int(rng() % 3);
  if (depth > 0) {
    const int k = int(rng() % 5);
    for (int i = 0; i < k; ++i) n.kids.push_back(make_tree(rng, next_id, depth - 1));
  }
  return n;
}

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

std::uint64_t serial(const Node& n) {
  std::uint64_t h = n.id;
  for (const Node& k : n.kids) h = mix(h, serial(k));
  return h;
}

std::uint64_t parallel(const Node& n) {
  std::vector<std::uint64_t> v(n.kids.size());
  const std::size_t k = n.kids.size();
  if (n.construct == 0 && k == 2) {
    fork([&] { v[0] = parallel(n.kids[0]); }, [&] { v[1] = parallel(n.kids[1]); });
  } else if (n.construct == 0 && k == 3) {
    fork([&] { v[0] = parallel(n.kids[0]); }, [&] { v[1] = parallel(n.kids[1]); },
         [&] { v[2] = parallel(n.kids[2]); });
  } else if (n.construct == 1 || k < 2) {
    parallel_for(0, std::int64_t(k), 1,
                 [&](std::int64_t i) { v[std::size_t(i)] = parallel(n.kids[std::size_t(i)]); });
  } else {
    FinishScope scope;
    for (std::size_t i = 0; i < k; ++i) scope.spawn([&, i] { v[i] = parallel(n.kids[i]); });
    scope.sync();
  }
  std::uint64_t h = n.id;
  for (std::uint64_t x : v) h = mix(h, x);
  return h;
}

TEST_P(Policies, RandomSpawnTreesMatchSequential) {
  const auto [policy, threads] = GetParam();
  StealPool pool(threads, policy);
  for (unsigned seed = 1; seed <= 25; ++seed) {
    std::mt19937 rng(seed);
    std::uint32_t ids = 0;
    const Node tree = make_tree(rng, ids, 7);
    std::uint64_t got = 0;
    pool.run([&] { got = parallel(tree); }, nullptr, seed % 2 == 0);
    ASSERT_EQ(got, serial(tree)) << "seed " << seed;
  }
}

TEST_P(Policies, ExceptionsReachTheFork) {
  const auto [policy, threads] = GetParam();
  StealPool pool(threads, policy);
  std::atomic<int> ran{0};
  auto body = [&] {
    parallel_for(0, 1000, 1, [&](std::int64_t i) {
      ran.fetch_add(1);
      if (i == 513) throw std::runtime_error("index 513 failed");
    });
  };
  EXPECT_EQ(what_of([&] { pool.run(body); }), "index 513 failed");
  EXPECT_EQ(ran.load(), 1000);  // the other pieces ran: a fork returns once all are done
  EXPECT_EQ(what_of([&] {
              pool.run([] {
                FinishScope s;
                s.spawn([] {});
                s.spawn([] { throw std::runtime_error("spawned child failed"); });
                s.sync();
              });
            }),
            "spawned child failed");
  // The pool is fine afterwards.
  std::uint64_t r = 0;
  pool.run([&] { r = fib(18); });
  EXPECT_EQ(r, 2584u);
}

INSTANTIATE_TEST_SUITE_P(ForkJoin, Policies,
                         ::testing::Combine(::testing::Values(StealPolicy::WorkFirst,
                                                              StealPolicy::HelpFirst),
                                            ::testing::Values(1, 2, 3)),
                         [](const auto& p) {
                           return std::string(std::get<0>(p.param) == StealPolicy::WorkFirst
                                                  ? "WorkFirst"
                                                  : "HelpFirst") +
                                  std::to_string(std::get<1>(p.param));
                         });

TEST(ForkJoin, BadInputsAreErrors) {
  EXPECT_EQ(error_text([] { parallel_for(0, 10, 0, [](std::int64_t) {}); }),
            "parallel_for: grain 0 is not positive (it is the most indices one piece runs)");
  EXPECT_EQ(error_text([] { parallel_for(5, 4, 1, [](std::int64_t) {}); }),
            "parallel_for: the range [5, 4) ends before it begins");
  EXPECT_EQ(error_text([] { StealPool p(0); }), "StealPool: 0 threads (expected 1 to 1024)");
  StealPool pool(2);
  EXPECT_EQ(error_text([&] { pool.run([&] { pool.run([] {}); }); }),
            "StealPool::run: called inside a region of the same pool (fork there instead)");
  EXPECT_EQ(error_text([&] { pool.replay([] {}, StealSchedule{}); }),
            "StealPool::replay: the schedule is empty (record one first)");
}

TEST(ForkJoin, SequentialWithoutAPoolKeepsProgramOrder) {
  std::vector<int> order;
  fork([&] { order.push_back(1); }, [&] { order.push_back(2); });
  parallel_for(3, 6, 1, [&](std::int64_t i) { order.push_back(int(i)); });
  FinishScope s;
  s.spawn([&] { order.push_back(6); });
  s.sync();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4, 5, 6}));
}

// The leaves of a balanced spawn tree, each noting which worker ran it.
struct Leaves {
  explicit Leaves(int n) : by(std::size_t(n)) {}
  std::vector<std::atomic<int>> by;
};

void spin_for(int units) {
  volatile std::uint64_t x = 0;
  for (int i = 0; i < units * 200; ++i) x = x + std::uint64_t(i);
}

TEST(StealTree, RecordedTreeRoundTripsAsText) {
  StealPool pool(3, StealPolicy::HelpFirst);
  pool.run([] { parallel_for(0, 512, 1, [](std::int64_t i) { spin_for(int(i % 7)); }); }, nullptr,
           true);
  StealSchedule s = pool.last_schedule();
  ASSERT_FALSE(s.empty());
  std::string text = s.text();
  std::vector<std::string> lines;
  for (std::size_t from = 0; from < text.size();) {
    const std::size_t nl = text.find('\n', from);
    lines.push_back(text.substr(from, nl - from));
    from = nl + 1;
  }
  std::string label;
  detail::StealTree t = detail::StealTree::parse_region(lines, label);
  EXPECT_EQ(t.text(), text);
  EXPECT_EQ(t.num_phases(), s.phases());
  EXPECT_EQ(t.bytes(), s.bytes());
  // Every non-root phase hangs below a phase that exists (index() would have thrown).
  EXPECT_EQ(t.phases[0][0].victim, -1);
}

TEST(StealTree, CorruptTreesAreErrors) {
  std::string label;
  EXPECT_EQ(error_text([&] {
              detail::StealTree::parse_region(
                  {"region threads=2 policy=work-first phases=2 label=x", "phase 0 0 root",
                   "phase 1 0 victim=0/3 child stolen path=1"},
                  label);
            }),
            "steal tree: phase 0 of worker 1 names victim 0/3, which is not in the tree");
  EXPECT_EQ(error_text([&] {
              detail::StealTree::parse_region(
                  {"region threads=2 policy=sideways phases=1 label=x", "phase 0 0 root"}, label);
            }),
            "steal trace: the policy is unknown in line 'region threads=2 policy=sideways "
            "phases=1 label=x'");
}

std::string fmt_header(int phases) {
  return "region threads=2 policy=work-first phases=" + std::to_string(phases) +
         " label=by hand\nphase 0 0 root\n";
}

// Replaying a recorded schedule runs every leaf on the worker that ran it, with no steals.
TEST(StealTree, ExactReplayRunsEveryLeafWhereItRan) {
  for (StealPolicy policy : {StealPolicy::WorkFirst, StealPolicy::HelpFirst}) {
    StealPool pool(3, policy);
    constexpr int kLeaves = 256;
    Leaves first(kLeaves), again(kLeaves);
    auto body = [&](Leaves& into) {
      return [&into] {
        parallel_for(0, kLeaves, 2, [&into](std::int64_t i) {
          spin_for(int(i % 5) + 1);
          // Which pool worker runs it: helpers run on their own threads.
          into.by[std::size_t(i)] =
              int(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000003);
        });
      };
    };
    pool.run(body(first), nullptr, true);
    StealSchedule recorded = pool.last_schedule();
    const StealStats before = pool.stats();
    pool.replay(body(again), recorded);
    const StealStats after = pool.stats();
    EXPECT_EQ(after.steals, before.steals) << to_string(policy);
    EXPECT_EQ(after.deliveries - before.deliveries, recorded.phases() - 1) << to_string(policy);
    for (int i = 0; i < kLeaves; ++i)
      ASSERT_EQ(first.by[std::size_t(i)].load(), again.by[std::size_t(i)].load())
          << to_string(policy) << " leaf " << i;
    // And the replay's own tree is the recorded one, but handed over instead of stolen.
    EXPECT_EQ(pool.last_schedule().phases(), recorded.phases());
  }
}

// Retentive stealing: each run starts from the last one's schedule, so once a run had steals
// the next hands that work over (whether or not the helper gets a core soon); results stay
// exact throughout.
TEST(StealTree, RetentiveRunsStayCorrectAndHandWorkOver) {
  StealPool pool(2, StealPolicy::WorkFirst);
  StealSchedule retained;
  auto run_once = [&] {
    std::vector<std::uint64_t> out(400);
    pool.run(
        [&] {
          parallel_for(0, 400, 4, [&](std::int64_t i) {
            spin_for(i < 100 ? 20 : 1);  // imbalanced
            out[std::size_t(i)] = std::uint64_t(i) * 3 + 1;
          });
        },
        &retained);
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], i * 3 + 1);
  };
  // (A run whose workers finished far apart is not retained: the next one steals afresh. On
  // a loaded machine the helper may get no core for many short runs: keep trying for a while.)
  const auto start = std::chrono::steady_clock::now();
  auto patience_left = [&](int tries) {
    return tries < 500 || std::chrono::steady_clock::now() - start < std::chrono::seconds(30);
  };
  for (int tries = 0; patience_left(tries) && (retained.phases() < 2 || !retained.balanced());
       ++tries)
    run_once();
  ASSERT_GE(retained.phases(), 2u) << "the helper never stole in 500 runs and 30 seconds";
  const std::uint64_t before = pool.stats().deliveries;
  run_once();
  EXPECT_GT(pool.stats().deliveries, before);
}

// A retained schedule that has fragmented past 32 phases per thread is dropped (the next run
// steals afresh); a small one is followed. Both built by hand: the root's continuation at step
// 1 (the right half of a work-first parallel_for) went to worker 1 — and, in the large one,
// continuations along the leftmost path far deeper than this loop reaches.
TEST(StealTree, FragmentedSchedulesAreDropped) {
  auto schedule = [](int phases) {
    std::string text = fmt_header(phases);
    std::string path = "1";
    for (int p = 0; p < phases - 1; ++p) {
      text += "phase 1 " + std::to_string(p) + " victim=0/0 cont stolen path=" + path + "\n";
      path = "0." + path;
    }
    return StealSchedule::from_text(text);
  };
  for (int phases : {5, 101}) {
    StealPool pool(2, StealPolicy::WorkFirst);
    StealSchedule s = schedule(phases);
    ASSERT_EQ(s.phases(), std::size_t(phases));
    std::vector<int> out(256);
    pool.run(
        [&] { parallel_for(0, 256, 1, [&](std::int64_t i) { out[std::size_t(i)] = int(i); }); },
        &s);
    for (int i = 0; i < 256; ++i) ASSERT_EQ(out[std::size_t(i)], i);
    if (phases <= 64) {
      EXPECT_GE(pool.stats().deliveries, 1u) << phases;
    } else {
      EXPECT_EQ(pool.stats().deliveries, 0u) << phases;
    }
  }
  EXPECT_EQ(error_text([] {
              StealSchedule::from_text(
                  "region threads=2 policy=work-first\nphase 0 0 root\nphase 1 0 "
                  "victim=0/0 cont stolen\n");
            }),
            "steal trace: the path is missing in line 'phase 1 0 victim=0/0 cont stolen'");
}

}  // namespace

// Randomized equivalence for traces: random loop programs with random manual trace
// annotations (traces that repeat, change shape under the same id — mismatches — and have
// untraced ops and blocking waits between them), with and without automatic tracing, on
// one and two workers and two memories: the final region contents and future values must be
// bit-identical to the untraced sequential run (-lg:inorder).
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>

using namespace reprise;

namespace {

enum : TaskID { T_STEP = 9500, T_SMOOTH, T_ACC, T_SINGLE, T_VALUE, T_HASH };
enum : FieldID { F0 = 0, F1 = 1 };

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  a ^= b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2);
  return a * 0xbf58476d1ce4e5b9ull;
}

struct Salt {
  std::uint64_t salt;
  int use_future;
};

void step(TaskContext& tc) {  // RW F0 on a piece (+ an optional future)
  auto a = tc.args<Salt>();
  std::uint64_t extra = a.use_future ? std::uint64_t(tc.future<std::int64_t>(0)) : 0;
  auto f = tc.accessor<std::int64_t, 1>(0, F0);
  for (auto p : Rect<1>(tc.domain(0)))
    f[p] = std::int64_t(mix(std::uint64_t(f[p]), a.salt + std::uint64_t(p[0]) + extra));
}
void smooth(TaskContext& tc) {  // RO F0 on the halo, RW F1 on the piece
  auto in = tc.accessor<const std::int64_t, 1>(0, F0);
  auto out = tc.accessor<std::int64_t, 1>(1, F1);
  Rect<1> h = tc.domain(0);
  for (auto p : Rect<1>(tc.domain(1))) {
    std::uint64_t s = 0;
    for (coord_t q = std::max(h.lo[0], p[0] - 1); q <= std::min(h.hi[0], p[0] + 1); ++q)
      s = mix(s, std::uint64_t(in[Point<1>(q)]));
    out[p] = std::int64_t(mix(std::uint64_t(out[p]), s));
  }
}
void accumulate(TaskContext& tc) {  // Reduce Sum F1 on the halo
  auto r = tc.reducer<std::int64_t, 1>(0, F1);
  auto a = tc.args<Salt>();
  for (auto p : Rect<1>(tc.domain(0)))
    r.reduce(p, std::int64_t((a.salt * 31 + std::uint64_t(p[0])) & 0xffff));
}
void single(TaskContext& tc) {  // RW F0 and F1 on one subregion
  auto a = tc.args<Salt>();
  auto f0 = tc.accessor<std::int64_t, 1>(0, F0);
  auto f1 = tc.accessor<std::int64_t, 1>(0, F1);
  for (auto p : Rect<1>(tc.domain(0))) {
    f0[p] = std::int64_t(mix(std::uint64_t(f0[p]), std::uint64_t(f1[p]) + a.salt));
    f1[p] = f1[p] + 1;
  }
}
std::int64_t value(TaskContext& tc) {  // RO F1 on a piece: a number for a future
  auto f = tc.accessor<const std::int64_t, 1>(0, F1);
  std::uint64_t s = 0;
  for (auto p : Rect<1>(tc.domain(0))) s = mix(s, std::uint64_t(f[p]));
  return std::int64_t(s & 0xffffff);
}
std::uint64_t hash(TaskContext& tc) {
  std::uint64_t h = 1;
  for (FieldID f : {F0, F1}) {
    auto a = tc.accessor<const std::int64_t, 1>(0, f);
    for (auto p : Rect<1>(tc.domain(0))) h = mix(h, std::uint64_t(a[p]));
  }
  return h;
}

void register_all() {
  TaskRegistry::add(T_STEP, "step", {cpu(step)});
  TaskRegistry::add(T_SMOOTH, "smooth", {cpu(smooth)});
  TaskRegistry::add(T_ACC, "accumulate", {cpu(accumulate)});
  TaskRegistry::add(T_SINGLE, "single", {cpu(single)});
  TaskRegistry::add(T_VALUE, "value", {cpu(value)});
  TaskRegistry::add(T_HASH, "hash", {cpu(hash)});
}

// A program: bodies (op codes), and per iteration which body, which trace id (0: none), and
// what happens after it.
struct Program {
  coord_t n;
  std::vector<std::vector<int>> bodies;
  struct Iter {
    int body;
    int trace;      // 0: untraced
    bool extra_op;  // an untraced op after the iteration
    bool get;       // a blocking wait after the iteration
  };
  std::vector<Iter> iters;
  std::string describe() const {
    std::ostringstream s;
    s << "n=" << n << " bodies:";
    for (const auto& b : bodies) {
      s << " [";
      for (int op : b) s << op;
      s << "]";
    }
    s << " iters:";
    for (const auto& i : iters)
      s << " " << i.body << "/t" << i.trace << (i.extra_op ? "+" : "") << (i.get ? "!" : "");
    return s.str();
  }
};

Program generate(std::uint32_t seed) {
  std::mt19937 rng(seed);
  Program p;
  p.n = 40 + rng() % 120;
  int nbodies = 1 + int(rng() % 3);
  for (int b = 0; b < nbodies; ++b) {
    std::vector<int> body(2 + rng() % 6);
    for (int& op : body) op = int(rng() % 7);
    p.bodies.push_back(body);
  }
  int iters = 20 + int(rng() % 50);
  int phase_body = 0;
  for (int i = 0; i < iters; ++i) {
    if (rng() % 8 == 0) phase_body = int(rng() % nbodies);
    Program::Iter it;
    it.body = rng() % 6 == 0 ? int(rng() % nbodies) : phase_body;
    // Usually one trace id per body; sometimes a shared id (a mismatch), sometimes none.
    int r = int(rng() % 10);
    it.trace = r < 6 ? 1 + it.body : (r < 8 ? 1 : 0);
    it.extra_op = rng() % 7 == 0;
    it.get = rng() % 9 == 0;
    p.iters.push_back(it);
  }
  return p;
}

std::vector<std::uint64_t> run_program(const Program& prog, bool traced,
                                       std::vector<std::string> flags) {
  std::vector<std::uint64_t> out;
  reprise::run(flags, [&](Context& ctx) {
    auto is = ctx.create_index_space(Rect<1>({0}, {prog.n - 1}));
    Region r = ctx.create_region(is, ctx.create_field_space({{F0, 8}, {F1, 8}}));
    auto four = ctx.create_index_space(Rect<1>({0}, {3}));
    Partition part = ctx.partition_equal(r, four);
    Partition halo = ctx.partition_by_rects(
        r, four, [&](const DomainPoint& c) { return grow(part.rect(c), 2) & r.bounds(); });
    ctx.fill(r, F0, std::int64_t(1));
    ctx.fill(r, F1, std::int64_t(2));
    Future last_value;
    std::uint64_t salt = 0;
    auto issue = [&](int op) {
      ++salt;
      switch (op) {
        case 0: {
          IndexLauncher l(T_STEP, four, TaskArgs{Salt{salt, last_value.valid() ? 1 : 0}});
          l.add(part, Projection::identity(), Privilege::ReadWrite, {F0});
          if (last_value.valid()) l.add_future(last_value);
          ctx.execute(l);
          break;
        }
        case 1: {
          IndexLauncher l(T_SMOOTH, four);
          l.add(halo, Projection::identity(), Privilege::ReadOnly, {F0});
          l.add(part, Projection::identity(), Privilege::ReadWrite, {F1});
          ctx.execute(l);
          break;
        }
        case 2: {
          IndexLauncher l(T_ACC, four, TaskArgs{Salt{salt, 0}});
          l.add_reduction(halo, Projection::identity(), ReductionOp::Sum, {F1});
          ctx.execute(l);
          break;
        }
        case 3: {
          TaskLauncher l(T_SINGLE, TaskArgs{Salt{salt, 0}});
          l.add(part[Point<1>(coord_t(salt % 4))], Privilege::ReadWrite, {F0, F1});
          ctx.execute(l);
          break;
        }
        case 4:
          ctx.fill(part[Point<1>(coord_t(salt % 4))], F1, std::int64_t(salt));
          break;
        case 5:
          ctx.copy(CopyLauncher{
              part[Point<1>(coord_t(salt % 4))], {F0}, part[Point<1>(coord_t(salt % 4))], {F1}});
          break;
        case 6: {
          IndexLauncher l(T_VALUE, four);
          l.add(part, Projection::identity(), Privilege::ReadOnly, {F1});
          last_value = ctx.reduce(ctx.execute(l), ReductionOp::Sum);
          break;
        }
      }
    };
    for (const auto& it : prog.iters) {
      if (traced && it.trace) ctx.begin_trace(TraceID(it.trace));
      for (int op : prog.bodies[std::size_t(it.body)]) issue(op);
      if (traced && it.trace) ctx.end_trace(TraceID(it.trace));
      if (it.extra_op) issue(3);
      if (it.get && last_value.valid())
        out.push_back(std::uint64_t(last_value.get<std::int64_t>()));
    }
    TaskLauncher h(T_HASH);
    h.add(r, Privilege::ReadOnly, {F0, F1});
    out.push_back(ctx.execute(h).get<std::uint64_t>());
  });
  return out;
}

std::string join(const std::vector<std::string>& flags) {
  std::string s;
  for (const auto& f : flags) s.append(s.empty() ? "" : " ").append(f);
  return s;
}

}  // namespace

TEST(TraceEquivalence, RandomTracedProgramsMatchTheSequentialRun) {
  register_all();
  const std::vector<std::vector<std::string>> configs = {
      {"-ll:cpu", "1", "-lg:no_auto_tracing"},
      {"-ll:cpu", "2", "-lg:no_auto_tracing"},
      {"-ll:cpu", "2", "-ll:util", "2", "-lg:no_auto_tracing"},
      {"-ll:cpu", "1"},
      {"-ll:cpu", "2"},
      {"-ll:cpu", "2", "-ll:numa", "2", "-lg:no_auto_tracing"},
      {"-ll:cpu", "2", "-ll:numa", "2"},
      {"-ll:cpu", "3", "-ll:numa", "3", "-lg:no_auto_tracing"},
      {"-ll:cpu", "4", "-ll:numa", "4", "-lg:window", "6"},
  };
  int programs = 0;
  // REPRISE_TRACE_SEEDS=N runs more seeds (60 in CI).
  const char* env = std::getenv("REPRISE_TRACE_SEEDS");
  const std::uint32_t seeds = env ? std::uint32_t(std::atoi(env)) : 60;
  for (std::uint32_t seed = 1; seed <= seeds; ++seed) {
    Program prog = generate(seed);
    auto reference = run_program(prog, false, {"-lg:inorder", "-lg:no_auto_tracing"});
    for (const auto& flags : configs) {
      for (bool traced : {true, false}) {
        if (!traced && flags.back() == "-lg:no_auto_tracing") continue;  // that is the reference
        if (std::getenv("REPRISE_TEST_VERBOSE"))
          std::fprintf(stderr, "seed %u traced %d flags %s\n", seed, int(traced),
                       join(flags).c_str());
        auto got = run_program(prog, traced, flags);
        ASSERT_EQ(got, reference) << "seed " << seed << (traced ? " traced" : " untraced")
                                  << " flags " << join(flags) << "\n"
                                  << prog.describe();
        ++programs;
      }
    }
  }
  EXPECT_EQ(programs, int(seeds) * 13);  // per seed: 9 configs traced, the 4 automatic untraced
}

// Manual traces: what the recorder captures (the SC'18 example), fence-elision links,
// replay results identical to untraced runs, mismatch recovery, and the errors.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <filesystem>
#include <fstream>

#include "reprise_memoizer/memoizer.h"
#include "reprise_rt/runtime.h"

using namespace reprise;
using detail::Instruction;
using detail::TraceTemplate;

namespace {

enum : TaskID { T_RW = 9300, T_COPY_RS, T_RW_READ, T_SUM, T_STEN, T_INC, T_NOOP };
enum : FieldID { FV = 0, FW = 1 };

// T1: reads and writes R.
void t_rw(TaskContext& tc) {
  auto a = tc.accessor<std::int64_t, 1>(0, FV);
  for (auto p : Rect<1>(tc.domain(0)))
    a[p] = std::int64_t(std::uint64_t(a[p]) * 3 + std::uint64_t(p[0] + tc.args<int>()));
}
// T2: reads R, writes S.
void t_copy_rs(TaskContext& tc) {
  auto r = tc.accessor<const std::int64_t, 1>(0, FV);
  auto s = tc.accessor<std::int64_t, 1>(1, FV);
  for (auto p : Rect<1>(tc.domain(1))) s[p] = r[p] + 7;
}
// T3: writes R from R and S.
void t_rw_read(TaskContext& tc) {
  auto r = tc.accessor<std::int64_t, 1>(0, FV);
  auto s = tc.accessor<const std::int64_t, 1>(1, FV);
  for (auto p : Rect<1>(tc.domain(0))) r[p] = r[p] ^ std::int64_t(std::uint64_t(s[p]) * 5);
}
std::int64_t t_sum(TaskContext& tc) {
  auto r = tc.accessor<const std::int64_t, 1>(0, FV);
  std::int64_t s = 0;
  for (auto p : Rect<1>(tc.domain(0)))
    s = std::int64_t(std::uint64_t(s) * 31 + std::uint64_t(r[p]));  // wraps
  return s;
}
void t_noop(TaskContext&) {}

void register_all() {
  TaskRegistry::add(T_RW, "T1", {cpu(t_rw)});
  TaskRegistry::add(T_COPY_RS, "T2", {cpu(t_copy_rs)});
  TaskRegistry::add(T_RW_READ, "T3", {cpu(t_rw_read)});
  TaskRegistry::add(T_SUM, "sum", {cpu(t_sum)});
  TaskRegistry::add(T_NOOP, "noop", {cpu(t_noop)});
}

const std::list<std::unique_ptr<TraceTemplate>>& templates_of(Context& ctx, TraceID id) {
  ctx.fence().wait();  // the utility thread has processed everything before
  auto* m = dynamic_cast<detail::Memoizer*>(&reprise::detail::Runtime::of(ctx).pipeline());
  EXPECT_NE(m, nullptr);
  auto* list = m->templates(id);
  EXPECT_NE(list, nullptr);
  return *list;
}

struct RS {
  Region r, s;
};
RS make_rs(Context& ctx, coord_t n = 16) {
  auto is = ctx.create_index_space(Rect<1>({0}, {n - 1}));
  auto fs = ctx.create_field_space({{FV, 8}, {FW, 8}});
  return RS{ctx.create_region(is, fs), ctx.create_region(is, fs)};
}

void sc18_iteration(Context& ctx, const RS& d, int salt) {
  TaskLauncher t1(T_RW, TaskArgs{salt});
  t1.add(d.r, Privilege::ReadWrite, {FV});
  ctx.execute(t1);
  TaskLauncher t2(T_COPY_RS);
  t2.add(d.r, Privilege::ReadOnly, {FV});
  t2.add(d.s, Privilege::WriteDiscard, {FV});
  ctx.execute(t2);
  TaskLauncher t3(T_RW_READ);
  t3.add(d.r, Privilege::ReadWrite, {FV});
  t3.add(d.s, Privilege::ReadOnly, {FV});
  ctx.execute(t3);
}

}  // namespace

TEST(Tracing, RecordsTheSC18Example) {
  register_all();
  reprise::run({"-ll:cpu", "2", "-lg:no_auto_tracing"}, [](Context& ctx) {
    RS d = make_rs(ctx);
    ctx.begin_trace(7);
    sc18_iteration(ctx, d, 1);
    ctx.end_trace(7);
    const auto& list = templates_of(ctx, 7);
    ASSERT_EQ(list.size(), 1u);
    const TraceTemplate& t = *list.front();
    ASSERT_EQ(t.ops.size(), 3u);
    ASSERT_EQ(t.instrs.size(), 3u);
    // e1 := fence; e2 := op(T1, e1); e4 := op(T2, e2); e6 := op(T3, merge(e2, e4)) and after
    // transitive reduction T3 waits on T2 only.
    const Instruction& i1 = t.instrs[0];
    const Instruction& i2 = t.instrs[1];
    const Instruction& i3 = t.instrs[2];
    EXPECT_TRUE(i1.uses_fence);
    EXPECT_EQ(i1.pre_count, 0u);
    EXPECT_FALSE(i2.uses_fence);
    ASSERT_EQ(i2.pre_count, 1u);
    EXPECT_EQ(t.pre_slots[i2.pre_begin], i1.out);
    ASSERT_EQ(i3.pre_count, 1u);
    EXPECT_EQ(t.pre_slots[i3.pre_begin], i2.out);
    EXPECT_FALSE(i3.uses_fence);
    // (T3's write of R after T1's is ordered through T2, which read all of R after T1: the
    // logical analysis records no edge of its own for it, so nothing is left to reduce.)
    EXPECT_EQ(t.edges_recorded, 2u);
    EXPECT_EQ(t.edges_after_reduction, 2u);
    // Pre: R valid. Post: R and S valid. Idempotent.
    ASSERT_EQ(t.preconditions.size(), 1u);
    EXPECT_EQ(t.preconditions[0].tree, d.r.tree());
    ASSERT_EQ(t.postconditions.size(), 2u);
    EXPECT_EQ(t.postconditions[0].tree, d.r.tree());
    EXPECT_EQ(t.postconditions[1].tree, d.s.tree());
    EXPECT_TRUE(t.idempotent);
    // T1 and T2 precede T3: after a replay the summary op waits for T3 only.
    EXPECT_EQ(t.summary_ops, std::vector<std::uint32_t>{2});
  });
}

TEST(Tracing, TheSummaryWaitsForEverySinkOfTheTrace) {
  // Two independent chains in one trace: each one's last op is a sink. An untraced read of
  // either region right after the replays sees the trace's last writes.
  register_all();
  std::int64_t sums[2][2] = {};
  for (int traced = 0; traced < 2; ++traced) {
    std::vector<std::string> flags = {"-ll:cpu", "2", "-lg:no_auto_tracing"};
    if (!traced) flags.push_back("-lg:no_tracing");
    reprise::run(flags, [&](Context& ctx) {
      RS d = make_rs(ctx, 1000);
      ctx.fill(d.r, FV, std::int64_t(1));
      ctx.fill(d.s, FV, std::int64_t(2));
      for (int it = 0; it < 6; ++it) {
        ctx.begin_trace(3);
        for (Region g : {d.r, d.s})
          for (int k = 0; k < 2; ++k) {
            TaskLauncher t1(T_RW, TaskArgs{it + k});
            t1.add(g, Privilege::ReadWrite, {FV});
            ctx.execute(t1);
          }
        ctx.end_trace(3);
      }
      int i = 0;
      for (Region g : {d.r, d.s}) {
        TaskLauncher sum(T_SUM);
        sum.add(g, Privilege::ReadOnly, {FV});
        sums[traced][i++] = ctx.execute(sum).get<std::int64_t>();
      }
      if (traced) {
        const auto& list = templates_of(ctx, 3);
        ASSERT_EQ(list.size(), 1u);
        EXPECT_EQ(list.front()->summary_ops, (std::vector<std::uint32_t>{1, 3}));
        EXPECT_EQ(ctx.trace_stats().replays, 5u);
      }
    });
  }
  EXPECT_EQ(sums[1][0], sums[0][0]);
  EXPECT_EQ(sums[1][1], sums[0][1]);
}

namespace {
// Runs `iterations` of the SC'18 loop, traced or not, with a change of shape in the middle
// (a mismatch), and returns the final contents' hashes.
std::vector<std::int64_t> sc18_program(bool traced, std::vector<std::string> flags,
                                       Context::TraceStats* stats = nullptr) {
  register_all();
  std::vector<std::int64_t> out;
  flags.push_back("-lg:no_auto_tracing");  // counts below are of the manual traces only
  reprise::run(flags, [&](Context& ctx) {
    RS d = make_rs(ctx, 40);
    auto four = ctx.create_index_space(Rect<1>({0}, {3}));
    Partition pr = ctx.partition_equal(d.r, four);
    auto before = ctx.trace_stats();
    for (int it = 0; it < 30; ++it) {
      if (traced) ctx.begin_trace(1);
      sc18_iteration(ctx, d, it);
      if (it % 10 == 9) {  // every tenth iteration the trace is longer
        IndexLauncher l(T_RW, four, TaskArgs{it});
        l.add(pr, Projection::identity(), Privilege::ReadWrite, {FV});
        ctx.execute(l);
      }
      if (traced) ctx.end_trace(1);
      // Something untraced between iterations now and then.
      if (it % 7 == 3) {
        TaskLauncher t(T_RW, TaskArgs{100 + it});
        t.add(d.s, Privilege::ReadWrite, {FV});
        ctx.execute(t);
      }
    }
    for (Region r : {d.r, d.s}) {
      TaskLauncher sum(T_SUM);
      sum.add(r, Privilege::ReadOnly, {FV});
      out.push_back(ctx.execute(sum).get<std::int64_t>());
    }
    if (stats) {
      auto after = ctx.trace_stats();
      stats->replays = after.replays - before.replays;
      stats->templates_recorded = after.templates_recorded - before.templates_recorded;
      stats->mismatches = after.mismatches - before.mismatches;
      stats->points_replayed = after.points_replayed - before.points_replayed;
    }
  });
  return out;
}
}  // namespace

TEST(Tracing, ReplaysGiveTheUntracedResults) {
  auto reference = sc18_program(false, {"-lg:inorder"});
  for (auto flags : std::vector<std::vector<std::string>>{
           {}, {"-ll:cpu", "2"}, {"-ll:cpu", "2", "-ll:util", "2"}, {"-lg:inorder"}}) {
    Context::TraceStats st;
    EXPECT_EQ(sc18_program(true, flags, &st), reference);
    // Two shapes (plain and every tenth iteration): recorded once each, then the plain one
    // replays; the long shape mismatches the plain template the first time (recorded then),
    // and replays afterwards.
    EXPECT_EQ(st.templates_recorded, 2u);
    EXPECT_EQ(st.mismatches, 1u);
    EXPECT_EQ(st.replays, 28u);
    EXPECT_GT(st.points_replayed, 0u);
  }
}

TEST(Tracing, ATemplateNotReplayedWithinTheBoundIsDropped) {
  // Trace 5 is recorded once, then trace 6 replays 1,400 times: trace 5's template goes
  // after kUnreplayedBound uses; issued again, trace 5 records anew — with the untraced
  // results.
  register_all();
  std::int64_t results[2] = {0, 0};
  Context::TraceStats st;
  for (int traced = 0; traced < 2; ++traced) {
    std::vector<std::string> flags = {"-lg:no_auto_tracing"};
    if (!traced) flags.push_back("-lg:no_tracing");
    reprise::run(flags, [&](Context& ctx) {
      RS d = make_rs(ctx);
      ctx.fill(d.r, FV, std::int64_t(1));
      auto once = [&](TraceID id, int salt) {
        ctx.begin_trace(id);
        sc18_iteration(ctx, d, salt);
        ctx.end_trace(id);
      };
      once(5, 0);
      for (int i = 0; i < 1400; ++i) {
        ctx.begin_trace(6);
        TaskLauncher t1(T_RW, TaskArgs{i});
        t1.add(d.r, Privilege::ReadWrite, {FV});
        ctx.execute(t1);
        ctx.end_trace(6);
      }
      if (traced) {
        EXPECT_EQ(templates_of(ctx, 6).size(), 1u);
      }
      once(5, 1);
      TaskLauncher sum(T_SUM);
      sum.add(d.r, Privilege::ReadOnly, {FV});
      results[traced] = ctx.execute(sum).get<std::int64_t>();
      if (traced) st = ctx.trace_stats();
    });
  }
  EXPECT_EQ(results[1], results[0]);
  EXPECT_EQ(st.templates_dropped, 1u);
  EXPECT_EQ(st.templates_recorded, 3u);  // 5, 6, and 5 again
  EXPECT_EQ(st.replays, 1399u);
  static_assert(detail::Memoizer::kUnreplayedBound * 5 / 4 < 1400);
}

// Legion's -lg:no_tracing: the same program with its trace marks, analysed untraced.
TEST(Tracing, NoTracingFlagTurnsManualTracesOff) {
  auto reference = sc18_program(false, {});
  Context::TraceStats st;
  EXPECT_EQ(sc18_program(true, {"-lg:no_tracing"}, &st), reference);
  EXPECT_EQ(st.templates_recorded, 0u);
  EXPECT_EQ(st.replays, 0u);
  EXPECT_EQ(st.points_replayed, 0u);
}

TEST(Tracing, ElisionLinksFollowTheHalo) {
  // A 1-d two-tile stencil: tile 0 of iteration i+1 waits on tile 1 of iteration i only when
  // its halo reaches into tile 1.
  TaskRegistry::add(T_STEN, "sten", {cpu(t_noop)});
  TaskRegistry::add(T_INC, "inc", {cpu(t_noop)});
  for (coord_t radius : {0, 1}) {
    reprise::run({"-lg:no_auto_tracing"}, [&](Context& ctx) {
      auto is = ctx.create_index_space(Rect<1>({0}, {19}));
      auto fs = ctx.create_field_space({{FV, 8}, {FW, 8}});
      Region g = ctx.create_region(is, fs);
      auto two = ctx.create_index_space(Rect<1>({0}, {1}));
      Partition interior = ctx.partition_equal(g, two);
      Partition halo = ctx.partition_by_rects(g, two, [&](const DomainPoint& c) {
        return grow(interior.rect(c), radius) & g.bounds();
      });
      for (int it = 0; it < 3; ++it) {
        ctx.begin_trace(3);
        IndexLauncher st(T_STEN, two);
        st.add(interior, Projection::identity(), Privilege::ReadWrite, {FW});
        st.add(halo, Projection::identity(), Privilege::ReadOnly, {FV});
        ctx.execute(st);
        IndexLauncher inc(T_INC, two);
        inc.add(interior, Projection::identity(), Privilege::ReadWrite, {FV});
        ctx.execute(inc);
        ctx.end_trace(3);
      }
      const TraceTemplate& t = *templates_of(ctx, 3).front();
      bool tile0_waits_on_tile1 = false;
      for (const Instruction& in : t.instrs) {
        // The stencil's tile 0.
        if (in.kind != Instruction::Kind::Op || in.op != 0 || in.point != 0) continue;
        for (std::uint32_t i = 0; i < in.link_count; ++i)
          if (t.links[in.link_begin + i].point == 1) tile0_waits_on_tile1 = true;
      }
      EXPECT_EQ(tile0_waits_on_tile1, radius > 0) << "radius " << radius;
      EXPECT_TRUE(t.idempotent);
      EXPECT_EQ(ctx.trace_stats().replays, 2u);
    });
  }
}

namespace {
// A 1-d halo stencil whose tiles run on two CPUs with a memory each: every iteration copies
// the halos between the two memories. Returns the sum of the values.
enum : TaskID { T_HALO_READ = 9320, T_HALO_ADD };
void t_halo_read(TaskContext& tc) {  // FW[p] = the halo's FV around p
  auto in = tc.accessor<const std::int64_t, 1>(0, FV);
  auto out = tc.accessor<std::int64_t, 1>(1, FW);
  const Rect<1> h = tc.domain(0);
  for (auto p : Rect<1>(tc.domain(1))) {
    std::int64_t s = 0;
    for (coord_t q = std::max(h.lo[0], p[0] - 1); q <= std::min(h.hi[0], p[0] + 1); ++q)
      s = s * 7 + in[Point<1>(q)];
    out[p] = s;
  }
}
void t_halo_add(TaskContext& tc) {  // FV += FW
  auto v = tc.accessor<std::int64_t, 1>(0, FV);
  auto w = tc.accessor<const std::int64_t, 1>(0, FW);
  for (auto p : Rect<1>(tc.domain(0))) v[p] = (v[p] + w[p] + 1) % 1000003;
}
std::int64_t halo_program(bool traced, std::vector<std::string> flags, Context::TraceStats* stats,
                          std::size_t* template_copies, bool* idempotent) {
  TaskRegistry::add(T_HALO_READ, "halo_read", {cpu(t_halo_read)});
  TaskRegistry::add(T_HALO_ADD, "halo_add", {cpu(t_halo_add)});
  register_all();
  std::int64_t result = 0;
  flags.push_back("-lg:no_auto_tracing");
  reprise::run(flags, [&](Context& ctx) {
    auto is = ctx.create_index_space(Rect<1>({0}, {39}));
    auto fs = ctx.create_field_space({{FV, 8}, {FW, 8}});
    Region g = ctx.create_region(is, fs);
    auto four = ctx.create_index_space(Rect<1>({0}, {3}));
    Partition interior = ctx.partition_equal(g, four);
    Partition halo = ctx.partition_by_rects(
        g, four, [&](const DomainPoint& c) { return grow(interior.rect(c), 1) & g.bounds(); });
    IndexLauncher init(T_RW, four, TaskArgs{5});
    init.add(interior, Projection::identity(), Privilege::ReadWrite, {FV});
    ctx.execute(init);
    for (int it = 0; it < 20; ++it) {
      if (traced) ctx.begin_trace(4);
      IndexLauncher rd(T_HALO_READ, four);
      rd.add(halo, Projection::identity(), Privilege::ReadOnly, {FV});
      rd.add(interior, Projection::identity(), Privilege::WriteDiscard, {FW});
      ctx.execute(rd);
      IndexLauncher add(T_HALO_ADD, four);
      add.add(interior, Projection::identity(), Privilege::ReadWrite, {FV, FW});
      ctx.execute(add);
      if (traced) ctx.end_trace(4);
    }
    TaskLauncher sum(T_SUM);
    sum.add(g, Privilege::ReadOnly, {FV});
    result = ctx.execute(sum).get<std::int64_t>();
    if (stats) *stats = ctx.trace_stats();
    if (template_copies && traced) {
      const TraceTemplate& t = *templates_of(ctx, 4).front();
      *template_copies = t.copies.size();
      *idempotent = t.idempotent;
    }
  });
  return result;
}
}  // namespace

TEST(Tracing, SeveralMemoriesReplayTheRecordedCopies) {
  const std::int64_t reference = halo_program(false, {"-lg:inorder"}, nullptr, nullptr, nullptr);
  for (auto flags :
       std::vector<std::vector<std::string>>{{"-ll:cpu", "2", "-ll:numa", "2"},
                                             {"-ll:cpu", "2", "-ll:numa", "2", "-ll:util", "2"},
                                             {"-ll:cpu", "4", "-ll:numa", "4", "-lg:inorder"}}) {
    Context::TraceStats untraced, traced;
    std::size_t copies = 0;
    bool idempotent = false;
    EXPECT_EQ(halo_program(false, flags, &untraced, nullptr, nullptr), reference);
    EXPECT_EQ(halo_program(true, flags, &traced, &copies, &idempotent), reference);
    // Each iteration moves the halos between the memories, recorded or replayed.
    EXPECT_GT(copies, 0u);
    EXPECT_TRUE(idempotent);
    EXPECT_EQ(traced.templates_recorded, 1u);
    EXPECT_EQ(traced.replays, 19u);
    EXPECT_EQ(traced.copies, untraced.copies) << "a replay issues the copies the analysis would";
    EXPECT_GE(untraced.copies, 20u * copies);
  }
}

TEST(Tracing, MergesAreDissolvedIntoTheirUsers) {
  // s1 := op(fence); s2 := merge(s1); s3 := merge(); s4 := op(s2, s3); s5 := merge(s1, s4);
  // s6 := op(s5); s7 := merge(fence, s4); s8 := copy(s7, s6).
  // Dissolved: op(fence); op(s1); op(s1, s2); copy(fence; s2, s3).
  TraceTemplate t;
  auto add = [&](Instruction::Kind k, std::vector<std::uint32_t> pre, bool fence) {
    Instruction in;
    in.kind = k;
    in.uses_fence = fence;
    in.pre_begin = std::uint32_t(t.pre_slots.size());
    in.pre_count = std::uint32_t(pre.size());
    t.pre_slots.insert(t.pre_slots.end(), pre.begin(), pre.end());
    in.out = t.num_slots++;
    t.instrs.push_back(in);
  };
  using K = Instruction::Kind;
  add(K::Op, {}, true);
  add(K::Merge, {1}, false);
  add(K::Merge, {}, false);
  add(K::Op, {2, 3}, false);
  add(K::Merge, {1, 4}, false);
  add(K::Op, {5}, false);
  add(K::Merge, {0, 4}, false);
  add(K::Copy, {7, 6}, false);
  detail::dissolve_merges(t);
  EXPECT_EQ(t.instrs_recorded, 8u);
  ASSERT_EQ(t.instrs.size(), 4u);
  EXPECT_EQ(t.num_slots, 5u);
  auto pre = [&](std::size_t i) {
    const Instruction& in = t.instrs[i];
    return std::vector<std::uint32_t>(t.pre_slots.begin() + in.pre_begin,
                                      t.pre_slots.begin() + in.pre_begin + in.pre_count);
  };
  for (const Instruction& in : t.instrs) EXPECT_NE(in.kind, K::Merge);
  EXPECT_TRUE(t.instrs[0].uses_fence);
  EXPECT_EQ(pre(1), (std::vector<std::uint32_t>{1}));
  EXPECT_FALSE(t.instrs[1].uses_fence);
  EXPECT_EQ(pre(2), (std::vector<std::uint32_t>{1, 2}));
  EXPECT_EQ(t.instrs[3].kind, K::Copy);
  EXPECT_EQ(pre(3), (std::vector<std::uint32_t>{2, 3}));
  EXPECT_TRUE(t.instrs[3].uses_fence) << "a merge with the fence among its inputs implies it";
  for (std::size_t i = 0; i < t.instrs.size(); ++i) EXPECT_EQ(t.instrs[i].out, i + 1);
}

TEST(Tracing, DotExport) {
  register_all();
  auto dir = std::filesystem::temp_directory_path() / "reprise_dot_test";
  std::filesystem::remove_all(dir);
  reprise::run({"-lg:trace:dot", dir.string(), "-lg:no_auto_tracing"}, [](Context& ctx) {
    RS d = make_rs(ctx);
    ctx.begin_trace(5);
    sc18_iteration(ctx, d, 0);
    ctx.end_trace(5);
  });
  std::ifstream f(dir / "trace_5_0.dot");
  ASSERT_TRUE(f.good());
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("digraph trace_5"), std::string::npos);
  EXPECT_NE(text.find("T3"), std::string::npos);
  std::filesystem::remove_all(dir);
}

namespace {
void expect_trace_error(const std::function<void(Context&, RS&)>& body, const char* word) {
  register_all();
  try {
    reprise::run({}, [&](Context& ctx) {
      RS d = make_rs(ctx);
      body(ctx, d);
    });
    FAIL() << "expected an error mentioning " << word;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(Tracing, Errors) {
  expect_trace_error(
      [](Context& ctx, RS&) {
        ctx.begin_trace(1);
        ctx.begin_trace(2);
      },
      "do not nest");
  expect_trace_error([](Context& ctx, RS&) { ctx.end_trace(1); }, "no trace is open");
  expect_trace_error(
      [](Context& ctx, RS&) {
        ctx.begin_trace(1);
        ctx.end_trace(2);
      },
      "open trace is 1");
  expect_trace_error([](Context& ctx, RS&) { ctx.begin_trace(1); }, "ended inside trace 1");
  expect_trace_error(
      [](Context& ctx, RS&) {
        ctx.begin_trace(1);
        auto is = ctx.create_index_space(Rect<1>({0}, {3}));
        ctx.create_region(is, ctx.create_field_space({{FV, 8}}));
      },
      "create_region inside trace 1");
  expect_trace_error(
      [](Context& ctx, RS&) {
        ctx.begin_trace(1);
        ctx.fence();
      },
      "fence inside trace");
  expect_trace_error(
      [](Context& ctx, RS& d) {
        ctx.begin_trace(1);
        TaskLauncher s(T_SUM);
        s.add(d.r, Privilege::ReadOnly, {FV});
        ctx.execute(s).get<std::int64_t>();
      },
      "blocking wait inside trace 1");
}

TEST(Tracing, UntracedOpsBetweenReplaysSeeTheTracesWrites) {
  // The summary op: a read right after a replay run must wait for the replayed writers.
  register_all();
  std::int64_t traced = 0, plain = 0;
  for (bool use_trace : {true, false}) {
    reprise::run({"-ll:cpu", "2"}, [&](Context& ctx) {
      RS d = make_rs(ctx, 1000);
      for (int it = 0; it < 5; ++it) {
        if (use_trace) ctx.begin_trace(2);
        TaskLauncher t1(T_RW, TaskArgs{it});
        t1.add(d.r, Privilege::ReadWrite, {FV});
        ctx.execute(t1);
        if (use_trace) ctx.end_trace(2);
        TaskLauncher s(T_SUM);
        s.add(d.r, Privilege::ReadOnly, {FV});
        (use_trace ? traced : plain) = ctx.execute(s).get<std::int64_t>();
      }
    });
  }
  EXPECT_EQ(traced, plain);
}
TEST(Tracing, SmallLoopsMatchUntraced) {
  register_all();
  for (int variant = 0; variant < 4; ++variant) {
    std::vector<std::int64_t> res[2];
    for (int traced = 0; traced < 2; ++traced) {
      reprise::run({"-lg:inorder"}, [&](Context& ctx) {
        RS d = make_rs(ctx, 8);
        for (int it = 0; it < 3; ++it) {
          if (traced) ctx.begin_trace(1);
          TaskLauncher t1(T_RW, TaskArgs{it});
          t1.add(d.r, Privilege::ReadWrite, {FV});
          ctx.execute(t1);
          if (variant >= 1) {
            TaskLauncher t2(T_COPY_RS);
            t2.add(d.r, Privilege::ReadOnly, {FV});
            t2.add(d.s, Privilege::WriteDiscard, {FV});
            ctx.execute(t2);
          }
          if (variant >= 2) {
            TaskLauncher t3(T_RW_READ);
            t3.add(d.r, Privilege::ReadWrite, {FV});
            t3.add(d.s, Privilege::ReadOnly, {FV});
            ctx.execute(t3);
          }
          if (traced) ctx.end_trace(1);
          if (variant >= 3) {
            TaskLauncher t(T_RW, TaskArgs{100 + it});
            t.add(d.s, Privilege::ReadWrite, {FV});
            ctx.execute(t);
          }
          for (Region r : {d.r, d.s}) {
            TaskLauncher sum(T_SUM);
            sum.add(r, Privilege::ReadOnly, {FV});
            res[traced].push_back(ctx.execute(sum).get<std::int64_t>());
          }
        }
      });
    }
    EXPECT_EQ(res[0], res[1]) << "variant " << variant;
  }
}

TEST(Tracing, AReplayRightAfterItsRecordingOrItsLastReplayChecksNothing) {
  // An idempotent template leaves the state it needs: the replay that follows its recording,
  // like one that follows its previous replay, is not checked; one after other work is.
  register_all();
  std::int64_t results[2] = {0, 0};
  Context::TraceStats st;
  for (int traced = 0; traced < 2; ++traced) {
    std::vector<std::string> flags = {"-lg:no_auto_tracing", "-ll:numa", "2"};
    if (!traced) flags.push_back("-lg:no_tracing");
    reprise::run(flags, [&](Context& ctx) {
      RS d = make_rs(ctx);
      ctx.fill(d.r, FV, std::int64_t(1));
      auto loop = [&](int from, int to) {
        for (int i = from; i < to; ++i) {
          ctx.begin_trace(7);
          sc18_iteration(ctx, d, i);
          ctx.end_trace(7);
        }
      };
      auto sum = [&] {
        TaskLauncher s(T_SUM);
        s.add(d.r, Privilege::ReadOnly, {FV});
        return ctx.execute(s).get<std::int64_t>();
      };
      loop(0, 6);
      const std::int64_t first = sum();
      if (traced) {
        st = ctx.trace_stats();
        EXPECT_EQ(st.templates_recorded, 1u);
        EXPECT_EQ(st.replays, 5u);
        EXPECT_EQ(st.condition_checks, 0u);
      }
      loop(6, 9);  // after an untraced op: the first of these replays is checked
      results[traced] = sum() ^ first;
      if (traced) st = ctx.trace_stats();
    });
  }
  EXPECT_EQ(results[1], results[0]);
  EXPECT_EQ(st.templates_recorded, 1u);
  EXPECT_EQ(st.replays, 8u);
  EXPECT_EQ(st.condition_checks, 1u);
}

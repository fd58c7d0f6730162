// Attaching the program's arrays (Context::attach / detach): tasks read and write the arrays in
// place, other memories get copies, detach brings the latest values back; misuse is an Error.
// Also run on 3 ranks (mpi_attach_np3): there only the owning shard's arrays are used.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <cstdint>
#include <string>
#include <vector>

#include "error_text.h"
#include "region_tasks.h"

using namespace reprise;
using namespace region_tasks;

namespace {
enum : TaskID { T_WHERE = 10400, T_GRID };

// The address of element 0 of x as the task sees it.
std::uintptr_t where(TaskContext& tc) {
  auto x = tc.accessor<const double, 1>(0, FX);
  return reinterpret_cast<std::uintptr_t>(x.ptr(Point<1>(0)));
}
// 2-d: x(i, j) += i * 100 + j, y(i, j) = float(x) / 2.
void grid(TaskContext& tc) {
  auto x = tc.accessor<double, 2>(0, FX);
  auto y = tc.accessor<float, 2>(0, FY);
  for (auto p : Rect<2>(tc.domain(0))) {
    x[p] += double(p[0] * 100 + p[1]);
    y[p] = float(x[p] / 2);
  }
}
void register_all() {
  register_tasks();
  TaskRegistry::add(T_WHERE, "where", {cpu(where)});
  TaskRegistry::add(T_GRID, "grid", {cpu(grid)});
}

void run_scale(Context& ctx, const Partition& p) {
  IndexLauncher sc(T_SCALE, p.color_space());
  sc.add(p, Projection::identity(), Privilege::ReadWrite, {FX});
  ctx.execute(sc);
}
std::vector<double> iota(double from) {
  std::vector<double> xs(kN);
  for (coord_t i = 0; i < kN; ++i) xs[std::size_t(i)] = from + double(i);
  return xs;
}
// Under control replication only the owning shard's arrays are the region's.
bool owns(Context& ctx, MemoryID memory) {
  return ctx.num_shards() == 1 || (memory == 0 && ctx.shard() == 0);
}
}  // namespace

TEST(Attach, TasksUseTheArrayInPlaceAndDetachBringsTheValuesBack) {
  register_all();
  for (const char* numa : {"1", "3"}) {
    reprise::run({"-ll:cpu", "3", "-ll:numa", numa}, [&](Context& ctx) {
      Region r = make_region(ctx);
      Partition p = ctx.partition_equal(r, ctx.create_index_space(Rect<1>({0}, {3})));
      std::vector<double> xs = iota(0);
      AttachLauncher al(r);
      al.attach_array(FX, xs.data());
      Attachment a = ctx.attach(al);
      EXPECT_TRUE(a.is_attached());
      EXPECT_EQ(run_sum(ctx, r), double(kN * (kN - 1) / 2));
      if (ctx.num_shards() == 1 && std::string(numa) == "1") {
        TaskLauncher w(T_WHERE);
        w.add(r, Privilege::ReadOnly, {FX});
        EXPECT_EQ(ctx.execute(w).get<std::uintptr_t>(), reinterpret_cast<std::uintptr_t>(xs.data()))
            << "the task did not read the attached array in place";
      }
      run_scale(ctx, p);  // 2i + 1, written in the pieces' memories
      run_scale(ctx, p);  // 4i + 3
      ctx.detach(a).wait();
      EXPECT_FALSE(a.is_attached());
      for (coord_t i = 0; i < kN; ++i)
        EXPECT_EQ(xs[std::size_t(i)], owns(ctx, 0) ? double(4 * i + 3) : double(i)) << i;
      // The region keeps its values once the array is the program's again.
      std::fill(xs.begin(), xs.end(), -1.0);
      EXPECT_EQ(run_sum(ctx, r), double(4 * kN * (kN - 1) / 2 + 3 * kN));
    });
  }
}

TEST(Attach, AnotherSystemMemoryAndTwoDimensions) {
  register_all();
  reprise::run({"-ll:cpu", "2", "-ll:numa", "2"}, [&](Context& ctx) {
    const Domain bounds = Rect<2>({1, 2}, {6, 9});  // 6 x 8, not at the origin
    Region r =
        ctx.create_region(ctx.create_index_space(bounds),
                          ctx.create_field_space({{FX, sizeof(double)}, {FY, sizeof(float)}}));
    std::vector<double> xs(48);
    std::vector<float> ys(48, 7.0f);
    for (std::size_t k = 0; k < xs.size(); ++k) xs[k] = double(k);
    AttachLauncher al(r);
    al.attach_array(FX, xs.data()).attach_array(FY, ys.data()).set_memory(1);
    Attachment a = ctx.attach(al);
    Partition p = ctx.partition_equal(r, ctx.create_index_space(Rect<2>({0, 0}, {1, 1})));
    IndexLauncher g(T_GRID, p.color_space());
    g.add(p, Projection::identity(), Privilege::ReadWrite, {FX, FY});
    ctx.execute(g);
    ctx.detach(a).wait();
    const bool here = ctx.num_shards() == 1;  // (memory 1 is shard 0's second)
    for (coord_t i = 1; i <= 6; ++i)
      for (coord_t j = 2; j <= 9; ++j) {
        const std::size_t k = std::size_t((i - 1) * 8 + (j - 2));  // row-major
        const double want = double(k) + double(i * 100 + j);
        EXPECT_EQ(xs[k], here || ctx.shard() == 0 ? want : double(k)) << i << "," << j;
        EXPECT_EQ(ys[k], here || ctx.shard() == 0 ? float(want / 2) : 7.0f) << i << "," << j;
      }
  });
}

TEST(Attach, TracedLoopsAndAttachingAgain) {
  register_all();
  for (const char* tracing : {"-lg:no_auto_tracing", "-lg:enable_automatic_tracing"}) {
    reprise::run({"-ll:cpu", "2", "-ll:numa", "2", tracing}, [&](Context& ctx) {
      Region r = make_region(ctx);
      Partition p = ctx.partition_equal(r, ctx.create_index_space(Rect<1>({0}, {1})));
      // Attached and detached again and again, each time another array, with manually traced
      // scales in between (and automatic traces that may take in the attaches themselves).
      double expect0 = 0;  // element 0 of the region
      for (int round = 0; round < 12; ++round) {
        std::vector<double> xs = iota(double(round));
        AttachLauncher al(r);
        al.attach_array(FX, xs.data());
        Attachment a = ctx.attach(al);
        expect0 = double(round);
        for (int it = 0; it < 3; ++it) {
          ctx.begin_trace(7);
          run_scale(ctx, p);
          ctx.end_trace(7);
          expect0 = 2 * expect0 + 1;
        }
        ctx.detach(a).wait();
        if (owns(ctx, 0)) {
          EXPECT_EQ(xs[0], expect0) << "round " << round;
          EXPECT_EQ(xs[kN - 1], 8 * (double(round) + double(kN - 1)) + 7) << "round " << round;
        }
      }
      EXPECT_GT(ctx.trace_stats().replays, 0u);
    });
  }
}

TEST(Attach, AutomaticTracesTakeInAttachAndDetach) {
  register_all();
  reprise::run({"-ll:cpu", "2", "-ll:numa", "2"}, [&](Context& ctx) {
    Region r = make_region(ctx);
    Partition p = ctx.partition_equal(r, ctx.create_index_space(Rect<1>({0}, {1})));
    // The same ops every round, another array each time: replays must use each round's.
    std::vector<std::vector<double>> arrays;
    std::vector<Future> done;
    for (int round = 0; round < 60; ++round) arrays.push_back(iota(double(round)));
    for (int round = 0; round < 60; ++round) {
      AttachLauncher al(r);
      al.attach_array(FX, arrays[std::size_t(round)].data());
      Attachment a = ctx.attach(al);
      run_scale(ctx, p);
      done.push_back(ctx.detach(a));
    }
    for (const Future& f : done) f.wait();
    for (int round = 0; round < 60 && owns(ctx, 0); ++round)
      for (coord_t i = 0; i < kN; i += 13) {
        EXPECT_EQ(arrays[std::size_t(round)][std::size_t(i)], 2 * double(round + i) + 1)
            << "round " << round << ", element " << i;
      }
    EXPECT_GT(ctx.trace_stats().points_replayed, 0u) << "no automatic trace took them in";
  });
}

TEST(Attach, ErrorsNameTheProblem) {
  register_all();
  reprise::run({"-ll:cpu", "2"}, [&](Context& ctx) {
    Region r = make_region(ctx);
    Partition p = ctx.partition_equal(r, ctx.create_index_space(Rect<1>({0}, {1})));
    std::vector<double> xs(kN);
    auto attach = [&](AttachLauncher al) { return error_text([&] { ctx.attach(al); }); };
    EXPECT_NE(
        attach(AttachLauncher(p[Point<1>(0)]).attach_array(FX, xs.data())).find("is a subregion"),
        std::string::npos);
    EXPECT_NE(attach(AttachLauncher(r)).find("no arrays named"), std::string::npos);
    EXPECT_NE(attach(AttachLauncher(r).attach_array(9, xs.data())).find("field 9 is not in"),
              std::string::npos);
    EXPECT_NE(attach(AttachLauncher(r).attach_array(FX, nullptr)).find("is null"),
              std::string::npos);
    EXPECT_NE(attach(AttachLauncher(r).attach_array(FX, xs.data()).attach_array(FX, xs.data()))
                  .find("named twice"),
              std::string::npos);
    auto* odd = reinterpret_cast<std::byte*>(xs.data()) + 4;
    EXPECT_NE(attach(AttachLauncher(r).attach_array(FX, odd)).find("not aligned to 8 bytes"),
              std::string::npos);
    EXPECT_NE(attach(AttachLauncher(r).attach_array(FX, xs.data()).set_memory(99))
                  .find("memory 99 does not exist"),
              std::string::npos);
    Attachment a = ctx.attach(AttachLauncher(r).attach_array(FX, xs.data()));
    EXPECT_NE(attach(AttachLauncher(r).attach_array(FX, xs.data())).find("attached in memory 0"),
              std::string::npos);
    ctx.begin_trace(3);
    EXPECT_NE(error_text([&] { ctx.detach(a); }).find("trace"), std::string::npos);
    ctx.end_trace(3);
    ctx.detach(a).wait();
    EXPECT_NE(error_text([&] { ctx.detach(a); }).find("nothing is attached"), std::string::npos);
    Attachment none;
    EXPECT_NE(error_text([&] { ctx.detach(none); }).find("nothing is attached"), std::string::npos);
    // A region destroyed while attached: its detach is an error, the array is free again.
    Region gone = make_region(ctx);
    Attachment b = ctx.attach(AttachLauncher(gone).attach_array(FX, xs.data()));
    ctx.destroy(gone);
    EXPECT_NE(error_text([&] { ctx.detach(b); }).find("detach"), std::string::npos);
    EXPECT_EQ(run_sum(ctx, r), 0.0);  // r was written with a zeroed array, and still is
  });
}

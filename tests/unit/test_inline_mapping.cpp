// Inline mappings (Context::map_region / unmap_region): the application thread reads and
// writes a region in place, ordered with the ops before and after it; misuse is an Error.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "error_text.h"
#include "region_tasks.h"

using namespace reprise;
using namespace region_tasks;

TEST(InlineMapping, ReadsAndWritesInPlaceBetweenOps) {
  register_tasks();
  for (const char* numa : {"1", "3"}) {
    reprise::run({"-ll:cpu", "3", "-ll:numa", numa}, [](Context& ctx) {
      Region r = make_region(ctx);
      ctx.fill(r, FX, 1.0);
      Partition p = ctx.partition_equal(r, ctx.create_index_space(Rect<1>({0}, {3})));
      IndexLauncher sc(T_SCALE, p.color_space());
      sc.add(p, Projection::identity(), Privilege::ReadWrite, {FX});
      ctx.execute(sc);  // x = 3 everywhere, written in the pieces' memories
      PhysicalRegion pr = ctx.map_region(r, Privilege::ReadWrite, {FX});
      auto x = pr.accessor<double, 1>(FX);
      for (auto q : Rect<1>(r.bounds())) {
        EXPECT_EQ(x[q], 3.0);
        x[q] = double(q[0]);
      }
      ctx.unmap_region(pr);
      EXPECT_FALSE(pr.is_mapped());
      ctx.execute(sc);  // x = 2 i + 1
      EXPECT_EQ(run_sum(ctx, r), double(kN * (kN - 1) + kN));
    });
  }
}

TEST(InlineMapping, LaterConflictingOpsWaitForTheUnmapping) {
  register_tasks();
  reprise::run({"-ll:cpu", "2"}, [](Context& ctx) {
    Region r = make_region(ctx);
    ctx.fill(r, FX, 1.0);
    PhysicalRegion pr = ctx.map_region(r, Privilege::ReadWrite, {FX});
    scales_run = 0;
    TaskLauncher sc(T_SCALE);
    sc.add(r, Privilege::ReadWrite, {FX});
    Future done = ctx.execute(sc);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_EQ(scales_run.load(), 0) << "a writer ran while the region was mapped";
    auto x = pr.accessor<double, 1>(FX);
    EXPECT_EQ(x[Point<1>(5)], 1.0);
    x[Point<1>(5)] = 10.0;
    ctx.unmap_region(pr);
    done.wait();
    EXPECT_EQ(run_sum(ctx, r), 3.0 * (kN - 1) + 21.0);
  });
}

TEST(InlineMapping, ReadOnlyMappingsLetReadersRunAndUnmapWhenDropped) {
  register_tasks();
  reprise::run({"-ll:cpu", "1"}, [](Context& ctx) {
    Region r = make_region(ctx);
    ctx.fill(r, FX, 2.0);
    {
      PhysicalRegion pr = ctx.map_region(r, Privilege::ReadOnly, {FX});
      EXPECT_EQ((pr.accessor<const double, 1>(FX)[Point<1>(0)]), 2.0);
      EXPECT_EQ(run_sum(ctx, r), 2.0 * kN);  // a reader while mapped: no wait
    }                                        // dropped: unmapped
    TaskLauncher sc(T_SCALE);
    sc.add(r, Privilege::ReadWrite, {FX});
    ctx.execute(sc).wait();  // would hang if the mapping still held the region
    EXPECT_EQ(run_sum(ctx, r), 5.0 * kN);
  });
}

// Under control replication (mpi_inline_mapping_np3) every shard maps and writes; a
// read-modify-write must still apply once, and every shard must read the same values.
TEST(InlineMapping, ReadModifyWriteAppliesOnceWhateverTheShards) {
  register_tasks();
  reprise::run({"-ll:cpu", "2", "-ll:numa", "2"}, [](Context& ctx) {
    Region r = make_region(ctx);
    ctx.fill(r, FX, 1.0);
    Partition p = ctx.partition_equal(r, ctx.create_index_space(Rect<1>({0}, {5})));
    for (int round = 0; round < 3; ++round) {
      PhysicalRegion pr = ctx.map_region(r, Privilege::ReadWrite, {FX});
      auto x = pr.accessor<double, 1>(FX);
      for (auto q : Rect<1>(r.bounds())) x[q] += double(q[0]);
      ctx.unmap_region(pr);
      IndexLauncher sc(T_SCALE, p.color_space());
      sc.add(p, Projection::identity(), Privilege::ReadWrite, {FX});
      ctx.execute(sc);  // x = 2x + 1 on every shard's pieces
    }
    // x0 = 1; each round x = 2 (x + q) + 1.
    PhysicalRegion ro = ctx.map_region(r, Privilege::ReadOnly, {FX});
    auto x = ro.accessor<const double, 1>(FX);
    for (auto q : Rect<1>(r.bounds())) {
      double want = 1.0;
      for (int round = 0; round < 3; ++round) want = 2 * (want + double(q[0])) + 1;
      EXPECT_EQ(x[q], want) << "element " << q[0] << " on shard " << ctx.shard();
    }
  });
}

TEST(InlineMapping, MisuseIsAnError) {
  register_tasks();
  reprise::run({"-ll:cpu", "1", "-lg:no_auto_tracing"}, [](Context& ctx) {
    Region r = make_region(ctx);
    PhysicalRegion ro = ctx.map_region(r, Privilege::ReadOnly, {FX, FY});
    EXPECT_NE(error_text([&] { (void)ro.accessor<double, 1>(FX); }).find("READ_ONLY"),
              std::string::npos);
    EXPECT_NE(error_text([&] { ro.accessor<const float, 1>(FX); }).find("has 8 bytes"),
              std::string::npos);
    EXPECT_NE(error_text([&] { ro.accessor<const double, 2>(FX); }).find("1-d"), std::string::npos);
    EXPECT_EQ((ro.accessor<const float, 1>(FY)[Point<1>(0)]), 0.0f);
    ctx.unmap_region(ro);
    EXPECT_NE(error_text([&] { ctx.unmap_region(ro); }).find("not mapped"), std::string::npos);
    EXPECT_NE(error_text([&] { ro.accessor<const double, 1>(FX); }).find("not mapped"),
              std::string::npos);
    EXPECT_NE(error_text([&] { ctx.map_region(r, Privilege::Reduce, {FX}); }).find("REDUCE"),
              std::string::npos);
    EXPECT_NE(error_text([&] { ctx.map_region(r, Privilege::ReadOnly, {}); }).find("no fields"),
              std::string::npos);
    ctx.begin_trace(3);
    EXPECT_NE(error_text([&] { ctx.map_region(r, Privilege::ReadOnly, {FX}); }).find("trace"),
              std::string::npos);
    ctx.end_trace(3);
  });
}

// GPUs on the host device backend: the device interface itself (streams in order, callbacks,
// events and waits between streams, captured graphs), GPU variants next to CPU ones, and the
// clear errors of GPU misuse.
#include <gtest/gtest.h>
#include <reprise/reprise.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "reprise_gpu/devices.h"

using namespace reprise;

namespace {
enum : TaskID { T_FILL_GPU = 9400, T_CPU_ONLY, T_SUM_ROWS, T_INC, T_INC_SHIFTED, T_AXPY };
enum : FieldID { FV = 0 };

void fill_cpu(TaskContext& tc) {
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  for (auto p : Rect<1>(tc.domain(0))) acc[p] = 3 * p[0] + 1;
}
void fill_gpu(TaskContext& tc) {
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  EXPECT_TRUE(tc.on_gpu());
  EXPECT_FALSE(tc.gpu_is_cuda());
  kernel::for_each(tc, Rect<1>(tc.domain(0)), [=](const Point<1>& p) { acc[p] = 3 * p[0] + 1; });
}
void inc_cpu(TaskContext& tc) {
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  for (auto p : Rect<1>(tc.domain(0))) acc[p] += p[0];
}
void inc_gpu(TaskContext& tc) {
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  kernel::for_each(tc, Rect<1>(tc.domain(0)), [=](const Point<1>& p) { acc[p] += p[0]; });
}
// x[p] = (a * x[p] + p) mod a prime, with a from the task's arguments (no overflow).
void axpy_cpu(TaskContext& tc) {
  const auto a = tc.args<std::int64_t>();
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  for (auto p : Rect<1>(tc.domain(0))) acc[p] = (a * acc[p] + p[0]) % 1000003;
}
void axpy_gpu(TaskContext& tc) {
  const auto a = tc.args<std::int64_t>();
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  kernel::for_each(tc, Rect<1>(tc.domain(0)),
                   [=](const Point<1>& p) { acc[p] = (a * acc[p] + p[0]) % 1000003; });
}
void cpu_only(TaskContext&) {}
std::int64_t sum_rows(TaskContext& tc) {
  auto acc = tc.accessor<const std::int64_t, 1>(0, FV);
  std::int64_t s = 0;
  for (auto p : Rect<1>(tc.domain(0))) s += acc[p];
  return s;
}

void register_all() {
  TaskRegistry::add(T_FILL_GPU, "fill", {cpu(fill_cpu), gpu(fill_gpu)});
  TaskRegistry::add(T_CPU_ONLY, "cpu_only", {cpu(cpu_only)});
  TaskRegistry::add(T_SUM_ROWS, "sum_rows", {cpu(sum_rows)});
  TaskRegistry::add(T_INC, "inc", {cpu(inc_cpu), gpu(inc_gpu)});
  TaskRegistry::add(T_AXPY, "axpy", {cpu(axpy_cpu), gpu(axpy_gpu)});
  TaskRegistry::add(T_INC_SHIFTED, "inc_shifted", {cpu(inc_cpu), gpu(inc_gpu)});
}

// Even points on the CPUs, odd points on the GPUs (a mixed launch), everything else default.
class MixedMapper : public DefaultMapper {
 public:
  Processor select_processor(const MapperTaskInfo& t, const MachineInfo& m) override {
    Processor p = DefaultMapper::select_processor(t, m);
    if (t.has_gpu_variant && t.launch_domain.volume() > 1)
      return Processor{
          t.point_index % 2 ? ProcessorKind::GPU : ProcessorKind::CPU,
          std::uint32_t(t.point_index / 2 % (t.point_index % 2 ? m.num_gpus : m.num_cpus)),
          p.shard};
    return p;
  }
};

// Point i of "inc" on GPU i % G, of "inc_shifted" on GPU (i + 1) % G: the second moves every
// piece from one framebuffer to another.
class RotatingMapper : public DefaultMapper {
 public:
  Processor select_processor(const MapperTaskInfo& t, const MachineInfo& m) override {
    Processor p = DefaultMapper::select_processor(t, m);
    if (t.task != T_INC && t.task != T_INC_SHIFTED) return p;
    const std::uint64_t shift = t.task == T_INC_SHIFTED ? 1 : 0;
    return Processor{ProcessorKind::GPU, std::uint32_t((t.point_index + shift) % m.num_gpus),
                     p.shard};
  }
};
// Puts everything on GPU 0, also tasks without a GPU variant (a misuse).
class AllOnGpuMapper : public Mapper {
 public:
  Processor select_processor(const MapperTaskInfo&, const MachineInfo&) override {
    return Processor{ProcessorKind::GPU, 0, 0};
  }
};

std::int64_t run_fill_and_sum(Context& ctx, coord_t n, coord_t pieces) {
  Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {n - 1})),
                               ctx.create_field_space({{FV, sizeof(std::int64_t)}}));
  Partition p = ctx.partition_by_blocks(r, Point<1>{(n + pieces - 1) / pieces});
  IndexLauncher fill(T_FILL_GPU, p.color_space());
  fill.add(p, Projection::identity(), Privilege::WriteDiscard, {FV});
  ctx.execute(fill);
  TaskLauncher sum(T_SUM_ROWS);
  sum.add(r, Privilege::ReadOnly, {FV});
  return ctx.execute(sum).get<std::int64_t>();
}

std::int64_t expected_sum(coord_t n) {
  std::int64_t s = 0;
  for (coord_t i = 0; i < n; ++i) s += 3 * i + 1;
  return s;
}
}  // namespace

TEST(HostDevice, StreamsRunInOrderAndCallBack) {
  auto dev = devices::make_host_device(2);
  EXPECT_STREQ(dev->backend(), "host");
  EXPECT_EQ(dev->devices(), 2);
  EXPECT_TRUE(dev->host_addressable());
  auto s = dev->create_stream(0);
  std::vector<int> order;  // touched by the stream's thread only, read after synchronize
  for (int i = 0; i < 100; ++i) dev->launch_host(s, [&order, i] { order.push_back(i); });
  std::atomic<int> called{0};
  dev->callback(
      s, [](void* a) { static_cast<std::atomic<int>*>(a)->fetch_add(1); }, &called);
  dev->synchronize(s);
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[std::size_t(i)], i);
  EXPECT_EQ(called.load(), 1);
  dev->destroy_stream(s);
}

TEST(HostDevice, AllocatesZeroedMemoryAndCopiesStridedBoxes) {
  auto dev = devices::make_host_device(1);
  auto s = dev->create_stream(0);
  auto* src = static_cast<std::int32_t*>(dev->allocate(0, 4 * 6 * 2 * sizeof(std::int32_t)));
  auto* dst = static_cast<std::int32_t*>(dev->allocate(0, 4 * 6 * 2 * sizeof(std::int32_t)));
  for (int i = 0; i < 48; ++i) EXPECT_EQ(dst[i], 0);
  for (int i = 0; i < 48; ++i) src[i] = i;
  // Two slices of 3 rows of 2 elements, out of 2 x 6 x 4 arrays.
  detail::DeviceCopy c;
  c.dst = dst;
  c.src = src + 1;
  c.row_bytes = 2 * sizeof(std::int32_t);
  c.height = 3;
  c.depth = 2;
  c.dst_pitch = c.src_pitch = 4 * sizeof(std::int32_t);
  c.dst_slice = c.src_slice = 24 * sizeof(std::int32_t);
  dev->copy(s, c);
  dev->synchronize(s);
  for (int z = 0; z < 2; ++z)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 2; ++x) EXPECT_EQ(dst[z * 24 + y * 4 + x], src[z * 24 + y * 4 + x + 1]);
  EXPECT_EQ(dst[2], 0);  // outside the box
  dev->release(0, src);
  dev->release(0, dst);
  dev->destroy_stream(s);
}

TEST(HostDevice, AStreamWaitsForAnEventOfAnother) {
  auto dev = devices::make_host_device(1);
  auto a = dev->create_stream(0), b = dev->create_stream(0);
  std::atomic<bool> go{false}, first_done{false};
  std::atomic<bool> saw_first{false};
  dev->launch_host(a, [&] {
    while (!go.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    first_done = true;
  });
  detail::DeviceEvent e = dev->record(a);
  EXPECT_FALSE(dev->query(e));
  dev->wait(b, e);
  dev->launch_host(b, [&] { saw_first = first_done.load(); });
  go = true;
  dev->synchronize(b);
  EXPECT_TRUE(saw_first.load());
  EXPECT_TRUE(dev->query(e));
  dev->release_event(e);
  dev->destroy_stream(a);
  dev->destroy_stream(b);
}

TEST(HostDevice, ACapturedGraphRunsAsOneUnitPerLaunch) {
  auto dev = devices::make_host_device(1);
  auto s = dev->create_stream(0);
  std::vector<int> log;
  dev->begin_capture(s);
  dev->launch_host(s, [&log] { log.push_back(1); });
  dev->launch_host(s, [&log] { log.push_back(2); });
  detail::DeviceGraph g = dev->end_capture(s);
  dev->synchronize(s);
  EXPECT_TRUE(log.empty());  // captured, not run
  for (int i = 0; i < 3; ++i) dev->launch_graph(s, g);
  dev->synchronize(s);
  EXPECT_EQ(log, (std::vector<int>{1, 2, 1, 2, 1, 2}));
  dev->destroy_graph(g);
  dev->destroy_stream(s);
}

TEST(Gpu, VariantsRunOnGpusAndGiveTheCpuResult) {
  register_all();
  for (const char* gpus : {"1", "3"})
    reprise::run({"-ll:cpu", "1", "-ll:gpu", gpus, "-ll:gpu_backend", "host"}, [](Context& ctx) {
      EXPECT_EQ(run_fill_and_sum(ctx, 1000, 6), expected_sum(1000));
      EXPECT_GT(ctx.trace_stats().gpu_kernels, 0u);
      EXPECT_GT(ctx.trace_stats().copies, 0u);  // the sum reads the framebuffers' data
    });
}

TEST(Gpu, MixedCpuAndGpuPointsInOneLaunch) {
  register_all();
  reprise::run(
      {"-ll:cpu", "2", "-ll:gpu", "2", "-ll:gpu_backend", "host"},
      [](Context& ctx) {
        EXPECT_EQ(run_fill_and_sum(ctx, 999, 8), expected_sum(999));
        EXPECT_EQ(ctx.trace_stats().gpu_kernels, 4u);  // the odd points
      },
      std::make_unique<MixedMapper>());
}

TEST(Gpu, CopiesBetweenMemoryKindsRunOnCopyStreamsAndAreCounted) {
  register_all();
  reprise::run(
      {"-ll:cpu", "1", "-ll:gpu", "2", "-ll:gpu_backend", "host"},
      [](Context& ctx) {
        const coord_t n = 1000;
        Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {n - 1})),
                                     ctx.create_field_space({{FV, sizeof(std::int64_t)}}));
        Partition p = ctx.partition_by_blocks(r, Point<1>{n / 4});
        ctx.fill(r, FV, std::int64_t(7));  // in system memory
        for (TaskID id : {T_INC, T_INC_SHIFTED}) {
          IndexLauncher inc(id, p.color_space());
          inc.add(p, Projection::identity(), Privilege::ReadWrite, {FV});
          ctx.execute(inc);
        }
        TaskLauncher sum(T_SUM_ROWS);
        sum.add(r, Privilege::ReadOnly, {FV});
        std::int64_t expected = 0;
        for (coord_t i = 0; i < n; ++i) expected += 7 + 2 * i;
        EXPECT_EQ(ctx.execute(sum).get<std::int64_t>(), expected);
        const Context::TraceStats s = ctx.trace_stats();
        EXPECT_GE(s.copies_to_gpu, 4u);      // each piece into its first GPU
        EXPECT_GE(s.copies_gpu_to_gpu, 4u);  // each piece to the other GPU
        EXPECT_GE(s.copies_from_gpu, 4u);    // and back for the CPU's sum
        EXPECT_EQ(s.gpu_kernels, 8u);
      },
      std::make_unique<RotatingMapper>());
}

// A traced loop of three dependent GPU launches per iteration over 4 pieces on `gpus` GPUs
// (each piece stays on its GPU); the multiplier changes every `vary` iterations (0: never).
// Returns the sum of the field; stats in *out.
std::int64_t run_traced_axpy(const std::vector<std::string>& flags, int iters, int vary,
                             Context::TraceStats* out) {
  std::int64_t sum = 0;
  reprise::run(flags, [&](Context& ctx) {
    const coord_t n = 4000;
    Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {n - 1})),
                                 ctx.create_field_space({{FV, sizeof(std::int64_t)}}));
    Partition p = ctx.partition_by_blocks(r, Point<1>{n / 4});
    ctx.fill(r, FV, std::int64_t(1));
    for (int it = 0; it < iters; ++it) {
      ctx.begin_trace(7);
      for (std::int64_t step = 0; step < 3; ++step) {
        const std::int64_t a = vary ? (it / vary) % 3 + step : 2 + step;
        IndexLauncher axpy(T_AXPY, p.color_space());
        axpy.set_args(TaskArgs(a));
        axpy.add(p, Projection::identity(), Privilege::ReadWrite, {FV});
        ctx.execute(axpy);
      }
      ctx.end_trace(7);
    }
    TaskLauncher total(T_SUM_ROWS);
    total.add(r, Privilege::ReadOnly, {FV});
    sum = ctx.execute(total).get<std::int64_t>();
    *out = ctx.trace_stats();
  });
  return sum;
}

TEST(Gpu, AReplayLaunchesOneGraphPerGpuProcessor) {
  register_all();
  Context::TraceStats cpu_stats, graph_stats, kernel_stats;
  const int iters = 12;
  const std::int64_t want = run_traced_axpy({"-ll:cpu", "2"}, iters, 0, &cpu_stats);
  const std::vector<std::string> gpus = {"-ll:cpu", "1", "-ll:gpu", "2", "-ll:gpu_backend", "host"};
  EXPECT_EQ(run_traced_axpy(gpus, iters, 0, &graph_stats), want);
  std::vector<std::string> no_graphs = gpus;
  no_graphs.insert(no_graphs.end(), {"-lg:gpu_graphs", "0"});
  EXPECT_EQ(run_traced_axpy(no_graphs, iters, 0, &kernel_stats), want);
  ASSERT_GT(graph_stats.replays, 0u);
  // Each GPU's six points of a replay (two pieces, three steps) are one graph.
  EXPECT_EQ(graph_stats.gpu_graph_launches, 2 * graph_stats.replays);
  EXPECT_EQ(kernel_stats.gpu_graph_launches, 0u);
  // Kernels run one by one only outside replays (and while a graph is captured).
  EXPECT_LT(graph_stats.gpu_kernels, kernel_stats.gpu_kernels);
}

// Inside one trace a CPU task reads what the first GPU step wrote, before the second step
// writes again: the first step's points have a successor outside their graph (the copy out of
// the framebuffer), so the graph completes them before its end. Sums per iteration.
std::vector<std::int64_t> run_traced_read_between(const std::vector<std::string>& flags,
                                                  Context::TraceStats* out) {
  std::vector<std::int64_t> sums;
  reprise::run(flags, [&](Context& ctx) {
    const coord_t n = 4000;
    Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {n - 1})),
                                 ctx.create_field_space({{FV, sizeof(std::int64_t)}}));
    Partition p = ctx.partition_by_blocks(r, Point<1>{n / 4});
    ctx.fill(r, FV, std::int64_t(1));
    std::vector<Future> between;
    for (int it = 0; it < 10; ++it) {
      ctx.begin_trace(8);
      for (std::int64_t a : {2, 3}) {
        IndexLauncher axpy(T_AXPY, p.color_space());
        axpy.set_args(TaskArgs(a));
        axpy.add(p, Projection::identity(), Privilege::ReadWrite, {FV});
        ctx.execute(axpy);
        if (a == 2) {
          TaskLauncher sum(T_SUM_ROWS);
          sum.add(r, Privilege::ReadOnly, {FV});
          between.push_back(ctx.execute(sum));
        }
      }
      ctx.end_trace(8);
    }
    for (Future& f : between) sums.push_back(f.get<std::int64_t>());
    ctx.fence().wait();  // (the last steps need not have run when the sums are in)
    *out = ctx.trace_stats();
  });
  return sums;
}

TEST(Gpu, AGraphCompletesPointsThatWorkOutsideItWaitsForBeforeItsEnd) {
  register_all();
  Context::TraceStats cpu_stats, gpu_stats;
  const auto want = run_traced_read_between({"-ll:cpu", "2"}, &cpu_stats);
  const auto got = run_traced_read_between(
      {"-ll:cpu", "1", "-ll:gpu", "2", "-ll:gpu_backend", "host"}, &gpu_stats);
  EXPECT_EQ(got, want);
  ASSERT_GT(gpu_stats.replays, 0u);
  // Two levels per GPU (the CPU's read in between splits the steps): two graphs each.
  EXPECT_EQ(gpu_stats.gpu_graph_launches, 4 * gpu_stats.replays);
}

TEST(Gpu, AGraphIsCapturedAgainWhenArgumentsChangeAndGivenUpWhenTheyKeepChanging) {
  register_all();
  const std::vector<std::string> gpus = {"-ll:cpu", "1", "-ll:gpu", "2", "-ll:gpu_backend", "host"};
  for (int vary : {4, 1}) {
    Context::TraceStats cpu_stats, gpu_stats;
    const std::int64_t want = run_traced_axpy({"-ll:cpu", "2"}, 16, vary, &cpu_stats);
    EXPECT_EQ(run_traced_axpy(gpus, 16, vary, &gpu_stats), want) << "vary " << vary;
    EXPECT_GT(gpu_stats.replays, 0u);
    if (vary == 1) {  // new arguments every replay: after a few captures, kernel by kernel
      EXPECT_LT(gpu_stats.gpu_graph_launches, 2 * gpu_stats.replays);
    }
  }
}

// -lg:gpu_early: the second of two dependent points on one GPU runs its host code (which only
// enqueues kernels) once the first's kernel is enqueued on their stream, not finished. The
// first kernel waits (bounded) for the second's host code to have run.
std::atomic<bool> g_second_host_ran{false};
std::atomic<bool> g_first_saw_second{false};
std::chrono::milliseconds g_first_waits_at_most{0};
void first_gpu(TaskContext& tc) {
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  tc.launch_kernel([acc, r = Rect<1>(tc.domain(0))] {
    const auto until = std::chrono::steady_clock::now() + g_first_waits_at_most;
    while (!g_second_host_ran.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    g_first_saw_second = g_second_host_ran.load();
    for (auto p : r) acc[p] = 5;
  });
}
void second_gpu(TaskContext& tc) {
  g_second_host_ran = true;
  auto acc = tc.accessor<std::int64_t, 1>(0, FV);
  kernel::for_each(tc, Rect<1>(tc.domain(0)), [=](const Point<1>& p) { acc[p] *= 3; });
}

enum : TaskID { T_FIRST = 9420, T_SECOND };

// Runs first (WriteDiscard) then second (ReadWrite) on one region of 100 elements, and sums
// it; `gpus` GPU processors, -lg:gpu_early `early`. Whether first's kernel saw second's host
// code run is in g_first_saw_second; copies between framebuffers in *gpu_to_gpu.
std::int64_t run_first_then_second(const char* gpus, bool early, std::unique_ptr<Mapper> mapper,
                                   std::uint64_t* gpu_to_gpu) {
  if (!TaskRegistry::contains(T_FIRST)) {
    TaskRegistry::add(T_FIRST, "first", {cpu(cpu_only), gpu(first_gpu)});
    TaskRegistry::add(T_SECOND, "second", {cpu(cpu_only), gpu(second_gpu)});
  }
  g_second_host_ran = g_first_saw_second = false;
  g_first_waits_at_most = std::chrono::milliseconds(early ? 20000 : 300);
  std::int64_t sum = 0;
  reprise::run(
      {"-ll:cpu", "1", "-ll:gpu", gpus, "-ll:gpu_backend", "host", "-lg:gpu_early",
       early ? "1" : "0"},
      [&](Context& ctx) {
        Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {99})),
                                     ctx.create_field_space({{FV, sizeof(std::int64_t)}}));
        TaskLauncher first(T_FIRST), second(T_SECOND);
        first.add(r, Privilege::WriteDiscard, {FV});
        second.add(r, Privilege::ReadWrite, {FV});
        ctx.execute(first);
        ctx.execute(second);
        TaskLauncher total(T_SUM_ROWS);
        total.add(r, Privilege::ReadOnly, {FV});
        sum = ctx.execute(total).get<std::int64_t>();
        *gpu_to_gpu = ctx.trace_stats().copies_gpu_to_gpu;
      },
      std::move(mapper));
  return sum;
}

TEST(Gpu, APointFollowsWorkOfItsOwnStreamOnceItIsEnqueued) {
  register_all();
  for (bool early : {true, false}) {
    std::uint64_t gpu_to_gpu = 0;
    EXPECT_EQ(run_first_then_second("1", early, nullptr, &gpu_to_gpu), 100 * 15)
        << "-lg:gpu_early " << early;  // in order: 5, then times 3
    EXPECT_EQ(g_first_saw_second.load(), early) << "-lg:gpu_early " << early;
  }
}

// The same across two GPU processors of one device: the second reads the first's data from the
// other framebuffer, so a copy sits between them, and each waits for the work before it with a
// stream wait instead of its completion.
class SplitMapper : public DefaultMapper {
 public:
  Processor select_processor(const MapperTaskInfo& t, const MachineInfo& m) override {
    Processor p = DefaultMapper::select_processor(t, m);
    if (t.task == T_FIRST) return Processor{ProcessorKind::GPU, 0, p.shard};
    if (t.task == T_SECOND) return Processor{ProcessorKind::GPU, 1, p.shard};
    return p;
  }
};

TEST(Gpu, APointOnAnotherGpuOfTheDeviceFollowsThroughAStreamWait) {
  register_all();
  for (bool early : {true, false}) {
    std::uint64_t gpu_to_gpu = 0;
    EXPECT_EQ(run_first_then_second("2", early, std::make_unique<SplitMapper>(), &gpu_to_gpu),
              100 * 15)
        << "-lg:gpu_early " << early;  // 5 on GPU 0, times 3 on GPU 1
    EXPECT_GE(gpu_to_gpu, 1u);
    EXPECT_EQ(g_first_saw_second.load(), early) << "-lg:gpu_early " << early;
  }
}

// Every requirement in zero-copy memory (-ll:zsize), whatever the processor.
class ZeroCopyMapper : public DefaultMapper {
 public:
  MemoryID select_memory(const MapperTaskInfo&, Processor proc, std::size_t,
                         const MachineInfo& m) override {
    EXPECT_EQ(m.num_zero_copy, 1u);
    return m.zero_copy(proc.shard);
  }
};
// A CPU task's requirement in a framebuffer, or a GPU task's in system memory.
class WrongMemoryMapper : public DefaultMapper {
 public:
  explicit WrongMemoryMapper(bool gpu_wrong) : gpu_wrong_(gpu_wrong) {}
  MemoryID select_memory(const MapperTaskInfo& t, Processor proc, std::size_t,
                         const MachineInfo& m) override {
    if (!gpu_wrong_ && proc.kind == ProcessorKind::CPU && t.task == T_SUM_ROWS)
      return m.framebuffer(proc.shard, 0);
    if (gpu_wrong_ && proc.kind == ProcessorKind::GPU) return m.first_memory(proc.shard);
    return m.closest_memory(proc);
  }

 private:
  bool gpu_wrong_;
};

TEST(Gpu, ZeroCopyMemoryIsSharedByCpusAndGpusWithoutCopies) {
  register_all();
  const coord_t n = 1000;
  Context::TraceStats stats;
  std::int64_t sum = 0;
  reprise::run(
      {"-ll:cpu", "1", "-ll:gpu", "2", "-ll:gpu_backend", "host", "-ll:zsize", "4"},
      [&](Context& ctx) {
        sum = run_fill_and_sum(ctx, n, 4);  // fills on the GPUs, sums on a CPU
        stats = ctx.trace_stats();
      },
      std::make_unique<ZeroCopyMapper>());
  EXPECT_EQ(sum, expected_sum(n));
  EXPECT_GT(stats.gpu_kernels, 0u);
  EXPECT_EQ(stats.copies_to_gpu + stats.copies_from_gpu + stats.copies_gpu_to_gpu, 0u);
}

TEST(Gpu, MemoriesAProcessorCannotUseAreErrors) {
  register_all();
  try {  // a GPU task in system memory
    reprise::run(
        {"-ll:cpu", "1", "-ll:gpu", "1", "-ll:gpu_backend", "host"},
        [&](Context& ctx) { run_fill_and_sum(ctx, 100, 2); },
        std::make_unique<WrongMemoryMapper>(true));
    ADD_FAILURE() << "a GPU task in system memory ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a GPU cannot use system memory"), std::string::npos)
        << e.what();
  }
  try {  // a CPU task in a framebuffer
    reprise::run(
        {"-ll:cpu", "1", "-ll:gpu", "1", "-ll:gpu_backend", "host"},
        [&](Context& ctx) { run_fill_and_sum(ctx, 100, 2); },
        std::make_unique<WrongMemoryMapper>(false));
    ADD_FAILURE() << "a CPU task in a framebuffer ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a CPU cannot use framebuffer memory"), std::string::npos)
        << e.what();
  }
  try {  // zero-copy memory too small
    reprise::run(
        {"-ll:cpu", "1", "-ll:gpu", "1", "-ll:gpu_backend", "host", "-ll:zsize", "1"},
        [&](Context& ctx) { run_fill_and_sum(ctx, 1 << 20, 2); },
        std::make_unique<ZeroCopyMapper>());
    ADD_FAILURE() << "8 MiB fitted in 1 MiB of zero-copy memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("-ll:zsize"), std::string::npos) << e.what();
  }
}

TEST(Gpu, ATaskWithoutAGpuVariantOnAGpuIsAnError) {
  register_all();
  try {
    reprise::run(
        {"-ll:gpu", "1", "-ll:gpu_backend", "host"},
        [](Context& ctx) {
          ctx.execute(IndexLauncher(T_CPU_ONLY, Domain(Rect<1>({0}, {3})))).wait();
        },
        std::make_unique<AllOnGpuMapper>());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no GPU variant"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cpu_only"), std::string::npos) << e.what();
  }
}

TEST(Gpu, AFramebufferTooSmallIsAnError) {
  register_all();
  try {
    reprise::run({"-ll:gpu", "1", "-ll:fsize", "1", "-ll:gpu_backend", "host"},
                 [](Context& ctx) { run_fill_and_sum(ctx, 1 << 20, 2); });
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fbmem0 is full"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("-ll:fsize"), std::string::npos) << e.what();
  }
}

TEST(Gpu, BackendFlagIsChecked) {
  EXPECT_THROW(reprise::run({"-ll:gpu", "1", "-ll:gpu_backend", "opencl"}, [](Context&) {}), Error);
  if (devices::device_count() == 0) {
    try {
      reprise::run({"-ll:gpu", "1", "-ll:gpu_backend", "cuda"}, [](Context&) {});
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("-ll:gpu_backend cuda"), std::string::npos);
    }
  }
}

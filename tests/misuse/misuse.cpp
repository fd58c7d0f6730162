// The misuse catalogue (issue 16): one program, one mistake per case, chosen by name on the
// command line. misuse.cmake runs every case single-process and under mpirun -np 2 and -np 3,
// each under a timeout, and checks the exit code and the words of the error message. Cases
// marked "last rank" make the mistake on the last rank only (the others run a correct
// program and must still end, with that rank's error).
//
//   misuse CASE [runtime flags]     (misuse --list prints the cases)
#include <reprise/reprise.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

using namespace reprise;

namespace {

enum : TaskID { T_STEP = 1, T_THROW_ERROR, T_THROW_STD, T_THROW_INT, T_LAUNCH, T_WAIT, T_SUM };
enum : FieldID { FX = 0, FY = 1 };

Context* g_ctx = nullptr;  // for the cases that misuse it from a task or after start()
Future g_future;

void step(TaskContext& tc) {
  auto x = tc.accessor<double, 1>(0, FX);
  for (auto p : Rect<1>(tc.domain(0))) x[p] += 1;
}
void throw_error(TaskContext& tc) {
  if (tc.point()[0] == 2) throw Error("the solver diverged");
}
void throw_std(TaskContext& tc) {
  if (tc.point()[0] == 2) throw std::runtime_error("the solver diverged");
}
void throw_int(TaskContext& tc) {
  if (tc.point()[0] == 2) throw 42;
}
void launch_from_task(TaskContext&) {
  g_ctx->execute(TaskLauncher(T_STEP));
}
void wait_in_task(TaskContext&) {
  (void)g_future.get<double>();
}
double sum(TaskContext& tc) {
  auto x = tc.accessor<const double, 1>(0, FX);
  double s = 0;
  for (auto p : Rect<1>(tc.domain(0))) s += x[p];
  return s;
}

// Maps like the default mapper, but gives every point of an index task the memory of the next
// shard: a task can use only its own shard's memories.
class ForeignMemoryMapper final : public DefaultMapper {
 public:
  MemoryID select_memory(const MapperTaskInfo& task, Processor proc, std::size_t req,
                         const MachineInfo& machine) override {
    const MemoryID own = DefaultMapper::select_memory(task, proc, req, machine);
    if (machine.num_shards < 2 || task.point_index != 1) return own;
    return (own + machine.num_sysmems) % machine.num_memories();
  }
};

struct Data {
  Region r;
  IndexSpace colors;
  Partition part;
};

Data make(Context& ctx, coord_t n = 99) {
  Data d;
  d.r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {n})),
                          ctx.create_field_space({{FX, sizeof(double)}, {FY, sizeof(double)}}));
  d.colors = ctx.create_index_space(Rect<1>({0}, {3}));
  d.part = ctx.partition_equal(d.r, d.colors);
  ctx.fill(d.r, FX, 1.0);
  return d;
}

void index_launch(Context& ctx, const Data& d, TaskID task) {
  IndexLauncher l(task, d.colors);
  l.add(d.part, Projection::identity(), Privilege::ReadWrite, {FX});
  ctx.execute(l);
}

// A correct program the other ranks run while the last rank errs: it waits for results, so a
// rank that is never told of the failure would hang here.
double wait_for_work(Context& ctx, const Data& d) {
  double total = 0;
  for (int i = 0; i < 20; ++i) {
    index_launch(ctx, d, T_STEP);
    TaskLauncher s(T_SUM);
    s.add(d.r, Privilege::ReadOnly, {FX});
    total += ctx.execute(s).get<double>();
  }
  return total;
}

bool last_rank(Context& ctx) {
  return ctx.shard() + 1 == ctx.num_shards();
}

using Case = std::function<void(Context&)>;

std::map<std::string, Case> cases() {
  std::map<std::string, Case> c;
  // --- one rank's top-level task fails or leaves
  c["top_throws_error"] = [](Context& ctx) {
    Data d = make(ctx);
    if (last_rank(ctx)) throw Error("the mesh file is missing");
    wait_for_work(ctx, d);
  };
  c["top_throws_std"] = [](Context& ctx) {
    Data d = make(ctx);
    if (last_rank(ctx)) throw std::runtime_error("the mesh file is missing");
    wait_for_work(ctx, d);
  };
  c["top_throws_int"] = [](Context& ctx) {
    Data d = make(ctx);
    if (last_rank(ctx)) throw 42;
    wait_for_work(ctx, d);
  };
  c["top_unknown_task"] = [](Context& ctx) {
    Data d = make(ctx);
    if (last_rank(ctx)) ctx.execute(TaskLauncher(4242));
    wait_for_work(ctx, d);
  };
  c["top_exit0"] = [](Context& ctx) {
    Data d = make(ctx);
    if (last_rank(ctx)) std::exit(0);
    wait_for_work(ctx, d);
  };
  c["top_exit3"] = [](Context& ctx) {
    Data d = make(ctx);
    if (last_rank(ctx)) std::exit(3);
    wait_for_work(ctx, d);
  };
  // --- tasks fail
  c["task_throws_error"] = [](Context& ctx) {
    Data d = make(ctx);
    index_launch(ctx, d, T_THROW_ERROR);
    wait_for_work(ctx, d);
  };
  c["task_throws_std"] = [](Context& ctx) {
    Data d = make(ctx);
    index_launch(ctx, d, T_THROW_STD);
    wait_for_work(ctx, d);
  };
  c["task_throws_int"] = [](Context& ctx) {
    Data d = make(ctx);
    index_launch(ctx, d, T_THROW_INT);
    wait_for_work(ctx, d);
  };
  // --- the API used where it cannot be
  c["task_launches"] = [](Context& ctx) {
    Data d = make(ctx);
    g_ctx = &ctx;
    ctx.execute(TaskLauncher(T_LAUNCH)).wait();
    wait_for_work(ctx, d);
  };
  c["task_waits"] = [](Context& ctx) {
    Data d = make(ctx);
    TaskLauncher s(T_SUM);
    s.add(d.r, Privilege::ReadOnly, {FX});
    index_launch(ctx, d, T_STEP);
    g_future = ctx.execute(s);
    ctx.execute(TaskLauncher(T_WAIT)).wait();
    wait_for_work(ctx, d);
  };
  c["context_after_start"] = [](Context& ctx) {
    make(ctx);
    g_ctx = &ctx;  // main() uses it after start() returned
  };
  // --- shards that create different things
  c["diverge_region_size"] = [](Context& ctx) {
    Data d = make(ctx, last_rank(ctx) ? 199 : 99);
    std::printf("sum=%g\n", wait_for_work(ctx, d));
  };
  c["diverge_field_space"] = [](Context& ctx) {
    auto fs = last_rank(ctx) ? ctx.create_field_space({{FX, 8}, {FY, 4}})
                             : ctx.create_field_space({{FX, 8}, {FY, 8}});
    Data d = make(ctx);
    (void)fs;
    std::printf("sum=%g\n", wait_for_work(ctx, d));
  };
  c["diverge_partition"] = [](Context& ctx) {
    Data d = make(ctx);
    Partition p = ctx.partition_by_blocks(d.r, Point<1>(last_rank(ctx) ? 10 : 20));
    (void)p;
    std::printf("sum=%g\n", wait_for_work(ctx, d));
  };
  c["diverge_launch"] = [](Context& ctx) {
    Data d = make(ctx);
    if (last_rank(ctx)) index_launch(ctx, d, T_STEP);
    std::printf("sum=%g\n", wait_for_work(ctx, d));
  };
  // A mapper that puts a point's instance in another shard's memory (see ForeignMemoryMapper).
  c["mapper_foreign_memory"] = [](Context& ctx) {
    Data d = make(ctx);
    index_launch(ctx, d, T_STEP);
    std::printf("sum=%g\n", wait_for_work(ctx, d));
  };
  // --- traces
  c["trace_nested"] = [](Context& ctx) {
    make(ctx);
    ctx.begin_trace(1);
    ctx.begin_trace(2);
  };
  c["trace_end_without_begin"] = [](Context& ctx) {
    make(ctx);
    ctx.end_trace(1);
  };
  c["trace_end_other_id"] = [](Context& ctx) {
    make(ctx);
    ctx.begin_trace(1);
    ctx.end_trace(2);
  };
  c["trace_left_open"] = [](Context& ctx) {
    Data d = make(ctx);
    ctx.begin_trace(5);
    index_launch(ctx, d, T_STEP);
  };
  c["trace_wait_inside"] = [](Context& ctx) {
    Data d = make(ctx);
    ctx.begin_trace(1);
    TaskLauncher s(T_SUM);
    s.add(d.r, Privilege::ReadOnly, {FX});
    ctx.execute(s).get<double>();
  };
  c["trace_region_inside"] = [](Context& ctx) {
    make(ctx);
    ctx.begin_trace(1);
    make(ctx);
  };
  c["trace_fence_inside"] = [](Context& ctx) {
    make(ctx);
    ctx.begin_trace(1);
    ctx.fence();
  };
  // --- bad launches
  c["launch_domain_mismatch"] = [](Context& ctx) {
    Data d = make(ctx);
    IndexLauncher l(T_STEP, Rect<1>({0}, {7}));
    l.add(d.part, Projection::identity(), Privilege::ReadWrite, {FX});
    ctx.execute(l);
  };
  c["projection_leaves_partition"] = [](Context& ctx) {
    Data d = make(ctx);
    IndexLauncher l(T_STEP, d.colors);
    l.add(d.part, Projection::translate(Point<1>(2)), Privilege::ReadOnly, {FX});
    ctx.execute(l);
  };
  c["write_through_constant_projection"] = [](Context& ctx) {
    Data d = make(ctx);
    IndexLauncher l(T_STEP, d.colors);
    l.add(d.part, Projection::constant(Point<1>(0)), Privilege::ReadWrite, {FX});
    ctx.execute(l);
  };
  c["field_not_in_space"] = [](Context& ctx) {
    Data d = make(ctx);
    TaskLauncher l(T_STEP);
    l.add(d.r, Privilege::ReadWrite, {7});
    ctx.execute(l);
  };
  c["interfering_requirements"] = [](Context& ctx) {
    Data d = make(ctx);
    TaskLauncher l(T_STEP);
    l.add(d.r, Privilege::ReadWrite, {FX});
    l.add(d.part[Point<1>(0)], Privilege::ReadWrite, {FX});
    ctx.execute(l);
  };
  c["destroyed_region"] = [](Context& ctx) {
    Data d = make(ctx);
    ctx.destroy(d.r);
    index_launch(ctx, d, T_STEP);
  };
  c["attach_subregion"] = [](Context& ctx) {
    Data d = make(ctx);
    static std::vector<double> xs(100);
    ctx.attach(AttachLauncher(d.part[Point<1>(0)]).attach_array(FX, xs.data()));
  };
  c["attach_twice"] = [](Context& ctx) {
    Data d = make(ctx);
    static std::vector<double> xs(100);
    ctx.attach(AttachLauncher(d.r).attach_array(FX, xs.data()));
    index_launch(ctx, d, T_STEP);  // (the tasks use the array)
    ctx.attach(AttachLauncher(d.r).attach_array(FX, xs.data()));
  };
  c["detach_twice"] = [](Context& ctx) {
    Data d = make(ctx);
    static std::vector<double> xs(100);
    Attachment a = ctx.attach(AttachLauncher(d.r).attach_array(FX, xs.data()));
    index_launch(ctx, d, T_STEP);
    ctx.detach(a);
    ctx.detach(a);
  };
  c["bad_index_space"] = [](Context& ctx) { ctx.create_index_space(Domain()); };
  c["empty_field_space"] = [](Context& ctx) { ctx.create_field_space({}); };
  c["subregion_bad_color"] = [](Context& ctx) {
    Data d = make(ctx);
    ctx.subregion(d.part, Point<1>(9));
  };
  c["future_wrong_type"] = [](Context& ctx) {
    Data d = make(ctx);
    TaskLauncher s(T_SUM);
    s.add(d.r, Privilege::ReadOnly, {FX});
    ctx.execute(s).get<char>();
  };
  c["future_empty"] = [](Context&) { Future().get<double>(); };
  c["bounds_check"] = [](Context& ctx) {  // run with -lg:bounds_checks
    Data d = make(ctx);
    IndexLauncher l(T_STEP, d.colors);
    l.add(d.part, Projection::identity(), Privilege::ReadOnly, {FX});  // step writes
    ctx.execute(l);
  };
  c["memory_full"] = [](Context& ctx) {  // run with -ll:csize 1
    Region r = ctx.create_region(ctx.create_index_space(Rect<1>({0}, {(1 << 20) - 1})),
                                 ctx.create_field_space({{FX, sizeof(double)}}));
    ctx.fill(r, FX, 0.0);
    TaskLauncher s(T_SUM);
    s.add(r, Privilege::ReadOnly, {FX});
    ctx.execute(s).get<double>();
  };
  c["ok"] = [](Context& ctx) {  // the correct program: what every case is a variation of
    Data d = make(ctx);
    std::printf("sum=%g cpus=%u\n", wait_for_work(ctx, d), ctx.num_cpus());
  };
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  TaskRegistry::add(T_STEP, "step", {cpu(step)});
  TaskRegistry::add(T_THROW_ERROR, "throw_error", {cpu(throw_error)});
  TaskRegistry::add(T_THROW_STD, "throw_std", {cpu(throw_std)});
  TaskRegistry::add(T_THROW_INT, "throw_int", {cpu(throw_int)});
  TaskRegistry::add(T_LAUNCH, "launch_from_task", {cpu(launch_from_task)});
  TaskRegistry::add(T_WAIT, "wait_in_task", {cpu(wait_in_task)});
  TaskRegistry::add(T_SUM, "sum", {cpu(sum)});
  const auto all = cases();
  const auto args = app_args(argc, argv);
  if (args.size() < 2 || args[1] == "--list") {
    for (const auto& [name, fn] : all) std::printf("%s\n", name.c_str());
    return args.size() < 2 ? 2 : 0;
  }
  auto it = all.find(args[1]);
  if (it == all.end()) {
    std::fprintf(stderr, "misuse: no case '%s' (--list)\n", args[1].c_str());
    return 2;
  }
  const int rc =
      start(argc, argv, it->second,
            args[1] == "mapper_foreign_memory" ? std::make_unique<ForeignMemoryMapper>() : nullptr);
  if (args[1] == "context_after_start" && g_ctx) {
    try {
      g_ctx->fence();
      std::printf("misuse: the Context still worked after start() returned\n");
      return 0;
    } catch (const Error& e) {
      std::fprintf(stderr, "reprise: error: %s\n", e.what());
      return 1;
    }
  }
  return rc;
}

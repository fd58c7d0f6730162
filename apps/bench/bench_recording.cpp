// Recording cost against template size (issue 24 item 4: recording in linear time).
// A 2-d tiled stencil whose tiles are scattered over the memories (tile i on CPU i mod cpus,
// its instances in that CPU's memory), so that every halo read copies from the neighbours'
// memories: a template of one iteration holds about 5 copies per tile. For tile counts
// growing by 4x the program records one template (begin/end trace around one iteration,
// after an untraced warm-up iteration that puts the data where the loop keeps it), then
// replays it; it prints per size the template's instructions and copies and the utility
// thread's time to analyse and record it, and its time to replay it, as a table. Linear
// recording shows as a flat "record us / instr" column.
//   bench_recording [-max_tiles N=16384] -ll:cpu 4 -ll:numa 4
#include <reprise/reprise.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "reprise_rt/runtime.h"

using namespace reprise;

namespace {

enum : TaskID { T_STEP = 1, T_SWAP = 2 };
enum : FieldID { F_IN = 0, F_OUT = 1 };
void empty_task(TaskContext&) {}

// Tile i runs on CPU i mod cpus (of shard 0): neighbours sit in different memories.
class ScatterMapper final : public Mapper {
 public:
  Processor select_processor(const MapperTaskInfo& t, const MachineInfo& m) override {
    return Processor{ProcessorKind::CPU, std::uint32_t(t.point_index % m.num_cpus), 0};
  }
};

struct Sizes {
  int tiles = 0;
  std::size_t instrs = 0, copies = 0;
  double record_us = 0, replay_us = 0;
};

Sizes measure(Context& ctx, int side, TraceID id) {
  const int cells = 4;  // per tile and dimension
  auto is = ctx.create_index_space(Rect<2>({0, 0}, {side * cells - 1, side * cells - 1}));
  auto fs = ctx.create_field_space({{F_IN, 8}, {F_OUT, 8}});
  Region g = ctx.create_region(is, fs);
  auto tiles = ctx.create_index_space(Rect<2>({0, 0}, {side - 1, side - 1}));
  Partition interior = ctx.partition_equal(g, tiles);
  Partition halo = ctx.partition_by_rects(
      g, tiles, [&](const DomainPoint& c) { return grow(interior.rect(c), 1) & g.bounds(); });
  IndexLauncher step(T_STEP, tiles);
  step.add(interior, Projection::identity(), Privilege::ReadWrite, {F_OUT});
  step.add(halo, Projection::identity(), Privilege::ReadOnly, {F_IN});
  IndexLauncher swap(T_SWAP, tiles);
  swap.add(interior, Projection::identity(), Privilege::ReadWrite, {F_IN});
  auto iteration = [&](bool traced) {
    if (traced) ctx.begin_trace(id);
    ctx.execute(step);
    ctx.execute(swap);
    if (traced) ctx.end_trace(id);
  };
  auto& rt = reprise::detail::Runtime::of(ctx);
  auto busy_us = [&] { return double(rt.stats().analysis_busy_ns) * 1e-3; };
  iteration(false);
  ctx.fence().wait();
  Sizes s;
  s.tiles = side * side;
  const auto before = ctx.trace_stats();
  double u0 = busy_us();
  iteration(true);  // recorded
  ctx.fence().wait();
  s.record_us = busy_us() - u0;
  u0 = busy_us();
  iteration(true);  // replayed
  ctx.fence().wait();
  s.replay_us = busy_us() - u0;
  const auto after = ctx.trace_stats();
  s.instrs = std::size_t(after.replay_instructions - before.replay_instructions);
  s.copies = std::size_t(after.copies - before.copies) / 2;  // recorded and replayed alike
  ctx.destroy(g);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int max_tiles = 16384;
  auto args = app_args(argc, argv);
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "-max_tiles" && i + 1 < args.size()) {
      max_tiles = std::atoi(args[++i].c_str());
    } else {
      std::fprintf(stderr, "usage: bench_recording [-max_tiles N=16384] [runtime flags]\n");
      return 2;
    }
  }
  TaskRegistry::add(T_STEP, "step", {cpu(empty_task)});
  TaskRegistry::add(T_SWAP, "swap", {cpu(empty_task)});
  std::vector<Sizes> rows;
  int rc = start(
      argc, argv,
      [&](Context& ctx) {
        TraceID id = 1;
        for (int side = 4; side * side <= max_tiles; side *= 2)
          rows.push_back(measure(ctx, side, id++));
      },
      std::make_unique<ScatterMapper>());
  if (rc != 0) return rc;
  std::printf("%8s %10s %10s %12s %16s %12s\n", "tiles", "instrs", "copies", "record_ms",
              "record_us/instr", "replay_ms");
  for (const Sizes& s : rows)
    std::printf("%8d %10zu %10zu %12.2f %16.3f %12.2f\n", s.tiles, s.instrs, s.copies,
                s.record_us * 1e-3, s.instrs ? s.record_us / double(s.instrs) : 0.0,
                s.replay_us * 1e-3);
  const Sizes& last = rows.back();
  std::printf("RESULT bench=recording tiles=%d instrs=%zu copies=%zu record_us_per_instr=%.3f\n",
              last.tiles, last.instrs, last.copies,
              last.instrs ? last.record_us / double(last.instrs) : 0.0);
  return 0;
}

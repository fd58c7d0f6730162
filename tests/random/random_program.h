#pragma once
// Random valid Reprise programs as plain data, and three ways to run one:
//  - run_reference(): a host-only model of the program's sequential semantics (no runtime);
//  - run_runtime(flags): the real runtime, e.g. with -lg:inorder (the sequential oracle) or
//    in parallel (-ll:cpu 2, -ll:util 2);
// and compare() to find the first difference between two outcomes (region contents, future
// values and the values read back mid-program). A program is a deterministic function of its
// seed (generate(seed)), so a failing seed can be dumped (dump()) and replayed.
//
// Every task body is a deterministic mix of what it reads (the data of its READ_ONLY and
// READ_WRITE requirements, its future arguments, its point and a per-op salt) and writes that
// mix into its READ_WRITE / WRITE_DISCARD fields and folds it into its REDUCE fields, so that
// running an op before one it depends on (or after one that depends on it) changes the result.
#include <reprise/reprise.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace reprise_random {

using reprise::coord_t;
using reprise::Domain;
using reprise::DomainPoint;
using reprise::FieldID;
using reprise::Privilege;
using reprise::ReductionOp;

struct GenOptions {
  int min_ops = 20, max_ops = 80;  // ops after the initial fills/writes of each region
  int min_regions = 1, max_regions = 3;
  coord_t max_volume = 2000;  // points per region
  // Loops: a body of traceable ops issued several times, each iteration between begin_trace
  // and end_trace (sometimes with a changed body, sometimes sharing another loop's trace id).
  bool loops = false;
  int max_body = 8, max_iters = 10;
  // One task op inside a trace throws (the program must end with its error, never hang).
  bool fail_in_trace = false;
  // Loops' bodies hold launches only (index and single tasks, without futures): with
  // RunOptions::keep_launchers an iteration's launches share the last iteration's launchers.
  bool kept_loops = false;
  // No requirement reduces (futures still do): with one memory no launch then needs copies or
  // reduction instances, so that launches run eagerly wherever nothing is in flight.
  bool no_region_reductions = false;
};

// Every field is 8 bytes; float fields hold doubles, the others uint64 (the only ones reduced).
struct FieldSpec {
  FieldID id = 0;
  bool is_float = false;
};

struct RegionSpec {
  Domain bounds;
  std::vector<FieldSpec> fields;
};

// A region of the program: the root region of tree `tree` (part < 0) or the piece `color` of
// partition `part`.
struct RegionRef {
  int tree = -1;
  int part = -1;
  DomainPoint color;
};

enum class PartKind : std::uint8_t { Equal, Blocks, Rects, Translate };

struct PartSpec {
  RegionRef parent;
  PartKind kind = PartKind::Equal;
  Domain colors;              // the color space (Equal, Rects; derived for Blocks, Translate)
  DomainPoint block;          // Blocks
  std::vector<Domain> rects;  // Rects: the rects as passed (the runtime clips them)
  int base = -1;              // Translate: the partition translated
  DomainPoint offset;         // Translate
  std::string note;           // how the rects were made (for the dump)
  bool use_callback = false;  // Rects: pass a function instead of a vector
  // What the partition must be (computed by the generator, checked against the runtime):
  Domain parent_bounds;
  std::vector<Domain> pieces;  // clipped to the parent, in row-major color order
  bool disjoint = false, complete = false;
  const Domain& piece(const DomainPoint& c) const;
};

enum class ProjKind : std::uint8_t { Identity, Constant, Translate, Affine };

struct ProjSpec {
  ProjKind kind = ProjKind::Identity;
  int dim_out = 0, dim_in = 0;
  std::array<std::array<coord_t, 3>, 3> m{};  // Affine: dim_out rows of dim_in coefficients
  DomainPoint offset;                         // Constant: the color; Translate/Affine: offset
  DomainPoint apply(const DomainPoint& p) const;
  reprise::Projection make() const;
};

struct ReqSpec {
  RegionRef region;  // single tasks, and index-launch requirements on a whole region
  int part = -1;     // index-launch requirements through partition `part`
  ProjSpec proj;
  Privilege priv = Privilege::ReadOnly;
  ReductionOp redop = ReductionOp::None;
  std::vector<int> fields;  // positions in the tree's field list
};

enum class ValueType : std::uint8_t { None, U64, I64 };

enum class OpKind : std::uint8_t {
  CreatePartition,  // part
  Task,             // reqs, futures, ret, salt -> future slot `result`
  IndexTask,        // launch, reqs, futures, ret, salt -> future-map slot `result`
  Fill,             // dst, dst_fields, value
  Copy,             // src, src_fields -> dst, dst_fields
  ReduceFutures,    // future-map slot `source`, redop -> future slot `result`
  PointFuture,      // future-map slot `source`, point -> future slot `result` (no wait)
  GetFuture,        // future slot `source`: blocks, the value is mixed into later salts
  Fence,            // wait: block on the fence's future
  BeginTrace,       // trace: begin_trace(trace) when running with manual traces
  EndTrace,         // trace: end_trace(trace)
};

struct OpSpec {
  OpKind kind = OpKind::Fence;
  int part = -1;
  Domain launch;
  std::vector<ReqSpec> reqs;
  std::vector<int> futures;
  ValueType ret = ValueType::None;
  std::uint64_t salt = 0;
  int result = -1;
  RegionRef dst, src;
  std::vector<int> dst_fields, src_fields;
  std::uint64_t value = 0;
  int source = -1;
  ReductionOp redop = ReductionOp::None;
  DomainPoint point;
  bool wait = false;
  bool init = false;  // one of the initial writes of a region (the minimizer keeps these)
  int trace = 0;      // BeginTrace, EndTrace
  bool fail = false;  // Task, IndexTask: the body throws (GenOptions::fail_in_trace)
};

struct Program {
  std::uint64_t seed = 0;
  std::vector<RegionSpec> regions;
  std::vector<PartSpec> parts;
  std::vector<OpSpec> ops;
  std::vector<ValueType> future_types;  // per future slot
  std::vector<ValueType> map_types;     // per future-map slot
  std::vector<Domain> map_domains;
};

// What a run produced. Slots never assigned (after minimization) read as 0.
struct Outcome {
  std::string error;  // empty when the program ran to the end
  std::vector<std::vector<std::vector<std::uint64_t>>> data;  // [region][field][row-major point]
  std::vector<std::uint64_t> gets;                            // GetFuture values, in order
  std::vector<std::uint64_t> futures;                         // final value per future slot
  std::vector<std::vector<std::uint64_t>> maps;               // per future-map slot and point
  std::vector<std::vector<std::uint64_t>> observed;  // per op and launch point: what it read
  // How the runtime ran it (not compared): traces recorded and replayed, copies generated.
  std::uint64_t templates = 0, replays = 0, copies = 0;
  std::uint64_t recorded_far = 0;         // other shards' points recorded for their writes only
  std::uint64_t recorded_deferred = 0;    // ... whose writes the recording deferred
  std::uint64_t points_launched = 0;      // task, fill and copy points
  std::uint64_t points_inline = 0;        // run at once on the application thread (-lg:eager)
  std::uint64_t points_inline_alone = 0;  // ... of which with the runtime alone (-lg:alone)
};

// Registers the tasks the programs use (idempotent; run_runtime calls it).
void register_tasks();

Program generate(std::uint64_t seed, const GenOptions& options = {});
std::string dump(const Program& p);
std::string summary(const Program& p);  // one line
std::size_t count_ops(const Program& p, OpKind kind);

Outcome run_reference(const Program& p);

// How the runtime places points: its DefaultMapper, or Scatter, which spreads every point and
// every requirement's instance over all shards, CPUs and memories by a hash of (task, point,
// requirement, op), so that consecutive ops and iterations of a loop use different memories.
enum class MapperKind : std::uint8_t { Default, Scatter };

struct RunOptions {
  bool manual_traces = true;  // issue the program's begin/end_trace (else only auto tracing)
  MapperKind mapper = MapperKind::Default;
  double timeout_s = 60.0;
  // Index launches alike (but for their arguments) share one launcher (--keep-launchers).
  bool keep_launchers = false;
};

// Runs p under reprise::run(flags). A run that takes longer than timeout_s prints the seed and
// the flags and aborts the process (a hang would otherwise stall the whole test).
Outcome run_runtime(const Program& p, const std::vector<std::string>& flags,
                    const RunOptions& options);
Outcome run_runtime(const Program& p, const std::vector<std::string>& flags,
                    double timeout_s = 60.0);

// Empty when equal; otherwise where and how `got` first differs from `expected`: the first op
// whose points read different data (task bodies hash everything they read), then the final
// region contents, the mid-program gets and the future values.
std::string compare(const Program& p, const Outcome& expected, const Outcome& got);
// Only the final state (region contents, gets, futures).
std::string compare_final(const Program& p, const Outcome& expected, const Outcome& got);

// p without op i and every op that depends on it (the minimizer's step). Initial ops stay.
Program without_op(const Program& p, std::size_t i);

// Test-only: swaps the last two adjacent ops that depend on each other (a deliberately wrong
// program order, which a correct comparison must notice); *found is false when there is none.
Program reordered(const Program& p, bool* found);
// Test-only: perturbs the salt of every task op (to check that the comparison catches it).
Program perturbed(const Program& p);

std::string join_flags(const std::vector<std::string>& flags);

}  // namespace reprise_random

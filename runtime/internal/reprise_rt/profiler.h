#pragma once
// The profiler (-lg:prof FILE): intervals of what each thread did — task points, fills and
// copies on the workers, the analysis and replays on the utility thread, waits on the
// application thread, sends and receives of data between shards — kept in per-thread buffers
// (no lock after a thread's first record) and written at exit as Chrome trace-event JSON,
// one file per shard (`%` in the name becomes the shard number), which ui.perfetto.dev and
// chrome://tracing open: one process per shard, one track per thread.
//
// The same intervals go to the user's observers (reprise/observer.h) as they happen; with
// observers but no file, records are not kept.
//
// Disabled (no -lg:prof, no observer), the runtime holds no profiler and every hook is one
// branch.
#include <fmt/format.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "reprise/geometry.h"
#include "reprise/observer.h"
#include "reprise_rt/cycle_clock.h"
#include "reprise_rt/event.h"

namespace reprise::detail {

struct Op;
class EvtraceRecorder;

// The observers registered with reprise::Observers (each runtime takes them when it starts).
std::vector<std::shared_ptr<Observer>> observers_snapshot();

class Profiler {
 public:
  enum class Kind : std::uint8_t {
    Task,
    Fill,
    Copy,
    Send,
    Receive,
    Analysis,
    Replay,
    Wait,
    Record,
    Message,
    Range
  };
  // Plain data: recording one costs a few stores (names are the registry's, made into text
  // only when the file is written).
  struct Record {
    Kind kind;
    std::uint8_t op_kind = 0;
    bool replayed = false;
    std::uint32_t trace = 0;
    std::uint64_t begin = 0, end = 0, seq = 0, bytes = 0;
    const char* task = nullptr;  // the task's registered name
    DomainPoint point;
    std::uint32_t index = 0;  // the point's index in its launch, or the copy's number
    bool copy = false;        // a generated copy (index: its number)
    std::uint32_t peer = 0;   // copy halves: the other shard
    // -lg:simulate_shards: the shard a point ran for, or a copy's source's (peer: its
    // destination's).
    std::uint32_t shard = 0;
    bool counted = true;       // analyses: a program op (not one the runtime made itself)
    std::uint64_t cpu_ns = 0;  // the thread's CPU time in the interval (-lg:evtrace; 0: none)
  };
  // file: the -lg:prof file (empty: none); observers: told of each interval as it ends.
  Profiler(std::string file, std::uint32_t shard,
           std::vector<std::shared_ptr<Observer>> observers = {});
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Makes the calling thread's buffer (for its lane, inside a LaneScope) now: ~8 MB first
  // touched, milliseconds that would otherwise land on its first record, in the program's
  // timed work (the application thread's CPU lane, -ll:app_cpu, made it at its first point).
  // Each runtime thread calls it as it starts.
  void prepare_buffer() { buffer(); }
  // While one is alive, what this thread records goes to a lane of its own named `lane` (the
  // application thread running a CPU's points, -ll:app_cpu: they show on that CPU's lane).
  class LaneScope {
   public:
    explicit LaneScope(const char* lane);
    ~LaneScope();
    LaneScope(const LaneScope&) = delete;
    LaneScope& operator=(const LaneScope&) = delete;

   private:
    const char* previous_;
  };

  // A time stamp for a record: the CPU's time-stamp counter where the kernel keeps time with
  // it (x86-64 with the "tsc" clock source: ~10 ns a read against ~24 ns for steady_clock on
  // the development box), else the runtime's steady clock in ns. Records hold stamps; they
  // become ns on the runtime's clock (to_ns) with a rate measured from the profiler's start.
  static std::uint64_t stamp() {
#if defined(__x86_64__)
    if (tsc_) return __rdtsc();
#endif
    return detail::now_ns();
  }
  // A stamp on the runtime's steady clock (ns).
  std::uint64_t to_ns(std::uint64_t stamp) const {
    return start_ns_ + std::uint64_t(double(stamp - start_stamp_) * ns_per_stamp_);
  }
  // An interval of work of op `op` (a point of it, or a copy it made) on the calling thread.
  // (Every record's begin and end are stamps: stamp().)
  // (Copy halves: peer is the other shard.)
  void record(Kind kind, const Op& op, std::uint32_t point_index, const DomainPoint& point,
              std::uint64_t begin, std::uint64_t end, std::uint64_t bytes = 0,
              std::uint32_t peer = 0, std::uint64_t cpu_ns = 0, std::uint32_t shard = 0);
  // An interval of the runtime's own: the analysis of op `op` (seq, kind and task kept; the
  // name is made when the file is written), a replay of trace `trace` (count: its ops), a
  // wait.
  void record_analysis(const Op& op, std::uint64_t begin, std::uint64_t end,
                       std::uint64_t cpu_ns = 0);
  // -lg:evtrace wants each interval's CPU time too (a recording on an oversubscribed machine
  // must not count the time other processes had the core): the calling thread's, in ns.
  bool cpu_times() const {
    return evtrace_ != nullptr;
  }
  static std::uint64_t thread_cpu_now();
  void record_replay(std::uint32_t trace, std::uint64_t ops, std::uint64_t begin,
                     std::uint64_t end);
  void record_wait(std::uint64_t begin, std::uint64_t end);
  // A range the program named (Context::stop_profiling_range).
  void record_range(const std::string& name, std::uint64_t begin, std::uint64_t end);
  // A message between shards: sent (an instant on the sending thread) or received (its
  // handling on the MPI progress thread); channel: a static name.
  void record_message(bool incoming, const char* channel, std::uint32_t peer, std::uint64_t bytes,
                      std::uint64_t begin, std::uint64_t end);
  // The analysis of a trace's ops while its template is recorded.
  void record_recording(std::uint32_t trace, std::uint64_t ops, std::uint64_t begin,
                        std::uint64_t end);
  // Dependences (-lg:prof:deps): which point or copy an event stands for, which events a
  // merge stands for, and who waits for what. Written as flow arrows between the intervals,
  // which reprise-prof follows for the critical path. Edges that are counters, not events
  // (inside a replay, and between back-to-back replays of one template), are told with
  // follows().
  bool deps() const {
    return deps_;
  }
  void set_deps(bool on) {
    deps_ = on;
    keep_records_ = keep_records_ || on;
  }
  // -lg:spy DIR: also write DIR/spy_<shard>.dot, the graph of this shard's points and copies
  // (grouped by op) and their dependences.
  void set_spy_dir(std::string dir) {
    spy_dir_ = std::move(dir);
    keep_records_ = keep_records_ || !spy_dir_.empty();
  }
  void produced(Event e, const Op& op, std::uint32_t point);
  // Point `point` of op is one of those its completion event (op.done) stands for (a fence
  // merges ops' completions).
  void part_of_op(const Op& op, std::uint32_t point);
  void merged(Event result, std::span<const Event> inputs);
  void waits(const Op& op, std::uint32_t point, Event e);
  void follows(const Op& before, std::uint32_t before_point, const Op& after,
               std::uint32_t after_point);
  // The same after copy number `copy` made for op #seq (a copy of an earlier replay).
  void follows_copy(std::uint64_t seq, std::uint32_t copy, const Op& after,
                    std::uint32_t after_point);

  // -lg:evtrace: every record also goes to `r` (which outlives the profiler's records).
  void set_evtrace(EvtraceRecorder* r) {
    evtrace_ = r;
  }

  // When this profiler started, on the runtime's steady clock (ns).
  std::uint64_t start_ns() const {
    return start_ns_;
  }
  // The file's time origin (default: this profiler's start). Shards of one job set the
  // earliest start of them all, so that their timelines line up (exactly on one node, where
  // they share the clock).
  void set_origin(std::uint64_t ns) {
    origin_ns_ = std::min(ns, start_ns_);
  }
  // Writes the file (also done by the destructor if not done yet). Throws reprise::Error if it
  // cannot be written.
  void write();
  std::string path() const {
    return path_;
  }

 private:
  // A point or a generated copy: (op number, point index or copy number, is a copy).
  struct Node {
    std::uint64_t seq = 0;
    std::uint32_t index = 0;
    bool copy = false;
    friend bool operator==(const Node&, const Node&) = default;
  };
  static Node node_of(const Op& op, std::uint32_t point);
  static Node node_of(const Record& r) {
    return Node{r.seq, r.index, r.copy};
  }
  // A point, fill or copy (half): a node of the dependence graph.
  static bool is_work(const Record& r) {
    return r.kind <= Kind::Receive;
  }
  static std::uint64_t key(Event e) {
    return std::uint64_t(e.id) << 32 | e.gen;
  }
  void write_flows(fmt::memory_buffer& out);
  void write_json();
  void write_spy();
  // Dependences between nodes that ran here (deps_mutex_ held).
  std::vector<std::pair<Node, Node>> edges() const;
  // The nodes an event stands for (through merges).
  void resolve(std::uint64_t event, std::vector<Node>& out, int depth) const;
  struct Buffer {
    std::string thread;
    std::vector<Record> records;
  };
  Buffer& buffer();
  // A new record of the calling thread's buffer (a scratch record when none are kept).
  Record& push(Kind kind, std::uint64_t begin, std::uint64_t end);
  // A record is complete: the observers (and -lg:evtrace) hear of it.
  void done(const Record& r) {
    if (!observers_.empty()) [[unlikely]]
      notify(r);
    if (evtrace_) [[unlikely]]
      to_evtrace(r);
  }
  void to_evtrace(const Record& r) const;
  void notify(const Record& r) const;

  std::string path_;
  std::uint32_t shard_;
  std::uint64_t id_;  // tells this profiler's thread buffers from an earlier run's
  std::mutex mutex_;  // registration of thread buffers
  std::vector<std::unique_ptr<Buffer>> buffers_;
  bool written_ = false;
  std::vector<std::shared_ptr<Observer>> observers_;
  bool keep_records_ = true;  // for the file, -lg:spy or -lg:prof:deps
  // Stamps are time-stamp counter readings (set by the constructor, before any stamp of this
  // profiler; the same value every time).
  static inline bool tsc_ = false;
  std::uint64_t start_stamp_ = 0, start_ns_ = 0;
  double ns_per_stamp_ = 1.0;       // measured at start (observers convert with it)
  double file_ns_per_stamp_ = 1.0;  // measured over the whole run when the file is written
  // ns per stamp from the start to now.
  double measure_rate() const;
  std::uint64_t origin_ns_ = 0;  // the file's time origin (set_origin), at most start_ns_
  // A stamp as ns since the file's origin, at the whole run's rate (for the file).
  std::uint64_t file_ns(std::uint64_t stamp) const {
    return start_ns_ - origin_ns_ +
           std::uint64_t(double(stamp - start_stamp_) * file_ns_per_stamp_);
  }
  bool deps_ = false;
  std::string spy_dir_;
  EvtraceRecorder* evtrace_ = nullptr;
  std::mutex deps_mutex_;
  std::unordered_map<std::uint64_t, Node> producers_;               // by event
  std::unordered_map<std::uint64_t, std::vector<Node>> op_points_;  // by op completion event
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> merges_;
  std::vector<std::pair<std::uint64_t, Node>> waits_;  // (event, waiter)
  std::vector<std::pair<Node, Node>> follows_;
  std::deque<std::string> range_names_;  // (records point into it; guarded by mutex_)
};

}  // namespace reprise::detail

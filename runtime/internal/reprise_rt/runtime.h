#pragma once
// The runtime of one process: owns the forest, events, instances, executor and the utility
// thread that drives the pipeline of OpSinks (tracing -> memoizer -> analysis).
#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "reprise/context.h"
#include "reprise/mapper.h"
#include "reprise/registry.h"
#include "reprise_rt/config.h"
#include "reprise_rt/device.h"
#include "reprise_rt/event.h"
#include "reprise_rt/evtrace_merge.h"
#include "reprise_rt/evtrace_recorder.h"
#include "reprise_rt/executor.h"
#include "reprise_rt/forest.h"
#include "reprise_rt/graph.h"
#include "reprise_rt/hasher.h"
#include "reprise_rt/history_ring.h"
#include "reprise_rt/instance.h"
#include "reprise_rt/launch_shapes.h"
#include "reprise_rt/network.h"
#include "reprise_rt/op.h"
#include "reprise_rt/op_queue.h"
#include "reprise_rt/profiler.h"
#include "reprise_rt/resolution_cache.h"
#include "reprise_rt/shard_exchange.h"
#include "reprise_rt/simulated_asks.h"
#include "reprise_rt/stream_check.h"
#include "reprise_rt/time_sampler.h"

namespace reprise {
class Context;
}

namespace reprise::detail {

struct Attached;  // an attachment (runtime/src/attach.cpp)

// A flag threads set and read without ordering, copied as its value (a TaskInfo is copied
// into each runtime's snapshot of the registry). Written only when it changes: a point's
// worker and the application thread would otherwise share its cache line at every set.
class RelaxedFlag {
 public:
  RelaxedFlag() = default;
  RelaxedFlag(const RelaxedFlag& o) : v_(o.get()) {}
  RelaxedFlag& operator=(const RelaxedFlag& o) {
    v_.store(o.get(), std::memory_order_relaxed);
    return *this;
  }
  bool get() const { return v_.load(std::memory_order_relaxed); }
  void set(bool b) const {
    if (get() != b) v_.store(b, std::memory_order_relaxed);
  }

 private:
  mutable std::atomic<bool> v_{false};
};

struct TaskInfo {
  TaskID id = 0;
  std::string name;
  // Whether the last timed point of this task ran long (Executor::kLongPointThresholds): beside CPU
  // workers its launches are not run eagerly (Executor::runs_inline) — one would hold the
  // application thread, and the issue of the independent ops after it, for its whole run.
  // Per runtime (its snapshot of the registry); set and cleared by the thread that timed it.
  RelaxedFlag ran_long;
  std::vector<TaskVariant> variants;  // (set through set_variants: it keeps variant_at_)
  void set_variants(std::span<const TaskVariant> vs) {
    variants.assign(vs.begin(), vs.end());
    variant_at_.fill(-1);
    for (std::size_t i = variants.size(); i-- > 0;)
      variant_at_[std::size_t(variants[i].kind)] = std::int32_t(i);
  }
  // (Asked for at every point — mapping and running — hence an index, not a search.)
  const TaskVariant* variant(ProcessorKind k) const {
    const std::int32_t at = variant_at_[std::size_t(k)];
    return at < 0 ? nullptr : &variants[std::size_t(at)];
  }
  // The variant a point on a processor of kind k runs: k's, else the CPU one.
  const TaskVariant* variant_to_run(ProcessorKind k) const {
    const TaskVariant* v = variant(k);
    return v ? v : variant(ProcessorKind::CPU);
  }

 private:
  std::array<std::int32_t, 3> variant_at_{-1, -1, -1};  // by ProcessorKind: the first of each kind
};

// What the application created (control replication compares these across shards).
enum class Creation : std::uint8_t {
  IndexSpace,
  FieldSpace,
  Region,
  PartitionEqual,
  PartitionByBlocks,
  PartitionByRects,
  PartitionByTranslation,
  PartitionByRectLists,
  DependentPartition,
};
const char* to_string(Creation c);

// Figures the benchmarks read.
struct RuntimeStats {
  std::uint64_t ops_issued = 0;
  std::uint64_t points_launched = 0;
  std::uint64_t points_deferred = 0;
  std::uint64_t points_inline = 0;        // run at once on the application thread (-lg:eager)
  std::uint64_t points_inline_alone = 0;  // ... while the runtime ran alone (reprise_rt/alone.h)
  std::uint64_t points_recorded_far = 0;
  std::uint64_t points_recorded_deferred = 0;
  std::uint64_t points_replayed = 0;
  std::uint64_t templates_recorded = 0;
  std::uint64_t templates_dropped = 0;
  std::uint64_t value_rounds = 0;  // future maps' values across shards (reductions, gathers)
  std::uint64_t replays = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t condition_checks = 0;     // templates' preconditions checked before a replay
  std::uint64_t copies = 0;               // generated copies run (between memories)
  std::uint64_t shard_bytes = 0;          // copies brought into this shard from others
  std::uint64_t analysis_cpu_ns = 0;      // CPU time of the utility thread (spinning included)
  std::uint64_t analysis_busy_ns = 0;     // wall time the utility thread spent inside the pipeline
                                          // (less its waits for other shards; inline, not the
                                          // buffering of a manual trace's point ops)
  std::uint64_t messages_sent = 0;        // to other shards (MPI sends)
  std::uint32_t peers_heard = 0;          // shards this one had a completion or request from
  std::uint64_t requests_sent = 0;        // completions of remote points this shard asked for
  std::uint64_t remote_proxies = 0;       // events made for other shards' points
  std::uint64_t replay_instructions = 0;  // in the templates replayed
  std::uint64_t replay_instructions_here = 0;  // of those, initialised by this shard's replays
  std::uint64_t gpu_kernels = 0;               // kernels launched on GPU processors' streams
  std::uint64_t gpu_graph_launches = 0;        // captured graphs launched
  std::uint64_t copies_host_to_device = 0;     // into framebuffers (fills included)
  std::uint64_t copies_device_to_host = 0;     // out of framebuffers
  std::uint64_t copies_device_to_device = 0;   // between framebuffers
  std::uint64_t gpu_link_copies = 0;           // halves of copies over the device links
};

class Runtime {
 public:
  // network: the other shards under control replication (nullptr: a single process).
  // device: the GPU backend for -ll:gpu (nullptr: no GPUs; it must outlive the runtime).
  Runtime(Config config, std::unique_ptr<Mapper> mapper, Network* network = nullptr,
          Device* device = nullptr);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // The runtime running in this process (one at a time), or nullptr.
  static Runtime* current();

  // Installs the pipeline's first stage; must be called before run(). `trace_holder`: the
  // stage that holds a manual trace's ops (the memoizer), or null; `stages_use_threads`: a
  // stage runs work on threads of its own (automatic tracing mining on oneTBB's); `follower`:
  // a stage offered each op first (OpSink::take_followed), or null.
  void set_pipeline(std::unique_ptr<OpSink> first_stage, GraphSink* graph,
                    OpSink* trace_holder = nullptr, bool stages_use_threads = false,
                    OpSink* follower = nullptr);
  // The follower (set_pipeline) says whether issue() should offer it the next ops; where it
  // has none, nothing changes (it runs on the utility thread then).
  void set_following(bool on) {
    if (follower_) following_ = on;
  }
  // Runs top_level on the calling thread, waits for every op, shuts down. Rethrows the first
  // error of the program (from the application, the analysis or a task).
  void run(const std::function<void(Context&)>& top_level);

  // --- application thread ---
  // Assigns the op its sequence number and completion event and hands it to the utility
  // thread (waiting first while -lg:window ops are in flight).
  void issue(OpRef op);
  // An op for a task launch (a TaskPayload in place): the last one's, renewed, once nothing
  // else holds it — a chain of eager launches uses one op — else a new one.
  OpRef launch_op();
  // The runtime behind the top-level task's Context (tests and benchmarks look inside).
  static Runtime& of(Context& ctx) { return ctx.rt("runtime"); }
  // Looks a task up; one registered after start is taken into the snapshot.
  const TaskInfo* find_task(TaskID id) {
    if (last_task_ && last_task_id_ == id) [[likely]]
      return last_task_;
    return find_task_anew(id);
  }

  // --- any thread ---
  void op_completed(Op& op);  // every point (if any) is done
  void record_error(std::exception_ptr e);
  // Control replication (-lg:stall_report): this shard has issued no op for `seconds`: logs
  // (warning) what it is waiting for.
  void report_stall(int seconds, std::uint64_t ops_issued);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  void rethrow_if_failed();
  // The first error recorded (null before any).
  std::exception_ptr first_error() const;
  // Waits for e on the application thread, rethrowing the program's error if one occurs.
  void wait(Event e);
  // wait(e) for an event of an op issued before the open trace, if any (a dependent
  // partition's task): the trace does not hold it, so the wait may block inside the trace.
  void wait_issued_before_trace(Event e);

  const Config& config() const { return config_; }
  // Eager launches (-lg:eager, Analysis::run_eagerly): the runtime runs alone and nothing
  // follows ops one by one (profiler, event trace, -lg:inorder). After run().
  bool eager() const { return eager_; }
  // The analysing thread: ops issued and not completed yet (during an op's analysis, 1: every
  // op issued before it has completed).
  std::int64_t ops_in_flight() const {
    return issued_.load(std::memory_order_relaxed) - completed_.load(std::memory_order_acquire);
  }
  // The analysing thread, deciding whether a launch (or a replay) runs eagerly: whether `own`
  // ops are in flight, its own. Beside CPU workers whose points are short, it first lets them
  // finish what they run or have queued (drain_for_eager).
  bool only_in_flight(std::int64_t own) {
    return ops_in_flight() == own || (drains_for_eager_ && drain_for_eager(own));
  }
  // The analysing thread: whether this op's analysis is timed (utility busy time); a point run
  // inside it tells how long it ran, which is not analysis (ran_inline).
  bool timing_analysis() const { return timing_analysis_; }
  void ran_inline(std::uint64_t cycles) { inline_run_cycles_ += cycles; }
  // How idle workers and the utility thread spin before they sleep (-ll:spin, -ll:spin_yield).
  const SpinPolicy& spin_policy() const { return spin_; }
  // The GPU backend (null without -ll:gpu).
  Device* device() const { return device_; }
  EventTable& events() { return events_; }
  // Makes op's completion event if it was left to be made on demand (Op::done_on_demand).
  // Called on the analysis thread before any of the op's points can run.
  void give_done_event(Op& op) {
    if (!op.done_on_demand) return;
    op.done_on_demand = false;
    op.done = events_.create();
  }
  RegionForest& forest() { return forest_; }
  InstanceManager& instances() { return instances_; }
  Executor& executor() { return executor_; }
  GraphSink& graph() { return *graph_; }
  // Application thread: launch shapes already found free of interference (Context::execute).
  LaunchShapes& interference_free_shapes() { return interference_free_shapes_; }
  // Ops in flight before the application thread waits (-lg:window, resolved).
  std::int64_t window() const { return window_.load(std::memory_order_relaxed); }
  // Asks for a window of at least `at_least` ops (automatic tracing, for the longest trace it
  // may hold: a quarter of the window); gives the window now. Only an auto window where the
  // application thread is the only CPU grows (there the analysis runs on it, which asks);
  // elsewhere it stays what it is.
  std::int64_t raise_window(std::int64_t at_least);
  // Application thread: resolutions of launches by content, for launchers made afresh.
  ResolutionCache& resolutions() { return resolutions_; }
  // Where replays launch their batches (the executor).
  BatchSink& batches() { return executor_; }
  OpSink& pipeline() { return *pipeline_; }
  Mapper& mapper() { return *mapper_; }
  // Control replication: the network to the other shards (none in a single process).
  Network* network() const { return network_; }
  std::uint32_t shard() const { return network_ ? network_->rank() : 0; }
  std::uint32_t num_shards() const { return network_ ? network_->size() : 1; }
  // The shards the mapper and the analysis see: num_shards(), or the shards one process
  // plays under -lg:simulate_shards (every point still runs here; no exchange).
  std::uint32_t machine_shards() const {
    return network_ || config_.simulate_shards < 2 ? num_shards()
                                                   : std::uint32_t(config_.simulate_shards);
  }
  bool simulated() const { return machine_shards() != num_shards(); }
  ShardExchange* exchange() const { return exchange_.get(); }
  // -lg:simulate_shards with -lg:evtrace: the Requests the shards would send (else null).
  SimulatedAsks* simulated_asks() const { return simulated_asks_.get(); }
  // -lg:prof: the profiler (null when off: every hook is one branch).
  Profiler* profiler() const { return profiler_.get(); }
  // -lg:evtrace: the program is about to wait (on the application thread) for a result,
  // whether or not it is ready yet.
  void note_program_wait();
  // -ll:app_cpu: the application thread asks whether something is done without waiting for
  // it (Future::ready): it runs its CPU's queued points first, or a program that polls would
  // wait for itself.
  void help_app() {
    if (config_.app_cpu && on_app_thread()) executor_.serve_app(nullptr);
  }
  // (Fixed once the runtime is made: every launch asks the mapper with it.)
  const MachineInfo& machine() const { return machine_; }
  RuntimeStats stats() const;
  // (Called by the analysis, which one thread at a time runs: a load and a store, not a
  // locked add; readers only ever see a count, the last stored.)
  void count_points(std::uint64_t n) {
    points_launched_.store(points_launched_.load(std::memory_order_relaxed) + n,
                           std::memory_order_relaxed);
  }
  void count_deferred(std::uint64_t n) { points_deferred_.fetch_add(n, std::memory_order_relaxed); }
  void count_far_recorded(bool deferred) {
    points_recorded_far_.fetch_add(1, std::memory_order_relaxed);
    if (deferred) points_recorded_deferred_.fetch_add(1, std::memory_order_relaxed);
  }
  void count_replay(std::uint64_t points) {
    points_replayed_.fetch_add(points, std::memory_order_relaxed);
    replays_.fetch_add(1, std::memory_order_relaxed);
  }
  // A batch replay of a template of `all` instructions initialised `here` of them.
  void count_replay_instructions(std::uint64_t all, std::uint64_t here) {
    replay_instructions_.fetch_add(all, std::memory_order_relaxed);
    replay_instructions_here_.fetch_add(here, std::memory_order_relaxed);
  }
  void count_condition_check() { condition_checks_.fetch_add(1, std::memory_order_relaxed); }
  // Wall time the utility thread spent inside the pipeline waiting for other shards (a vote,
  // an agreement): not counted as busy.
  void count_shard_wait(std::uint64_t ns) {
    shard_wait_ns_.fetch_add(ns, std::memory_order_relaxed);
  }
  void count_template() { templates_recorded_.fetch_add(1, std::memory_order_relaxed); }
  void count_value_round() { value_rounds_.fetch_add(1, std::memory_order_relaxed); }
  void count_dropped_templates(std::uint64_t n) {
    templates_dropped_.fetch_add(n, std::memory_order_relaxed);
  }
  void count_mismatch() { mismatches_.fetch_add(1, std::memory_order_relaxed); }
  void count_copy() { copies_.fetch_add(1, std::memory_order_relaxed); }
  void count_gpu_kernel() { gpu_kernels_.fetch_add(1, std::memory_order_relaxed); }
  void count_gpu_graph_launch() { gpu_graph_launches_.fetch_add(1, std::memory_order_relaxed); }
  // A copy (or a fill's staging copy) with a framebuffer at one end or both.
  void count_device_copy(bool from_device, bool to_device) {
    auto& c = from_device && to_device ? copies_device_to_device_
              : from_device            ? copies_device_to_host_
                                       : copies_host_to_device_;
    c.fetch_add(1, std::memory_order_relaxed);
  }
  // Bytes of copies between shards (every shard sees every copy, so this is the total).
  void count_shard_bytes(std::uint64_t n) { shard_bytes_.fetch_add(n, std::memory_order_relaxed); }
  // -lg:coverage_log: op `seq` launched `points` points, replayed or analysed.
  void note_points(std::uint64_t seq, std::uint64_t points, bool replayed);
  std::vector<CoverageSample> coverage_log() const;
  std::uint64_t ops_issued() const { return next_seq_; }

  // --- application thread: manual trace bracketing ---
  void begin_trace(TraceID id);
  // Application thread: the starts of the profiling ranges open now (innermost last).
  std::vector<std::uint64_t>& profiling_ranges() { return profiling_ranges_; }
  void end_trace(TraceID id);
  // Control replication: the application created something of this kind and shape (every
  // shard must create the same; compared with the op streams).
  void note_creation(Creation kind, std::uint64_t shape) {
    if (!network_) return;
    const std::uint64_t word = std::uint64_t(kind) << 56 | (shape >> 8);
    creation_words_.push_back(word);
    creation_hash_.mix(word);
  }
  // Context::attach: the arrays attached now (application thread; detach takes them out).
  std::vector<std::shared_ptr<Attached>>& attachments() { return attachments_; }
  // The open trace's number (the count of begin_trace calls when it began), 0 when none is
  // open: tells one trace's ops from another's (application thread).
  std::uint64_t open_trace_number() const { return trace_open_ ? traces_begun_ : 0; }
  // Throws if the application is inside a trace (for ops that cannot be traced).
  void check_not_in_trace(const char* what) const;
  // True when called on the application thread while a trace is open.
  bool app_blocked_in_trace() const;
  // True on the thread that runs the top-level task (but not while it runs a point there,
  // -ll:app_cpu: a point is a point wherever it runs).
  bool on_app_thread() const {
    return std::this_thread::get_id() == app_thread_ && !Executor::running_points_here();
  }
  // Tells the pipeline that the application is about to wait (for `awaited`, or for ops to
  // drain when kNoEvent), so that no stage keeps holding what it waits for.
  void flush_pipeline(Event awaited);

 private:
  // buffer_made: counted down once a profiled run's buffer for this thread is made.
  void utility_loop(std::latch* buffer_made = nullptr);
  // Hands one op to the pipeline (on the utility thread; with -lg:inline_analysis on the
  // application thread, as it is issued).
  void analyse(OpRef op);
  // analyse()'s hand-over: where nothing observes (plain_), and with the event trace, the
  // profiler or the links to flush.
  void submit_to_pipeline(const OpRef& op);
  [[gnu::noinline]] void submit_observed(const OpRef& op);
  // issue() for an index launch when plain_, and for everything else.
  void issue_plain(OpRef op);
  [[gnu::noinline]] void issue_general(OpRef op);
  // Both ways': counts the op in (waiting for -lg:window), and hands it to a manual trace's
  // holder or the automatic tracer's run instead of the pipeline where they take it.
  void count_issued(bool ends_trace);
  bool held_or_followed(OpRef& op, bool ends_trace);
  // How many times an op's analysis time counts in analysis_busy_cycles_: 0 (not timed), 1, or
  // TimeSampler::kEvery for a sampled plain launch.
  std::uint64_t analysis_time_weight(const Op& op);
  // Once the program has failed: one flush through the pipeline, so that nothing stays held.
  void release_after_failure();
  // The application thread's waits: for an event; until at most `at_most` ops are in flight.
  void wait_event(Event e);
  void wait_outstanding(std::int64_t at_most);
  void wake_app();  // (wakes the application thread's waits to look again)
  // Sleeps on app_wakes_ until done(); with -lg:inline_analysis it releases what tracing holds
  // once a point has failed (the utility thread's idle duty).
  template <class Done>
  void sleep_until(Done&& done);
  // The device links' halves registered while an op was handled go into their queue.
  void flush_links();
  // std::exit while run() is in progress (registered with atexit).
  static void exit_while_running();
  // The top-level task failed with e: every shard stops with it.
  void top_level_failed(std::exception_ptr e);
  // Touches a window's worth of the application thread's per-op memory before the program
  // runs (see run()).
  void warm_pools();
  // Hands op to the utility thread.
  void push(OpRef op);
  const TaskInfo* find_task_anew(TaskID id);  // (find_task past its last answer)
  // A manual trace's BeginTrace or EndTrace, down the pipeline.
  void issue_mark(OpKind kind, TraceID id);
  // Application thread: with `issued` ops issued, waits until half the window has drained if
  // more than the window are in flight.
  void keep_to_window(std::int64_t issued);
  // Control replication: the op's word in the program the shards compare.
  void note_program(const Op& op, bool ends_trace);
  // Control replication: every shard must have issued the same ops; throws on every shard
  // naming the first op that differs.
  // ended_early: the program failed (shards may have stopped at different places).
  void check_same_program(bool ended_early);
  // The same for what the shards created (part of check_same_program).
  void check_same_creations(std::uint64_t count, std::uint64_t min_count, bool ended_early);
  void snapshot_registry();

  Config config_;
  MachineInfo machine_{};        // (set at the end of the constructor: machine())
  ShardLinks* links_ = nullptr;  // the exchange's device links, while open (-ll:nccl)
  Device* device_ = nullptr;     // before instances_ and executor_, which use it
  SpinPolicy spin_;
  std::unique_ptr<Mapper> mapper_;
  Network* network_ = nullptr;  // before instances_, which are per shard
  std::unique_ptr<ShardExchange> exchange_;
  std::unique_ptr<Profiler> profiler_;
  // -lg:evtrace: this shard's recorder (fed by the profiler) and the merge at exit.
  std::unique_ptr<EvtraceRecorder> evtrace_;
  std::unique_ptr<EvtraceMerge> evtrace_merge_;
  std::unique_ptr<SimulatedAsks> simulated_asks_;
  void write_evtrace();
  std::unique_ptr<StreamCheck> stream_check_;
  // Control replication: what each of the last ops was (to name the first that differs).
  HistoryRing<16> op_words_;
  // and what each of the last creation calls made, with a hash of them all (a program that
  // creates and destroys regions in a loop keeps flat memory)
  HistoryRing<16> creation_words_;
  Hasher creation_hash_;
  bool creations_differ_ = false;
  std::uint64_t checked_ops_ = 0;
  LaunchShapes interference_free_shapes_;
  ResolutionCache resolutions_;
  std::atomic<std::int64_t> window_{0};  // written by the application thread only
  bool window_may_grow_ = false;
  std::vector<std::uint64_t> profiling_ranges_;
  EventTable events_;
  RegionForest forest_;
  InstanceManager instances_;
  Executor executor_;
  std::unordered_map<TaskID, TaskInfo> tasks_;
  // The last task found (a program launches the same task over and over; the map's nodes
  // stay where they are).
  TaskID last_task_id_ = 0;
  const TaskInfo* last_task_ = nullptr;
  std::unique_ptr<OpSink> pipeline_;
  // Where an op issued inside a manual trace goes straight from issue(), when nothing else on
  // the way wants to see it (set_pipeline; null: every op takes the pipeline's way).
  OpSink* trace_holder_ = nullptr;
  // Offered each op first, under the same conditions (the automatic tracing stage), while it
  // says it follows a run (set_following).
  OpSink* follower_ = nullptr;
  bool following_ = false;
  // Analysed inline with nothing timing, recording or sending ops (set_pipeline): an index
  // launch takes issue_plain's way.
  bool plain_ = false;
  bool stages_use_threads_ = false;
  // only_in_flight's wait: spins while a CPU worker runs a point or one is queued, until only
  // `own` ops are in flight; gives up once nothing runs (what is in flight waits for this
  // thread: an inline mapping's release, ops a trace holds) or no op completed for a while.
  [[gnu::noinline]] bool drain_for_eager(std::int64_t own);
  bool alone_ = false;  // (run(): reprise_rt/alone.h)
  bool eager_ = false;  // (run(): eager())
  // Eager beside CPU workers (run()); after a drain that gave up, the launches that do not try.
  bool drains_for_eager_ = false;
  std::uint32_t drain_pause_ = 0;
  GraphSink* graph_ = &executor_;
  OpQueue queue_;
  std::thread utility_;

  // Ops in flight are issued_ - completed_. The two counters live on lines of their own: the
  // application thread writes issued_ at every op and reads completed_ only when the count it
  // last read says the window may be full; completing threads write completed_ and read
  // issued_ only while the application thread waits (each op would otherwise move one line
  // between the cores twice, along with whatever shared it).
  std::uint64_t next_seq_ = 0;           // application thread
  std::atomic<std::int64_t> issued_{0};  // written by the application thread only
  std::int64_t completed_seen_ = 0;      // application thread: completed_ when it last looked
  alignas(64) std::atomic<std::int64_t> completed_{0};
  std::atomic<bool> app_waiting_{false};
  // Bumped to wake the application thread's waits (sleep_until): the window has drained to
  // half; with -lg:inline_analysis (where it has the utility thread's duties) also when a point
  // failed or the event it waits for triggered.
  std::atomic<std::uint32_t> app_wakes_{0};
  // (The statistics below are written by the thread that analyses.)
  alignas(64) std::atomic<std::uint64_t> points_launched_{0};
  std::atomic<std::uint64_t> points_deferred_{0};
  std::atomic<std::uint64_t> points_recorded_far_{0};
  std::atomic<std::uint64_t> points_recorded_deferred_{0};
  std::atomic<std::uint64_t> points_replayed_{0};
  std::atomic<std::uint64_t> templates_recorded_{0};
  std::atomic<std::uint64_t> condition_checks_{0};
  std::atomic<std::uint64_t> templates_dropped_{0};
  std::atomic<std::uint64_t> value_rounds_{0};
  std::atomic<std::uint64_t> replays_{0};
  std::atomic<std::uint64_t> replay_instructions_{0}, replay_instructions_here_{0};
  std::atomic<std::uint64_t> mismatches_{0};
  std::atomic<std::uint64_t> copies_{0};
  std::atomic<std::uint64_t> gpu_kernels_{0}, gpu_graph_launches_{0};
  std::atomic<std::uint64_t> copies_host_to_device_{0}, copies_device_to_host_{0},
      copies_device_to_device_{0};
  std::atomic<std::uint64_t> shard_bytes_{0};
  mutable std::mutex coverage_mutex_;
  std::vector<CoverageSample> coverage_;
  bool trace_open_ = false;              // application thread
  std::uint64_t traces_begun_ = 0;       // application thread: begin_trace calls so far
  bool released_after_failure_ = false;  // (by the thread that analyses)
  bool trace_held_ = false;              // a BeginTrace went in and its EndTrace not yet
  TraceID open_trace_ = 0;
  OpRef begin_mark_, end_mark_;  // application thread: the last marks (trace_mark)
  OpRef launch_op_;              // application thread: the last task launch's op (launch_op)
  std::thread::id app_thread_;
  std::vector<std::shared_ptr<Attached>> attachments_;
  std::atomic<std::uint64_t> analysis_busy_cycles_{0};  // (cycle_count ticks)
  // Plain launches' analyses are timed one in TimeSampler::kEvery where each is analysed alone
  // and nothing is subtracted from its time (analysis_time_weight); the analysing thread's.
  bool sample_analysis_time_ = false;
  bool timing_analysis_ = false;         // (analyse(): timing_analysis())
  std::uint64_t inline_run_cycles_ = 0;  // points run inside the op's analysis (ran_inline)
  TimeSampler analysis_sampler_;
  std::atomic<std::uint64_t> shard_wait_ns_{0};

  mutable std::mutex error_mutex_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

}  // namespace reprise::detail

#include "reprise_rt/runtime.h"

#include <fmt/core.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <mutex>

#include "reprise/context.h"
#include "reprise_rt/assert.h"
#include "reprise_rt/cycle_clock.h"
#include "reprise_rt/exception_text.h"
#include "reprise_rt/hasher.h"
#include "reprise_rt/log.h"
#include "reprise_rt/topology.h"

namespace reprise::detail {

std::mutex& registry_mutex();
std::unordered_map<TaskID, TaskInfo>& registry_table();

namespace {
std::atomic<Runtime*> g_current{nullptr};

// What the top-level task threw, as a std::exception (it may throw anything).
std::exception_ptr as_error(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception&) {
    return e;
  } catch (...) {
    return std::make_exception_ptr(Error("the top-level task threw " + exception_text(e)));
  }
}

std::uint64_t thread_cpu_ns(const std::thread& t) {
  clockid_t cid;
  // native_handle() is not const; reading the CPU clock of a running thread does not modify it.
  if (!t.joinable() ||
      pthread_getcpuclockid(const_cast<std::thread&>(t).native_handle(), &cid) != 0)
    return 0;
  timespec ts{};
  if (clock_gettime(cid, &ts) != 0) return 0;
  return std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}

// The calling thread's CPU time (ns): what the application thread computed between two ops,
// without the time it was blocked or descheduled (an oversubscribed recording must not pass
// the other ranks' time off as its own).
std::uint64_t own_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}
}  // namespace

namespace {
// The ranks that share this node under an MPI launcher (Open MPI and MPICH say so in the
// environment), else 1.
int local_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(name)) return std::max(1, std::atoi(v));
  return 1;
}

// Whether the busy threads outnumber the cores: the application's, the utility threads (the
// first of them absent with `inline_analysis`), the CPU workers (the last of them absent with
// `app_cpu`), and under control replication the progress thread. `bound`: bound_cores(), asked
// once per runtime (a system call through hwloc; the first call of a process also loads the
// topology, ~4M instructions).
bool crowded(const Config& c, bool networked, bool inline_analysis, bool app_cpu, int bound) {
  const int threads =
      1 + c.utils - (inline_analysis ? 1 : 0) + c.cpus - (app_cpu ? 1 : 0) + (networked ? 1 : 0);
  // A process bound to some of the cores (mpirun binds each of two ranks to one core by
  // default) has those alone for its threads.
  return bound > 0 && bound < machine_cores()
             ? threads > bound
             : oversubscribed(threads, networked ? local_ranks() : 1, machine_cores());
}

// -lg:inline_analysis auto: on in a single process (not one playing several shards) whose
// threads would outnumber its cores with a utility thread. There the utility thread takes a
// worker's core whenever it runs, and the application thread's issuing and the analysis
// running at once took both workers' cores in lock-stepped programs (Task Bench at two cores:
// METG of manual traces 10-45% lower without it; untraced a wash, docs/results.md).
bool resolve_inline_analysis(const Config& c, bool networked, bool simulated, int bound) {
  if (c.inline_analysis >= 0) return c.inline_analysis == 1;
  return !networked && !simulated && crowded(c, false, false, false, bound);
}

// -ll:app_cpu auto: on where the analysis runs on the application thread and that thread and
// the CPU workers would still outnumber the cores (as many workers as cores): there the
// application thread, issuing a burst of ops, took a worker's core for the whole burst — and
// a lock-stepped program stops while any worker is off its core, even mid-point. Serving the
// last CPU instead, it runs points whenever it waits, and while it issues the other workers
// take that CPU's points. Not with fork-join helpers (a point's helpers are its CPU's), nor
// with a device (its processors' threads are apart), nor while recording an event trace (the
// what-if model takes the application thread's time between two ops for the program's own,
// and gives every CPU a thread of its own).
bool resolve_app_cpu(const Config& c, bool networked, bool simulated, bool device, int bound) {
  if (c.app_cpu >= 0) return c.app_cpu == 1;
  return c.inline_analysis == 1 && !networked && !simulated && !device && c.othr <= 1 &&
         c.evtrace_file.empty() && c.cpus >= 1 && crowded(c, false, true, false, bound);
}

// -lg:window auto: 1,024 ops in flight; where the application thread is the only CPU
// (-ll:cpu 1 with -ll:app_cpu), 64 — it runs the points after a shorter burst of issuing, with
// fewer ops' state alive at once (METG at one core 30-45% lower, docs/results.md). Automatic
// tracing holds up to a quarter of the window back to find its repeats: there the window grows
// with the longest trace it may hold (Runtime::raise_window; 256 for a 64-op trace) — a fixed
// 256 from the start cost a 1,000-timestep run ~8%, whose traces stay short. (With a worker
// beside it, untraced fine-grained chains were ~20% slower with 64: not there.)
constexpr int kWindowElsewhere = 1024;
constexpr int kWindowAppCpu = 64;
constexpr std::int64_t kMostWindow = 4096;  // what a growing window reaches at most
int resolve_window(const Config& c) {
  if (c.window > 0) return c.window;
  if (!c.app_cpu || c.cpus > 1) return kWindowElsewhere;
  return kWindowAppCpu;
}

SpinPolicy make_spin_policy(const Config& c, bool networked, int bound) {
  SpinPolicy s;
  s.spin_ns = std::uint64_t(c.spin_us) * 1000;
  s.steal_after_ns = std::uint64_t(c.steal_ns);
  s.kept_steal_after_ns = 8 * s.steal_after_ns;
  const bool busy = crowded(c, networked, c.inline_analysis == 1, c.app_cpu == 1, bound);
  s.yield = c.spin_yield >= 0 ? c.spin_yield == 1 : busy;
  s.crowded = busy;
  return s;
}
}  // namespace

Runtime::Runtime(Config config, std::unique_ptr<Mapper> mapper, Network* network, Device* device)
    : config_(std::move(config)),
      device_(config_.gpus > 0 ? device : nullptr),
      mapper_(mapper ? std::move(mapper) : std::make_unique<DefaultMapper>()),
      network_(network),
      instances_(std::size_t(config_.csize_mib) << 20, config_.numa, shard(), machine_shards(),
                 device_ ? config_.gpus : 0, std::size_t(config_.fsize_mib) << 20,
                 device_ ? std::size_t(config_.zsize_mib) << 20 : 0),
      executor_(*this),
      // (Sized before the window is resolved: auto resolves to kWindowElsewhere or less.)
      queue_(std::size_t(config_.window > 0 ? config_.window : kWindowElsewhere) + 2) {
  if (config_.simulate_shards > 1 && num_shards() > 1)
    throw Error(fmt::format(
        "-lg:simulate_shards {}: one process plays the shards; it cannot run as one of {} MPI "
        "ranks (run it without mpirun)",
        config_.simulate_shards, num_shards()));
  if (simulated()) instances_.hold_every_shard();
  forest_.set_waiter([this](Event e) { wait(e); });
  set_log_level(LogLevel(config_.log_level));
  for (const auto& [category, level] : config_.log_category_levels)
    set_log_level(*log_category(category), LogLevel(level));
  set_log_output(shard(), config_.log_file);
  set_log_thread_name("app");  // (the runtime is made on the application's thread)
  const int bound = bound_cores();
  config_.inline_analysis =
      resolve_inline_analysis(config_, network_ != nullptr, simulated(), bound);
  config_.app_cpu =
      resolve_app_cpu(config_, network_ != nullptr, simulated(), device_ != nullptr, bound);
  if (config_.app_cpu && !config_.inline_analysis)
    throw Error(
        "-ll:app_cpu 1: the application thread serves a CPU only where it runs the analysis "
        "too (-lg:inline_analysis; a single process)");
  if (config_.app_cpu && config_.othr > 1)
    throw Error("-ll:app_cpu 1 with -ll:othr > 1: a CPU's fork-join helpers need its own worker");
  const bool auto_window = config_.window <= 0;
  config_.window = resolve_window(config_);
  window_may_grow_ = auto_window && config_.window == kWindowAppCpu && config_.automatic_stage();
  window_.store(config_.window, std::memory_order_relaxed);
  // Where a plain launch's submit analyses that launch (and at most settles what a manual
  // trace's replay left pending), and no shard's wait is taken off its time, its analysis may
  // be sampled (analysis_time_weight): one shard, no automatic tracing stage (which replays
  // whole traces inside an ordinary launch's submit), no event trace.
  sample_analysis_time_ =
      !network_ && !simulated() && config_.evtrace_file.empty() && !config_.automatic_stage();
  analysis_sampler_ = TimeSampler(cycle_count() ^ reinterpret_cast<std::uintptr_t>(this));
  spin_ = make_spin_policy(config_, network_ != nullptr, bound);
  instances_.set_device(device_);
  if (auto observers = observers_snapshot(); !config_.prof_file.empty() ||
                                             !config_.spy_dir.empty() || !observers.empty() ||
                                             !config_.evtrace_file.empty()) {
    profiler_ = std::make_unique<Profiler>(config_.prof_file, shard(), std::move(observers));
    profiler_->prepare_buffer();  // the application thread's own (its CPU's lane: Executor)
    profiler_->set_deps(config_.prof_deps || !config_.spy_dir.empty());
    profiler_->set_spy_dir(config_.spy_dir);
    if (!config_.evtrace_file.empty()) {
      evtrace_ = std::make_unique<EvtraceRecorder>(shard(), machine_shards(), simulated());
      if (simulated())
        simulated_asks_ = std::make_unique<SimulatedAsks>(*evtrace_, events(), machine_shards());
      profiler_->set_evtrace(evtrace_.get());
    }
  }
  if (shard() == 0)
    for (const std::string& notice : config_.notices)
      log_write(LogLevel::Warning, LogCategory::Runtime, notice);
  snapshot_registry();
  if (network_) {
    exchange_ = std::make_unique<ShardExchange>(*this, *network_);
    stream_check_ = std::make_unique<StreamCheck>(*this, *network_);
    if (evtrace_) evtrace_merge_ = std::make_unique<EvtraceMerge>(*network_);
  }
  machine_ = MachineInfo{executor_.num_cpus(),
                         executor_.num_gpus(),
                         shard(),
                         machine_shards(),
                         std::uint32_t(config_.numa),
                         device_ && config_.zsize_mib > 0 ? 1u : 0u};
}

Runtime::~Runtime() {
  queue_.stop();
  if (utility_.joinable()) utility_.join();
  executor_.stop();
  // (The members destroyed after this body — the pipeline's held ops among them — are
  // released on this thread, the only one left either way.)
  if (alone_) g_runtime_alone.store(false, std::memory_order_relaxed);
  Runtime* self = this;
  g_current.compare_exchange_strong(self, nullptr);
}

Runtime* Runtime::current() {
  return g_current.load(std::memory_order_acquire);
}

void Runtime::snapshot_registry() {
  std::lock_guard<std::mutex> g(registry_mutex());
  tasks_ = registry_table();
  last_task_ = nullptr;
}

const TaskInfo* Runtime::find_task_anew(TaskID id) {
  auto it = tasks_.find(id);
  if (it == tasks_.end()) {
    // Registered after start: take it into the snapshot (only the application thread reads
    // it).
    std::lock_guard<std::mutex> g(registry_mutex());
    auto jt = registry_table().find(id);
    if (jt == registry_table().end()) return nullptr;
    it = tasks_.emplace(id, jt->second).first;
  }
  last_task_id_ = id;
  last_task_ = &it->second;
  return last_task_;
}

void Runtime::set_pipeline(std::unique_ptr<OpSink> first_stage, GraphSink* graph,
                           OpSink* trace_holder, bool stages_use_threads, OpSink* follower) {
  pipeline_ = std::move(first_stage);
  stages_use_threads_ = stages_use_threads;
  graph_ = graph ? graph : &executor_;
  // Only where analyse() would merely pass a held op on: analysed inline on this thread, and
  // nothing timing, recording or sending what it analyses (the stages in front of the holder
  // pass a manual trace's ops through).
  const bool plain = config_.inline_analysis && !profiler_ && !evtrace_ && !network_ &&
                     !simulated() && !config_.inorder;
  trace_holder_ = plain ? trace_holder : nullptr;
  follower_ = plain ? follower : nullptr;
  plain_ = plain;
}

void Runtime::note_points(std::uint64_t seq, std::uint64_t points, bool replayed) {
  std::lock_guard<std::mutex> g(coverage_mutex_);
  coverage_.push_back(CoverageSample{seq, points, replayed});
}

std::vector<CoverageSample> Runtime::coverage_log() const {
  std::lock_guard<std::mutex> g(coverage_mutex_);
  return coverage_;
}

RuntimeStats Runtime::stats() const {
  RuntimeStats s;
  s.ops_issued = next_seq_;
  s.points_launched = points_launched_.load(std::memory_order_relaxed);
  s.points_replayed = points_replayed_.load(std::memory_order_relaxed);
  s.points_deferred = points_deferred_.load(std::memory_order_relaxed);
  s.points_inline = executor_.points_inline();
  s.points_inline_alone = executor_.points_inline_alone();
  s.points_recorded_far = points_recorded_far_.load(std::memory_order_relaxed);
  s.points_recorded_deferred = points_recorded_deferred_.load(std::memory_order_relaxed);
  s.templates_recorded = templates_recorded_.load(std::memory_order_relaxed);
  s.templates_dropped = templates_dropped_.load(std::memory_order_relaxed);
  s.value_rounds = value_rounds_.load(std::memory_order_relaxed);
  s.replays = replays_.load(std::memory_order_relaxed);
  s.replay_instructions = replay_instructions_.load(std::memory_order_relaxed);
  s.replay_instructions_here = replay_instructions_here_.load(std::memory_order_relaxed);
  s.mismatches = mismatches_.load(std::memory_order_relaxed);
  s.condition_checks = condition_checks_.load(std::memory_order_relaxed);
  s.copies = copies_.load(std::memory_order_relaxed);
  s.gpu_kernels = gpu_kernels_.load(std::memory_order_relaxed);
  s.gpu_graph_launches = gpu_graph_launches_.load(std::memory_order_relaxed);
  s.copies_host_to_device = copies_host_to_device_.load(std::memory_order_relaxed);
  s.copies_device_to_host = copies_device_to_host_.load(std::memory_order_relaxed);
  s.copies_device_to_device = copies_device_to_device_.load(std::memory_order_relaxed);
  s.shard_bytes = shard_bytes_.load(std::memory_order_relaxed);
  s.analysis_cpu_ns = thread_cpu_ns(utility_);
  // (The wait is added before the op's whole time: read it first, and never let it exceed.)
  const std::uint64_t waited = shard_wait_ns_.load(std::memory_order_relaxed);
  s.analysis_busy_ns = std::uint64_t(double(analysis_busy_cycles_.load(std::memory_order_relaxed)) /
                                     cycles_per_ns());
  s.analysis_busy_ns -= std::min(waited, s.analysis_busy_ns);
  s.messages_sent = network_ ? network_->messages_sent() : 0;
  if (exchange_) {
    const ShardExchange::Counters c = exchange_->counters();
    s.peers_heard = c.peers_heard;
    s.requests_sent = c.requests_sent;
    s.remote_proxies = c.remote_proxies;
    if (ShardLinks* l = exchange_->links()) s.gpu_link_copies = l->copies();
  }
  return s;
}

void Runtime::run(const std::function<void(Context&)>& top_level) {
  if (!pipeline_) throw Error("Runtime::run: no pipeline installed");
  if (config_.inline_analysis && network_)
    throw Error(
        "-lg:inline_analysis: a single process only (under mpirun the utility thread must "
        "answer the other shards while the application waits)");
  Runtime* expected = nullptr;
  if (!g_current.compare_exchange_strong(expected, this))
    throw Error("reprise::start: a runtime is already running in this process");
  executor_.start();
  if (network_) {
    // (An incoming message cannot wake a sleeping progress thread: it polls longer.)
    SpinPolicy net = spin_;
    net.spin_ns = std::uint64_t(config_.net_spin_us) * 1000;
    network_->start(net);
    stream_check_->start();
  }
  // -ll:nccl: every shard opens its end of the device links (or none does) before any op.
  std::exception_ptr links_error;
  if (!exchange_ && config_.nccl == 1)
    REPRISE_LOG_WARN(LogCategory::Gpu,
                     "-ll:nccl 1 has no effect in a single process: the device links carry "
                     "copies between ranks (run under mpirun)");
  if (exchange_) {
    try {
      exchange_->open_links();
      links_ = exchange_->links();
    } catch (...) {
      links_error = as_error(std::current_exception());
    }
  }
  if (!config_.inline_analysis) {
    // Profiled, the program starts once the utility thread has made its profile buffer (else
    // the first op would wait the ~4 ms of its first touch, which unprofiled runs do not have).
    // (Shared: the latch outlives whichever of the two threads is done with it last.)
    auto buffer_made = std::make_shared<std::latch>(profiler_ ? 1 : 0);
    utility_ = std::thread([this, buffer_made] { utility_loop(buffer_made.get()); });
    buffer_made->wait();
  }
  app_thread_ = std::this_thread::get_id();
  // Alone: no thread but this one touches the runtime's shared counters (reprise_rt/alone.h).
  // (The analysis is the application thread's, and nothing else holds or analyses ops.)
  const bool analysed_here =
      config_.inline_analysis && !network_ && !device_ && !simulated() && !stages_use_threads_;
  alone_ = config_.alone != 0 && analysed_here && !executor_.runs_threads();
  g_runtime_alone.store(alone_, std::memory_order_relaxed);
  // Eager launches (Analysis::may_run_eagerly): alone, or beside CPU workers — there the
  // executor runs inline only points too short to be worth a hand-off (Executor::runs_inline);
  // not where no point can run inline (the application thread serves no CPU).
  eager_ = (alone_ || (analysed_here && executor_.runs_threads())) && executor_.runs_any_inline() &&
           config_.eager != 0 && !profiler_ && !evtrace_ && !config_.inorder;
  // Eager beside CPU workers: a launch lets them finish first (drain_for_eager), and the
  // runtime runs alone while they wait with nothing to run (the executor decides, at each
  // eager point).
  drains_for_eager_ = eager_ && !alone_;
  executor_.allow_alone_beside_workers(drains_for_eager_ && config_.alone != 0);
  warm_pools();
  static std::once_flag exit_hook;
  std::call_once(exit_hook, [] { std::atexit(&Runtime::exit_while_running); });

  std::exception_ptr app_error = links_error;
  if (app_error) top_level_failed(app_error);
  if (!app_error) {
    Context& ctx = Context::open(*this);
    try {
      top_level(ctx);
      if (trace_open_)
        throw Error(
            fmt::format("the program ended inside trace {} (end_trace missing)", open_trace_));
    } catch (...) {
      app_error = as_error(std::current_exception());
      top_level_failed(app_error);
      trace_open_ = false;
      if (trace_held_) {
        // Close the trace so that its buffered ops are released and the drain completes.
        OpRef end = make_mark(OpKind::EndTrace, open_trace_);
        end->seq = next_seq_++;
        end->done = events_.create();
        issued_.store(issued_.load(std::memory_order_relaxed) + 1, std::memory_order_seq_cst);
        push(std::move(end));
      }
    }
  }
  // Tell the other shards where this program ended (a shard that issued more, or other ops,
  // stops with the error instead of waiting for ops that are never issued here).
  if (stream_check_ && !app_error && !failed()) stream_check_->finished();
  // Drain: every issued op completes, even after an error (failed ops skip their bodies).
  flush_pipeline(kNoEvent);
  wait_outstanding(0);
  launch_op_ = OpRef();  // (its future map and futures with it)
  queue_.stop();
  if (config_.inline_analysis)
    pipeline_->finish();
  else
    utility_.join();
  if (network_) {
    // Every shard comes here, whatever happened: agree on the profiles' time origin (every
    // shard takes part, profiling or not), compare the programs, then stop talking.
    try {
      std::vector<std::uint64_t> first{profiler_ ? profiler_->start_ns() : ~0ull}, unused{0};
      network_->allreduce_min_max(first, unused);
      if (profiler_) profiler_->set_origin(first[0]);
    } catch (...) {
      if (!app_error) app_error = std::current_exception();
    }
    try {
      check_same_program(app_error || failed());
    } catch (...) {
      // Shards that created different data fail in whatever way that leads to (a copy of the
      // wrong size, say): the difference itself is the error to report.
      if (!app_error || creations_differ_) app_error = std::current_exception();
    }
    if (log_level(LogCategory::CtrlRepl) <= LogLevel::Info)
      log_write(LogLevel::Info, LogCategory::CtrlRepl,
                "at the end the exchange holds: " + exchange_->describe_held());
    if (evtrace_) {
      try {
        write_evtrace();
      } catch (...) {
        if (!app_error) app_error = std::current_exception();
      }
    }
    exchange_->close_links();  // (every copy has completed: nothing is in flight on them)
    links_ = nullptr;
    stream_check_->stop();
    network_->stop();
  }
  executor_.stop();
  if (!config_.steal_trace_file.empty()) {
    try {
      // Without a `%`, shards other than 0 add their number, so that none overwrites another.
      std::string path = shard_file(config_.steal_trace_file, shard());
      if (path == config_.steal_trace_file && shard() > 0) path += fmt::format(".{}", shard());
      executor_.write_steal_trace(path);
    } catch (...) {
      if (!app_error) app_error = std::current_exception();
    }
  }
  if (evtrace_ && !network_) {
    try {
      write_evtrace();
    } catch (...) {
      if (!app_error) app_error = std::current_exception();
    }
  }
  if (profiler_) {
    try {
      profiler_->write();
    } catch (...) {
      if (!app_error) app_error = std::current_exception();
    }
  }
  Context::close();
  g_current.store(nullptr, std::memory_order_release);
  if (app_error) std::rethrow_exception(app_error);
  rethrow_if_failed();
}

void Runtime::write_evtrace() {
  evtrace::Trace t = evtrace_->finish();
  t.cpus = std::uint32_t(config_.cpus);
  t.utils = std::uint32_t(config_.utils);
  t.gpus = std::uint32_t(config_.gpus);
  t.program = program_invocation_short_name;  // (glibc)
  auto put = [](const std::string& path, const std::string& text) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    const bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (f) std::fclose(f);
    if (!ok) throw Error(fmt::format("-lg:evtrace: cannot write '{}'", path));
  };
  if (config_.evtrace_shards)
    put(fmt::format("{}.{}", config_.evtrace_file, shard()), evtrace::write(t));
  if (evtrace_merge_) {
    std::optional<evtrace::Trace> merged = evtrace_merge_->gather(std::move(t));
    if (!merged) return;
    t = std::move(*merged);
  }
  put(config_.evtrace_file, evtrace::write(t));
}

void Runtime::report_stall(int seconds, std::uint64_t ops_issued) {
  log_write(
      LogLevel::Warning, LogCategory::CtrlRepl,
      fmt::format(
          "no op issued for {} s (after {} ops; {} in flight{}): {}", seconds, ops_issued,
          issued_.load(std::memory_order_relaxed) - completed_.load(std::memory_order_relaxed),
          app_waiting_.load(std::memory_order_relaxed) ? ", the program waits" : "",
          exchange_ ? exchange_->describe_held() : std::string("no exchange")));
}

void Runtime::top_level_failed(std::exception_ptr e) {
  // One process: the drain completes every op. Under control replication the other shards
  // may be waiting for this one: they stop with its error.
  if (network_) record_error(std::move(e));
}

void Runtime::exit_while_running() {
  Runtime* rt = g_current.load(std::memory_order_acquire);
  if (!rt) return;  // exit after start() returned: nothing of ours is running
  const std::string where = rt->num_shards() > 1 ? fmt::format("shard {}: ", rt->shard()) : "";
  const std::string what =
      "exit() was called inside the top-level task or a task while the runtime was running "
      "(return from the top-level function instead)";
  std::fprintf(stderr, "reprise: error: %s%s\n", where.c_str(), what.c_str());
  std::fflush(stderr);
  if (rt->exchange_) {
    // Tell the other shards (they end with this error), give the message time to leave, then
    // end the job: nothing may wait for this process any more.
    rt->exchange_->broadcast_abort(std::make_exception_ptr(Error(what)), /*ending_job=*/true);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    rt->network_->abort_job(1);
  }
  // The runtime's threads are still running: static destructors must not run under them.
  std::_Exit(1);
}

const char* to_string(Creation c) {
  switch (c) {
    case Creation::IndexSpace:
      return "create_index_space";
    case Creation::FieldSpace:
      return "create_field_space";
    case Creation::Region:
      return "create_region";
    case Creation::PartitionEqual:
      return "partition_equal";
    case Creation::PartitionByBlocks:
      return "partition_by_blocks";
    case Creation::PartitionByRects:
      return "partition_by_rects";
    case Creation::PartitionByTranslation:
      return "partition_by_translation";
    case Creation::PartitionByRectLists:
      return "partition_by_rect_lists";
    case Creation::DependentPartition:
      return "dependent partitioning";
  }
  return "?";
}

void Runtime::check_same_creations(std::uint64_t count, std::uint64_t min_count, bool ended_early) {
  // Every shard's last creation words up to the shortest list, and the one after (a word no
  // longer kept is `forgotten`, and compares with nothing).
  constexpr std::uint64_t kept = decltype(creation_words_)::kCapacity / 2;
  constexpr std::uint64_t forgotten = ~0ull - 1;
  const std::uint64_t n = min_count, lo = n > kept ? n - kept : 0;
  std::vector<std::uint64_t> mine;
  for (std::uint64_t i = lo; i < n; ++i) mine.push_back(creation_words_.at(i).value_or(forgotten));
  mine.push_back(count > n ? creation_words_.at(n).value_or(forgotten) : ~0ull);
  const std::vector<std::uint64_t> all = network_->allgather(mine);
  const std::size_t per = mine.size();
  auto call = [](std::uint64_t w) {
    return w == ~0ull ? std::string("nothing more") : std::string(to_string(Creation(w >> 56)));
  };
  for (std::size_t j = 0; j < per; ++j)
    for (std::uint32_t s = 1; s < num_shards(); ++s) {
      const std::uint64_t a = all[j], b = all[s * per + j], i = lo + j;
      if (a == b || a == forgotten || b == forgotten) continue;
      // After an error shards stop wherever it reached them: only a difference in what they
      // all created counts then.
      if (ended_early && (a == ~0ull || b == ~0ull)) continue;
      creations_differ_ = true;
      throw Error(fmt::format(
          "control replication: the shards created different data; first difference at "
          "creation call #{}: {} (every shard must create the same index spaces, field spaces, "
          "regions and partitions)",
          i,
          call(a) == call(b)
              ? fmt::format("shard 0 and shard {} called {} with different arguments", s, call(a))
              : fmt::format("shard 0 called {}, shard {} called {}", call(a), s, call(b))));
    }
  if (!ended_early) {  // (then every shard made as many calls: a shorter list differs above)
    creations_differ_ = true;
    throw Error(fmt::format(
        "control replication: the shards created different data before creation call #{} (the "
        "checks keep the last {} calls)",
        lo, kept));
  }
}

void Runtime::check_same_program(bool ended_early) {
  const std::uint64_t h = stream_check_->hash_of(op_words_.size()).value_or(0);
  std::vector<std::uint64_t> mins{creation_words_.size(), creation_hash_.h, op_words_.size(), h},
      maxs = mins;
  network_->allreduce_min_max(mins, maxs);
  checked_ops_ = op_words_.size();
  if (mins == maxs) return;
  // What was created differs: that is the first cause (the ops then differ too, or use it).
  if (mins[0] != maxs[0] || mins[1] != maxs[1])
    check_same_creations(creation_words_.size(), mins[0], ended_early);
  mins.erase(mins.begin(), mins.begin() + 2);
  maxs.erase(maxs.begin(), maxs.begin() + 2);
  if (mins == maxs) return;
  // Find the first op that differs among the ops every shard still keeps (the last ones, up
  // to the shortest stream), if the streams agreed before them.
  const std::uint64_t n = mins[0];
  const std::uint64_t kept = std::min(decltype(op_words_)::kCapacity, StreamCheck::kKept);
  const std::uint64_t lo = maxs[0] > kept ? std::min(n, maxs[0] - kept) : 0;
  std::vector<std::uint64_t> mine{stream_check_->hash_of(lo).value_or(~0ull)};
  for (std::uint64_t i = lo; i < n; ++i) mine.push_back(op_words_.at(i).value_or(~0ull));
  mine.push_back(op_words_.size() > n ? op_words_.at(n).value_or(~0ull) : ~0ull);  // the next
  const std::vector<std::uint64_t> all = network_->allgather(mine);
  const std::size_t per = mine.size();
  for (std::uint32_t s = 1; s < num_shards(); ++s)
    if (all[s * per] != all[0])
      throw Error(fmt::format(
          "control replication: the shards issued different programs: shard 0 and shard {} "
          "differ before op #{} (the checks keep the last {} ops)",
          s, lo, kept));
  auto describe = [&](std::uint64_t w) {
    if (w == ~0ull) return std::string("no op (its program had ended)");
    const auto kind = OpKind(w >> 56);
    const TaskID task = TaskID((w >> 32) & 0xffffff);
    const TaskInfo* t =
        kind == OpKind::Task || kind == OpKind::IndexTask ? find_task(task) : nullptr;
    return t ? fmt::format("{} '{}'", to_string(kind), t->name) : std::string(to_string(kind));
  };
  for (std::size_t i = 1; i < per; ++i)
    for (std::uint32_t s = 1; s < num_shards(); ++s)
      if (all[s * per + i] != all[i])
        throw Error(fmt::format(
            "control replication: the shards issued different programs; first difference at "
            "op #{}: shard 0 issued {}, shard {} issued {}",
            lo + i - 1, describe(all[i]), s, describe(all[s * per + i])));
  throw Error("control replication: the shards issued different programs");
}

// Where an op goes from here (docs/architecture.md, "The path of one op"): the OpQueue, the
// utility thread (utility_loop), the pipeline that tracing/src/start.cpp assembled —
// AutoTraceStage, Memoizer, Analysis — and the executor's workers; op_completed at the end.
void Runtime::issue(OpRef op) {
  // (A dispatch and nothing else: the general way's register saves stay out of the plain one.)
  if (plain_ && op->kind == OpKind::IndexTask) [[likely]]
    return issue_plain(std::move(op));
  issue_general(std::move(op));
}

// issue()'s two ways share the count of ops issued and the hand-overs before the pipeline.
inline void Runtime::count_issued(bool ends_trace) {
  const std::int64_t issued = issued_.load(std::memory_order_relaxed) + 1;
  issued_.store(issued, std::memory_order_release);
  // Inside a manual trace ops are held until end_trace: waiting for them here would never end,
  // and EndTrace itself must go in before anything waits for the ops it releases.
  if (!trace_open_ && !ends_trace) keep_to_window(issued);
}

inline bool Runtime::held_or_followed(OpRef& op, bool ends_trace) {
  // Inside a manual trace the memoizer only buffers the op until end_trace: handed to it here,
  // not through push, analyse and the stages in front (~100 instructions a launch, and a
  // reference less taken and dropped). After a failure, analyse() completes it instead.
  if (trace_held_ && trace_holder_ && !ends_trace && !failed()) {
    trace_holder_->hold_in_trace(std::move(op));
    return true;
  }
  // So, while the automatic tracing stage follows a loop, the ops that go on its run.
  return following_ && !ends_trace && !failed() && follower_->take_followed(op);
}

void Runtime::issue_general(OpRef op) {
  // EndTrace always goes in: it releases the ops its trace holds, which must complete even
  // after a failure (end_trace reports the error once it is issued).
  const bool ends_trace = op->kind == OpKind::EndTrace;
  if (!ends_trace) rethrow_if_failed();
  op->seq = next_seq_++;
  if (evtrace_) [[unlikely]]
    evtrace_->issued(op->seq, own_cpu_ns());
  if (network_) note_program(*op, ends_trace);
  // An index launch without a future map (IndexLauncher::set_future_map) has nobody to wait
  // for it but the analysis and a replay's summary, which make its event if they need it (a
  // replayed one's completes unseen: Runtime::give_done_event). The event trace, the profiler
  // and -lg:inorder follow every op's event.
  if (op->kind == OpKind::IndexTask && !op->future_map && !evtrace_ && !profiler_ &&
      !config_.inorder)
    op->done_on_demand = true;
  else
    op->done = events_.create();
  switch (op->kind) {
    case OpKind::Task:
    case OpKind::Fill:
    case OpKind::Copy:
      op->remaining.store(1, std::memory_order_relaxed);
      break;
    case OpKind::IndexTask:
      op->remaining.store(std::int64_t(op->num_points()), std::memory_order_relaxed);
      break;
    default:
      op->remaining.store(0, std::memory_order_relaxed);
      break;
  }
  if (op->future) op->future->ready_event = op->done;
  if (op->future_map) op->future_map->ready_event = op->done;
  if (exchange_) {
    op->local_completion = ShardExchange::completes_locally(*op);
    if (op->kind == OpKind::IndexTask && op->future_map &&
        op->future_map->kind != ValueKind::None) {
      op->future_map->sharded = true;
      op->future_map->produced.assign(op->future_map->values.size(), 0);
    }
  }

  count_issued(ends_trace);
  if (config_.inorder && !trace_open_) {
    // Inside a trace the memoizer holds ops until end_trace: the trace is waited for as a
    // whole when it ends.
    const bool drain = ends_trace;
    Event done = op->done;
    push(std::move(op));
    wait_event(done);
    if (drain) wait_outstanding(0);
    rethrow_if_failed();
    return;
  }
  if (held_or_followed(op, ends_trace)) return;
  push(std::move(op));
}

// What issue() does with an index launch, less its tests for what plain_ rules out (the event
// trace, the network, the profiler, -lg:inorder) and push's for trace marks: ~40 instructions
// of a one-point launch.
void Runtime::issue_plain(OpRef op) {
  REPRISE_ASSERT(!op->future, "an index launch has a future map, not a future");
  rethrow_if_failed();
  op->seq = next_seq_++;
  if (op->future_map) {
    op->done = events_.create();
    op->future_map->ready_event = op->done;
  } else {
    op->done_on_demand = true;
  }
  op->remaining.store(std::int64_t(op->num_points()), std::memory_order_relaxed);
  count_issued(false);
  if (held_or_followed(op, false)) return;
  analyse(std::move(op));
}

OpRef Runtime::launch_op() {
  if (launch_op_ && launch_op_->only_reference()) {
    launch_op_->renew_for_task();
  } else {
    launch_op_ = make_op();  // (the last one is still in flight: its holders free it)
    launch_op_->payload.emplace<TaskPayload>();
  }
  return launch_op_;
}

void Runtime::keep_to_window(std::int64_t issued) {
  // (completed_ only grows: a count read earlier bounds the ops in flight from above, and the
  // application thread reads it anew only when that bound passes the window.)
  const std::int64_t window = window_.load(std::memory_order_relaxed);
  if (issued - completed_seen_ > window)
    completed_seen_ = completed_.load(std::memory_order_acquire);
  if (issued - completed_seen_ <= window) return;
  // Let the pipeline drain to half the window before issuing more (hysteresis keeps the
  // application thread from waking per op).
  // (Automatic tracing never holds more than a quarter of the window: no flush needed.)
  const std::uint64_t t0 = profiler_ ? Profiler::stamp() : 0;  // (a wait on the profile too)
  wait_outstanding(window / 2);
  if (profiler_) profiler_->record_wait(t0, Profiler::stamp());
}

void Runtime::note_program(const Op& op, bool ends_trace) {
  // (Every shard must issue the same ops: their kinds, tasks and shapes are compared.)
  const std::uint64_t word = std::uint64_t(op.kind) << 56 |
                             std::uint64_t(op.task & 0xffffff) << 32 |
                             (ShardExchange::shape_of(op) & 0xffffffffull);
  op_words_.push_back(word);
  stream_check_->issued(word);
  if (config_.safe_ctrlrepl && !ends_trace && op_words_.size() % 1024 == 0)
    check_same_program(false);
}

void Runtime::issue_mark(OpKind kind, TraceID id) {
  // With the event trace or -lg:inorder a mark is an op like any other (both follow every
  // op's issue and completion); else it only carries the trace's id down the pipeline, as the
  // automatic stage's marks do: no event, not counted in the window, made once and used again
  // (a replayed trace's two marks cost ~1k instructions as ops, half its replay's fixed part).
  if (evtrace_ || config_.inorder) [[unlikely]] {
    issue(make_mark(kind, id));
    return;
  }
  // (A trace's ops never wait for the window: the trace waits for it before it begins.)
  if (kind == OpKind::BeginTrace) keep_to_window(issued_.load(std::memory_order_relaxed));
  OpRef op = trace_mark(kind == OpKind::BeginTrace ? begin_mark_ : end_mark_, kind, id);
  op->seq = next_seq_++;
  if (network_) note_program(*op, kind == OpKind::EndTrace);
  push(std::move(op));
}

std::int64_t Runtime::raise_window(std::int64_t at_least) {
  const std::int64_t now = window_.load(std::memory_order_relaxed);
  if (!window_may_grow_ || at_least <= now) return now;
  // (Only the application thread changes it: the analysis that asks runs there.)
  REPRISE_ASSERT(on_app_thread(), "a growing window is raised by the application thread");
  const std::int64_t raised = std::min<std::int64_t>(at_least, kMostWindow);
  window_.store(raised, std::memory_order_relaxed);
  return raised;
}

void Runtime::push(OpRef op) {
  // Between a BeginTrace and its EndTrace the pipeline holds the trace's ops back.
  if (op->kind == OpKind::BeginTrace) trace_held_ = true;
  if (op->kind == OpKind::EndTrace) trace_held_ = false;
  if (config_.inline_analysis) return analyse(std::move(op));
  queue_.push(std::move(op));
}

void Runtime::op_completed(Op& op) {
  // (A generated copy carries the number of the op it was made for; flushes and marks the
  // runtime makes carry none of their own.)
  if (evtrace_ && op.counted) [[unlikely]]
    evtrace_->retired(op.seq);
  if (op.local_completion) exchange_->completed(op);
  if (!op.counted) {  // made by the runtime itself: nobody waits on it
    events_.trigger(op.done);
    return;
  }
  std::exception_ptr err = op.error;
  if (!err && failed()) err = first_error();
  if (op.future) {
    op.future->error = err;
    op.future->ready.store(true, std::memory_order_release);
  }
  if (op.future_map) {
    op.future_map->error = err;
    op.future_map->ready.store(true, std::memory_order_release);
  }
  events_.trigger(op.done);
  const std::int64_t completed = shared_add(completed_, 1, std::memory_order_seq_cst) + 1;
  if (app_waiting_.load(std::memory_order_seq_cst)) {
    // (issued_ does not change while the application thread waits.)
    const std::int64_t left = issued_.load(std::memory_order_seq_cst) - completed;
    REPRISE_ASSERT(left >= 0, "every issued op completes exactly once");
    if (left <= window_.load(std::memory_order_relaxed) / 2) wake_app();
  }
}

void Runtime::wake_app() {
  app_wakes_.fetch_add(1, std::memory_order_seq_cst);
  if (config_.app_cpu)
    executor_.nudge_app();  // (it waits in its CPU's queue)
  else
    app_wakes_.notify_all();
}

void Runtime::record_error(std::exception_ptr e) {
  {
    std::lock_guard<std::mutex> g(error_mutex_);
    if (!error_) error_ = e;
    failed_.store(true, std::memory_order_release);
  }
  if (exchange_) {
    // Every shard stops with the error, and nothing waits for a shard that stopped.
    exchange_->broadcast_abort(e);
    exchange_->abandon();
  }
  queue_.wake();  // the utility thread releases what the pipeline holds back
  if (config_.inline_analysis) wake_app();  // (or, without one, the application thread)
}

std::exception_ptr Runtime::first_error() const {
  std::lock_guard<std::mutex> g(error_mutex_);
  return error_;
}

void Runtime::rethrow_if_failed() {
  if (failed()) std::rethrow_exception(first_error());
}

void Runtime::note_program_wait() {
  // (Before knowing whether the wait blocks: the trace must not depend on timing.)
  if (evtrace_ && next_seq_ > 0 && on_app_thread()) [[unlikely]]
    evtrace_->program_waits(next_seq_ - 1);
}

void Runtime::wait(Event e) {
  note_program_wait();
  if (events_.has_triggered(e)) return;
  if (app_blocked_in_trace())
    throw Error(
        fmt::format("a blocking wait inside trace {}: ops of a trace are held until "
                    "end_trace, so waiting on one cannot finish (wait after end_trace)",
                    open_trace_));
  wait_issued_before_trace(e);
}

void Runtime::wait_issued_before_trace(Event e) {
  if (events_.has_triggered(e)) return;
  if (on_app_thread()) flush_pipeline(e);
  const std::uint64_t t0 = profiler_ ? Profiler::stamp() : 0;
  wait_event(e);
  if (evtrace_ && on_app_thread()) [[unlikely]]
    evtrace_->program_resumes(own_cpu_ns());
  if (profiler_) profiler_->record_wait(t0, Profiler::stamp());
}

namespace {
OpRef make_flush(Event awaited) {
  OpRef f = make_op();
  f->kind = OpKind::Flush;
  f->counted = false;
  f->payload = FlushPayload{awaited};
  f->domain = Domain(Rect<1>({0}, {0}));
  return f;
}
}  // namespace

void Runtime::flush_pipeline(Event awaited) {
  // Automatic tracing may hold ops back; the application is about to wait for one.
  if (config_.inline_analysis) return analyse(make_flush(awaited));
  queue_.push(make_flush(awaited));
}

bool Runtime::app_blocked_in_trace() const {
  return trace_open_ && on_app_thread();
}

void Runtime::check_not_in_trace(const char* what) const {
  if (trace_open_)
    throw Error(fmt::format("{} inside trace {}: it cannot be traced (end the trace first)", what,
                            open_trace_));
}

void Runtime::begin_trace(TraceID id) {
  if (trace_open_)
    throw Error(fmt::format("begin_trace({}): trace {} is still open; traces do not nest", id,
                            open_trace_));
  // -lg:no_tracing: the marks are still checked (a program is valid with and without), but
  // issue nothing: the ops in between are analysed like any others.
  if (!config_.no_tracing) {
    rethrow_if_failed();
    issue_mark(OpKind::BeginTrace, id);
  }
  trace_open_ = true;
  ++traces_begun_;
  open_trace_ = id;
}

void Runtime::end_trace(TraceID id) {
  if (!trace_open_) throw Error(fmt::format("end_trace({}): no trace is open", id));
  if (id != open_trace_)
    throw Error(fmt::format("end_trace({}): the open trace is {}", id, open_trace_));
  trace_open_ = false;
  if (config_.no_tracing) return;
  issue_mark(OpKind::EndTrace, id);  // issued even after a failure, which is reported now
  rethrow_if_failed();
}

void Runtime::flush_links() {
  try {
    links_->flush();
  } catch (...) {
    record_error(std::current_exception());
  }
}

void Runtime::warm_pools() {
  // The first window of launches would otherwise take its ops (~1 KB each, with their
  // requirements) from fresh pages: a page fault every few launches, several microseconds each
  // on a virtual machine — about 0.6 ms of the first thousand timesteps of a small program.
  // Made and dropped here, on the thread that launches, their memory stays in its caches.
  // (At most 4,096: a larger -lg:window is not worth that much memory touched up front.)
  std::vector<OpRef> ops(std::min<std::size_t>(std::size_t(window()) + 64, 4096));
  for (OpRef& op : ops) {
    op = make_op();
    op->reqs.reserve(2);
  }
}

void Runtime::utility_loop(std::latch* buffer_made) {
  set_log_thread_name("util");
  if (profiler_) {  // (after the name: the buffer takes it)
    profiler_->prepare_buffer();
    if (buffer_made) buffer_made->count_down();
  }
  const SpinPolicy spin = spin_policy();
  auto idle = [&] {
    release_after_failure();
    if (links_) flush_links();
  };
  while (OpRef op = queue_.pop(spin, idle)) analyse(std::move(op));
  pipeline_->finish();
}

void Runtime::wait_event(Event e) {
  if (!config_.inline_analysis || !on_app_thread()) return events_.wait(e);
  // With -lg:inline_analysis no utility thread releases what tracing holds once a point fails
  // meanwhile: the waiting application thread does (its idle duty), woken like its other waits.
  if (events_.has_triggered(e)) return;
  events_.add_waiter(
      e, [](void* rt, std::uint64_t) { static_cast<Runtime*>(rt)->wake_app(); }, this, 0);
  sleep_until([&] { return events_.has_triggered(e); });
}

void Runtime::wait_outstanding(std::int64_t at_most) {
  app_waiting_.store(true, std::memory_order_seq_cst);  // (op_completed wakes it only then)
  sleep_until([&] {
    completed_seen_ = completed_.load(std::memory_order_seq_cst);
    return issued_.load(std::memory_order_relaxed) - completed_seen_ <= at_most;
  });
  app_waiting_.store(false, std::memory_order_relaxed);
}

template <class Done>
void Runtime::sleep_until(Done&& done) {
  for (;;) {
    // (Read before the checks: a wake-up after them changes it, and the wait returns at once.)
    const std::uint32_t wakes = app_wakes_.load(std::memory_order_seq_cst);
    if (config_.inline_analysis) release_after_failure();
    if (done()) return;
    if (config_.app_cpu)  // runs its CPU's points meanwhile (returns after a list, or woken)
      executor_.serve_app(&app_wakes_, wakes);
    else
      app_wakes_.wait(wakes, std::memory_order_seq_cst);
  }
}

void Runtime::release_after_failure() {
  // After a failure (possibly on another shard) nothing may stay held back by tracing, or the
  // application would wait for it forever: release it, once.
  if (!failed() || released_after_failure_) return;
  released_after_failure_ = true;
  try {
    pipeline_->submit(make_flush(kNoEvent));
  } catch (...) {  // the program has failed already: its first error is the one reported
  }
}

bool Runtime::drain_for_eager(std::int64_t own) {
  // Launches find ops in flight until the program waits, once one went to the workers:
  // without this, a loop that never waits would hand off every launch of short points
  // (twice one worker's cost a task). With points this short, the workers finish what they
  // hold within microseconds, and this thread would only have issued into the window.
  // (Its callers found every point of the launch short enough to run inline.)
  if (drain_pause_ > 0) {
    --drain_pause_;
    return false;
  }
  // (Patience, -lg:eager_wait_us without an op completing: a sleeping worker wakes within
  // tens of microseconds, more under a sanitizer or where other programs hold the cores. It
  // pauses as an idle worker spins, then yields its core, which a worker may need whatever
  // -ll:spin_yield says: threads may outnumber the cores, or run one at a time, as under
  // valgrind.)
  const double patience_ns = double(config_.eager_wait_us) * 1e3;
  SpinPolicy waiting = spin_;
  waiting.yield = true;
  const double per_ns = cycles_per_ns();
  std::int64_t completed = completed_.load(std::memory_order_acquire);
  const std::uint64_t start = cycle_count();
  std::uint64_t since = start;
  for (;;) {
    if (ops_in_flight() == own) return true;
    if (executor_.workers_idle()) return ops_in_flight() == own;
    const std::uint64_t now = cycle_count();
    if (const std::int64_t c = completed_.load(std::memory_order_acquire); c != completed) {
      completed = c;
      since = now;
    } else if (double(now - since) > patience_ns * per_ns) {
      drain_pause_ = 64;
      return false;
    }
    waiting.pause(std::uint64_t(double(now - start) / per_ns));
  }
}

void Runtime::analyse(OpRef op) {
  // (One thread at a time: the utility thread, or with -lg:inline_analysis the application's.)
  REPRISE_ASSERT(!config_.inline_analysis || on_app_thread(),
                 "with -lg:inline_analysis only the application thread issues ops");
  if (failed()) {
    release_after_failure();
    op_completed(*op);  // the program has failed: complete the op without running it
    return;
  }
  // (Timed in cycles: a clock read costs ~33 ns on this project's VMs, the counter ~10.)
  const std::uint64_t weight = analysis_time_weight(*op);
  const std::uint64_t t0 = weight ? cycle_count() : 0;
  timing_analysis_ = weight != 0;
  if (plain_) [[likely]]
    submit_to_pipeline(op);
  else
    submit_observed(op);
  // (One thread at a time analyses: a load and a store, as count_points.)
  if (weight) {
    // (A point run eagerly inside the analysis is the task's time, not the analysis'.)
    const std::uint64_t ran = std::exchange(inline_run_cycles_, 0);
    analysis_busy_cycles_.store(
        analysis_busy_cycles_.load(std::memory_order_relaxed) + weight * (cycle_count() - t0 - ran),
        std::memory_order_relaxed);
  }
}

void Runtime::submit_to_pipeline(const OpRef& op) {
  try {
    pipeline_->submit(op);
  } catch (...) {
    record_error(std::current_exception());
    op_completed(*op);
  }
}

void Runtime::submit_observed(const OpRef& op) {
  const std::uint64_t s0 = profiler_ ? Profiler::stamp() : 0;
  const std::uint64_t c0 = evtrace_ ? Profiler::thread_cpu_now() : 0;
  if (evtrace_ && op->counted) [[unlikely]]
    evtrace_->analysing(op->seq);
  submit_to_pipeline(op);
  if (links_) flush_links();
  if (profiler_)
    profiler_->record_analysis(*op, s0, Profiler::stamp(),
                               evtrace_ ? Profiler::thread_cpu_now() - c0 : 0);
}

std::uint64_t Runtime::analysis_time_weight(const Op& op) {
  // Marks, fences and the like are timed whole: a trace's replay or recording runs in its
  // EndTrace's analysis.
  if (!op.launches_points()) return 1;
  // A point op a manual trace holds, analysed inline, is not timed: the memoizer only buffers
  // it (its analysis runs, timed, when the trace ends), and the two counter reads would cost as
  // much (4% of a replayed one-point launch at one core). push() set trace_held_ on this thread.
  if (config_.inline_analysis && trace_held_) return 0;
  // A plain launch analysed alone: one in TimeSampler::kEvery, counted that many times (the
  // two reads were ~2.4% of an untraced one-point launch's wall time at one core).
  return sample_analysis_time_ ? analysis_sampler_.weight() : 1;
}

}  // namespace reprise::detail
